"""examples/nginxapp on the real control plane, driven as a user would: with admin credentials.

Shared by the e2e tests that need kro to reconcile something real. The RGD and the instance are
the example files unchanged, except that the instance goes into the test's namespace. Every
wait has a deadline; cleanup deletes the instance and the RGD while the controller still runs
(both carry kro's finalizer) and then the generated CRD.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from kro.api.names import CONDITION_READY, CONDITION_RESOURCES_READY
from kro.testing.adminapi import AdminApi, ApiStatusError
from kro.testing.wait import WaitTimeout, wait_for

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "nginxapp"
CHART_CRDS = REPO / "charts" / "kro" / "crds"
CRDS_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RGDS_API = "/apis/kro.run/v1alpha1/resourcegraphdefinitions"
FIELD_MANAGER = "kro-e2e-user"
T = TypeVar("T")

# What examples/nginxapp/rgd.yaml generates (docs/rbac.md derives the same names).
GROUP, VERSION, PLURAL = "platform.example.com", "v1alpha1", "nginxapps"
GENERATED_CRD = f"{PLURAL}.{GROUP}"
GVR_STRING = f"{GROUP}/{VERSION}, Resource={PLURAL}"  # every `gvr` label (GVR.String())
DYNAMIC_GVR_KEY = GVR_STRING  # the dynamic_controller_* families use the same format


def wait_explained(
    probe: Callable[[], T | None], describe: Callable[[], Any], *, what: str,
    timeout_s: float = 60.0, interval_s: float = 0.3,
) -> T:
    """`wait_for`, and on timeout also say what `describe()` shows at that moment."""
    try:
        return wait_for(probe, timeout_s=timeout_s, interval_s=interval_s, what=what)
    except WaitTimeout as timeout:
        raise WaitTimeout(f"{timeout}; now: {describe()!r}") from None


def load(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((EXAMPLE / name).read_text()))


def apply(admin: AdminApi, path: str, obj: dict[str, Any]) -> Any:
    """Server-side apply as the user (JSON is valid YAML)."""
    return admin.request(
        "PATCH",
        f"{path}?fieldManager={FIELD_MANAGER}&force=true",
        obj,
        content_type="application/apply-patch+yaml",
    )


def merge_patch(admin: AdminApi, path: str, patch: dict[str, Any]) -> Any:
    return admin.request("PATCH", path, patch, content_type="application/merge-patch+json")


def install_kro_crds(admin: AdminApi) -> None:
    """kro's own CRDs from the chart (what `helm install` puts in first); kept afterwards."""
    names = []
    for path in sorted(CHART_CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        names.append(str(crd["metadata"]["name"]))
        apply(admin, f"{CRDS_API}/{names[-1]}", crd)
    wait_for(
        lambda: all(established(admin, name) for name in names),
        timeout_s=30,
        what=f"CRDs {names} Established",
    )


def established(admin: AdminApi, name: str) -> bool:
    crd = admin.get(f"{CRDS_API}/{name}") or {}
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for entry in ((obj or {}).get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return dict(entry)
    return {}


@dataclass
class NginxApp:
    """The example RGD and one instance of it in `namespace`."""

    admin: AdminApi
    namespace: str

    def __post_init__(self) -> None:
        self.rgd = load("rgd.yaml")
        self.instance = load("instance.yaml")
        self.instance["metadata"]["namespace"] = self.namespace
        self.rgd_name = str(self.rgd["metadata"]["name"])
        self.name = str(self.instance["metadata"]["name"])

    # -- paths -----------------------------------------------------------------------------------

    @property
    def rgd_path(self) -> str:
        return f"{RGDS_API}/{self.rgd_name}"

    @property
    def instance_path(self) -> str:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{PLURAL}/{self.name}"

    @property
    def deployment_path(self) -> str:
        return f"/apis/apps/v1/namespaces/{self.namespace}/deployments/{self.name}"

    @property
    def service_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/services/{self.name}"

    @property
    def ingress_path(self) -> str:
        return f"/apis/networking.k8s.io/v1/namespaces/{self.namespace}/ingresses/{self.name}"

    # -- reads -----------------------------------------------------------------------------------

    def get_rgd(self) -> dict[str, Any] | None:
        found = self.admin.get(self.rgd_path)
        return dict(found) if found else None

    def get_instance(self) -> dict[str, Any] | None:
        found = self.admin.get(self.instance_path)
        return dict(found) if found else None

    def is_active(self, generation: int | None = None) -> dict[str, Any] | None:
        """The instance, if it is ACTIVE and Ready=True at `generation` (default: its own)."""
        live = self.get_instance()
        if live is None or (live.get("status") or {}).get("state") != "ACTIVE":
            return None
        ready = condition(live, CONDITION_READY)
        wanted = generation if generation is not None else live["metadata"]["generation"]
        if ready.get("status") != "True" or ready.get("observedGeneration") != wanted:
            return None
        return live

    def resources_ready(self) -> dict[str, Any]:
        return condition(self.get_instance(), CONDITION_RESOURCES_READY)

    # -- writes ----------------------------------------------------------------------------------

    def apply_rgd(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Apply the RGD and wait until kro reports it Active with its CRD served."""
        apply(self.admin, self.rgd_path, self.rgd)
        def active() -> dict[str, Any] | None:
            live = self.get_rgd()
            if (live or {}).get("status", {}).get("state") != "Active":
                return None
            return live if established(self.admin, GENERATED_CRD) else None

        return wait_explained(
            active,
            self._rgd_summary,
            timeout_s=timeout_s,
            what=f"RGD {self.rgd_name} Active",
        )

    def apply_instance(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Apply the instance and wait until it is ACTIVE with its Deployment and Service."""

        def applied() -> bool:
            try:
                apply(self.admin, self.instance_path, self.instance)
            except ApiStatusError as error:
                if error.status == 404:  # the new kind is not served yet
                    return False
                raise
            return True

        wait_for(applied, timeout_s=30, what=f"{PLURAL} to be served")
        return self.wait_active(timeout_s=timeout_s)

    def wait_active(self, generation: int | None = None, timeout_s: float = 60.0) -> dict[str, Any]:
        return wait_explained(
            lambda: self.is_active(generation),
            self._instance_summary,
            timeout_s=timeout_s,
            what=f"{self.name} ACTIVE (generation {generation or 'current'})",
        )

    def set_replicas(self, replicas: int) -> int:
        """Change spec.replicas as the user; returns the instance's new generation."""
        patched = merge_patch(self.admin, self.instance_path, {"spec": {"replicas": replicas}})
        return int(patched["metadata"]["generation"])

    def delete(self, timeout_s: float = 60.0) -> None:
        """Delete the instance, then the RGD, waiting for kro to release each finalizer, then
        the generated CRD. Needs the controller running."""
        if self.admin.exists(self.instance_path):
            self.admin.delete(self.instance_path)
            wait_explained(
                lambda: not self.admin.exists(self.instance_path),
                self._instance_summary,
                timeout_s=timeout_s,
                what=f"{self.name} deleted by kro",
            )
        if self.admin.exists(self.rgd_path):
            self.admin.delete(self.rgd_path)
            wait_explained(
                lambda: not self.admin.exists(self.rgd_path),
                self._rgd_summary,
                timeout_s=timeout_s,
                what=f"RGD {self.rgd_name} deleted by kro",
            )

    def delete_generated_crd(self) -> None:
        self.admin.delete(f"{CRDS_API}/{GENERATED_CRD}")

    # -- diagnostics -----------------------------------------------------------------------------

    def _instance_summary(self) -> Any:
        try:
            live = self.get_instance()
        except ApiStatusError as error:
            return str(error)
        return (live or {}).get("status")

    def _rgd_summary(self) -> Any:
        try:
            live = self.get_rgd()
        except ApiStatusError as error:
            return str(error)
        return (live or {}).get("status")
