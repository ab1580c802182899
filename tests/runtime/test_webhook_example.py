"""examples/runtime/webhook_operator.py's handlers, without a cluster: what they refuse, what they
default (as the JSON patch the API server gets) and that conversion round-trips both ways."""

from __future__ import annotations

import base64
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from kro.runtime.admission import admit
from kro.runtime.conversion import ConversionRequest, convert
from kro.runtime.json_patch import apply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "runtime" / "webhook_operator.py"
V1, V2 = "example.kro.run/v1", "example.kro.run/v2"


@pytest.fixture(scope="module")
def operator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("webhook_operator_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


def cache(version: str = V2, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "c", "namespace": "ns"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": version, "kind": "Cache", "metadata": meta, "spec": spec}


def request(obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"uid": "u", "operation": "UPDATE" if old else "CREATE", "object": obj, "oldObject": old}


async def test_it_refuses_too_many_replicas_and_an_engine_change(operator: ModuleType) -> None:
    check = [operator.validate]
    big = await admit(
        request(cache(scale={"replicas": 6})),
        check,
        mutating=False,
        model=operator.Cache,
        deadline_s=1,
    )
    assert (big.allowed, big.message) == (False, "a cache has at most 5 replicas")
    changed = await admit(
        request(cache(engine="memcached"), cache(engine="redis")),
        check,
        mutating=False,
        model=operator.Cache,
        deadline_s=1,
    )
    assert changed.message == "spec.engine cannot change (it is redis)"
    fine = await admit(
        request(cache(engine="redis")), check, mutating=False, model=operator.Cache, deadline_s=1
    )
    assert fine.allowed


async def test_it_defaults_the_engine_and_keeps_other_labels(operator: ModuleType) -> None:
    sent = cache(labels={"team": "a"}, scale={"replicas": 2})
    answer = await admit(
        request(sent), [operator.default], mutating=True, model=operator.Cache, deadline_s=1
    )
    ops = orjson.loads(base64.b64decode(answer.review()["response"]["patch"]))
    result = apply(sent, ops)
    assert result["spec"] == {"scale": {"replicas": 2}, "engine": "redis"}
    assert result["metadata"]["labels"] == {"team": "a", operator.ENGINE: "redis"}


@pytest.mark.parametrize(
    "v1_spec", [{"engine": "redis", "replicas": 3}, {"engine": "redis"}, {}], ids=str
)
async def test_conversion_round_trips(operator: ModuleType, v1_spec: dict[str, Any]) -> None:
    converters = {("example.kro.run", "Cache"): operator.convert}
    original = cache(V1, **v1_spec)
    up = await convert(ConversionRequest("u", V2, (original,)), converters, deadline_s=1)
    (as_v2,) = up.converted
    assert "replicas" not in as_v2["spec"]
    down = await convert(ConversionRequest("u", V1, (as_v2,)), converters, deadline_s=1)
    assert down.converted == (original,)
