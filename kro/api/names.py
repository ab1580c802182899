"""kro.api.names: every name kro writes into or reads from the cluster, defined exactly once.

Labels, annotations, finalizers, field managers, condition types and reasons, state values and
feature-gate names are wire contracts: upstream kro, kubectl's ApplySet tooling, dashboards and
existing clusters all match on these exact strings (reference §1.Q, §1.J, §1.K, §1.M, §1.V).
Everything else in kro imports them from here; helpers take a name as a parameter instead of
growing one function per label or condition (style guide §7).

Neighbours: `kro.api.conditions` manipulates conditions by these type names;
`kro.api.v1alpha1` and `kro.api.graphrevision` are the typed views of the two kro APIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# --- API groups, versions, kinds ---------------------------------------------------------------

KRO_DOMAIN: Final = "kro.run"
"""Public API group; also the default `spec.schema.group` of an RGD (A-05)."""
INTERNAL_DOMAIN: Final = "internal.kro.run"
"""Group of kro's internal API (GraphRevision, B-01) and prefix of internal annotations."""

V1ALPHA1: Final = "v1alpha1"
RGD_API_VERSION: Final = "kro.run/v1alpha1"
RGD_KIND: Final = "ResourceGraphDefinition"
RGD_LIST_KIND: Final = "ResourceGraphDefinitionList"
RGD_PLURAL: Final = "resourcegraphdefinitions"
RGD_SINGULAR: Final = "resourcegraphdefinition"
RGD_SHORT_NAME: Final = "rgd"
RGD_CRD_NAME: Final = "resourcegraphdefinitions.kro.run"

GRAPH_REVISION_API_VERSION: Final = "internal.kro.run/v1alpha1"
GRAPH_REVISION_KIND: Final = "GraphRevision"
GRAPH_REVISION_LIST_KIND: Final = "GraphRevisionList"
GRAPH_REVISION_PLURAL: Final = "graphrevisions"
GRAPH_REVISION_SINGULAR: Final = "graphrevision"
GRAPH_REVISION_SHORT_NAME: Final = "gr"
GRAPH_REVISION_CRD_NAME: Final = "graphrevisions.internal.kro.run"
GRAPH_REVISION_SNAPSHOT_NAME_FIELD: Final = "spec.snapshot.name"
"""Selectable field used as a field selector when listing an RGD's revisions (B-01, P-04)."""

SCOPE_NAMESPACED: Final = "Namespaced"
SCOPE_CLUSTER: Final = "Cluster"

LEADER_ELECTION_LEASE: Final = "controller.kro.run"

# --- Labels (§1.Q) -----------------------------------------------------------------------------

LABEL_OWNED: Final = "kro.run/owned"
LABEL_KRO_VERSION: Final = "kro.run/kro-version"
LABEL_RGD_ID: Final = "kro.run/resource-graph-definition-id"
LABEL_RGD_NAME: Final = "kro.run/resource-graph-definition-name"
LABEL_GRAPH_REVISION_HASH: Final = "kro.run/graph-revision-hash"
LABEL_INSTANCE_ID: Final = "kro.run/instance-id"
LABEL_INSTANCE_NAME: Final = "kro.run/instance-name"
LABEL_INSTANCE_NAMESPACE: Final = "kro.run/instance-namespace"
LABEL_INSTANCE_GROUP: Final = "kro.run/instance-group"
LABEL_INSTANCE_VERSION: Final = "kro.run/instance-version"
LABEL_INSTANCE_KIND: Final = "kro.run/instance-kind"
LABEL_NODE_ID: Final = "kro.run/node-id"
LABEL_COLLECTION_INDEX: Final = "kro.run/collection-index"
LABEL_COLLECTION_SIZE: Final = "kro.run/collection-size"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LABEL_APPLYSET_ID: Final = "applyset.kubernetes.io/id"
LABEL_APPLYSET_PART_OF: Final = "applyset.kubernetes.io/part-of"
LABEL_AGGREGATE_TO_CONTROLLER: Final = "rbac.kro.run/aggregate-to-controller"
"""The chart's aggregation-mode selector: ClusterRoles with it set to "true" extend kro's role."""
AGGREGATE_TO_CONTROLLER_VALUE: Final = "true"

OWNED_VALUE: Final = "true"
"""Value of `kro.run/owned` on everything kro owns."""
MANAGED_BY_VALUE: Final = "kro"
"""Value of `app.kubernetes.io/managed-by` on children; also the ownership fallback (P-01)."""

# --- Annotations (§1.Q) ------------------------------------------------------------------------

ANNOTATION_APPLYSET_TOOLING: Final = "applyset.kubernetes.io/tooling"
ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS: Final = "applyset.kubernetes.io/contains-group-kinds"
ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES: Final = "applyset.kubernetes.io/additional-namespaces"
ANNOTATION_APPLYSET_INVENTORY_HASH: Final = "internal.kro.run/applyset-inventory-hash"
ANNOTATION_APPLY_ORDER: Final = "internal.kro.run/apply-order"
ANNOTATION_INSTANCE_NAME: Final = "internal.kro.run/instance-name"
ANNOTATION_INSTANCE_GROUP: Final = "internal.kro.run/instance-group"
"""V-16: the full instance name and group of an RGD child whose labels hold them hashed."""
ANNOTATION_NODE_PATH: Final = "internal.kro.run/node-path"
"""The full node path of a child (the resource id, or the `/`-joined path of a nested Graph
node), never truncated: the `kro.run/node-id` label may hold a hash of it (V-16)."""
ANNOTATION_RECONCILE: Final = "kro.run/reconcile"
ANNOTATION_ALLOW_BREAKING_CHANGES: Final = "kro.run/allow-breaking-changes"
ANNOTATION_CLI_VERSION: Final = "kro.run/cli-version"
ANNOTATION_VERSION: Final = "kro.run/version"
ANNOTATION_DELETION_POLICY: Final = "internal.kro.run/deletion-policy"
"""On a child whose resource declares `deletionPolicy: Orphaned` (V-32); absent otherwise. The
live object's value, not the RGD, decides at deletion and prune time (V-33)."""
DELETION_POLICY_DELETE: Final = "Delete"
DELETION_POLICY_ORPHANED: Final = "Orphaned"
DELETION_POLICIES: Final = (DELETION_POLICY_DELETE, DELETION_POLICY_ORPHANED)
"""The values `spec.resources[].deletionPolicy` accepts (V-30); `Delete` is the default."""
MSG_DELETION_POLICY_TEMPLATE_ONLY: Final = "deletionPolicy is only supported on template resources"
"""The RGD CRD's admission message for a deletionPolicy on an externalRef (V-31), which the
graph build repeats for input that never met admission (`kro validate`)."""

APPLYSET_ID_PREFIX: Final = "applyset-"
APPLYSET_ID_SUFFIX: Final = "-v1"
APPLYSET_TOOLING_PREFIX: Final = "kro/"
"""The tooling annotation is `kro/<GitVersion>`; deletion checks this prefix (D-02)."""
INVENTORY_HASH_PREFIX: Final = "sha256:"

RECONCILE_SUSPENDED: Final = "suspended"
RECONCILE_DISABLED: Final = "disabled"
"""Legacy spelling of `suspended`; both are compared case-insensitively (R-07)."""
ALLOW_BREAKING_CHANGES_VALUE: Final = "true"
"""Only this exact string allows breaking CRD changes (A-26)."""

RESERVED_LABEL_PREFIXES: Final = ("kro.run/", "internal.kro.run/")
"""Templates may not declare top-level labels or annotations with these prefixes (G-09)."""

# --- Finalizers and field managers -------------------------------------------------------------

FINALIZER: Final = "kro.run/finalizer"
"""On RGDs, GraphRevisions and instances (P-02, B-09, D-01)."""

FIELD_MANAGER_APPLYSET: Final = "kro.run/applyset"
"""Server-side apply of children, forced; upgrades depend on this exact name (N-12)."""
FIELD_MANAGER_APPLYSET_PARENT: Final = "kro.run/applyset-parent"
"""Server-side apply of the instance's ApplySet labels and annotations (R-11)."""
FIELD_MANAGER_LABELLER: Final = "kro.run/labeller"
"""Server-side apply of instance labels, finalizer and initial inventory (R-05)."""
FIELD_MANAGER_INSTANCE_STATUS: Final = "kro.run/instance-status"
"""Server-side apply of an instance's whole status through `/status` (V-04; upstream does not
pin the name, only that it differs from the children's manager)."""

# --- Condition statuses ------------------------------------------------------------------------

STATUS_TRUE: Final = "True"
STATUS_FALSE: Final = "False"
STATUS_UNKNOWN: Final = "Unknown"
CONDITION_STATUSES: Final = (STATUS_TRUE, STATUS_FALSE, STATUS_UNKNOWN)

# --- Condition types ---------------------------------------------------------------------------

CONDITION_READY: Final = "Ready"
"""Root condition of RGDs, GraphRevisions and instances; aggregates the others (T-08, P-08)."""

# ResourceGraphDefinition (A-23, P-05..P-08)
CONDITION_GRAPH_REVISIONS_RESOLVED: Final = "GraphRevisionsResolved"
CONDITION_GRAPH_ACCEPTED: Final = "GraphAccepted"
CONDITION_KIND_READY: Final = "KindReady"
CONDITION_CONTROLLER_READY: Final = "ControllerReady"
CONDITION_RESOURCE_GRAPH_ACCEPTED: Final = "ResourceGraphAccepted"
"""Deprecated RGD condition; pruned from status when found (P-08)."""
CONDITION_PERMISSIONS_GRANTED: Final = "PermissionsGranted"
"""kro's own pre-flight (no upstream equivalent, kro.controllers.permissions): present only
while kro's identity lacks a permission the served graph needs (False, which makes the RGD's
`Ready` False) or could not check (Unknown, which does not count towards `Ready`)."""

# GraphRevision (B-05)
CONDITION_GRAPH_VERIFIED: Final = "GraphVerified"

# Instance (T-07)
CONDITION_INSTANCE_MANAGED: Final = "InstanceManaged"
CONDITION_GRAPH_RESOLVED: Final = "GraphResolved"
CONDITION_RESOURCES_READY: Final = "ResourcesReady"
CONDITION_WATCHES_HEALTHY: Final = "WatchesHealthy"
"""Whether kro detects changes to every kind the instance watches (its resources' kinds and
its external references' kinds); not a dependent of Ready (V-14)."""
CONDITION_FIELD_CONFLICT: Final = "FieldConflict"
"""kro-py's own, present only while kro has yielded a field another field manager keeps
rewriting (kro.applyset.contest); not aggregated into Ready, so upstream's lists are unchanged
whenever there is no fight."""

RGD_DEPENDENT_CONDITIONS: Final = (
    CONDITION_GRAPH_REVISIONS_RESOLVED,
    CONDITION_GRAPH_ACCEPTED,
    CONDITION_KIND_READY,
    CONDITION_CONTROLLER_READY,
)
"""The conditions root `Ready` of an RGD aggregates (P-08)."""
RGD_ACTIVE_CONDITIONS: Final = (
    CONDITION_GRAPH_ACCEPTED,
    CONDITION_KIND_READY,
    CONDITION_CONTROLLER_READY,
)
"""All True ⇒ RGD `state=Active`; GraphRevisionsResolved deliberately excluded (N-30)."""
GRAPH_REVISION_DEPENDENT_CONDITIONS: Final = (CONDITION_GRAPH_VERIFIED,)
INSTANCE_DEPENDENT_CONDITIONS: Final = (
    CONDITION_INSTANCE_MANAGED,
    CONDITION_GRAPH_RESOLVED,
    CONDITION_RESOURCES_READY,
)
"""The built-in instance conditions root `Ready` aggregates (T-07)."""
INSTANCE_STATUS_CONDITIONS: Final = (*INSTANCE_DEPENDENT_CONDITIONS, CONDITION_WATCHES_HEALTHY)
"""Every built-in instance condition but root `Ready`: each is listed from the first status
write on, and conditions that transitioned in the same second keep this order (T-09, V-14)."""
INSTANCE_BUILTIN_CONDITIONS: Final = (CONDITION_READY, *INSTANCE_STATUS_CONDITIONS)
"""Types `runtime.condition(schema, X)` may read (C-33; WatchesHealthy too, V-14)."""

# --- Condition reasons -------------------------------------------------------------------------

REASON_READY: Final = "Ready"
"""Root Ready=True on instances and RGDs; also KindReady=True (P-07, T-08)."""
REASON_AWAITING_RECONCILIATION: Final = "AwaitingReconciliation"
"""Initial Unknown reason of a condition nobody has set yet (T-07)."""

# GraphRevisionsResolved (P-05, P-06)
REASON_WAITING_FOR_GRAPH_REVISION_SETTLEMENT: Final = "WaitingForGraphRevisionSettlement"
REASON_WAITING_FOR_GRAPH_REVISION_WARMUP: Final = "WaitingForGraphRevisionWarmup"
REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION: Final = "WaitingForGraphRevisionCompilation"
REASON_RESOLVED: Final = "Resolved"
"""GraphRevisionsResolved=True (RGD) and GraphResolved=True (instance)."""
REASON_FAILED: Final = "Failed"
"""GraphRevisionsResolved=False and KindReady=False (P-05, P-07)."""

# GraphAccepted (P-06)
REASON_VALID: Final = "Valid"
REASON_INVALID_RESOURCE_GRAPH: Final = "InvalidResourceGraph"

# ControllerReady (P-07)
REASON_RUNNING: Final = "Running"
REASON_FAILED_TO_START: Final = "FailedToStart"
REASON_FAILED_LABELER_SETUP: Final = "FailedLabelerSetup"

# PermissionsGranted (kro.controllers.permissions)
REASON_MISSING_PERMISSIONS: Final = "MissingPermissions"
REASON_PERMISSION_CHECK_FAILED: Final = "PermissionCheckFailed"
"""The access reviews could not be made (e.g. forbidden, API server unreachable)."""

# GraphVerified (B-05)
REASON_VERIFIED: Final = "Verified"
REASON_INVALID_GRAPH: Final = "InvalidGraph"

# Instance conditions (T-07, R-03, R-05, R-07, R-08, D-06)
REASON_MANAGED: Final = "Managed"
REASON_MANAGEMENT_FAILED: Final = "ManagementFailed"
REASON_RESOLUTION_FAILED: Final = "ResolutionFailed"
REASON_ALL_RESOURCES_READY: Final = "AllResourcesReady"
REASON_NOT_READY: Final = "NotReady"
REASON_RESOURCE_DELETING: Final = "ResourceDeleting"
REASON_RECONCILIATION_SUSPENDED: Final = "ReconciliationSuspended"
REASON_UNDER_DELETION: Final = "UnderDeletion"
REASON_RESOURCE_GRAPH_DEFINITION_DELETED: Final = "ResourceGraphDefinitionDeleted"
"""InstanceManaged=False on an instance whose RGD was deleted: kro only serves its deletion."""
REASON_FIELD_YIELDED: Final = "FieldYielded"
REASON_SCHEMA_PENDING: Final = "SchemaPending"
"""A deferred node (DeferredSchemaResolution) waits for its kind to be served: the
`ResourcesReady` reason of an instance, the `ResourcesConverged` reason of a Graph."""
"""FieldConflict=True, and the Warning Event: kro stopped applying a contested field."""

# WatchesHealthy (V-14)
REASON_ALL_WATCHES_SYNCED: Final = "AllWatchesSynced"
REASON_WATCHES_PENDING: Final = "WatchesPending"
"""Unknown: a watched kind's informer has not finished its first list."""
REASON_WATCH_BLOCKED: Final = "WatchBlocked"
"""False: the API server refuses kro's list or watch of a watched kind (403)."""
MESSAGE_ALL_WATCHES_SYNCED: Final = "changes to all watched kinds are detected"

# Warning Events of failures a user must act on (kro.controllers.failures); the counters
# instance_errors_total / rgd_errors_total carry the same reasons in snake_case.
EVENT_RESOURCE_APPLY_FAILED: Final = "ResourceApplyFailed"
"""The API server refused a child's apply (422 Invalid, 403 Forbidden, ...)."""
EVENT_RECONCILE_FAILED: Final = "ReconcileFailed"
"""A reconcile failed before anything was applied (an expression, a read, the inventory)."""
EVENT_DELETION_BLOCKED: Final = "DeletionBlocked"
"""An instance's children cannot be deleted, so its finalizer stays."""
EVENT_CRD_INSTALL_FAILED: Final = "CRDInstallFailed"
EVENT_WAITING_FOR_CRD: Final = "WaitingForCRD"
EVENT_CLUSTER_ABANDONED: Final = "ClusterAbandoned"
"""M-16: an owner's deletion gave up on an unreachable member (`kro.run/abandon-cluster`):
what it held there is left in place."""
"""Warning Event, once per owner and kind: a deferred node waits for its kind's CRD."""
"""The CRD an RGD generates could not be created or updated (e.g. a breaking change)."""

# --- States ------------------------------------------------------------------------------------

RGD_STATE_ACTIVE: Final = "Active"
RGD_STATE_INACTIVE: Final = "Inactive"

INSTANCE_STATE_ACTIVE: Final = "ACTIVE"
INSTANCE_STATE_IN_PROGRESS: Final = "IN_PROGRESS"
INSTANCE_STATE_FAILED: Final = "FAILED"
"""Exists in the upstream API but is never written (§6 #12)."""
INSTANCE_STATE_DELETING: Final = "DELETING"
INSTANCE_STATE_ERROR: Final = "ERROR"

NODE_STATE_SYNCED: Final = "SYNCED"
NODE_STATE_WAITING_FOR_READINESS: Final = "WAITING_FOR_READINESS"
NODE_STATE_IN_PROGRESS: Final = "IN_PROGRESS"
NODE_STATE_SKIPPED: Final = "SKIPPED"
NODE_STATE_DELETING: Final = "DELETING"
NODE_STATE_DELETED: Final = "DELETED"
NODE_STATE_ERROR: Final = "ERROR"
NODE_TERMINAL_STATES: Final = (NODE_STATE_SYNCED, NODE_STATE_SKIPPED, NODE_STATE_DELETED)
"""Every node in one of these ⇒ instance ACTIVE (R-15)."""

REVISION_STATE_PENDING: Final = "Pending"
REVISION_STATE_ACTIVE: Final = "Active"
REVISION_STATE_FAILED: Final = "Failed"
"""In-memory registry states of a compiled GraphRevision; never persisted (B-05, N-04)."""

# --- Feature gates (§1.V) ----------------------------------------------------------------------

FEATURE_CEL_OMIT_FUNCTION: Final = "CELOmitFunction"
FEATURE_INSTANCE_CONDITION_EVENTS: Final = "InstanceConditionEvents"
FEATURE_INSTANCE_CONDITION_METRICS: Final = "InstanceConditionMetrics"
FEATURE_CONSERVATIVE_CRD_COMPARISON: Final = "ConservativeCRDComparison"
"""V-11: compare more of a generated CRD's schema, and count what cannot be classified as
breaking (kro.graph.compat)."""
FEATURE_DELETION_POLICY: Final = "DeletionPolicy"
"""V-30: `spec.resources[].deletionPolicy` (`Orphaned` releases a child instead of deleting it)."""
FEATURE_GRAPH_KIND: Final = "GraphKind"
"""V-40: run the Graph controller (kro.api.graph); needs the `graphs.kro.run` CRD installed."""
FEATURE_DEFERRED_SCHEMA_RESOLUTION: Final = "DeferredSchemaResolution"
"""A resource or node whose literal kind is not served yet compiles untyped and waits for its
kind, when it is eligible (an includeWhen reading another node, or `optional: true`)."""
FEATURE_MULTI_CLUSTER: Final = "MultiCluster"
"""M-01: the cluster registry, cluster targets and hub and spokes (kro-py's own, alpha)."""
FEATURE_GATE_DEFAULTS: Final[Mapping[str, bool]] = MappingProxyType(
    {
        FEATURE_CEL_OMIT_FUNCTION: False,
        FEATURE_INSTANCE_CONDITION_EVENTS: False,
        FEATURE_INSTANCE_CONDITION_METRICS: False,
        FEATURE_CONSERVATIVE_CRD_COMPARISON: False,
        FEATURE_DELETION_POLICY: False,
        FEATURE_GRAPH_KIND: False,
        FEATURE_DEFERRED_SCHEMA_RESOLUTION: False,
        FEATURE_MULTI_CLUSTER: False,
    }
)
"""Every gate kro knows (upstream's and MultiCluster), with its default; all are Alpha."""

# --- Fleet: member clusters (M-IDs, docs/fleet.md) ---------------------------------------------

CLUSTER_SECRETS_LABEL_DEFAULT: Final = "multicluster.runtime/cluster=true"
"""M-02: `--cluster-secrets-label`, the label (key=value) that makes a Secret a member cluster
(multicluster-runtime's kubeconfig provider uses the same)."""
CLUSTER_SECRETS_KEY_DEFAULT: Final = "kubeconfig"
"""M-02: `--cluster-secrets-key`, the Secret data key holding the member's kubeconfig."""
LOCAL_CLUSTER_NAME_DEFAULT: Final = "local"
"""M-02: `--local-cluster-name`, the hub's own name as a target; never a Secret."""
LABEL_HUB: Final = "kro.run/hub"
"""M-14: on every object kro applies into a member cluster: the hub's cluster name."""
ANNOTATION_ABANDON_CLUSTER: Final = "kro.run/abandon-cluster"
"""M-16: on an owner being deleted, `<name>[,<name>]`: give up on those unreachable members
(their objects are left, a Warning Event lists them)."""
ANNOTATION_APPLYSET_CLUSTERS: Final = "internal.kro.run/applyset-clusters"
"""M-15: on an ApplySet parent, the member clusters its children may live in (written ahead of
an apply into one, shrunk after a clean prune), so prune and teardown list every cluster."""
ANNOTATION_TARGET_CLUSTER: Final = "internal.kro.run/target-cluster"
"""M-10/M-11: where a node's compiled template carries its target cluster (a literal or a
`${}` expression, so it is typed, depends and fans out like any field); the pass reads and
removes it before anything is applied, so no object ever carries it."""
LABEL_DISTRIBUTE: Final = "kro.run/distribute"
"""M-20: `"false"` on an RGD keeps its CRD on the hub only (hub and spokes)."""
ANNOTATION_ORIGINATING_CLUSTER: Final = "kro.run/originating-cluster"
"""M-21: on a child a target sends away from its instance's member: where the instance lives."""
REASON_CLUSTER_NOT_FOUND: Final = "ClusterNotFound"
"""M-12: a target names no registered, Ready cluster."""
REASON_CLUSTER_FORBIDDEN: Final = "ClusterForbidden"
"""M-13: a Graph's ServiceAccount may not `get` the cluster's Secret."""
REASON_CLUSTER_UNREACHABLE: Final = "ClusterUnreachable"
"""M-16: a member cannot be reached: the owner's deletion waits for it (or its abandonment)."""
