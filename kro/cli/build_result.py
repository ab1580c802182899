"""kro.cli.build_result: what checking one RGD (or Graph) from the input produced.

Its own small module because every command that reads RGDs (validate, generate, graph,
render, and the RBAC and explain tools) passes it around, while only some of them need the
compiler that makes it (`rgds`), which is slow to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kro.api.names import RGD_KIND

if TYPE_CHECKING:
    from kro.graph.model import Graph


@dataclass(frozen=True, slots=True)
class BuildResult:
    """One RGD from the input: its graph, or every reason it is invalid (one line each).

    `error` is the first reason (or None), for callers that show one; `source` is the file it
    came from (`STDIN` for `-f -`, empty when the caller passed plain objects).
    """

    name: str
    graph: Graph | None
    error: str | None
    source: str = ""
    errors: tuple[str, ...] = ()
    kind: str = RGD_KIND
    """`ResourceGraphDefinition` or `Graph` (kro.cli.graph_documents): what the input was."""
