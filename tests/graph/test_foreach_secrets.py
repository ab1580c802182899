"""A `forEach` over a list of Secrets (externalRef collection): rows may hold bytes.

A Secret's `data` is `format: byte`, so expressions see it as bytes. Bytes cannot be written
into an object (C-23: "bytes value cannot be used directly ..."), but a forEach dimension's
rows are not written anywhere: they are bound to the iterator, as upstream iterates them.
The rule applies where a row's bytes land in a template field, and its message names that
field, never the value.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, rgd

from kro.graph.evaluate import EvaluationError, InstanceEvaluation
from kro.graph.model import Graph

KUBECONFIGS = {"cluster-a": "apiVersion: v1\nclusters: [a]", "cluster-b": "apiVersion: v1\nb: 2"}
INSTANCE = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "App",
    "metadata": {"name": "fleet", "namespace": "team"},
    "spec": {"name": "fleet"},
}
BYTES_REFUSED = (
    "bytes value cannot be used directly in a resource template or status field; "
    "encode it explicitly, e.g. base64.encode(...)"
)


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secrets() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": "team", "labels": {"fleet": "member"}},
            "type": "Opaque",
            "data": {"kubeconfig": _encoded(text)},
        }
        for name, text in KUBECONFIGS.items()
    ]


CLUSTERS: dict[str, Any] = {
    "id": "clusters",
    "externalRef": {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": "team", "selector": {"matchLabels": {"fleet": "member"}}},
    },
}
"""The registry's Secrets, by label: the rows of every forEach here."""


def _graph(template_extra: dict[str, Any] | None = None) -> Graph:
    clusters = CLUSTERS
    configs = configmap("configs", name="${c.metadata.name}-config", forEach=[{"c": "${clusters}"}])
    configs["template"].update(template_extra or {})
    return build(rgd(clusters, configs))


def _desired(graph: Graph) -> Any:
    evaluation = InstanceEvaluation(graph, INSTANCE)
    evaluation.observe("clusters", _secrets())
    return evaluation.desired("configs")


def _failure(graph: Graph) -> EvaluationError:
    with pytest.raises(EvaluationError) as caught:
        _desired(graph)
    return caught.value


def _assert_no_secret_in(text: str) -> None:
    for value in KUBECONFIGS.values():
        assert value not in text
        assert _encoded(value) not in text
        assert "clusters: [a]" not in text


def test_one_configmap_per_secret_named_after_it() -> None:
    desired = _desired(_graph())
    assert [(o["kind"], o["metadata"]) for o in desired] == [
        ("ConfigMap", {"name": "cluster-a-config", "namespace": "team"}),
        ("ConfigMap", {"name": "cluster-b-config", "namespace": "team"}),
    ]


def test_a_row_keeps_its_bytes_for_the_expressions_that_read_them() -> None:
    data = {
        "kubeconfig": "${base64.encode(c.data.kubeconfig)}",
        "size": "${string(size(c.data.kubeconfig))}",
    }
    desired = _desired(_graph({"data": data}))
    assert [o["data"] for o in desired] == [
        {"kubeconfig": _encoded(text), "size": str(len(text))} for text in KUBECONFIGS.values()
    ]


def test_a_rows_bytes_written_into_binary_data_fail_naming_the_field() -> None:
    error = _failure(_graph({"binaryData": {"kubeconfig": "${c.data.kubeconfig}"}}))
    assert str(error) == (
        'node "configs": failed to evaluate expression "c.data.kubeconfig" in path '
        f'"binaryData.kubeconfig": {BYTES_REFUSED}'
    )
    assert (error.resource_id, error.field_path) == ("configs", "binaryData.kubeconfig")
    _assert_no_secret_in(str(error))


def test_a_rows_bytes_written_into_data_fail_naming_the_field() -> None:
    # Typed, `data.kubeconfig: ${c.data.kubeconfig}` is refused when the RGD is built (bytes
    # is not string); through `dyn` it reaches evaluation and fails there.
    refused = build_error(rgd_with_data("${c.data.kubeconfig}"))
    assert 'returns type "bytes" but expected "string"' in str(refused)
    _assert_no_secret_in(str(refused))
    error = _failure(_graph({"data": {"kubeconfig": "${dyn(c.data.kubeconfig)}"}}))
    assert str(error) == (
        'node "configs": failed to evaluate expression "dyn(c.data.kubeconfig)" in path '
        f'"data.kubeconfig": {BYTES_REFUSED}'
    )
    assert error.field_path == "data.kubeconfig"
    _assert_no_secret_in(str(error))


def test_a_whole_secret_data_map_in_a_template_fails_naming_the_key() -> None:
    error = _failure(_graph({"binaryData": "${c.data}"}))
    assert str(error).endswith(f"{BYTES_REFUSED} (at kubeconfig)")
    _assert_no_secret_in(str(error))


def rgd_with_data(expression: str) -> dict[str, Any]:
    clusters = CLUSTERS
    configs = configmap(
        "configs",
        name="${c.metadata.name}-config",
        data={"kubeconfig": expression},
        forEach=[{"c": "${clusters}"}],
    )
    return rgd(clusters, configs)
