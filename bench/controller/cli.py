"""The command line of bench/bench_controller.py: the flags every scenario shares, those the
scenarios add, the checks, and the hand-over to the chosen scenario."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from .floors import FLOOR_NAMES, floor_order
from .harness import SETTINGS
from .scenario import refused_options
from .scenarios import SCENARIOS


def parser(description: str | None = None) -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    made.add_argument("--instances", type=int, default=200)
    made.add_argument("--workers", type=int, default=16)
    made.add_argument("--steady-seconds", type=float, default=60.0)
    made.add_argument("--scenario", choices=tuple(SCENARIOS), default="three")
    made.add_argument(
        "--floor", action="store_true", help="also time a plain client making the same objects"
    )
    made.add_argument(
        "--floor-order",
        type=floor_order,
        default=tuple(FLOOR_NAMES),
        help="the order the floors run in after kro's run (default create,apply,upstream)",
    )
    made.add_argument(
        "--restart",
        action="store_true",
        help="restart the controller once converged: time to steady state, writes, requests",
    )
    made.add_argument(
        "--fight",
        action="store_true",
        help="the Deployment template also sets an annotation kube-controller-manager owns; "
        "the steady window starts once kro has yielded it on every instance",
    )
    made.add_argument(
        "--scaling", type=int, default=0, help="instead: this many instances for each worker count"
    )
    made.add_argument(
        "--no-state-gauges",
        action="store_true",
        help="run the controller without instances_by_state / rgds_by_state (KRO_STATE_GAUGES=0), "
        "to compare its CPU with a default run",
    )
    made.add_argument(
        "--replicas",
        type=int,
        default=0,
        help="run this many `kro controller --shards=auto` replicas instead of one controller",
    )
    made.add_argument(
        "--namespaces",
        type=int,
        default=30,
        help="with --replicas: spread the instances over this many namespaces; with "
        "--scenario graph-decorator: the labelled Namespaces the Graph decorates",
    )
    made.add_argument(
        "--profile",
        choices=("memory", "cpu"),
        help="run the controller under tracemalloc or cProfile and print, once every instance "
        "is ACTIVE, its top allocations (by file, line, kro line; live objects by type) or its "
        "top functions by cumulative and self time",
    )
    made.add_argument(
        "--client-qps",
        type=float,
        default=SETTINGS.client_qps,
        help="the controller's --client-qps (burst: twice that). 500 is what the side-by-side "
        "runs with upstream used; at 22 requests per instance it alone sets 44 s per 1,000 "
        "instances, so pass more to see what the API server and kro can do",
    )
    made.add_argument(
        "--no-skip-unchanged",
        action="store_true",
        help="run the controller with --skip-unchanged=false (its memory of unchanged objects "
        "off), to see what the memory saves",
    )
    made.add_argument(
        "--pin",
        action="store_true",
        help="pin the local control plane to the first CPU and kro and this script to the "
        "others, to see which side is busy (needs its own control plane: no KUBECONFIG)",
    )
    for scenario in SCENARIOS.values():
        scenario.add_arguments(made)
    return made


def parse(argv: Sequence[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The arguments, checked: a combination no scenario run makes is a parser error."""
    made = parser(description)
    args = made.parse_args(argv)
    scenario = SCENARIOS[args.scenario]
    if args.pin and (os.environ.get("KUBECONFIG") or args.scaling or args.replicas):
        made.error("--pin needs the script's own control plane, and one run")
    if refused := refused_options(scenario, args):
        made.error(f"--scenario {scenario.name} does not take {', '.join(refused)}")
    if problem := scenario.check(args):
        made.error(problem)
    return args


def main(argv: Sequence[str] | None = None, description: str | None = None) -> None:
    args = parse(argv, description)
    SETTINGS.client_qps = args.client_qps
    SETTINGS.skip_unchanged = not args.no_skip_unchanged
    if args.no_state_gauges:
        os.environ["KRO_STATE_GAUGES"] = "0"  # the controller subprocess inherits it
    SCENARIOS[args.scenario].run(args)
