"""The fake API server's state: resources, objects, the event log, and write semantics.

Kept apart from the HTTP layer (server.py) so the semantics can be read in one place:

* one global resourceVersion counter; every write bumps it and appends to an event log that
  watches replay from; `compact()` forgets the log so older versions answer 410;
* create/update/patch/delete with uid, generation (bumped on spec changes), a status
  subresource that ignores everything but status (and vice versa), resourceVersion
  preconditions (409), finalizers + deletionTimestamp;
* server-side apply, approximated: field ownership per manager over leaf paths (lists are
  atomic, metadata.finalizers is a set), conflicts (409) unless forced, removal of fields a
  manager stops applying. Real structured-merge-diff is richer; the e2e suite covers it;
* CRDs register their resources (discovery) on create and drop them on delete.
"""

from __future__ import annotations

import copy
import datetime
import itertools
import secrets
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kro.runtime.gvk import GVR

Obj = dict[str, Any]
Path = tuple[str, ...]
Key = tuple[GVR, str, str]  # (gvr, namespace or "", name)

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class FakeResource:
    """One served resource; `subresources` like ("status",) or ("status", "scale")."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True
    subresources: tuple[str, ...] = ("status",)
    verbs: tuple[str, ...] = ALL_VERBS
    singular: str = ""
    short_names: tuple[str, ...] = ()
    from_crd: str | None = None  # the CRD name that registered it

    @property
    def gvr(self) -> GVR:
        return GVR(self.group, self.version, self.resource)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


DEFAULT_RESOURCES: tuple[FakeResource, ...] = (
    FakeResource("", "v1", "namespaces", "Namespace", namespaced=False),
    FakeResource("", "v1", "configmaps", "ConfigMap", subresources=()),
    FakeResource("", "v1", "secrets", "Secret", subresources=()),
    FakeResource("", "v1", "serviceaccounts", "ServiceAccount", subresources=("token",)),
    FakeResource("", "v1", "pods", "Pod"),
    FakeResource("", "v1", "events", "Event", subresources=()),
    FakeResource("apps", "v1", "deployments", "Deployment", subresources=("status", "scale")),
    FakeResource("coordination.k8s.io", "v1", "leases", "Lease", subresources=()),
    FakeResource(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
    ),
)
CRD_GVR = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")


class FakeApiError(Exception):
    """Becomes a Status response; `causes` go to details.causes."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        causes: list[dict[str, str]] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = dict(details or {})
        if causes:
            self.details["causes"] = causes

    def status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        }


@dataclass(slots=True)
class Event:
    rv: int
    gvr: GVR
    type: str
    obj: Obj
    old: Obj | None


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def leaf_paths(value: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Dicts recurse; anything else (lists included) is a leaf. Finalizers are a set."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from leaf_paths(v, (*prefix, str(k)))
    elif prefix == ("metadata", "finalizers") and isinstance(value, list):
        for item in value:
            yield ((*prefix, f"v:{item}"), True)
    else:
        yield prefix, value


def get_path(obj: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


_MISSING = object()


def set_path(obj: Obj, path: Path, value: Any) -> None:
    for part in path[:-1]:
        nxt = obj.get(part)
        if not isinstance(nxt, dict):
            nxt = obj[part] = {}
        obj = nxt
    obj[path[-1]] = value


def del_path(obj: Obj, path: Path) -> None:
    parents: list[tuple[Obj, str]] = []
    for part in path[:-1]:
        nxt = obj.get(part)
        if not isinstance(nxt, dict):
            return
        parents.append((obj, part))
        obj = nxt
    obj.pop(path[-1], None)
    for parent, part in reversed(parents):  # prune dicts the removal emptied
        if parent[part] == {}:
            del parent[part]
        else:
            break


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def json_patch(doc: Obj, ops: Any) -> Obj:
    """RFC 6902 subset: add, remove, replace, test (what controllers send)."""
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise FakeApiError(400, "BadRequest", "json patch must be a list")
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last, _MISSING)
            if current != op.get("value"):
                raise FakeApiError(422, "Invalid", f"test operation failed at {op['path']}")
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif kind == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif kind == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                parent.pop(last)
        else:
            raise FakeApiError(400, "BadRequest", f"unsupported json patch op {kind}")
    return doc


def _fields_v1(paths: set[Path]) -> Obj:
    out: Obj = {}
    for path in paths:
        node = out
        for part in path:
            key = part if part.startswith("v:") else f"f:{part}"
            node = node.setdefault(key, {})
    return out


@dataclass
class ObjectState:
    obj: Obj
    owners: dict[str, tuple[str, set[Path]]] = field(default_factory=dict)  # mgr -> (op, paths)


_IDENTITY_PATHS = {
    ("apiVersion",),
    ("kind",),
    ("metadata", "name"),
    ("metadata", "namespace"),
}
_SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


class FakeState:
    """All objects and the event log. Methods raise FakeApiError for API failures."""

    def __init__(self, resources: tuple[FakeResource, ...]) -> None:
        self.resources: dict[GVR, FakeResource] = {r.gvr: r for r in resources}
        self.objects: dict[Key, ObjectState] = {}
        self.rv = 0
        self.compacted_rv = 0
        self.log: list[Event] = []
        self.listeners: list[Any] = []  # callables(Event)
        self.discovery_listeners: list[Any] = []
        self._names = itertools.count(1)

    # -- resources --------------------------------------------------------------------------

    def resource(self, gvr: GVR) -> FakeResource:
        res = self.resources.get(gvr)
        if res is None:
            raise FakeApiError(404, "NotFound", f"the server could not find the resource {gvr}")
        return res

    def add_resource(self, res: FakeResource) -> None:
        self.resources[res.gvr] = res

    def remove_resource(self, gvr: GVR) -> None:
        self.resources.pop(gvr, None)
        for key in [k for k in self.objects if k[0] == gvr]:
            del self.objects[key]

    # -- reads ------------------------------------------------------------------------------

    def get(self, gvr: GVR, ns: str, name: str) -> Obj:
        res = self.resource(gvr)
        state = self.objects.get((gvr, ns if res.namespaced else "", name))
        if state is None:
            raise _not_found(res, name)
        return state.obj

    def items(self, gvr: GVR, ns: str | None) -> list[Obj]:
        res = self.resource(gvr)
        out = [
            s.obj
            for (g, n, _), s in self.objects.items()
            if g == gvr and (not ns or not res.namespaced or n == ns)
        ]
        out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return out

    # -- writes -----------------------------------------------------------------------------

    def _bump(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _emit(self, gvr: GVR, kind: str, obj: Obj, old: Obj | None) -> None:
        event = Event(self.rv, gvr, kind, obj, old)
        self.log.append(event)
        for listener in list(self.listeners):
            listener(event)

    def _render_managed(self, state: ObjectState) -> None:
        entries = [
            {
                "manager": mgr,
                "operation": op,
                "apiVersion": state.obj.get("apiVersion"),
                "time": now_rfc3339(),
                "fieldsType": "FieldsV1",
                "fieldsV1": _fields_v1(paths),
            }
            for mgr, (op, paths) in state.owners.items()
            if paths
        ]
        if entries:
            state.obj["metadata"]["managedFields"] = entries
        else:
            state.obj["metadata"].pop("managedFields", None)

    def create(
        self,
        gvr: GVR,
        ns: str,
        body: Obj,
        *,
        manager: str | None,
        dry_run: bool,
        op: str = "Update",
    ) -> Obj:
        res = self.resource(gvr)
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
            else:
                raise FakeApiError(
                    422,
                    "Invalid",
                    f"{res.kind} is invalid: metadata.name: Required value",
                    causes=[
                        {
                            "field": "metadata.name",
                            "reason": "FieldValueRequired",
                            "message": "Required value: name or generateName is required",
                        }
                    ],
                )
        if res.namespaced:
            if not ns:
                raise FakeApiError(400, "BadRequest", "namespace is required")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
            ns = ""
        key = (gvr, ns, meta["name"])
        if key in self.objects:
            raise FakeApiError(
                409,
                "AlreadyExists",
                f'{_what(res)} "{meta["name"]}" already exists',
                details={"name": meta["name"], "group": res.group, "kind": res.resource},
            )
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        for k in _SERVER_META:
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta["generation"] = 1
        if dry_run:
            meta["resourceVersion"] = str(self.rv)
            return copy.deepcopy(obj)
        meta["resourceVersion"] = self._bump()
        state = ObjectState(obj)
        state.owners[manager or "unknown"] = (op, self._owned_paths(obj))
        self._render_managed(state)
        self.objects[key] = state
        if gvr == CRD_GVR:
            self._crd_changed(obj)
        self._emit(gvr, "ADDED", obj, None)
        return copy.deepcopy(obj)

    def _owned_paths(self, obj: Obj) -> set[Path]:
        paths = set()
        for path, _ in leaf_paths(obj):
            if path in _IDENTITY_PATHS or (
                len(path) >= 2
                and path[0] == "metadata"
                and path[1] in (*_SERVER_META, "deletionTimestamp")
            ):
                continue
            paths.add(path)
        return paths

    def replace(
        self,
        gvr: GVR,
        ns: str,
        name: str,
        body: Obj,
        *,
        subresource: str | None,
        manager: str | None,
        dry_run: bool,
        precondition_rv: str | None,
    ) -> Obj:
        """PUT and the result of every patch: validates, tracks ownership, bumps, emits."""
        res = self.resource(gvr)
        key = (gvr, ns if res.namespaced else "", name)
        state = self.objects.get(key)
        if state is None:
            raise _not_found(res, name)
        current = state.obj
        if precondition_rv and precondition_rv != current["metadata"]["resourceVersion"]:
            raise FakeApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {res.resource} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                details={"name": name, "group": res.group, "kind": res.resource},
            )
        new = self._combine(res, current, body, subresource)
        if new == current:
            return copy.deepcopy(current)  # no-op writes do not bump the resourceVersion
        if dry_run:
            return copy.deepcopy(new)
        changed = {p for p, v in leaf_paths(new) if get_path(current, p) != v}
        self._take_ownership(state, manager or "unknown", changed, "Update")
        return self._commit(gvr, key, state, new)

    def _combine(self, res: FakeResource, current: Obj, body: Obj, sub: str | None) -> Obj:
        new = copy.deepcopy(body)
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        meta = new.setdefault("metadata", {})
        cur_meta = current["metadata"]
        for k in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
        ):
            if k in cur_meta:
                meta[k] = copy.deepcopy(cur_meta[k])
            else:
                meta.pop(k, None)
        meta["resourceVersion"] = cur_meta["resourceVersion"]
        if sub == "status":
            result = copy.deepcopy(current)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            return result
        if "status" in res.subresources:
            if "status" in current:
                new["status"] = copy.deepcopy(current["status"])
            else:
                new.pop("status", None)
        spec_old = {k: v for k, v in current.items() if k not in ("metadata", "status")}
        spec_new = {k: v for k, v in new.items() if k not in ("metadata", "status")}
        if spec_old != spec_new:
            meta["generation"] = int(cur_meta.get("generation", 1)) + 1
        return new

    def _take_ownership(self, state: ObjectState, manager: str, paths: set[Path], op: str) -> None:
        for mgr, (_, owned) in list(state.owners.items()):
            if mgr != manager:
                owned.difference_update(paths)
                if not owned:
                    del state.owners[mgr]
        _, owned = state.owners.get(manager, (op, set()))
        state.owners[manager] = (op, owned | paths)

    def _commit(self, gvr: GVR, key: Key, state: ObjectState, new: Obj) -> Obj:
        old = state.obj
        new["metadata"]["resourceVersion"] = self._bump()
        state.obj = new
        self._render_managed(state)
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self.objects[key]
            self._emit(gvr, "DELETED", new, old)
            if gvr == CRD_GVR:
                self._crd_deleted(new)
            return copy.deepcopy(new)
        if gvr == CRD_GVR:
            self._crd_changed(new)
        self._emit(gvr, "MODIFIED", new, old)
        return copy.deepcopy(new)

    def apply(
        self,
        gvr: GVR,
        ns: str,
        name: str,
        body: Obj,
        *,
        subresource: str | None,
        manager: str | None,
        force: bool,
        dry_run: bool,
    ) -> Obj:
        if not manager:
            raise FakeApiError(
                400, "BadRequest", "PATCH with apply requires a non-empty fieldManager"
            )
        res = self.resource(gvr)
        key = (gvr, ns if res.namespaced else "", name)
        if (body.get("metadata") or {}).get("name", name) != name:
            raise FakeApiError(400, "BadRequest", "the name of the object does not match the URL")
        state = self.objects.get(key)
        if state is None:
            if subresource:
                raise _not_found(res, name)
            uid = (body.get("metadata") or {}).get("uid")
            if uid:  # as kube-apiserver: a uid in an apply body never creates
                raise FakeApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {res.resource}.{res.group} "{name}": uid '
                    f"mismatch: the provided object specified uid {uid}, and no existing "
                    "object was found",
                )
            body = copy.deepcopy(body)
            body.setdefault("metadata", {})["name"] = name
            return self.create(gvr, ns, body, manager=manager, dry_run=dry_run, op="Apply")
        applied = self._owned_paths(body)
        if subresource == "status":
            applied = {p for p in applied if p[0] == "status"}
        elif "status" in res.subresources:
            applied = {p for p in applied if p[0] != "status"}  # the main resource ignores it
        self._check_conflicts(state, manager, applied, body, force)
        new = copy.deepcopy(state.obj)
        _, previously = state.owners.get(manager, ("Apply", set()))
        others = set().union(*(p for m, (_, p) in state.owners.items() if m != manager))
        for path in previously - applied - others:
            self._remove_path(new, path)
        for path in applied:
            if path[:2] == ("metadata", "finalizers"):
                fins = new["metadata"].setdefault("finalizers", [])
                if path[2][2:] not in fins:
                    fins.append(path[2][2:])
            else:
                set_path(new, path, copy.deepcopy(get_path(body, path)))
        new = self._combine(res, state.obj, new, subresource)
        if dry_run:
            return copy.deepcopy(new)
        if force:
            self._take_ownership(state, manager, applied, "Apply")
        state.owners[manager] = ("Apply", applied)
        if new == state.obj:
            self._render_managed(state)
            return copy.deepcopy(state.obj)
        return self._commit(gvr, key, state, new)

    @staticmethod
    def _remove_path(obj: Obj, path: Path) -> None:
        if path[:2] == ("metadata", "finalizers"):
            fins = obj["metadata"].get("finalizers") or []
            if path[2][2:] in fins:
                fins.remove(path[2][2:])
            if not fins:
                obj["metadata"].pop("finalizers", None)
        else:
            del_path(obj, path)

    @staticmethod
    def _check_conflicts(
        state: ObjectState, manager: str, applied: set[Path], body: Obj, force: bool
    ) -> None:
        if force:
            return
        conflicts = []
        for mgr, (_, owned) in state.owners.items():
            if mgr == manager:
                continue
            for path in sorted(applied & owned):
                if path[:2] == ("metadata", "finalizers"):
                    continue
                if get_path(state.obj, path) != get_path(body, path):
                    conflicts.append((mgr, "." + ".".join(path)))
        if conflicts:
            raise FakeApiError(
                409,
                "Conflict",
                f"Apply failed with {len(conflicts)} conflict(s): "
                + "; ".join(f'conflict with "{m}": {p}' for m, p in conflicts),
                causes=[
                    {
                        "reason": "FieldManagerConflict",
                        "message": f'conflict with "{m}"',
                        "field": p,
                    }
                    for m, p in conflicts
                ],
            )

    def delete(
        self,
        gvr: GVR,
        ns: str,
        name: str,
        options: Obj,
        *,
        dry_run: bool,
    ) -> Obj | None:
        """None means removed (the caller answers with a Status); else the terminating object."""
        res = self.resource(gvr)
        key = (gvr, ns if res.namespaced else "", name)
        state = self.objects.get(key)
        if state is None:
            raise _not_found(res, name)
        meta = state.obj["metadata"]
        pre = options.get("preconditions") or {}
        for field_name in ("uid", "resourceVersion"):
            if pre.get(field_name) and pre[field_name] != meta.get(field_name):
                raise FakeApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: {field_name} in precondition: {pre[field_name]}, "
                    f"{field_name} in object meta: {meta.get(field_name)}",
                )
        if dry_run:
            return copy.deepcopy(state.obj)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return copy.deepcopy(state.obj)
            new = copy.deepcopy(state.obj)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._commit(gvr, key, state, new)
        del self.objects[key]
        final = copy.deepcopy(state.obj)
        final["metadata"]["resourceVersion"] = self._bump()
        self._emit(gvr, "DELETED", final, state.obj)
        if gvr == CRD_GVR:
            self._crd_deleted(final)
        return None

    # -- CRDs -------------------------------------------------------------------------------

    def _crd_resources(self, crd: Obj) -> list[FakeResource]:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        out = []
        for version in spec.get("versions") or ():
            if not version.get("served", True):
                continue
            subs = tuple((version.get("subresources") or {}).keys())
            out.append(
                FakeResource(
                    group=spec.get("group", ""),
                    version=version["name"],
                    resource=names.get("plural", ""),
                    kind=names.get("kind", ""),
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                    subresources=subs,
                    singular=names.get("singular", ""),
                    short_names=tuple(names.get("shortNames") or ()),
                    from_crd=crd["metadata"]["name"],
                )
            )
        return out

    def _crd_changed(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        for gvr in [g for g, r in self.resources.items() if r.from_crd == name]:
            self.resources.pop(gvr)
        for res in self._crd_resources(crd):
            self.resources[res.gvr] = res
        crd.setdefault("status", {})["conditions"] = [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "lastTransitionTime": now_rfc3339(),
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "lastTransitionTime": now_rfc3339(),
                "message": "the initial names have been accepted",
            },
        ]
        crd["status"]["acceptedNames"] = (crd.get("spec") or {}).get("names") or {}
        for listener in list(self.discovery_listeners):
            listener()

    def _crd_deleted(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        for gvr in [g for g, r in self.resources.items() if r.from_crd == name]:
            self.remove_resource(gvr)
        for listener in list(self.discovery_listeners):
            listener()


def _what(res: FakeResource) -> str:
    return f"{res.resource}.{res.group}" if res.group else res.resource


def _not_found(res: FakeResource, name: str) -> FakeApiError:
    return FakeApiError(
        404,
        "NotFound",
        f'{_what(res)} "{name}" not found',
        details={"name": name, "group": res.group, "kind": res.resource},
    )
