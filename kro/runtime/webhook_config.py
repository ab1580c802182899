"""kro.runtime.webhook_config: the webhook configurations a manager writes for its own webhooks.

With `WebhookOptions(manage=True)` the manager server-side applies, as its field manager, what
the API server needs to call it (kopf's "managed" admission, the part of a kubebuilder project's
`config/webhook` that depends only on the code):

* a ValidatingWebhookConfiguration and a MutatingWebhookConfiguration named after the operator,
  with one webhook per kind that has validators (defaulters), for the operations registered,
  at the version the handlers were registered for (`matchPolicy: Equivalent`: a request made
  through another version of the kind is converted first), `sideEffects: None`,
  `admissionReviewVersions: [v1]`, and the options' `failurePolicy` and `timeoutSeconds`;
* `spec.conversion` of each CRD with a conversion handler (`strategy: Webhook`,
  `conversionReviewVersions: [v1]`).

Each points at the server (`url`, or a Service), with the certificate source's CA as
`caBundle` when it has one; without one the field is left to whoever owns it (cert-manager's
CA injector). A manager that watches one namespace gets a `namespaceSelector` for it, so it
admits only what it reconciles (cluster-scoped kinds are admitted everywhere regardless).

These are pure functions from registrations to objects; kro.runtime.webhook_server applies them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .gvk import GVK, GVR

__all__ = [
    "CRDS",
    "MUTATING",
    "VALIDATING",
    "ClientTarget",
    "WebhookEntry",
    "WebhookService",
    "admission_configuration",
    "client_config",
    "crd_conversion",
]

VALIDATING = GVR("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
MUTATING = GVR("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

FailurePolicy = Literal["Fail", "Ignore"]
ConfigurationKind = Literal["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookService:
    """The Service in front of the webhook server, for a manager running in a pod."""

    namespace: str
    name: str
    port: int = 443


ClientTarget = str | WebhookService
"""Where the API server sends requests: a base URL (`https://127.0.0.1:9443`) or a Service."""


@dataclass(frozen=True, slots=True)
class WebhookEntry:
    """One kind's webhook: the kind as registered, its plural, its path, its operations."""

    gvk: GVK
    resource: str
    path: str
    operations: tuple[str, ...]


def client_config(target: ClientTarget, path: str, ca_pem: bytes | None) -> dict[str, Any]:
    """A `clientConfig` (of a webhook or a CRD conversion) for `path` on `target`."""
    config: dict[str, Any]
    if isinstance(target, WebhookService):
        config = {
            "service": {
                "namespace": target.namespace,
                "name": target.name,
                "port": target.port,
                "path": path,
            }
        }
    else:
        config = {"url": target.rstrip("/") + path}
    if ca_pem:
        config["caBundle"] = base64.b64encode(ca_pem).decode()
    return config


def _webhook_name(entry: WebhookEntry, operator: str) -> str:
    """Unique in its configuration and fully qualified (three dot-separated segments at
    least, which the API server requires)."""
    return f"{entry.resource}.{entry.gvk.group or 'core'}.{operator}"


def admission_configuration(
    kind: ConfigurationKind,
    name: str,
    entries: Iterable[WebhookEntry],
    *,
    target: ClientTarget,
    ca_pem: bytes | None,
    failure_policy: FailurePolicy,
    timeout_s: int,
    namespace: str | None,
) -> dict[str, Any]:
    """The whole configuration `name`, as the manager applies it."""
    webhooks = []
    for entry in entries:
        webhook: dict[str, Any] = {
            "name": _webhook_name(entry, name),
            "clientConfig": client_config(target, entry.path, ca_pem),
            "rules": [
                {
                    "apiGroups": [entry.gvk.group],
                    "apiVersions": [entry.gvk.version],
                    "resources": [entry.resource],
                    "operations": list(entry.operations),
                    "scope": "*",
                }
            ],
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": failure_policy,
            "timeoutSeconds": timeout_s,
            "matchPolicy": "Equivalent",
        }
        if namespace is not None:
            webhook["namespaceSelector"] = {
                "matchExpressions": [
                    {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": [namespace]}
                ]
            }
        webhooks.append(webhook)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": webhooks,
    }


def crd_conversion(crd: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """What the manager applies to CRD `crd` (`<plural>.<group>`): its conversion only."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd},
        "spec": {
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"clientConfig": dict(config), "conversionReviewVersions": ["v1"]},
            }
        },
    }
