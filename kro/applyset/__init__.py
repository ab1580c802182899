"""kro.applyset: the ApplySet applier (server-side apply, parent/child labels and annotations,
pruning) and deletion in reverse apply-order waves.

Must not import: kro.graph, kro.dynamic, kro.controllers. Generic over "desired objects": it
knows ApplySets (kubectl's KEP-3659 labels plus kro's inventory hash and apply-order
annotation), not graphs, CEL or RGDs. The caller renders objects, resolves their GVRs, reads the
live ones, and passes topological positions for pruning.

Entry points, in the order an instance reconcile uses them:

* `empty_inventory_metadata(parent, tooling)`: what the labeller (R-05) adds to its first write.
* `Applier(client, ApplierOptions(tooling=...)).apply(parent_obj, parent_gvr, [Desired...])`
  projects the inventory onto the parent, then force-applies the batch (R-11, R-12).
* `prune(client, result, positions=..., all_resolved=...)` deletes orphans (R-13); after a
  clean prune write `PruneResult.inventory` with `Applier.ensure_inventory`.
* `delete_next_wave(client, parent_obj, parent_gvr)` until `done` (D-02..D-05).

`kro.engine.applyset_ownership.ApplySetOwnership` is these steps in order, as the engine's
ownership of an RGD instance: it is the example to read.
"""

from kro.applyset.applier import AppliedResource as AppliedResource
from kro.applyset.applier import Applier as Applier
from kro.applyset.applier import ApplierOptions as ApplierOptions
from kro.applyset.applier import ApplyResult as ApplyResult
from kro.applyset.applier import Desired as Desired
from kro.applyset.applier import check_duplicates as check_duplicates
from kro.applyset.applier import combined as combined
from kro.applyset.cache import AppliedCache as AppliedCache
from kro.applyset.cache import MemberLedger as MemberLedger
from kro.applyset.contest import Contest as Contest
from kro.applyset.deletion import apply_order as apply_order
from kro.applyset.deletion import delete_next_wave as delete_next_wave
from kro.applyset.errors import ApplySetError as ApplySetError
from kro.applyset.errors import DuplicateResources as DuplicateResources
from kro.applyset.errors import InvalidInventory as InvalidInventory
from kro.applyset.errors import OwnershipConflict as OwnershipConflict
from kro.applyset.errors import ReleaseFailed as ReleaseFailed
from kro.applyset.inventory import GroupKind as GroupKind
from kro.applyset.inventory import Inventory as Inventory
from kro.applyset.inventory import Parent as Parent
from kro.applyset.inventory import applyset_id as applyset_id
from kro.applyset.inventory import empty_inventory_metadata as empty_inventory_metadata
from kro.applyset.inventory import has_inventory_metadata as has_inventory_metadata
from kro.applyset.inventory import inventory_hash as inventory_hash
from kro.applyset.inventory import is_rendered as is_rendered
from kro.applyset.inventory import project as project
from kro.applyset.inventory import read_inventory as read_inventory
from kro.applyset.inventory import render as render
from kro.applyset.inventory import tooling_for as tooling_for
from kro.applyset.members import Member as Member
from kro.applyset.members import list_members as list_members
from kro.applyset.prune import orphan_waves as orphan_waves
from kro.applyset.prune import prune as prune
from kro.runtime.objectref import ObjectRef as ObjectRef

__all__ = [
    "AppliedCache",
    "AppliedResource",
    "Applier",
    "ApplierOptions",
    "ApplyResult",
    "ApplySetError",
    "Contest",
    "Desired",
    "DuplicateResources",
    "GroupKind",
    "InvalidInventory",
    "Inventory",
    "Member",
    "MemberLedger",
    "ObjectRef",
    "OwnershipConflict",
    "Parent",
    "ReleaseFailed",
    "apply_order",
    "applyset_id",
    "check_duplicates",
    "combined",
    "delete_next_wave",
    "empty_inventory_metadata",
    "has_inventory_metadata",
    "inventory_hash",
    "is_rendered",
    "list_members",
    "orphan_waves",
    "project",
    "prune",
    "read_inventory",
    "render",
    "tooling_for",
]
