"""The controller stopped and started again mid-way, on the real control plane.

kro keeps no state outside the cluster (the revision registry is rebuilt from GraphRevisions, the
ApplySet inventory lives on the instance), so a restarted controller must converge to exactly
the desired objects: no duplicates of what the first run created, no orphans of what it no
longer wants, and no second GraphRevision for an unchanged spec (N-06).
"""

from __future__ import annotations

from typing import Any

from kro_harness import (
    CONFIGMAPS,
    KroEnv,
    kro_fixtures,
    meta,
    wait_for,
)

controller, kro = kro_fixtures()


def _rgd(kro: KroEnv) -> dict[str, Any]:
    """A forEach of ConfigMaps, and a summary that waits for all of them (a second level)."""
    return kro.rgd(
        "fleet",
        "Fleet",
        {"names": "[]string"},
        [
            {
                "id": "members",
                "forEach": [{"name": "${schema.spec.names}"}],
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-${name}"},
                    "data": {"name": "${name}"},
                },
            },
            {
                "id": "summary",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-summary"},
                    "data": {"count": "${string(size(members))}"},
                },
            },
        ],
    )


async def _configmaps(kro: KroEnv) -> list[dict[str, Any]]:
    items, _ = await kro.client.list_all(CONFIGMAPS, namespace=kro.namespace)
    return [i for i in items if meta(i)["name"] != "kube-root-ca.crt"]


async def _exactly(kro: KroEnv, names: list[str]) -> list[dict[str, Any]] | None:
    items = await _configmaps(kro)
    found = sorted(meta(i)["name"] for i in items if not meta(i).get("deletionTimestamp"))
    return items if found == sorted(names) and len(items) == len(names) else None


async def test_restarted_controller_converges_without_duplicates_or_orphans(
    kro: KroEnv,
) -> None:
    rgd = _rgd(kro)
    rgd_name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd_name)
    gvr = await kro.gvr_of("Fleet")
    names = [f"m{i}" for i in range(6)]
    await kro.apply_instance("Fleet", "fleet", {"names": names})

    # Stop as soon as the first run has written something, before it can finish.
    await wait_for(lambda: _configmaps(kro), what="the first children", interval_s=0.05)
    kro.controller.stop()
    at_stop = {meta(i)["name"] for i in await _configmaps(kro)}
    assert {f"fleet-{n}" for n in names[3:]} <= at_stop  # the orphans-to-be exist
    shrunk = names[:3]
    await kro.apply_instance("Fleet", "fleet", {"names": shrunk})  # changed while nobody runs
    kro.controller.start()

    await kro.wait_instance(gvr, "fleet")
    expected = [f"fleet-{n}" for n in shrunk] + ["fleet-summary"]
    items = await wait_for(lambda: _exactly(kro, expected), what=f"exactly {expected}")
    summary = next(i for i in items if meta(i)["name"] == "fleet-summary")
    assert summary["data"] == {"count": "3"}
    instance = await kro.get(gvr, "fleet")
    applyset = meta(instance)["labels"]["applyset.kubernetes.io/id"]
    for item in items:
        assert meta(item)["labels"]["applyset.kubernetes.io/part-of"] == applyset
    assert [r["spec"]["revision"] for r in await kro.revisions(rgd_name)] == [1]

    # And once more while converged: nothing is re-created or pruned.
    before = {meta(i)["name"]: meta(i)["uid"] for i in items}
    kro.controller.restart()
    await kro.apply_instance("Fleet", "fleet", {"names": [*shrunk, "m9"]})
    expected.append("fleet-m9")
    items = await wait_for(lambda: _exactly(kro, expected), what=f"exactly {expected}")
    await kro.wait_instance(gvr, "fleet")
    after = {meta(i)["name"]: meta(i)["uid"] for i in items}
    assert {k: after[k] for k in before} == before
    assert [r["spec"]["revision"] for r in await kro.revisions(rgd_name)] == [1]
