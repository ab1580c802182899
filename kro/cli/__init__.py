"""kro.cli: the `kro` command (validate, generate, graph, render, explain, controller).

The only layer that wires process-wide concerns: logging setup, Prometheus, signal handling.
A command's module is imported only when that command runs (kro.cli.main.COMMANDS), so
`kro --help` and `kro validate` never pay for `explain`'s cluster client or the controller.
Must not import: kro.testing.
"""
