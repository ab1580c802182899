"""kro.cli: the `kro` command (validate, generate, graph, render, controller).

The only layer that wires process-wide concerns: logging setup, Prometheus, signal handling.
Must not import: kro.testing.
"""
