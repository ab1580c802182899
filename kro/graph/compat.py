"""kro.graph.compat: is a new version of a generated CRD schema safe for existing instances?

When an RGD changes, kro regenerates its CRD. Some changes would strand instances already
stored in etcd (a removed property, a retyped field, a new required field without a default),
so they are refused unless the RGD carries `kro.run/allow-breaking-changes: "true"` (Q-03).

Upstream compares only a subset of OpenAPI keywords (Q-02); we compare the same subset so that
"no change" decisions, and therefore writes, match upstream. We deliberately also report
changes to `x-kubernetes-validations`, list types, preserve-unknown and additionalProperties as
non-breaking changes, so that they are applied (upstream silently drops them, N-17); this is
recorded in docs/compatibility.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_TRACKED_EXTRA = (
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "format",
)


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


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> Report:
    """Differences from `old` (live) to `new` (desired) openAPIV3Schema."""
    report = Report()
    _compare(old, new, "", report, required_in_parent=False)
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
    for key in _TRACKED_EXTRA:
        if old.get(key) != new.get(key):
            _add(report, path, "EXTENSION_CHANGED", f"{key} of {path or 'root'} changed", False)
    _compare_properties(old, new, path, report)
    if old.get("additionalProperties") != new.get("additionalProperties"):
        old_ap, new_ap = old.get("additionalProperties"), new.get("additionalProperties")
        if isinstance(old_ap, Mapping) and isinstance(new_ap, Mapping):
            _compare(old_ap, new_ap, f"{path}.*", report, required_in_parent=False)
        else:
            _add(
                report,
                path,
                "EXTENSION_CHANGED",
                f"additionalProperties of {path or 'root'} changed",
                False,
            )
    old_items, new_items = old.get("items"), new.get("items")
    if isinstance(old_items, Mapping) and not isinstance(new_items, Mapping):
        _add(report, path, "ITEMS_REMOVED", f"Array items schema of {path} was removed", True)
    elif isinstance(new_items, Mapping) and not isinstance(old_items, Mapping):
        _add(report, path, "ITEMS_ADDED", f"Array items schema of {path} was added", False)
    elif isinstance(old_items, Mapping) and isinstance(new_items, Mapping):
        _compare(old_items, new_items, f"{path}[]", report, required_in_parent=False)


def _compare_properties(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
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
        )


def _compare_pattern(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, report: Report
) -> None:
    before, after = old.get("pattern"), new.get("pattern")
    if before == after:
        return
    if after is None:
        _add(report, path, "PATTERN_REMOVED", f"Validation pattern {before} was removed", False)
    elif before is None:
        _add(report, path, "PATTERN_ADDED", f"Validation pattern {after} was added", True)
    else:
        _add(
            report,
            path,
            "PATTERN_CHANGED",
            f"Validation pattern changed from {before} to {after}",
            True,
        )


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
    if before == after or before is None or after is None:
        return  # adding or removing a whole enum is not detected upstream
    for value in before:
        if value not in after:
            _add(report, path, "ENUM_RESTRICTED", f'Enum value "{value}" was removed', True)
    if any(value not in before for value in after):
        _add(report, path, "ENUM_EXPANDED", f"Enum of {path} was expanded", False)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def compare_crds(live: Mapping[str, Any], desired: Mapping[str, Any]) -> Report:
    """Compare two CRDs' single versions, names, served flags and status subresources."""
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
    report.changes.extend(compare(old_schema, new_schema).changes)
    if live.get("spec", {}).get("names") != desired.get("spec", {}).get("names"):
        _add(report, "", "NAMES_CHANGED", "CRD names changed", False)
    if old_version.get("additionalPrinterColumns") != new_version.get("additionalPrinterColumns"):
        _add(report, "", "PRINTER_COLUMNS_CHANGED", "Printer columns changed", False)
    return report
