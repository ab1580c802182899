"""Webhooks for a two-version CRD: validation, defaulting and conversion, and nothing else.

Caches (examples/runtime/cache-crd.yaml) are served as v1 (`spec.replicas`, stored) and v2 (the
same count under `spec.scale`). This operator reconciles nothing; it only answers the API
server: it refuses caches of more than 5 replicas and any change of `spec.engine`, defaults the
engine to redis and keeps a label equal to it, and converts between the two versions. The
handlers see v2 whatever version a client used (the API server converts through this same
operator first). With `manage=True` it writes its webhook configurations and the CRD's
conversion itself, pointing at its own address, with its CA as caBundle.

    kubectl apply -f examples/runtime/cache-crd.yaml
    python examples/runtime/webhook_operator.py [--namespace NS]     # a local run: kro[testing]
"""

from typing import Any

from pydantic import Field

from kro.runtime import GVK, AdmissionRequest, Denied, KubeModel, Manager, WireModel, run

ENGINE = "example.kro.run/engine"  # the label the defaulter keeps equal to spec.engine


class Scale(WireModel):
    replicas: int = 1


class CacheSpec(WireModel):
    engine: str | None = None
    scale: Scale = Field(default_factory=Scale)


class Cache(KubeModel):
    gvk = GVK("example.kro.run", "v2", "Cache")  # what the handlers see
    spec: CacheSpec = Field(default_factory=CacheSpec)


def validate(request: AdmissionRequest[Cache]) -> None:
    cache, old = request.object, request.old_object
    if cache.spec.scale.replicas > 5:
        raise Denied("a cache has at most 5 replicas")
    if old is not None and old.spec.engine != cache.spec.engine:
        raise Denied(f"spec.engine cannot change (it is {old.spec.engine})")


def default(request: AdmissionRequest[Cache]) -> None:
    cache = request.object
    cache.spec.engine = cache.spec.engine or "redis"
    cache.metadata.labels = {**(cache.metadata.labels or {}), ENGINE: cache.spec.engine}


def convert(cache: dict[str, Any], api_version: str) -> None:
    spec = cache.setdefault("spec", {})
    if api_version == "example.kro.run/v2":  # from v1
        if "replicas" in spec:
            spec["scale"] = {"replicas": spec.pop("replicas")}
    elif "replicas" in (scale := spec.pop("scale", {})):  # from v2 to v1
        spec["replicas"] = scale["replicas"]


def setup(manager: Manager) -> None:
    manager.controller("caches").for_(Cache).validate(validate).default(default).convert(convert)


if __name__ == "__main__":  # a CA made up for this run, injected into what the operator manages
    from kro.testing.webhookcerts import self_signed

    def local(manager: Manager) -> None:
        manager.webhooks.configure(certificates=self_signed(), manage=True)
        setup(manager)

    run(local)
