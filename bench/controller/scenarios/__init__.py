"""The registry of `--scenario`s: name -> scenario (scenario.Scenario). Adding one is a module
here with a `SCENARIO` and a line below; the order is the order `--help` lists them in."""

from __future__ import annotations

from ..scenario import Scenario
from . import configmaps, fifty, graph_decorator, spokes, three

SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        three.SCENARIO,
        configmaps.SCENARIO,
        fifty.SCENARIO,
        graph_decorator.SCENARIO,
        spokes.SCENARIO,
    )
}
