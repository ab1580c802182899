"""kro.applyset.release: let go of a member instead of deleting it (deletionPolicy, V-33..V-35).

A child whose live object carries `internal.kro.run/deletion-policy: Orphaned` (exactly that
value: the object decides, not the RGD, so a changed policy takes effect once an apply records
it) is released wherever kro would otherwise delete it: when its owner is deleted
(kro.applyset.deletion) and when it is pruned (kro.applyset.prune).

Releasing removes kro's claim and nothing else: every label and annotation under `kro.run/` or
`internal.kro.run/`, the ApplySet `part-of` label (so no list of the ApplySet finds it again),
and `app.kubernetes.io/managed-by` when it says `kro`. The author's keys, spec, data and
`metadata.ownerReferences` stay (ownerReferences pointing at the owner still let the garbage
collector delete the object).

The write is a merge patch of exactly those keys carrying the listed resourceVersion, so a
member changed since it was listed is a conflict, looked at again on the next pass; one already
gone is released; one with nothing of kro's on it is not written at all.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from kro.api.names import (
    ANNOTATION_DELETION_POLICY,
    DELETION_POLICY_ORPHANED,
    FIELD_MANAGER_APPLYSET,
    LABEL_APPLYSET_PART_OF,
    LABEL_MANAGED_BY,
    MANAGED_BY_VALUE,
    RESERVED_LABEL_PREFIXES,
)
from kro.applyset.members import Failure, Member, Outcome
from kro.runtime.client import Client
from kro.runtime.errors import Conflict, KubeError, NotFound

__all__ = [
    "ON_DELETION",
    "ON_PRUNE",
    "claim_keys",
    "is_orphaned",
    "release_member",
    "release_patch",
]

log = structlog.get_logger(__name__)

ON_PRUNE = "release orphan"
ON_DELETION = "release orphaned resource"
"""How a failed release is named (`Failure.action`) by prune and by an owner's deletion."""


def is_orphaned(member: Member) -> bool:
    """Whether the live member asks to be released rather than deleted (V-33)."""
    return member.annotations.get(ANNOTATION_DELETION_POLICY) == DELETION_POLICY_ORPHANED


def _kro_key(key: str) -> bool:
    return key.startswith(RESERVED_LABEL_PREFIXES)


def claim_keys(
    labels: Mapping[str, str], annotations: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """(labels, annotations) that state kro's claim on an object, sorted (V-35)."""
    label_keys = [
        key
        for key, value in labels.items()
        if _kro_key(key)
        or key == LABEL_APPLYSET_PART_OF
        or (key == LABEL_MANAGED_BY and value == MANAGED_BY_VALUE)
    ]
    return sorted(label_keys), sorted(k for k in annotations if _kro_key(k))


def release_patch(member: Member) -> dict[str, object] | None:
    """The merge patch that releases `member` (None: nothing to remove). The resourceVersion
    in it makes the API server refuse the patch if the object changed since it was listed."""
    labels, annotations = claim_keys(member.labels, member.annotations)
    if not labels and not annotations:
        return None
    metadata: dict[str, object] = {
        "resourceVersion": member.resource_version,
        "labels": dict.fromkeys(labels),
        "annotations": dict.fromkeys(annotations),
    }
    return {"metadata": {key: value for key, value in metadata.items() if value}}


async def release_member(
    client: Client, member: Member, *, action: str = ON_PRUNE
) -> Outcome | Failure:
    """Release one member (see the module docstring); API errors other than NotFound and
    Conflict come back as a Failure named `action`, so the caller keeps its claim."""
    patch = release_patch(member)
    if patch is None:
        return Outcome.UNCLAIMED
    ref = member.ref
    try:
        await client.patch(
            ref.gvr,
            ref.name,
            patch,
            namespace=ref.namespace or None,
            patch_type="merge",
            field_manager=FIELD_MANAGER_APPLYSET,
        )
    except NotFound:
        return Outcome.GONE
    except Conflict:
        log.debug("applyset.release_conflict", gvr=str(ref.gvr), name=ref.name)
        return Outcome.CONFLICT
    except KubeError as err:
        return Failure(ref, err, action)
    log.info(
        "applyset.member_released",
        gvr=str(ref.gvr),
        namespace=ref.namespace,
        name=ref.name,
        uid=ref.uid,
    )
    return Outcome.RELEASED
