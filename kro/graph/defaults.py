"""kro.graph.defaults: apply OpenAPI `default`s to a value, as the API server does on write.

The controller never needs this (the API server defaults instances before kro reads them); the
offline `kro render` does, so that an instance YAML renders the way it would in a cluster.
Rules of structural-schema defaulting: a missing property with a `default` gets a copy of it,
and defaulting then continues inside it; present values are never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def apply_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    """A defaulted copy of `value` under `schema`."""
    if isinstance(value, Mapping):
        out = {k: copy.deepcopy(v) for k, v in value.items()}
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for name, sub in properties.items():
            if name not in out and "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
            if name in out:
                out[name] = apply_defaults(sub, out[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for name, item in list(out.items()):
                if name not in properties:
                    out[name] = apply_defaults(extra, item)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return (
            [apply_defaults(items, v) for v in value] if isinstance(items, Mapping) else list(value)
        )
    return value
