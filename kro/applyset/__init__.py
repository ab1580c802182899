"""kro.applyset: the ApplySet applier (server-side apply, parent/child labels and annotations,
pruning) and deletion in reverse apply-order waves.

Must not import: kro.graph, kro.dynamic, kro.controllers.
"""
