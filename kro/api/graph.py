"""kro.api.graph: every name of the Graph API (`kro.run/v1alpha1` `Graph`, alpha), each once.

A Graph is a namespaced object that is itself a set of resources: kro compiles its nodes, applies
them in dependency order as a ServiceAccount of the Graph's namespace, and removes them when the
Graph goes. Everything kro writes about a Graph, or stamps on what a Graph creates, is a wire
contract shared with upstream kro (dashboards, selectors and other Graphs' field managers match on
these exact strings), so the compiler and the controller import them from here.

Names that are not Graph-only live in `kro.api.names` and are re-exported here for convenience:
the node-path and apply-order annotations and the node-id label are also stamped on RGD children.

Pure data and pure functions, like the rest of kro.api: the field-manager and label functions are
deterministic hashes, so every replica (and upstream kro) computes the same values.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Final

from kro.api.crds import GRAPH_CRD_FILE, crd_from_file
from kro.api.names import (
    ANNOTATION_APPLY_ORDER,
    ANNOTATION_NODE_PATH,
    CONDITION_READY,
    CONDITION_WATCHES_HEALTHY,
    FEATURE_GRAPH_KIND,
    KRO_DOMAIN,
    LABEL_NODE_ID,
    REASON_INVALID_GRAPH,
    REASON_READY,
    V1ALPHA1,
)

__all__ = [
    "ANNOTATION_APPLY_ORDER",
    "ANNOTATION_NODE_PATH",
    "CONDITION_ACCEPTED",
    "CONDITION_READY",
    "CONDITION_RESOURCES_CONVERGED",
    "CONDITION_WATCHES_HEALTHY",
    "EVENT_NODE_ID_ENCODED",
    "FEATURE_GRAPH_KIND",
    "FIELD_MANAGER_PATCH_PREFIX",
    "FIELD_MANAGER_TEMPLATE_PREFIX",
    "GRAPH_API_VERSION",
    "GRAPH_CRD_NAME",
    "GRAPH_DEPENDENT_CONDITIONS",
    "GRAPH_FINALIZER",
    "GRAPH_GROUP",
    "GRAPH_KIND",
    "GRAPH_LIST_KIND",
    "GRAPH_PLURAL",
    "GRAPH_RECORDER",
    "GRAPH_SINGULAR",
    "GRAPH_VERSION",
    "LABEL_NODE_ID",
    "MANAGED_RESOURCES_CAP",
    "MESSAGE_APPLIED",
    "NODE_ID_LABEL_MAX_LENGTH",
    "NODE_ID_PATTERN",
    "REASON_APPLIED",
    "REASON_APPLY_FAILED",
    "REASON_COMPILED",
    "REASON_DATA_PENDING",
    "REASON_DELETE_FAILED",
    "REASON_FIELD_MANAGER_CONFLICT",
    "REASON_INVALID_GRAPH",
    "REASON_PRUNE_FAILED",
    "REASON_READY",
    "REASON_RELEASE_FAILED",
    "REASON_WAITING_FOR_READINESS",
    "RESERVED_ITERATOR_NAMES",
    "RESERVED_NODE_IDS",
    "capped_label_value",
    "compiled_message",
    "graph_crd",
    "graph_hash",
    "node_id_label_value",
    "node_id_problem",
    "own_identity_refusal",
    "patch_field_manager",
    "service_account_username",
    "template_field_manager",
]

# --- API group, version, kind ------------------------------------------------------------------

GRAPH_GROUP: Final = KRO_DOMAIN
GRAPH_VERSION: Final = V1ALPHA1
GRAPH_API_VERSION: Final = f"{GRAPH_GROUP}/{GRAPH_VERSION}"
GRAPH_KIND: Final = "Graph"
GRAPH_LIST_KIND: Final = "GraphList"
GRAPH_PLURAL: Final = "graphs"
GRAPH_SINGULAR: Final = "graph"
GRAPH_CRD_NAME: Final = f"{GRAPH_PLURAL}.{GRAPH_GROUP}"
"""What startup looks for in discovery when `GraphKind` is on (V-40)."""

GRAPH_FINALIZER: Final = "kro.run/graph-finalizer"
"""Added before the first apply; removed once teardown has deleted and released everything
recorded in status (V-64). Distinct from RGD/instance `kro.run/finalizer`."""

# --- Conditions (V-59) -------------------------------------------------------------------------

CONDITION_ACCEPTED: Final = "Accepted"
"""The spec compiled (True/Compiled) or not (False/InvalidGraph); nothing is applied unless True."""
CONDITION_RESOURCES_CONVERGED: Final = "ResourcesConverged"
"""Every node applied and ready (True/Applied), or why not (the first waiting node's reason)."""
GRAPH_DEPENDENT_CONDITIONS: Final = (CONDITION_ACCEPTED, CONDITION_RESOURCES_CONVERGED)
"""What a Graph's root `Ready` aggregates: True only when both are; otherwise it copies the
least healthy one's status, reason and message."""

REASON_COMPILED: Final = "Compiled"
REASON_APPLIED: Final = "Applied"
REASON_WAITING_FOR_READINESS: Final = "WaitingForReadiness"
"""Applied, but a readyWhen is false, or a ref/patch target is missing (`not found`)."""
REASON_DATA_PENDING: Final = "DataPending"
"""An expression references data not present yet."""
REASON_SCHEMA_PENDING: Final = "SchemaPending"
"""A deferred node waits for its kind to be served (DeferredSchemaResolution)."""
REASON_FIELD_MANAGER_CONFLICT: Final = "FieldManagerConflict"
"""A field is owned by a manager kro will not take over (another Graph); names the target."""
REASON_APPLY_FAILED: Final = "ApplyFailed"
REASON_PRUNE_FAILED: Final = "PruneFailed"
REASON_RELEASE_FAILED: Final = "ReleaseFailed"
REASON_DELETE_FAILED: Final = "DeleteFailed"
"""Teardown could not delete or release something; the finalizer stays."""

MESSAGE_APPLIED: Final = "all nodes applied and ready"


def compiled_message(node_count: int) -> str:
    """The message of `Accepted=True`/`Compiled`."""
    return f"compiled {node_count} nodes"


EVENT_NODE_ID_ENCODED: Final = "NodeIDEncoded"
"""Warning Event on the Graph when a node path is too long for the `kro.run/node-id` label and
the label holds its hash instead (V-61)."""
GRAPH_RECORDER: Final = "kro/graph-controller"
"""The reporting controller of the Events kro records on Graphs."""


def node_id_encoded_message(path: str) -> str | None:
    """The `NodeIDEncoded` message for a node path whose label is a hash, None when it fits.

    It names what a user needs to find the node's objects: the path, the label value to select
    on, and the annotation that holds the full path."""
    value = node_id_label_value(path)
    if not value.startswith(NODE_ID_HASH_PREFIX):  # ids have no "-": only a hash does
        return None
    return (
        f'node "{path}" is too long for the {LABEL_NODE_ID} label: its objects are labelled '
        f"{LABEL_NODE_ID}={value} and carry the full path in the annotation "
        f"{ANNOTATION_NODE_PATH}"
    )

# --- Node ids (V-42) ---------------------------------------------------------------------------

NODE_ID_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9]*$"
"""Also the CRD's pattern for `spec.nodes[].id`, and the rule for forEach iterator names."""
_NODE_ID = re.compile(NODE_ID_PATTERN)

RESERVED_NODE_IDS: Final = frozenset(
    {
        # Names kro's expressions and objects already give a meaning to.
        *("apiVersion", "kind", "metadata", "namespace", "spec", "status"),
        *("graph", "graphengine", "kro", "each", "item", "items", "object", "self", "this"),
        "context",
        # CEL's reserved words.
        *("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for"),
        *("function", "if", "import", "let", "loop", "package", "return", "var", "void"),
        "while",
    }
)
RESERVED_ITERATOR_NAMES: Final = RESERVED_NODE_IDS - {"each"}
"""forEach iterator names obey the node-id rules, except that `each` is allowed."""


def node_id_problem(node_id: str) -> str | None:
    """Why `node_id` cannot name a node (the compiler's message), or None when it can."""
    if not _NODE_ID.match(node_id):
        return f'id "{node_id}" must match {NODE_ID_PATTERN}'
    if node_id in RESERVED_NODE_IDS:
        return f'id "{node_id}" is reserved'
    return None


# --- Identity: ServiceAccounts (V-53, V-55) ----------------------------------------------------

DEFAULT_SERVICE_ACCOUNT: Final = "default"


def service_account_username(namespace: str, name: str = "") -> str:
    """The user a Graph in `namespace` applies as: its `spec.serviceAccountName`, or the
    namespace's `default` ServiceAccount when empty (always resolved in the Graph's namespace)."""
    return f"system:serviceaccount:{namespace}:{name or DEFAULT_SERVICE_ACCOUNT}"


def own_identity_refusal(username: str) -> str:
    """`Accepted=False`/`InvalidGraph` message for a Graph that would impersonate kro itself."""
    return (
        f"refusing to apply: Graph would impersonate the kro controller's own ServiceAccount "
        f'("{username}"); choose a different serviceAccountName or move the Graph out of the '
        "controller's namespace"
    )


# --- Field managers (V-62) ---------------------------------------------------------------------

FIELD_MANAGER_TEMPLATE_PREFIX: Final = "kro-graphengine.tmpl."
"""Every template object of one Graph is applied under `<prefix><g>`. An RGD instance meeting a
live object with a manager of this prefix leaves it alone (V-18)."""
FIELD_MANAGER_PATCH_PREFIX: Final = "kro-graphengine.patch."
_HASH_HEX: Final = 12


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def graph_hash(graph_uid: str) -> str:
    """`<g>`: the first 12 hex digits of SHA-256 of the Graph's UID; one per Graph, stable
    across renames of nodes, so a Graph recognises its own managers."""
    return _sha256_hex(graph_uid)[:_HASH_HEX]


def template_field_manager(graph_uid: str) -> str:
    """The one field manager of all template objects of a Graph."""
    return FIELD_MANAGER_TEMPLATE_PREFIX + graph_hash(graph_uid)


def patch_field_manager(graph_uid: str, node_path: str) -> str:
    """The field manager of one patch node: releasing a contribution applies an identity-only
    object under exactly this manager, which drops exactly the fields it contributed."""
    node = _sha256_hex(f"{graph_uid}/{node_path}")[:_HASH_HEX]
    return f"{FIELD_MANAGER_PATCH_PREFIX}{graph_hash(graph_uid)}.{node}"


# --- Node-id label (V-16, V-61) ----------------------------------------------------------------

NODE_ID_LABEL_MAX_LENGTH: Final = 63
"""The limit of a label value."""
NODE_ID_HASH_PREFIX: Final = "h-"
_NODE_ID_HASH_HEX: Final = 40


def capped_label_value(value: str) -> str:
    """`value` when it fits a label value; otherwise `h-` and the first 40 hex digits of its
    SHA-256 (V-16: `kro.run/instance-name` and `-group` of RGD children past 63 characters)."""
    if len(value) <= NODE_ID_LABEL_MAX_LENGTH:
        return value
    return NODE_ID_HASH_PREFIX + _sha256_hex(value)[:_NODE_ID_HASH_HEX]


def node_id_label_value(path: str | Sequence[str]) -> str:
    """Value of `kro.run/node-id` for a node path (`a/b/c`, or its segments).

    The ids joined with `.` when that fits a label value; otherwise `h-` and the first 40 hex
    digits of SHA-256 of the `/`-joined path. The hash is of the path, not of the dotted id,
    so a selector computed from the annotation `internal.kro.run/node-path` always matches.
    """
    segments = path.split("/") if isinstance(path, str) else list(path)
    dotted = ".".join(segments)
    if len(dotted) <= NODE_ID_LABEL_MAX_LENGTH:
        return dotted
    return NODE_ID_HASH_PREFIX + _sha256_hex("/".join(segments))[:_NODE_ID_HASH_HEX]


# --- Status ------------------------------------------------------------------------------------

MANAGED_RESOURCES_CAP: Final = 5000
"""The most entries `status.managedResources` may hold (the CRD's maxItems)."""


def graph_crd() -> dict[str, Any]:
    """The `graphs.kro.run` CustomResourceDefinition (a fresh copy)."""
    return crd_from_file(GRAPH_CRD_FILE)
