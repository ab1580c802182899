"""Which metric names kro exports, and which ones a PromQL query asks for.

The chart's dashboard and alerts are only as good as their metric names: a typo, or a metric
renamed in the code, makes a panel empty and an alert silent, and nothing else would notice.
So the names a query uses are checked against two views of what the controller exports:

- a real scrape: the controller's app and manager are built on a PrometheusProvider exactly as
  `kro controller` builds them (every feature gate on), and /metrics' text is parsed with
  prometheus_client's parser;
- the code: every literal name handed to a metrics provider (`counter`, `gauge`, `histogram`,
  `callback_gauge`, and `StateCounts`, which wraps a scrape-time gauge) under kro/. This also
  sees metrics registered only once something runs, such as the leader election gauge.

PromQL names are found with a small tokenizer (strings, label matchers, ranges and grouping
lists removed; what is left that is not a function or a keyword is a metric name); promtool
checks the syntax separately.
"""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Iterable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]
KRO = REPO / "kro"
METRICS_DOC = REPO / "docs" / "metrics.md"

_NAME = re.compile(r"^[a-z_:][a-z0-9_:]*$")
_REGISTRARS = {
    "counter": "counter",
    "gauge": "gauge",
    "histogram": "histogram",
    "callback_gauge": "gauge",
    "StateCounts": "gauge",
}
_SUFFIXES = {"counter": ("",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}


def series_names(families: dict[str, str]) -> set[str]:
    """Sample names of families {name: type}: a histogram `x` is `x_bucket`, `x_sum`, `x_count`."""
    return {name + suffix for name, kind in families.items() for suffix in _SUFFIXES[kind]}


def registered_in_code(root: Path = KRO) -> dict[str, str]:
    """{metric name: type} for every literal name passed to a metrics provider under `root`."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if "gomod" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            kind = _REGISTRARS.get(callee)
            if kind is None:
                continue
            literals = [a.value for a in node.args[:2] if isinstance(a, ast.Constant)]
            names = [v for v in literals if isinstance(v, str) and _NAME.match(v)]
            if names:
                found[names[0]] = kind
    return found


def scraped() -> dict[str, str]:
    """{family name: type} from /metrics of a controller built as `kro controller` builds it.

    Counters are given with their `_total` sample name, as queries use them.
    """
    return asyncio.run(_scrape())


async def _scrape() -> dict[str, str]:
    from kro.api.names import FEATURE_GATE_DEFAULTS
    from kro.cli.controller import app_options
    from kro.cli.flags import parse_controller_args
    from kro.controllers.app import KroApp
    from kro.runtime.client import Client, ClientOptions
    from kro.runtime.config import ConnectionConfig
    from kro.runtime.manager import Manager, ManagerOptions
    from kro.runtime.prometheus import PrometheusProvider

    gates = ",".join(f"{gate}=true" for gate in FEATURE_GATE_DEFAULTS)
    # GraphKind needs kro's own identity named (kro.cli.flags).
    config = parse_controller_args(
        [f"--feature-gates={gates}", "--controller-namespace=kro-system",
         "--controller-service-account=kro"]
    )
    provider = PrometheusProvider()
    # Nothing is sent: the client only registers its rest_client_* metrics.
    client = Client.from_config(
        ConnectionConfig(server="http://127.0.0.1:9"), ClientOptions(metrics=provider)
    )
    try:
        manager = Manager(ManagerOptions(), client=client, metrics=provider)
        KroApp(manager, app_options(config), metrics=provider)
        text = provider.render()
    finally:
        await client.close()
    families: dict[str, str] = {}
    body = text.decode() if isinstance(text, bytes) else text
    for family in text_string_to_metric_families(body):
        kind = family.type if family.type in _SUFFIXES else "gauge"
        name = family.name + "_total" if family.type == "counter" else family.name
        families[name] = kind
    return families


def documented(doc: Path = METRICS_DOC) -> set[str]:
    """Every backquoted metric-like name in docs/metrics.md."""
    return set(re.findall(r"`([a-z_:][a-z0-9_:]*)`", doc.read_text()))


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENT = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
     "bool", "offset", "inf", "nan"}
)


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (`sum by (le) (rate(x_bucket{a="b"}[5m]))` ->
    {"x_bucket"})."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    names = set()
    for match in _IDENT.finditer(text):
        word, call = match.group(1), match.group(2)
        if not call and word.lower() not in _KEYWORDS:
            names.add(word)
    return names


_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([a-zA-Z_]\w*)\s*\)\s*$")


def grafana_query_names(query: str) -> set[str]:
    """Metric names of a Grafana variable query: `label_values(selector, label)` or PromQL."""
    match = _LABEL_VALUES.match(query)
    return metric_names(match.group(1) if match else query)


GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
}


def as_promql(query: str) -> str:
    """A dashboard query with Grafana's interval variables replaced, so promtool can parse it;
    `$job`-style variables sit inside label values, where PromQL accepts them as they are."""
    for variable, value in GRAFANA_VARIABLES.items():
        query = query.replace(variable, value)
    match = _LABEL_VALUES.match(query)
    return match.group(1) if match else query


def unknown(names: Iterable[str], exported: set[str]) -> list[str]:
    return sorted(set(names) - exported)
