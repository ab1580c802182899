"""kro.engine.decorate: the marks kro puts on every object it applies for a node (R-10).

The owner's labels are merged *over* the template's; the node's deletion wave, its full path
(V-16) and a collection item's index and size are added. With the DeletionPolicy gate on, the
node's policy is enforced last, whatever the template said (V-32): `Orphaned` is an annotation
on every apply (read back from the live object, V-33); `Delete` is its absence, so flipping
back lets the apply drop it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kro.api.names import (
    ANNOTATION_APPLY_ORDER,
    ANNOTATION_DELETION_POLICY,
    ANNOTATION_NODE_PATH,
    DELETION_POLICY_ORPHANED,
    LABEL_COLLECTION_INDEX,
    LABEL_COLLECTION_SIZE,
)

__all__ = ["decorate"]


def decorate(
    obj: Mapping[str, Any],
    labels: Mapping[str, str],
    apply_order: int,
    *,
    node_path: str,
    index: int | None = None,
    size: int | None = None,
    deletion_policy: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A copy of `obj` with kro's labels and annotations (the owner's, then kro's own, winning
    over the template's); `deletion_policy` (None: not enforced) decides the deletion-policy
    annotation."""
    out = copy.deepcopy(dict(obj))
    metadata = out.setdefault("metadata", {})
    merged = dict(metadata.get("labels") or {})
    merged.update(labels)
    if index is not None and size is not None:
        merged[LABEL_COLLECTION_INDEX] = str(index)
        merged[LABEL_COLLECTION_SIZE] = str(size)
    metadata["labels"] = merged
    marks = {**(metadata.get("annotations") or {}), **(annotations or {})}
    marks[ANNOTATION_APPLY_ORDER] = str(apply_order)
    if deletion_policy == DELETION_POLICY_ORPHANED:
        marks[ANNOTATION_DELETION_POLICY] = DELETION_POLICY_ORPHANED
    elif deletion_policy is not None:
        marks.pop(ANNOTATION_DELETION_POLICY, None)
    marks[ANNOTATION_NODE_PATH] = node_path
    metadata["annotations"] = marks
    return out
