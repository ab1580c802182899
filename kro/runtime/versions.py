"""kro.runtime.versions: which of two resourceVersions of one object is older.

Kubernetes long called resourceVersions opaque, but the API server (etcd's revision) has always
made them decimal integers that grow with every write, client-go's MutationCache has compared
them that way for years, and the API now guarantees it: resourceVersions from one API server
are comparable integers. Comparing them lets a controller tell an informer that merely lags
behind its own last write (the watch event is on its way) from an object someone changed.

Anything that is not a plain decimal integer cannot be compared: the caller must then fall back
to what it did without the comparison.
"""

from __future__ import annotations


def older(version: str, than: str) -> bool | None:
    """Whether resourceVersion `version` is older than `than` (False when equal or newer);
    None when either is not a decimal integer."""
    if not (version.isascii() and version.isdigit() and than.isascii() and than.isdigit()):
        return None
    return int(version) < int(than)


def not_newer(version: str | None, than: str) -> bool:
    """Whether a cache showing `version` holds `than` or an older version of the object (it has
    yet to deliver a write we already know of): no change since `than`. False when absent
    (None) or when the versions cannot be compared and differ."""
    return version is not None and (version == than or older(version, than) is True)
