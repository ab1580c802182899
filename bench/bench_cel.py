"""kro.cel compile and evaluation cost over a corpus of realistic expressions; prints only.

    .venv/bin/python bench/bench_cel.py [--compiles 200] [--evals 5000]

Targets (issue "kro.cel ... complete, exact and fast"): median evaluation <= 5 us with a bound
Activation, median compile <= 300 us including the type check against OpenAPI-typed
variables, dependency extraction and the program build. Rows:
* compile  `CelEnvironment.compile` on a fresh environment per round (the cache is bypassed);
* eval     `CompiledExpression.evaluate` against one shared Activation (warm);
* json     `evaluate_json` (evaluation + C-35 conversion);
* bind     `CelEnvironment.bind` of a ~10 KB Deployment + instance, then the first evaluation
           that touches it (the engine converts bound objects lazily, once per Activation);
* nested   a `filter` with an `exists` over the same 150 claims (22,500 iterations, past the
           engine's 10,000-iteration cap: kro.cel evaluates it again in split form), with the
           default limits: the first evaluation of a freshly compiled expression (one attempt
           stopped by the cap, then the split form) and later ones (split form first); next to
           it two small expressions, which must not get slower.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from kro.cel import CelEnvironment, CelOptions, CompiledExpression, EvalResult, Value

CONDITION = {"type": "object", "properties": {k: {"type": "string"} for k in ("type", "status")}}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "uid": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "creationTimestamp": {"type": "string", "format": "date-time"},
            },
        },
        "spec": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "image": {"type": "string"},
                "replicas": {"type": "integer"},
                "port": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ingress": {
                    "type": "object",
                    "properties": {"enabled": {"type": "boolean"}, "host": {"type": "string"}},
                },
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}
DEPLOYMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": SCHEMA["properties"]["metadata"],
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "selector": {
                    "type": "object",
                    "properties": {
                        "matchLabels": {
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                        }
                    },
                },
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "availableReplicas": {"type": "integer"},
                "observedGeneration": {"type": "integer"},
                "conditions": {"type": "array", "items": CONDITION},
            },
        },
    },
}

CORPUS = [
    "schema.spec.replicas",
    'schema.metadata.name + "-svc"',
    "schema.spec.ingress.enabled",
    "deployment.status.availableReplicas >= deployment.spec.replicas",
    'deployment.status.conditions.exists(c, c.type == "Available" && c.status == "True")',
    'schema.spec.tags.map(t, t + "-x")',
    '{"app": schema.metadata.name, "replicas": string(schema.spec.replicas)}',
    "deployment.spec.selector.matchLabels",
    'schema.?spec.?ingress.?host.orValue("example.com")',
    'schema.metadata.labels.merge({"app.kubernetes.io/name": schema.metadata.name})',
    "random.seededString(8, schema.metadata.uid)",
    'schema.spec.config.?feature.orValue(false) ? "on" : "off"',
    'quantity("512Mi").isLessThan(quantity("1Gi"))',
]


def _instance() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "demo",
            "namespace": "default",
            "uid": "0b8e7c1e-2f1c-4f3f-9d0e-3c5d2a9b6f10",
            "labels": {"team": "a"},
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {
            "name": "demo",
            "image": "nginx",
            "replicas": 3,
            "port": 80,
            "tags": ["a", "b", "c"],
            "ingress": {"enabled": True},
            "config": {"feature": True},
        },
    }


def _deployment() -> dict[str, Any]:
    containers = [
        {
            "name": f"c{i}",
            "image": "nginx",
            "env": [{"name": f"E{j}", "value": "v" * 20} for j in range(20)],
        }
        for i in range(3)
    ]
    return {
        "metadata": {
            "name": "demo",
            "namespace": "default",
            "labels": {f"k{i}": "v" for i in range(20)},
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "managedFields": [{"f:spec": {f"f:x{j}": {} for j in range(40)}} for _ in range(5)],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {"spec": {"containers": containers}},
        },
        "status": {
            "availableReplicas": 3,
            "observedGeneration": 2,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }


def _env() -> CelEnvironment:
    return CelEnvironment(
        CelOptions(omit_function=True), {"schema": SCHEMA, "deployment": DEPLOYMENT}
    )


def _median_us(fn: Callable[[], object], rounds: int) -> float:
    for _ in range(min(rounds, 50)):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compiles", type=int, default=200)
    parser.add_argument("--evals", type=int, default=5000)
    args = parser.parse_args()

    env = _env()
    activation = env.bind({"schema": _instance(), "deployment": _deployment()})
    print(f"{'expression':<80} {'compile us':>10} {'eval us':>8} {'json us':>8}")
    compile_medians, eval_medians = [], []
    for expression in CORPUS:
        compiled = env.compile(expression)
        assert isinstance(compiled.evaluate(activation), Value), expression

        def compile_once(e: str = expression) -> None:
            env._target(e).compiled.clear()  # measure a compile, not a cache hit
            env.compile(e)

        def eval_once(p: CompiledExpression = compiled) -> None:
            p.evaluate(activation)

        def json_once(p: CompiledExpression = compiled) -> None:
            p.evaluate_json(activation)

        c = _median_us(compile_once, args.compiles)
        e = _median_us(eval_once, args.evals)
        j = _median_us(json_once, args.evals)
        compile_medians.append(c)
        eval_medians.append(e)
        print(f"{expression[:80]:<80} {c:>10.1f} {e:>8.2f} {j:>8.2f}")
    print(
        f"\nmedian over corpus: compile {statistics.median(compile_medians):.1f} us "
        f"(target <= 300), eval {statistics.median(eval_medians):.2f} us (target <= 5)"
    )

    first = env.compile("deployment.status.availableReplicas")
    instance, deployment = _instance(), _deployment()

    def bind_and_first_eval() -> None:
        fresh = env.bind({"schema": instance, "deployment": deployment})
        first.evaluate(fresh)

    print(
        f"bind + first evaluation of a ~10 KB Deployment: "
        f"{_median_us(bind_and_first_eval, 300):.1f} us"
    )
    print(
        f"new CelEnvironment (2 typed variables) + first compile: "
        f"{_median_us(lambda: _env().compile('schema.spec.replicas'), 30):.1f} us"
    )
    nested_loops(args.evals)


CLAIMS_EXPRESSION = (
    "schema.spec.claims.filter(c, schema.spec.claims.exists(d, d.priority > c.priority)).size()"
)
CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "claims": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "priority": {"type": "integer"},
                        },
                    },
                }
            },
        }
    },
}


def _outcome(result: EvalResult) -> str:
    return f"= {result.value}" if isinstance(result, Value) else f"-> {result.message}"


def nested_loops(rounds: int) -> None:
    """The 150-claims expression (equal priorities: no `exists` stops early) and two small
    expressions, with the default limits."""
    env = CelEnvironment(CelOptions(), {"schema": CLAIMS_SCHEMA})
    claims = [{"name": f"claim-{i}", "priority": 1} for i in range(150)]
    activation = env.bind({"schema": {"spec": {"claims": claims}}})
    result: list[EvalResult] = []

    def first_evaluation() -> None:
        env._target(CLAIMS_EXPRESSION).compiled.clear()  # a fresh compiled expression
        compiled = env.compile(CLAIMS_EXPRESSION)
        start = time.perf_counter_ns()
        result[:] = [compiled.evaluate(activation)]
        samples.append(time.perf_counter_ns() - start)

    samples: list[int] = []
    for _ in range(max(rounds // 10, 5)):
        first_evaluation()
    first = statistics.median(samples) / 1e6
    print(f"\n150 claims, first evaluation:  {first:8.2f} ms  {_outcome(result[0])}")
    compiled = env.compile(CLAIMS_EXPRESSION)
    later = _median_us(lambda: compiled.evaluate(activation), max(rounds // 10, 5)) / 1000
    outcome = _outcome(compiled.evaluate(activation))
    print(f"150 claims, later evaluations: {later:8.2f} ms  {outcome}")
    small = _env()
    bound = small.bind({"schema": _instance(), "deployment": _deployment()})
    for expression in (
        "schema.spec.replicas",
        'deployment.status.conditions.exists(c, c.type == "Available" && c.status == "True")',
    ):
        program = small.compile(expression)
        median = _median_us(lambda p=program: p.evaluate(bound), rounds)
        print(f"small: {expression[:70]:<70} {median:8.2f} us")


if __name__ == "__main__":
    main()
