import datetime

import kopf
import kubernetes
import pydantic

WEBSITES = ("example.kro.run", "v1alpha1", "websites")


class WebsiteSpec(pydantic.BaseModel):
    image: str
    replicas: int = pydantic.Field(1, ge=0, le=10)


@kopf.on.startup()
def configure(**_):
    kubernetes.config.load_config()


@kopf.on.resume(*WEBSITES)
@kopf.on.create(*WEBSITES)
@kopf.on.update(*WEBSITES, field="spec")
def ensure_deployment(body, spec, name, namespace, **_):
    try:
        site = WebsiteSpec.model_validate(dict(spec))
    except pydantic.ValidationError as e:
        raise kopf.PermanentError(str(e)) from None
    labels = {"app.kubernetes.io/name": name}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": name, "labels": labels},
                  "spec": {"replicas": site.replicas, "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": labels}, "spec": {
                               "containers": [{"name": "web", "image": site.image}]}}}}
    kopf.adopt(deployment, owner=body)
    api = kubernetes.client.AppsV1Api()
    try:
        api.create_namespaced_deployment(namespace, deployment)
    except kubernetes.client.ApiException as e:
        if e.status != 409:
            raise
        api.patch_namespaced_deployment(name, namespace, deployment)


def owner_of(meta):
    for ref in meta.get("ownerReferences", []):
        if ref["kind"] == "Website" and ref.get("controller"):
            return ref["name"]
    return None


@kopf.on.event("apps", "v1", "deployments", labels={"app.kubernetes.io/name": kopf.PRESENT})
def on_deployment(type, body, meta, namespace, **_):
    owner = owner_of(meta)
    if owner is None:
        return
    api = kubernetes.client.CustomObjectsApi()
    try:
        site = api.get_namespaced_custom_object(*WEBSITES[:2], namespace, WEBSITES[2], owner)
    except kubernetes.client.ApiException as e:
        if e.status == 404:
            return
        raise
    if type == "DELETED":  # no way to queue the owner: run its handler again
        ensure_deployment(site, site["spec"], owner, namespace)
        return
    ready = body.get("status", {}).get("readyReplicas", 0)
    wanted = site["spec"].get("replicas", 1)
    status = "True" if ready >= wanted else "False"
    conditions = site.get("status", {}).get("conditions", [])
    old = next((c for c in conditions if c["type"] == "Available"), {})
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": "Available", "status": status,
                 "reason": "MinimumReplicasAvailable" if status == "True" else "ReplicasNotReady",
                 "message": f"{ready}/{wanted} replicas ready",
                 "observedGeneration": site["metadata"]["generation"],
                 "lastTransitionTime": old.get("lastTransitionTime", now)
                 if old.get("status") == status else now}
    if condition != old:
        kopf.event(site, type="Normal" if status == "True" else "Warning",
                   reason=condition["reason"], message=condition["message"])
    new = {"readyReplicas": ready, "conditions": [condition]}
    if new != site.get("status"):
        api.patch_namespaced_custom_object_status(
            *WEBSITES[:2], namespace, WEBSITES[2], owner, {"status": new})
