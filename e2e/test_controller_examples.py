"""Every RGD in examples/ reaches Active on the real control plane, and its instance reaches
ACTIVE with the children and status the RGD describes.

The RGDs are used as published; only `spec.schema.group` (and, for the chained saas example,
the template apiVersions naming the other RGDs' kinds) is rewritten to this test's group, the
RGD names get the test's suffix, and instances go to the test's namespace.
"""

from __future__ import annotations

from typing import Any

from kro_harness import (
    DEPLOYMENTS,
    EXAMPLES,
    NAMESPACES,
    SERVICES,
    KroEnv,
    condition,
    is_ready,
    kro_fixtures,
    load_yaml,
    meta,
)

from kro.runtime.gvk import GVR

INGRESSES = GVR("networking.k8s.io", "v1", "ingresses")
RESOURCE_QUOTAS = GVR("", "v1", "resourcequotas")
NETWORK_POLICIES = GVR("networking.k8s.io", "v1", "networkpolicies")


controller, kro = kro_fixtures()


async def _apply_example(kro: KroEnv, rgd_file: str) -> tuple[dict[str, Any], str]:
    (rgd,) = load_yaml(EXAMPLES / rgd_file)
    adapted = kro.adapt(rgd)
    await kro.apply_rgd(adapted)
    live = await kro.wait_rgd_active(adapted["metadata"]["name"])
    return live, adapted["spec"]["schema"]["kind"]


async def test_nginxapp_serves_a_deployment_and_a_service(kro: KroEnv) -> None:
    rgd, kind = await _apply_example(kro, "nginxapp/rgd.yaml")
    assert rgd["status"]["topologicalOrder"] == ["deployment", "service", "ingress"]
    (instance,) = load_yaml(EXAMPLES / "nginxapp/instance.yaml")
    name = instance["metadata"]["name"]
    await kro.apply_instance(kind, name, instance["spec"])
    gvr = await kro.gvr_of(kind)
    live = await kro.wait_instance(gvr, name)

    deployment = await kro.get(DEPLOYMENTS, name)
    service = await kro.get(SERVICES, name)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["labels"]["kro.run/node-id"] == "deployment"
    assert deployment["metadata"]["labels"]["kro.run/instance-name"] == name
    assert live["status"]["availableReplicas"] == 2
    assert live["status"]["serviceIP"] == service["spec"]["clusterIP"]
    assert await kro.children(INGRESSES, name) == []  # includeWhen is false
    for kind_ in ("InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy"):
        assert condition(live, kind_)["status"] == "True"


async def test_application_with_ingress_enabled(kro: KroEnv) -> None:
    _, kind = await _apply_example(kro, "application/rgd.yaml")
    (instance,) = load_yaml(EXAMPLES / "application/instance.yaml")
    name = instance["metadata"]["name"]
    await kro.apply_instance(kind, name, instance["spec"])
    gvr = await kro.gvr_of(kind)
    live = await kro.wait_instance(
        gvr, name, lambda o: is_ready(o) and "availableReplicas" in o["status"]
    )

    deployment = await kro.get(DEPLOYMENTS, "my-app")
    service = await kro.get(SERVICES, "my-app-svc")
    ingress = await kro.get(INGRESSES, "my-app-ingress")
    assert deployment["spec"]["replicas"] == 1
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == "my-app-svc"
    assert live["status"]["availableReplicas"] == 1
    assert {c["type"] for c in live["status"]["deploymentConditions"]} >= {"Available"}


async def test_upstream_webapp_omits_url_without_a_load_balancer(kro: KroEnv) -> None:
    _, kind = await _apply_example(kro, "upstream/webapp/rg.yaml")
    (instance,) = load_yaml(EXAMPLES / "upstream/webapp/instance.yaml")
    spec = {**instance["spec"], "namespace": kro.namespace}
    name = instance["metadata"]["name"]
    await kro.apply_instance(kind, name, spec)
    gvr = await kro.gvr_of(kind)
    live = await kro.wait_instance(gvr, name)

    deployment = await kro.get(DEPLOYMENTS, "test-app")
    assert (
        deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 80
    )
    service = await kro.get(SERVICES, "test-app")
    assert service["spec"]["ports"][0]["targetPort"] == 80
    await kro.get(INGRESSES, "test-app")
    assert live["status"]["availableReplicas"] == 1
    assert "url" not in live["status"]  # the ingress has no load balancer hostname


async def test_upstream_defaults_has_no_children_and_applies_defaults(kro: KroEnv) -> None:
    rgd, kind = await _apply_example(kro, "upstream/defaults/rg.yaml")
    assert rgd["status"].get("topologicalOrder", []) == []
    (instance,) = load_yaml(EXAMPLES / "upstream/defaults/instance.yaml")
    name = instance["metadata"]["name"]
    await kro.apply_instance(kind, name, instance["spec"])
    gvr = await kro.gvr_of(kind)
    live = await kro.wait_instance(gvr, name)
    assert live["spec"]["elements"] == ["a", "b", "c", "d"]
    assert live["spec"]["config"]["field2"] == 200
    assert live["spec"]["number"] == 100
    assert condition(live, "ResourcesReady")["reason"] == "AllResourcesReady"


async def test_upstream_saas_multi_tenant_chains_rgds(kro: KroEnv) -> None:
    folder = EXAMPLES / "upstream/saas-multi-tenant"
    groups = {"kro.run": kro.group}
    for part in ("tenant-environment-rgd.yaml", "tenant-application-rgd.yaml"):
        (rgd,) = load_yaml(folder / part)
        adapted = kro.adapt(rgd, groups=groups)
        await kro.apply_rgd(adapted)
        await kro.wait_rgd_active(adapted["metadata"]["name"])
    (tenant_rgd,) = load_yaml(folder / "tenant-rgd.yaml")
    adapted = kro.adapt(tenant_rgd, groups=groups)
    await kro.apply_rgd(adapted)
    await kro.wait_rgd_active(adapted["metadata"]["name"])

    tenant_id = f"tenant-{kro.suffix}"
    kro.track(NAMESPACES, tenant_id)
    await kro.apply_instance("Tenant", "tenant001", {"tenantId": tenant_id})
    tenants = await kro.gvr_of("Tenant")
    await kro.wait_instance(tenants, "tenant001", timeout_s=90)

    # The Tenant is ACTIVE once its children exist (I-01); they converge on their own.
    await kro.wait_instance(await kro.gvr_of("TenantEnvironment"), tenant_id)
    application = await kro.wait_instance(await kro.gvr_of("TenantApplication"), tenant_id)
    assert application["spec"]["image"] == "nginx"
    namespace = await kro.get(NAMESPACES, tenant_id, namespace="")
    assert meta(namespace)["labels"]["name"] == tenant_id
    await kro.get(RESOURCE_QUOTAS, f"{tenant_id}-quota", namespace=tenant_id)
    await kro.get(NETWORK_POLICIES, f"{tenant_id}-isolation", namespace=tenant_id)
    deployment = await kro.get(DEPLOYMENTS, f"{tenant_id}-deployment", namespace=tenant_id)
    assert deployment["spec"]["replicas"] == 2
    await kro.get(SERVICES, f"{tenant_id}-service", namespace=tenant_id)
