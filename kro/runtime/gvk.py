"""kro.runtime.gvk: the identity of a Kubernetes type, as a kind (GVK) or a resource (GVR).

Both are frozen, slotted and hashable so they can key caches, informer maps and queues.
`apiVersion` strings are parsed here once; the core group is the empty string.
"""

from __future__ import annotations

from dataclasses import dataclass


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> ("apps", "v1"); `v1` -> ("", "v1")."""
    group, sep, version = api_version.rpartition("/")
    return (group, version) if sep else ("", api_version)


@dataclass(frozen=True, slots=True)
class GVK:
    """A kind: what a manifest says in apiVersion + kind."""

    group: str
    version: str
    kind: str

    @classmethod
    def from_object(cls, obj: object) -> GVK:
        """Read apiVersion and kind from a manifest dict."""
        if not isinstance(obj, dict):
            raise TypeError("expected a Kubernetes object as a dict")
        group, version = split_api_version(str(obj.get("apiVersion", "")))
        return cls(group, version, str(obj.get("kind", "")))

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class GVR:
    """A resource: what a URL path names (`/apis/<group>/<version>/<resource>`)."""

    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def label(self) -> str:
        """Go's GroupVersionResource.String(), the form of metric labels and log fields:
        `apps/v1, Resource=deployments`, core `/v1, Resource=configmaps`."""
        return f"{self.group}/{self.version}, Resource={self.resource}"

    def __str__(self) -> str:
        return (
            f"{self.resource}.{self.version}.{self.group}"
            if self.group
            else (f"{self.resource}.{self.version}")
        )
