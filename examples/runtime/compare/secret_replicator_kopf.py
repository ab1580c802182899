import kopf
import kubernetes

TARGETS = "example.kro.run/replicate-to"
REPLICA_OF = "example.kro.run/replica-of"


@kopf.on.startup()
def configure(**_):
    kubernetes.config.load_config()


def copies_of(namespace, name):
    selector = f"{REPLICA_OF}={namespace}.{name}"
    api = kubernetes.client.CoreV1Api()
    return api.list_secret_for_all_namespaces(label_selector=selector).items


def replicate(body):
    meta, api = body["metadata"], kubernetes.client.CoreV1Api()
    names = meta.get("annotations", {}).get(TARGETS, "").split(",")
    targets = {n.strip() for n in names if n.strip()} - {meta["namespace"]}
    for target in targets:
        labels = {REPLICA_OF: f"{meta['namespace']}.{meta['name']}"}
        copy = {"metadata": {"name": meta["name"], "namespace": target, "labels": labels},
                "type": body.get("type"), "data": body.get("data")}
        try:
            api.create_namespaced_secret(target, copy)
        except kubernetes.client.ApiException as e:
            if e.status != 409:
                raise
            api.replace_namespaced_secret(meta["name"], target, copy)
    for copy in copies_of(meta["namespace"], meta["name"]):
        if copy.metadata.namespace not in targets:
            api.delete_namespaced_secret(copy.metadata.name, copy.metadata.namespace)


@kopf.on.resume("secrets", annotations={TARGETS: kopf.PRESENT})
@kopf.on.create("secrets", annotations={TARGETS: kopf.PRESENT})
@kopf.on.update("secrets", annotations={TARGETS: kopf.PRESENT})
def on_source(body, **_):
    replicate(body)


@kopf.on.delete("secrets", annotations={TARGETS: kopf.PRESENT})  # kopf holds a finalizer
def on_source_deleted(namespace, name, **_):
    api = kubernetes.client.CoreV1Api()
    for copy in copies_of(namespace, name):
        api.delete_namespaced_secret(copy.metadata.name, copy.metadata.namespace)


@kopf.on.event("secrets", labels={REPLICA_OF: kopf.PRESENT})
def on_copy(meta, **_):  # no way to queue the source: read it and replicate again
    namespace, _, name = meta["labels"][REPLICA_OF].partition(".")
    api = kubernetes.client.CoreV1Api()
    try:
        source = api.read_namespaced_secret(name, namespace)
    except kubernetes.client.ApiException as e:
        if e.status == 404:
            return
        raise
    replicate(api.api_client.sanitize_for_serialization(source))
