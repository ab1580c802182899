"""kro.graph.compat: is a new version of a generated CRD schema safe for existing instances?

When an RGD changes, kro regenerates its CRD. Some changes would strand instances already
stored in etcd (a removed property, a retyped field, a new required field without a default),
so they are refused unless the RGD carries `kro.run/allow-breaking-changes: "true"` (Q-03).

Upstream compares only a subset of OpenAPI keywords (Q-02); we compare the same subset so that
"no change" decisions, and therefore writes, match upstream. We deliberately also report
changes to `x-kubernetes-validations`, list types, preserve-unknown and additionalProperties as
non-breaking changes, so that they are applied (upstream silently drops them, N-17); this is
recorded in docs/compatibility.md.

Since v0.10 (V-11) the default comparison also treats as breaking: an enum added where there
was none (or narrowed, as before), `nullable` removed, `x-kubernetes-preserve-unknown-fields`
removed; each of these stores values the new schema refuses or prunes. The
`ConservativeCRDComparison` feature gate (`conservative=True`) goes further: map value schemas
(`additionalProperties`) are compared like properties, a `format` added or changed, any change
of list/map topology (`x-kubernetes-list-type`, `-list-map-keys`, `-map-type`) and a validation
rule added or changed are breaking, and so is any other keyword change it cannot classify
(only documentation keywords are known to be harmless).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

_TRACKED_EXTRA: Final = (
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-int-or-string",
    "format",
)
"""Compared by default only to apply a change (never breaking); the gate classifies the
first four and `format` itself (`_conservative`)."""
_TOPOLOGY: Final = {
    "x-kubernetes-list-type": "atomic",
    "x-kubernetes-list-map-keys": None,
    "x-kubernetes-map-type": "granular",
}
"""List/map topology keywords and what their absence means to the API server."""
_CLASSIFIED: Final = frozenset({
    "type", "description", "default", "pattern", "minimum", "maximum", "minLength",
    "maxLength", "minItems", "maxItems", "enum", "properties", "required", "items",
    "additionalProperties", "nullable", "x-kubernetes-preserve-unknown-fields", "format",
    *_TOPOLOGY, "x-kubernetes-validations",
})  # fmt: skip
"""Keywords with a rule of their own; with the gate on, a change to any other keyword that
is not documentation is breaking."""
_PRESERVE: Final = "x-kubernetes-preserve-unknown-fields"
_DOCUMENTATION: Final = frozenset({"title", "example", "externalDocs"})
_RULE_TEXT: Final = frozenset({"message", "messageExpression", "reason", "fieldPath"})
"""Parts of a validation rule that change what a refusal says, not what is refused."""


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between the live and the desired schema."""

    path: str
    kind: str  # PROPERTY_REMOVED, TYPE_CHANGED, ... (upstream's change type names)
    description: str
    breaking: bool


@dataclass(slots=True)
class Report:
    """All differences found; `breaking` lists those that need the allow annotation."""

    changes: list[Change] = field(default_factory=list)

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.breaking]

    def has_changes(self) -> bool:
        return bool(self.changes)

    def summary(self) -> str:
        """`d1; d2; d3; and N more changes` (Q-05)."""
        descriptions = [c.description for c in self.breaking]
        text = "; ".join(descriptions[:3])
        if len(descriptions) > 3:
            text += f"; and {len(descriptions) - 3} more changes"
        return text


def compare(
    old: Mapping[str, Any], new: Mapping[str, Any], *, conservative: bool = False
) -> Report:
    """Differences from `old` (live) to `new` (desired) openAPIV3Schema.

    conservative: the `ConservativeCRDComparison` feature gate (V-11).
    """
    report = Report()
    _compare(old, new, "", report, required_in_parent=False, conservative=conservative)
    return report


def _add(report: Report, path: str, kind: str, description: str, breaking: bool) -> None:
    report.changes.append(Change(path or ".", kind, description, breaking))


def _compare(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    path: str,
    report: Report,
    *,
    required_in_parent: bool,
    conservative: bool,
) -> None:
    if old.get("type") != new.get("type"):
        _add(
            report,
            path,
            "TYPE_CHANGED",
            f"Type changed from {old.get('type')} to {new.get('type')}",
            True,
        )
        return
    if old.get("description") != new.get("description"):
        _add(report, path, "DESCRIPTION_CHANGED", f"Description of {path or 'root'} changed", False)
    if old.get("default") != new.get("default"):
        removed = "default" in old and "default" not in new
        _add(
            report,
            path,
            "REQUIRED_DEFAULT_REMOVED" if removed and required_in_parent else "DEFAULT_CHANGED",
            f"Default of required field {path} was removed"
            if removed and required_in_parent
            else f"Default of {path or 'root'} changed",
            removed and required_in_parent,
        )
    _compare_pattern(old, new, path, report)
    _compare_bounds(old, new, path, report)
    _compare_enum(old, new, path, report)
    _compare_relaxations(old, new, path, report)
    if conservative:
        _conservative(old, new, path, report)
    else:
        for key in _TRACKED_EXTRA:
            if old.get(key) != new.get(key):
                _add(report, path, "EXTENSION_CHANGED", f"{key} of {path or 'root'} changed", False)
    _compare_properties(old, new, path, report, conservative=conservative)
    _compare_map_values(old, new, path, report, conservative=conservative)
    old_items, new_items = old.get("items"), new.get("items")
    if isinstance(old_items, Mapping) and not isinstance(new_items, Mapping):
        _add(report, path, "ITEMS_REMOVED", f"Array items schema of {path} was removed", True)
    elif isinstance(new_items, Mapping) and not isinstance(old_items, Mapping):
        _add(report, path, "ITEMS_ADDED", f"Array items schema of {path} was added", False)
    elif isinstance(old_items, Mapping) and isinstance(new_items, Mapping):
        _compare(
            old_items,
            new_items,
            f"{path}[]",
            report,
            required_in_parent=False,
            conservative=conservative,
        )


def _compare_relaxations(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    """`nullable` and preserve-unknown: taking either away refuses (null) or prunes (unknown
    fields) what instances may already store, so removing them is breaking (V-11)."""
    where = path or "root"
    for key, name in (("nullable", "NULLABLE"), (_PRESERVE, "PRESERVE_UNKNOWN_FIELDS")):
        before, after = old.get(key) is True, new.get(key) is True
        if before and not after:
            _add(report, path, f"{name}_REMOVED", f"{key} was removed from {where}", True)
        elif after and not before:
            _add(report, path, f"{name}_ADDED", f"{key} was added to {where}", False)


def _compare_map_values(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report, *, conservative: bool
) -> None:
    """`additionalProperties`: by default a change is applied but never breaking (upstream does
    not look at map values, V-11); with the gate, value schemas compare like properties and
    any other change of what a map holds is breaking."""
    old_values, new_values = old.get("additionalProperties"), new.get("additionalProperties")
    if old_values == new_values:
        return
    if isinstance(old_values, Mapping) and isinstance(new_values, Mapping):
        inner = Report()
        _compare(
            old_values,
            new_values,
            f"{path}.*",
            inner,
            required_in_parent=False,
            conservative=conservative,
        )
        report.changes.extend(
            c if conservative else Change(c.path, c.kind, c.description, False)
            for c in inner.changes
        )
        return
    _add(
        report,
        path,
        "MAP_VALUES_CHANGED" if conservative else "EXTENSION_CHANGED",
        f"additionalProperties of {path or 'root'} changed",
        conservative,
    )


def _conservative(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    """The classes the `ConservativeCRDComparison` gate adds (V-11)."""
    where = path or "root"
    _compare_narrowing(old, new, path, report, key="format", label="Format")
    for key, absent in _TOPOLOGY.items():
        before, after = old.get(key, absent), new.get(key, absent)
        if before != after:
            _add(
                report,
                path,
                "TOPOLOGY_CHANGED",
                f"{key} of {where} changed from {before} to {after}",
                True,
            )
    _compare_rules(old, new, path, report)
    for key in sorted((set(old) | set(new)) - _CLASSIFIED - _DOCUMENTATION):
        if old.get(key) != new.get(key):
            _add(report, path, "UNCLASSIFIED_CHANGE", f"{key} of {where} changed", True)


def _compare_rules(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    """`x-kubernetes-validations`, rule by rule: a new rule (or a changed one) may refuse
    stored objects on their next update; a removed rule or a new message refuses nothing."""
    where = path or "root"
    before = {_rule_key(r): r for r in old.get("x-kubernetes-validations") or ()}
    after = {_rule_key(r): r for r in new.get("x-kubernetes-validations") or ()}
    for key in sorted(after.keys() - before.keys()):
        _add(
            report,
            path,
            "VALIDATION_RULE_ADDED",
            f"Validation rule {key} was added to {where}",
            True,
        )
    for key in sorted(before.keys() - after.keys()):
        _add(report, path, "VALIDATION_RULE_REMOVED", f"Validation rule {key} was removed", False)
    for key in sorted(before.keys() & after.keys()):
        old_rule, new_rule = before[key], after[key]
        if old_rule == new_rule:
            continue
        changed = {k for k in set(old_rule) | set(new_rule) if old_rule.get(k) != new_rule.get(k)}
        breaking = not changed <= _RULE_TEXT
        _add(
            report,
            path,
            "VALIDATION_RULE_CHANGED",
            f"Validation rule {key} of {where} changed ({', '.join(sorted(changed))})",
            breaking,
        )


def _rule_key(rule: Any) -> str:
    return str(rule.get("rule")) if isinstance(rule, Mapping) else str(rule)


def _compare_properties(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report, *, conservative: bool
) -> None:
    old_props: Mapping[str, Any] = old.get("properties") or {}
    new_props: Mapping[str, Any] = new.get("properties") or {}
    old_required = set(old.get("required") or ())
    new_required = set(new.get("required") or ())
    for name in sorted(set(old_props) - set(new_props)):
        _add(report, _join(path, name), "PROPERTY_REMOVED", f"Property {name} was removed", True)
    for name in sorted(set(new_props) - set(old_props)):
        required_without_default = name in new_required and "default" not in new_props[name]
        _add(
            report,
            _join(path, name),
            "PROPERTY_ADDED",
            f"Required property {name} was added"
            if required_without_default
            else f"Property {name} was added",
            required_without_default,
        )
    for name in sorted(set(old_props) & set(new_props)):
        if name in new_required and name not in old_required:
            _add(
                report, _join(path, name), "REQUIRED_ADDED", f"Field {name} is newly required", True
            )
        elif name in old_required and name not in new_required:
            _add(
                report,
                _join(path, name),
                "REQUIRED_REMOVED",
                f"Field {name} is no longer required",
                False,
            )
        _compare(
            old_props[name],
            new_props[name],
            _join(path, name),
            report,
            required_in_parent=name in new_required,
            conservative=conservative,
        )


def _compare_pattern(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    _compare_narrowing(old, new, path, report, key="pattern", label="Validation pattern")


def _compare_narrowing(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    path: str,
    report: Report,
    *,
    key: str,
    label: str,
) -> None:
    """A keyword whose every value refuses something: added or changed is breaking, removed
    is not (`pattern`, Q-03; `format` with the gate, V-11). Upstream's texts (Q-05)."""
    before, after = old.get(key), new.get(key)
    if before == after:
        return
    kind = key.upper()
    if after is None:
        _add(report, path, f"{kind}_REMOVED", f"{label} {before} was removed", False)
    elif before is None:
        _add(report, path, f"{kind}_ADDED", f"{label} {after} was added", True)
    else:
        _add(report, path, f"{kind}_CHANGED", f"{label} changed from {before} to {after}", True)


_LOWER_BOUNDS = (("minimum", "Minimum"), ("minLength", "MinLength"), ("minItems", "MinItems"))
_UPPER_BOUNDS = (("maximum", "Maximum"), ("maxLength", "MaxLength"), ("maxItems", "MaxItems"))


def _compare_bounds(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    for bounds, lower in ((_LOWER_BOUNDS, True), (_UPPER_BOUNDS, False)):
        for key, label in bounds:
            before, after = old.get(key), new.get(key)
            if before == after:
                continue
            if after is None:
                _add(
                    report,
                    path,
                    f"{key.upper()}_REMOVED",
                    f"{label} constraint {before} was removed",
                    False,
                )
            elif before is None:
                _add(
                    report,
                    path,
                    f"{key.upper()}_ADDED",
                    f"{label} constraint {after} was added",
                    True,
                )
            else:
                breaking = bool(after > before) if lower else bool(after < before)
                _add(
                    report,
                    path,
                    f"{key.upper()}_CHANGED",
                    f"{label} constraint changed from {before} to {after}",
                    breaking,
                )


def _compare_enum(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    before, after = old.get("enum"), new.get("enum")
    if before == after:
        return
    # v0.9 did not see a whole enum come or go; v0.10 refuses a new one (V-11).
    if before is None:
        _add(report, path, "ENUM_ADDED", f"Enum constraint was added to {path or 'root'}", True)
        return
    if after is None:
        _add(
            report, path, "ENUM_REMOVED", f"Enum constraint of {path or 'root'} was removed", False
        )
        return
    for value in before:
        if value not in after:
            _add(report, path, "ENUM_RESTRICTED", f'Enum value "{value}" was removed', True)
    if any(value not in before for value in after):
        _add(report, path, "ENUM_EXPANDED", f"Enum of {path} was expanded", False)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def compare_crds(
    live: Mapping[str, Any], desired: Mapping[str, Any], *, conservative: bool = False
) -> Report:
    """Compare two CRDs' single versions, names, served flags and status subresources.

    conservative: the `ConservativeCRDComparison` feature gate (V-11).
    """
    report = Report()
    live_versions = live.get("spec", {}).get("versions") or [{}]
    desired_versions = desired.get("spec", {}).get("versions") or [{}]
    old_version, new_version = live_versions[0], desired_versions[0]
    if old_version.get("name") != new_version.get("name"):
        _add(
            report,
            "",
            "VERSION_CHANGED",
            f"Version changed from {old_version.get('name')} to {new_version.get('name')}",
            True,
        )
    if old_version.get("served", True) and not new_version.get("served", True):
        _add(report, "", "VERSION_UNSERVED", "Version is no longer served", True)
    if "status" in (old_version.get("subresources") or {}) and "status" not in (
        new_version.get("subresources") or {}
    ):
        _add(report, "", "SUBRESOURCE_REMOVED", "Status subresource was removed", True)
    old_schema = (old_version.get("schema") or {}).get("openAPIV3Schema") or {}
    new_schema = (new_version.get("schema") or {}).get("openAPIV3Schema") or {}
    report.changes.extend(compare(old_schema, new_schema, conservative=conservative).changes)
    if live.get("spec", {}).get("names") != desired.get("spec", {}).get("names"):
        _add(report, "", "NAMES_CHANGED", "CRD names changed", False)
    if old_version.get("additionalPrinterColumns") != new_version.get("additionalPrinterColumns"):
        _add(report, "", "PRINTER_COLUMNS_CHANGED", "Printer columns changed", False)
    return report
