"""kro.controllers.instance.settled_record: a settled pass, written down on its instance so that
a restarted controller can confirm it instead of repeating it.

Why: `SettledPasses` (kro.controllers.instance.settled) lives in memory, so a restarted
controller re-read every converged instance and each of its children once (one GET each: 7.2
requests per instance with five ConfigMaps). A pass is a function of what it reads: the graph
revision, the instance, every child, collection and external reference. When a pass needed no
follow-up, the same pass with the same inputs would do nothing. So the pass writes, on its
instance, the annotation `internal.kro.run/settled-inputs` holding

* `instance`: a digest of the graph's identity (RGD uid, revision number and spec hash), what
  else decides what a pass renders (kro's version, the ApplySet tooling, the collection size
  limit) and the whole instance as the pass left it (spec, status, labels, annotations,
  finalizers, uid, generation), except its resourceVersion, its managedFields and this
  annotation (writing it changes the first two; it cannot hold itself);
* `reads`: a digest of every watch request of the pass with the (namespace, name,
  resourceVersion) of every object it covered (scalar children and external references, and
  each member of a collection or selector);
* `watches`: the watch requests themselves (zlib + base64), so that a restarted process knows
  what to declare and look up.

A restarted reconcile reads the instance once (the GET a pass starts with anyway), recomputes
`instance` from it, declares the recorded watches (so the child informers exist and are listed,
as the pass would do) and recomputes `reads` from the informer caches. Only when both digests
are equal does it record the pass as settled in memory and return; anything it cannot confirm
(a malformed record, another revision, a cache not synced, any digest different) runs the pass.

Why this is safe, and never a guess:

* The digests cover every input of a pass, so a record only matches inputs identical to those
  it was made from, whenever it was written: it cannot be stale in a way that matters. A child
  changed or deleted (the cache holds another version, or none), a selector gaining or losing a
  member (the map gains or loses a key), a label or annotation or spec change of the instance,
  another graph revision or another kro version: each changes a digest.
* The instance comes from a GET, not from the metadata-only informer cache, because its status
  is an input too (a pass rewrites a status that differs from the one it computes) and the
  cache does not hold it. A status written after the record (by a pass that failed on a
  transient error, or by a person) changes `instance`, so the restart runs the pass and puts it
  right. Confirming from metadata alone would cost no request but would leave such a status
  standing, or would need a write removing the record before every unsettled status write.
* The children are compared after their watches are declared, as `SettledPasses` does: a
  change after the comparison reaches the instance as an event and runs a pass.
* The record is hidden from the pass's expressions (`without_record`): an RGD copying
  `schema.metadata.annotations` into a child would otherwise change that child whenever the
  record changes, and the record whenever the child changes.

What it costs: one metadata merge patch when an ACTIVE pass settles with inputs whose record
the instance does not already carry, with the resourceVersion the pass left the instance at as
precondition (a record only lands on the instance it describes). It is written after the
status, once no other instance waits (kro.controllers.instance.deferred_records): the record is
for a restarted controller, not for the way to ACTIVE. Nothing else is written, and nothing is
removed: an old record is harmless (see above). A record larger than MAX_RECORD_BYTES is not
written (the restart runs the pass, as before). It holds names, resourceVersions and digests,
never data.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.names import ANNOTATION_SETTLED_INPUTS
from kro.dynamic import LabelSelector, ScalarWatch, SelectorWatch
from kro.dynamic.errors import SelectorError
from kro.dynamic.watches import Versions, WatchRequest
from kro.runtime.gvk import GVR

FORMAT: Final = 1
MAX_RECORD_BYTES: Final = 4096
"""The largest annotation value written: some hundreds of watch requests (~850 bytes for 100)."""
_MAX_WATCHES_JSON: Final = 256 * 1024  # decompression bound: a forged value cannot blow up
_DIGEST_CHARS: Final = 32  # 128 bits of sha256, hex


def _canonical(value: Any) -> Any:
    """JSON as the API server stores it: a whole float is an integer there (1.0 -> 1), and a
    status is digested before the server has stored it (see `instance_digest`)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:_DIGEST_CHARS]


def recorded(instance: Mapping[str, Any]) -> str | None:
    """The record the instance carries, if any."""
    annotations = (instance.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(ANNOTATION_SETTLED_INPUTS)
    return value if isinstance(value, str) else None


def without_record(instance: Mapping[str, Any]) -> Mapping[str, Any]:
    """The instance as a pass's expressions see it: without the record (see the module)."""
    if recorded(instance) is None:
        return instance
    out = dict(instance)
    metadata = dict(out.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    del annotations[ANNOTATION_SETTLED_INPUTS]
    metadata["annotations"] = annotations
    out["metadata"] = metadata
    return out


def instance_digest(identity: str, instance: Mapping[str, Any]) -> str:
    """What a pass read of the instance and its graph; see the module for what is left out.

    Numbers are compared as the server stores them (`_canonical`, which also makes the copy:
    the instance itself is not changed, and its managedFields are never copied)."""
    body = dict(instance)
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        kept = {k: v for k, v in metadata.items() if k not in ("resourceVersion", "managedFields")}
        annotations = kept.get("annotations")
        if isinstance(annotations, Mapping):
            rest = {k: v for k, v in annotations.items() if k != ANNOTATION_SETTLED_INPUTS}
            if rest:
                kept["annotations"] = rest
            else:
                del kept["annotations"]
        body["metadata"] = kept
    return _digest([FORMAT, identity, _canonical(body)])


def _request_json(request: WatchRequest) -> list[Any]:
    gvr = request.gvr
    if isinstance(request, ScalarWatch):
        return ["s", request.node_id, gvr.group, gvr.version, gvr.resource, request.namespace,
                request.name]  # fmt: skip
    return ["c", request.node_id, gvr.group, gvr.version, gvr.resource, request.namespace,
            str(request.selector)]  # fmt: skip


def _request_of(item: Any) -> WatchRequest | None:
    if not isinstance(item, list) or len(item) != 7 or item[0] not in ("s", "c"):
        return None
    kind, node_id, group, version, resource, namespace, last = item
    if not all(isinstance(v, str) for v in (node_id, group, version, resource, last)):
        return None
    gvr = GVR(group, version, resource)
    if kind == "s":
        return ScalarWatch(node_id, gvr, namespace, last) if isinstance(namespace, str) else None
    if namespace is not None and not isinstance(namespace, str):
        return None
    return SelectorWatch(node_id, gvr, namespace, LabelSelector.parse(last))


def reads_digest(reads: Mapping[WatchRequest, Versions]) -> str:
    """Every watch request with the (namespace, name, resourceVersion) of what it covered."""
    return _digest(
        sorted(
            [_request_json(request), sorted([ns, name, rv] for (ns, name), rv in found.items())]
            for request, found in reads.items()
        )
    )


@dataclass(frozen=True, slots=True)
class SettledRecord:
    """The annotation's content: the two digests and the watch requests to recompute `reads`."""

    instance: str
    reads: str
    watches: tuple[WatchRequest, ...]

    @classmethod
    def of(
        cls, identity: str, instance: Mapping[str, Any], reads: Mapping[WatchRequest, Versions]
    ) -> SettledRecord:
        return cls(instance_digest(identity, instance), reads_digest(reads), tuple(reads))

    def encode(self) -> str | None:
        """The annotation value; None when it would exceed MAX_RECORD_BYTES."""
        watches = json.dumps(
            sorted(_request_json(r) for r in self.watches), separators=(",", ":")
        ).encode()
        packed = base64.b64encode(zlib.compress(watches, 9)).decode("ascii")
        value = json.dumps(
            {"v": FORMAT, "instance": self.instance, "reads": self.reads, "watches": packed},
            separators=(",", ":"),
        )
        return value if len(value) <= MAX_RECORD_BYTES else None

    @classmethod
    def decode(cls, value: str) -> SettledRecord | None:
        """The record in an annotation value; None when it is not one this version wrote."""
        if len(value) > MAX_RECORD_BYTES:
            return None
        try:
            body = json.loads(value)
            if not isinstance(body, dict) or body.get("v") != FORMAT:
                return None
            instance, reads, packed = body["instance"], body["reads"], body["watches"]
            if not all(isinstance(v, str) for v in (instance, reads, packed)):
                return None
            inflate = zlib.decompressobj()
            raw = inflate.decompress(base64.b64decode(packed, validate=True), _MAX_WATCHES_JSON)
            if inflate.unconsumed_tail or not inflate.eof:
                return None
            items = json.loads(raw)
            if not isinstance(items, list):
                return None
            watches = tuple(_request_of(item) for item in items)
        except (ValueError, KeyError, TypeError, zlib.error, binascii.Error, SelectorError):
            return None
        if any(w is None for w in watches):
            return None
        return cls(instance, reads, tuple(w for w in watches if w is not None))
