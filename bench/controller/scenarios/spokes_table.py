"""The spokes scenario's comparison (the issue's goals) and its table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

RSS_GOAL_MIB = 15.0
"""Issue 35: at most this much more controller memory per member at 300 instances each."""
TIME_GOAL = 1.2
"""Issue 35: hub and spokes within this factor of one cluster's time to all ACTIVE."""


def compare(
    spread: Mapping[str, Any], one: Mapping[str, Any] | None, members: int
) -> dict[str, Any]:
    """The issue's figures: the time ratio (goal <= 1.2), RSS growth per member (goal <= 15
    MiB), requests in the quiet window (goal 0)."""
    idle = (spread["rss_members_idle_mib"] - spread["rss_before_members_mib"]) / members
    found: dict[str, Any] = {
        "rss_growth_per_member_idle_mib": idle,
        "quiet_requests_fleet": spread["quiet_requests"],
    }
    if one is None:
        return found
    if spread["all_active_s"] and one["all_active_s"]:
        found["time_to_active_ratio"] = spread["all_active_s"] / one["all_active_s"]
    found["rss_growth_per_member_at_size_mib"] = (
        spread["controller_peak_rss_mib"] - one["controller_peak_rss_mib"]
    ) / members
    found["requests_per_instance_ratio"] = (
        spread["controller_requests_per_instance"] / one["controller_requests_per_instance"]
    )
    found["quiet_requests_one_cluster"] = one["quiet_requests"]
    return found


# -- the table ----------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _rows(
    spread: Mapping[str, Any], one: Mapping[str, Any] | None
) -> Iterable[tuple[str, str, str]]:
    def both(show: Callable[[Mapping[str, Any]], str]) -> tuple[str, str]:
        return show(spread), show(one) if one else "-"

    def pair(key: str, digits: int = 1) -> tuple[str, str]:
        return both(lambda r: _fmt(r.get(key), digits))

    yield "load average at start (1 min)", *both(lambda r: _fmt(r["load_average_at_start"][0], 2))
    yield "time to all ACTIVE (s)", *pair("all_active_s")
    yield (
        "p50 / p99 create->ACTIVE (s)",
        *both(
            lambda r: f"{_fmt(r['p50_create_to_active_s'])} / {_fmt(r['p99_create_to_active_s'])}"
        ),
    )
    yield "controller quiet again (s)", *pair("all_settled_s")
    yield "controller requests / instance", *pair("controller_requests_per_instance", 2)
    yield "controller CPU (s)", *pair("controller_cpu_s")
    yield "controller RSS at start-up (MiB)", *pair("startup_rss_mib")
    yield (
        "RSS, kind served, 0 instances (MiB)",
        *both(lambda r: _fmt(r.get("rss_members_idle_mib", r.get("rss_idle_mib")))),
    )
    yield "controller peak RSS (MiB)", *pair("controller_peak_rss_mib")
    yield "controller RSS once settled (MiB)", *pair("controller_rss_settled_mib")
    yield "hub control plane CPU (s)", *pair("hub_control_plane_cpu_s")
    yield "member control planes CPU (s)", *pair("member_control_planes_cpu_s")
    yield "the bench's own CPU (s)", *pair("bench_cpu_s")
    yield "others' CPU meanwhile (s, 2 cores)", *pair("others_cpu_s")
    yield "controller requests, quiet window", *pair("quiet_requests", 0)


def print_table(result: Mapping[str, Any]) -> None:
    spread, one, found = result["fleet"], result["one_cluster"], result["comparison"]
    total = result["members"] * result["instances_per_member"]
    against = f" against {total} on one cluster" if one else ""
    print(
        f"\n{result['members']} members x {result['instances_per_member']} instances{against}, "
        f"{result['workers']} workers, --client-qps {result['client_qps']:g}"
    )
    print(f"  {'':34} {'hub and spokes':>16} {'one cluster':>14}")
    for label, left, right in _rows(spread, one):
        print(f"  {label:34} {left:>16} {right:>14}")
    print(
        "  requests / instance, the clusters' shares:",
        spread["controller_requests_per_instance_by_cluster"],
    )
    for cluster, rows in spread["controller_requests_per_instance_by_method"].items():
        print(f"    {cluster}: {rows}")
    if one:
        for cluster, rows in one["controller_requests_per_instance_by_method"].items():
            print(f"    one cluster, {cluster}: {rows}")
    for name, part in (("hub and spokes", spread), ("one cluster", one)):
        for cluster, rows in (part or {}).get("apiserver_requests_per_instance", {}).items():
            print(f"  {name}, {cluster} API server served per instance (anyone's): {rows}")
    print(
        f"  RSS before members {spread['rss_before_members_mib']:.1f} MiB, with members idle "
        f"{spread['rss_members_idle_mib']:.1f} MiB (served in {spread['members_serving_s']:.1f} s)"
    )
    print(
        f"  RSS growth per member, idle: {found['rss_growth_per_member_idle_mib']:.1f} MiB "
        f"(goal <= {RSS_GOAL_MIB:g})"
    )
    if "rss_growth_per_member_at_size_mib" in found:
        print(
            f"  RSS growth per member at this size: "
            f"{found['rss_growth_per_member_at_size_mib']:.1f} MiB (goal <= {RSS_GOAL_MIB:g})"
        )
    if "time_to_active_ratio" in found:
        print(
            f"  time to all ACTIVE, ratio: {found['time_to_active_ratio']:.2f} "
            f"(goal <= {TIME_GOAL:g})"
        )
    for name, part in (("hub and spokes", spread), ("one cluster", one)):
        if part is None:
            continue
        print(
            f"  quiet {part['quiet_window_s']:g} s, {name}: "
            f"{part['quiet_requests']:.0f} controller requests "
            f"{part['quiet_requests_by_method']}"
        )
        if part["quiet_requests_at_s"]:
            print(f"    sent at (s into the window): {part['quiet_requests_at_s']}")
        for cluster, rows in part["quiet_apiserver_requests"].items():
            print(f"    {cluster} API server served: {rows}")
    for name, part in (("hub and spokes", spread), ("one cluster", one)):
        if part and part.get("profile_report"):
            print(f"-- profile, {name}\n{part['profile_report']}")
