"""kro.dynamic.errors: what the dynamic controller raises to its callers.

    DynamicError              base of the tree
    ├── SelectorError         a label selector (string or dict) is malformed; also a ValueError.
    │                         Editing the selector is the only fix, so retrying cannot help.
    └── InformerSyncTimeout   an informer did not finish its first LIST in time; also a
                              TimeoutError. Usually the kind is not served (yet) or RBAC forbids
                              listing it; retrying later can help.

Errors a handler raises are not wrapped: the controller judges them (see kro.dynamic.controller).
"""

from __future__ import annotations

from kro.runtime.gvk import GVR


class DynamicError(Exception):
    """Base for every error kro.dynamic raises."""


class SelectorError(DynamicError, ValueError):
    """A label selector cannot be parsed or violates Kubernetes' label syntax."""

    def __init__(self, message: str, *, selector: str = "") -> None:
        super().__init__(f"{message}: {selector!r}" if selector else message)
        self.selector = selector


class InformerSyncTimeout(DynamicError, TimeoutError):
    """The informer for `gvr` had not listed after `timeout_s`; its reference was released."""

    def __init__(self, gvr: GVR, timeout_s: float) -> None:
        super().__init__(f"informer for {gvr} did not sync within {timeout_s}s")
        self.gvr = gvr
        self.timeout_s = timeout_s
