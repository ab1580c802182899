"""kro.dynamic.errors: what the dynamic controller raises to its callers.

    DynamicError              base of the tree
    ├── SelectorError         a label selector (string or dict) is malformed; also a ValueError.
    │                         Editing the selector is the only fix, so retrying cannot help.
    ├── InformerSyncTimeout   an informer did not finish its first LIST in time; also a
    │                         TimeoutError. Usually the kind is not served (yet); retrying
    │                         later can help.
    └── WatchForbidden        the API server refused to let kro list/watch a kind it must
                              reconcile (403); also a PermissionError. Raised at the first
                              refusal rather than after the sync deadline, so that the owner
                              can say why at once; retrying once RBAC is granted helps.

Errors a handler raises are not wrapped: the controller judges them (see kro.dynamic.controller).
"""

from __future__ import annotations

from kro.runtime.errors import Forbidden
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


def resource_name(gvr: GVR) -> str:
    """How a resource is named to people: its plural, with the group unless it is core
    (`configmaps`, `deployments.apps`), as kubectl and RBAC messages name it."""
    return f"{gvr.resource}.{gvr.group}" if gvr.group else gvr.resource


class WatchForbidden(DynamicError, PermissionError):
    """kro's identity may not list/watch `gvr`; `error` is the API server's refusal.

    The message names the resource and carries the API server's answer (which says
    `forbidden`): it is what an RGD's `ControllerReady` condition shows.
    """

    def __init__(self, gvr: GVR, error: Forbidden) -> None:
        super().__init__(f"cannot list and watch {resource_name(gvr)}: {error}")
        self.gvr = gvr
        self.error = error
