"""Partial status while an external reference is missing (upstream v0.10, V-19..V-21).

An instance whose externalRef target does not exist yet is IN_PROGRESS and its dependents are
not applied, but its status still shows every field that resolves, and nothing that does not:
a map keeps its resolvable keys, an array drops a trailing element that does not resolve,
objects inside arrays follow the map rule, and a field with nothing resolvable is absent (never
`{}`). The status keeps following the spec while the reference is pending; once the target
appears the status is complete and the instance ACTIVE; when it goes again, the fields that no
longer resolve are removed from the object (the status is written by server-side apply).
"""

from __future__ import annotations

from typing import Any

import pytest
from kro_harness import CONFIGMAPS, KroEnv, is_ready, kro_fixtures, meta

from kro.runtime.errors import NotFound

controller, kro = kro_fixtures()


def _rgd(kro: KroEnv, source: str) -> dict[str, Any]:
    return kro.rgd(
        "partial", "PartialStatus", {"tag": "string | default=v1"},
        [
            {"id": "source", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": source}}},
            {"id": "copy", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "${schema.metadata.name}-copy"},
                                        "data": {"value": "${source.data.value}"}}},
        ],
        status={
            "tag": "${schema.spec.tag}",
            "source": {"name": "${source.metadata.name}", "value": "${source.data.value}"},
            "mixed": {"tag": "${schema.spec.tag}", "value": "${source.data.value}"},
            "values": ["${schema.spec.tag}", "${source.data.value}"],
            "pairs": [{"tag": "${schema.spec.tag}", "value": "${source.data.value}"}],
            "everything": "${source.data}",
        },
    )


def _state(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("state") or "")


def _shown(obj: dict[str, Any]) -> dict[str, Any]:
    status = dict(obj.get("status") or {})
    return {k: v for k, v in status.items() if k not in ("state", "conditions")}


async def test_status_shows_what_resolves_while_a_reference_is_missing(kro: KroEnv) -> None:
    source = f"source-{kro.suffix}"
    rgd = _rgd(kro, source)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("PartialStatus")

    await kro.apply_instance("PartialStatus", "probe", {"tag": "v1"})
    partial_v1 = {"tag": "v1", "mixed": {"tag": "v1"}, "values": ["v1"], "pairs": [{"tag": "v1"}]}
    live = await kro.wait_instance(gvr, "probe", lambda o: _shown(o) == partial_v1,
                                   what="the partial status")
    assert _state(live) == "IN_PROGRESS"
    assert not is_ready(live)
    with pytest.raises(NotFound):  # it depends on the missing reference
        await kro.get(CONFIGMAPS, "probe-copy")

    await kro.apply_instance("PartialStatus", "probe", {"tag": "v2"})
    partial_v2 = {"tag": "v2", "mixed": {"tag": "v2"}, "values": ["v2"], "pairs": [{"tag": "v2"}]}
    await kro.wait_instance(gvr, "probe", lambda o: _shown(o) == partial_v2,
                            what="the partial status to follow the spec")

    await kro.client.create(CONFIGMAPS, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": source, "namespace": kro.namespace}, "data": {"value": "hello"},
    }, namespace=kro.namespace)
    complete = {
        "tag": "v2", "source": {"name": source, "value": "hello"},
        "mixed": {"tag": "v2", "value": "hello"}, "values": ["v2", "hello"],
        "pairs": [{"tag": "v2", "value": "hello"}], "everything": {"value": "hello"},
    }
    live = await kro.wait_instance(gvr, "probe", lambda o: is_ready(o) and _shown(o) == complete,
                                   what="the complete status")
    copy = await kro.get(CONFIGMAPS, "probe-copy")
    assert copy["data"] == {"value": "hello"}

    await kro.client.delete(CONFIGMAPS, source, namespace=kro.namespace)
    live = await kro.wait_instance(gvr, "probe", lambda o: _shown(o) == partial_v2,
                                   what="the fields that no longer resolve to go")
    assert _state(live) == "IN_PROGRESS"
    assert meta(live).get("generation") == 2
