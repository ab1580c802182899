"""kro.engine.decorate: the marks kro puts on every object it applies for a node (R-10).

The owner's labels (from its adapter) are merged *over* the template's, so kro's win; the
node's deletion wave goes in an annotation, which teardown reads to delete in reverse order;
a collection's items also carry their index and the collection's size. Every object names its
node's full path in an annotation (V-16), which a label cannot always hold.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kro.api.names import (
    ANNOTATION_APPLY_ORDER,
    ANNOTATION_NODE_PATH,
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
) -> dict[str, Any]:
    """A copy of `obj` with kro's labels (winning over the template's) and annotations."""
    out = copy.deepcopy(dict(obj))
    metadata = out.setdefault("metadata", {})
    merged = dict(metadata.get("labels") or {})
    merged.update(labels)
    if index is not None and size is not None:
        merged[LABEL_COLLECTION_INDEX] = str(index)
        merged[LABEL_COLLECTION_SIZE] = str(size)
    metadata["labels"] = merged
    annotations = dict(metadata.get("annotations") or {})
    annotations[ANNOTATION_APPLY_ORDER] = str(apply_order)
    annotations[ANNOTATION_NODE_PATH] = node_path
    metadata["annotations"] = annotations
    return out
