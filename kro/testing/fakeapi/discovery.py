"""The fake API server's discovery documents and label/field selectors (see server.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .state import FakeApiError, FakeResource, Obj

AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def legacy_root(resources: Iterable[FakeResource], core: bool) -> Obj:
    """`/api` (APIVersions) or `/apis` (APIGroupList) without aggregation."""
    if core:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    groups: dict[str, list[str]] = {}
    for res in resources:
        if res.group:
            versions = groups.setdefault(res.group, [])
            if res.version not in versions:
                versions.append(res.version)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": g,
                "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
            }
            for g, vs in sorted(groups.items())
        ],
    }


def aggregated(resources: Iterable[FakeResource], core: bool) -> Obj:
    """`/api` or `/apis` as an APIGroupDiscoveryList (apidiscovery.k8s.io/v2)."""
    groups: dict[str, dict[str, list[Obj]]] = {}
    for res in resources:
        if (res.group == "") != core:
            continue
        entry = {
            "resource": res.resource,
            "responseKind": {"group": res.group, "version": res.version, "kind": res.kind},
            "scope": "Namespaced" if res.namespaced else "Cluster",
            "singularResource": res.singular or res.kind.lower(),
            "verbs": list(res.verbs),
            "shortNames": list(res.short_names),
            "subresources": [
                {
                    "subresource": s,
                    "verbs": ["get", "patch", "update"],
                    "responseKind": {
                        "group": res.group,
                        "version": res.version,
                        "kind": res.kind,
                    },
                }
                for s in res.subresources
            ],
        }
        groups.setdefault(res.group, {}).setdefault(res.version, []).append(entry)
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [
            {
                "metadata": {"name": g},
                "versions": [
                    {"version": v, "resources": rs, "freshness": "Current"} for v, rs in vs.items()
                ],
            }
            for g, vs in sorted(groups.items())
        ],
    }


def resource_list(resources: Iterable[FakeResource], group: str, version: str) -> Obj:
    """`/api/v1` or `/apis/<g>/<v>`: an APIResourceList with `<resource>/<sub>` entries."""
    resources = [r for r in resources if r.group == group and r.version == version]
    if not resources:
        raise FakeApiError(404, "NotFound", "the server could not find the requested resource")
    out = []
    for r in resources:
        out.append(
            {
                "name": r.resource,
                "singularName": r.singular or r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
                "shortNames": list(r.short_names),
            }
        )
        for sub in r.subresources:
            out.append(
                {
                    "name": f"{r.resource}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def parse_selector(text: str) -> list[tuple[str, str, str | None]]:
    """`a=b,c!=d,e,!f` -> [(key, op, value)]; op in =, !=, exists, !exists."""
    out: list[tuple[str, str, str | None]] = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            out.append((k.strip(), "!=", v.strip()))
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            out.append((k.strip(), "=", v.strip()))
        elif term.startswith("!"):
            out.append((term[1:], "!exists", None))
        else:
            out.append((term, "exists", None))
    return out


def selector_matches(
    selector: list[tuple[str, str, str | None]], values: Mapping[str, str]
) -> bool:
    for key, op, value in selector:
        have = values.get(key)
        if (
            (op == "=" and have != value)
            or (op == "!=" and have == value)
            or (op == "exists" and have is None)
            or (op == "!exists" and have is not None)
        ):
            return False
    return True
