"""kro: the Kube Resource Orchestrator, in Python.

A platform team writes a ResourceGraphDefinition (RGD); kro compiles it into a CRD and a
dependency graph and reconciles every instance of that CRD into its resources.

Layers (imports point downwards only; `make lint` checks it with import-linter):

    kro.cli
    kro.controllers                    rgd, graphrevision, instance reconcilers
    kro.applyset | kro.dynamic | kro.graph   siblings that never import each other
    kro.cel                            the CEL engine adapter and kro's function libraries
    kro.api                            API types and every label/annotation/condition name
    kro.runtime                        a controller-runtime-style library with no kro knowledge

`kro._redact` (credential scrubbing for logs, Events, conditions and errors) sits below every
layer and imports nothing of kro, so that the pure `kro.api` and the standalone `kro.runtime`
can share one implementation. `kro.testing` is the local control-plane harness; production code
never imports it.
"""

__version__ = "0.1.0"
