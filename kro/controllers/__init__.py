"""kro.controllers: the reconcilers that make kro a product: ResourceGraphDefinition,
GraphRevision and instance controllers, wired on kro.runtime, kro.graph, kro.dynamic and
kro.applyset.

Must not import: kro.cli, kro.testing.
"""
