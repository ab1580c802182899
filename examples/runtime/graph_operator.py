"""Static site operator: kro's own graph engine embedded in a Python operator.

The operator defines its API and its children as a resource graph, in kro's language (SimpleSchema
for the custom resource, `${...}` CEL expressions between resources), and runs it on kro.runtime:
for each `StaticSite` it renders a ConfigMap holding the page, a Deployment serving it and a
Service, in the graph's order (the Deployment names the ConfigMap it mounts through an
expression), applies them as one ApplySet (kro.applyset: server-side apply, and a prune of what
the site no longer renders), and writes the status the graph projects. The CRD is the one the
graph generates from its schema, installed at start. Each child is owned by its site, so an
edited or deleted child is put back, and deleting the site deletes them.

It uses kro.graph and kro.applyset as kro's own controller does, without RGDs in the cluster or
kro's controller running: one graph, compiled once, in an operator of its own.

    python examples/runtime/graph_operator.py [--namespace NS]
    kubectl apply -f - <<< '{"apiVersion": "example.kro.run/v1alpha1", "kind": "StaticSite",
      "metadata": {"name": "docs"}, "spec": {"title": "Hello"}}'
"""

import yaml

from kro.applyset import Applier, ApplierOptions, Desired, prune
from kro.applyset.inventory import tooling_for
from kro.graph.builder import build_graph
from kro.graph.evaluate import InstanceEvaluation, Pending
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime import GVK, GVR, Manager, ManagerClient, Object, Result, errors, run
from kro.runtime.owners import set_controller_reference

GRAPH = yaml.safe_load("""
metadata: {name: static-site}
spec:
  schema:
    apiVersion: v1alpha1
    group: example.kro.run
    kind: StaticSite
    spec:
      title: string | required=true
      image: string | default="nginx:1.27"
      replicas: integer | default=1 minimum=0 maximum=5
    status:
      page: ${page.metadata.name}
      replicas: ${deployment.spec.replicas}
  resources:
    - id: page
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}-page", namespace: "${schema.metadata.namespace}"}
        data: {index.html: "<h1>${schema.spec.title}</h1>"}
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.metadata.name}", namespace: "${schema.metadata.namespace}"}
        spec:
          replicas: ${schema.spec.replicas}
          selector: {matchLabels: {site: "${schema.metadata.name}"}}
          template:
            metadata: {labels: {site: "${schema.metadata.name}"}}
            spec:
              containers:
                - name: web
                  image: ${schema.spec.image}
                  volumeMounts: [{name: page, mountPath: /usr/share/nginx/html}]
              volumes: [{name: page, configMap: {name: "${page.metadata.name}"}}]
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${schema.metadata.name}", namespace: "${schema.metadata.namespace}"}
        spec:
          selector: {site: "${schema.metadata.name}"}
          ports: [{port: 80}]
""")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")


async def setup(manager: Manager) -> None:
    graph = build_graph(GRAPH, OfflineSchemaResolver.from_files())
    site_kind = GVR(graph.instance.group, graph.instance.version, graph.instance.plural)
    client, api = manager.client, manager.client.api
    await api.apply(CRDS, graph.instance.crd, field_manager=manager.options.name, force=True)
    applier = Applier(api, ApplierOptions(tooling=tooling_for("static-site")))
    positions = {node_id: i for i, node_id in enumerate(graph.topological_order)}

    async def reconcile(site: Object) -> Result:
        evaluation, desired = InstanceEvaluation(graph, site), []
        for node_id in graph.topological_order:  # dependencies first
            objects = evaluation.desired(node_id)
            if isinstance(objects, Pending):
                return Result(requeue_after_s=5)  # data a resource has not reported yet
            (obj,) = objects
            set_controller_reference(site, obj)
            info = await client.mapper.resolve(GVK.from_object(obj))
            live = await _get(client, info.gvr, obj)
            desired.append(Desired(node_id, obj, info.gvr, info.namespaced, observed=live))
            evaluation.observe(node_id, live or obj)
        result = await applier.apply(site, site_kind, desired)
        if result.has_errors:
            raise result.errors[0].error or RuntimeError("apply failed")
        for applied in result.resources:
            evaluation.observe(applied.resource_id, applied.obj)
        pruned = await prune(api, result, positions=positions, all_resolved=True)
        if pruned.inventory is not None:
            await applier.ensure_inventory(result.parent, result.parent_obj, pruned.inventory)
        await client.update_status(result.parent_obj, evaluation.status_fields())
        return Result()

    (
        manager.controller("static-site")
        .for_(site_kind)
        .owns("ConfigMap")
        .owns("Deployment")
        .owns("Service")
        .reconcile_objects(reconcile)
    )


async def _get(client: ManagerClient, gvr: GVR, obj: Object) -> Object | None:
    """The live object (from the cache: the controller watches every kind it renders)."""
    meta = obj["metadata"]
    try:
        live: Object = await client.get(gvr, meta["name"], namespace=meta.get("namespace"))
        return live
    except errors.NotFound:
        return None


if __name__ == "__main__":
    run(setup)
