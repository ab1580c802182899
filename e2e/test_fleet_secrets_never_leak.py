"""No member credential leaves kro, on real control planes: a hub and two members (M-06).

Issue #35 asks for "no credential in any status, Event, log line or CLI output, checked by a
test that greps them all". A small fleet scenario puts credentials of every kind through kro:

* member-1 and member-2 as registered (client certificates and keys, inline);
* an instance of an RGD whose resources all go to member-1, ACTIVE;
* a refused Secret (`insecure-skip-tls-verify`) that also carries a bearer token and a client
  certificate and key: never used, and an instance targeting it is told why;
* an accepted Secret whose bearer token member-2 rejects (401): kro sends that token, fails,
  and an instance targeting it reports the failure;
* a rotation of member-1 to a ServiceAccount token of member-1 (a real TokenRequest JWT, sent
  on every request after it), an edit converging through it; then the token is revoked (its
  ServiceAccount deleted), so kro's requests carrying it fail with 401 and the instance
  reports it; and the rotation back.

Then everything kro wrote is read back: every log line as the controller renders it (debug
level when this module configures logging), every Event in the test namespace, kro-system and
default, the status of the RGDs, their GraphRevisions and their instances, /metrics, and the
output of `kro clusters -o json` and `-o wide`. None may contain a token, client key or client
certificate from any registry Secret: raw, base64, as the Secret's data, or any 40-character
stretch of them (a truncated or re-wrapped credential is still a credential). Stretches that
also occur in public material (a member's CA certificate, its server URL) are not secrets and
are left out.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import re
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from fleet_support import fleet_args, fleet_fixture
from kro_harness import (
    ControllerThread,
    KroEnv,
    RenderedLines,
    condition,
    is_ready,
    kro_fixtures,
    meta,
    rendered_lines,
    state,
)

from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.errors import NotFound, Unauthorized
from kro.runtime.gvk import GVR
from kro.testing.adminapi import AdminApi
from kro.testing.fleet import (
    Fleet,
    apply_registry,
    inline_kubeconfig,
    issue_client_certificate,
    registry_secret,
)
from kro.testing.waiting import eventually

ARGS = fleet_args(log_level="debug")  # every line kro can write is scanned
controller, kro = kro_fixtures(ARGS)
REPO = Path(__file__).resolve().parents[1]
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
EVENTS = (GVR("", "v1", "events"), GVR("events.k8s.io", "v1", "events"))
REGISTRY = "kro-system"
TIMEOUT_S = 60.0
WINDOW: Final = 40
"""The length of a stretch of a credential that counts as leaked (the issue's 40 characters)."""
RUN: Final = re.compile(rf"[A-Za-z0-9+/=_.\-]{{{WINDOW},}}")
"""Where a stretch of base64, base64url or a JWT can be: a run of their characters."""
CREDENTIAL_FIELDS: Final = ("token", "client-certificate-data", "client-key-data")


fleet = fleet_fixture()


# -- what the controller logs, as rendered -----------------------------------------------------


@pytest.fixture(scope="module")
def logs(controller: ControllerThread) -> Iterator[RenderedLines]:
    with rendered_lines() as handler:
        yield handler


# -- the needles -------------------------------------------------------------------------------


@dataclass
class Needles:
    """Credentials (label -> text) and public material, from kubeconfigs kro was given."""

    secret: dict[str, str] = field(default_factory=dict)
    public: list[str] = field(default_factory=list)

    def add_kubeconfig(self, name: str, text: str, secret_data: str) -> None:
        """Every credential of a registry Secret's kubeconfig, in every form it travels."""
        self.secret[f"{name}: Secret data"] = secret_data
        document = yaml.safe_load(text)
        for user in document.get("users") or []:
            fields = user.get("user") or {}
            for key in CREDENTIAL_FIELDS:
                value = fields.get(key)
                if not value:
                    continue
                self.secret[f"{name}: {key}"] = value
                if key == "token":
                    self.secret[f"{name}: token, base64"] = _b64(value.encode())
                    for number, part in enumerate(value.split(".")):
                        self.secret[f"{name}: token part {number}"] = part
                    continue
                pem = base64.b64decode(value).decode()
                self.secret[f"{name}: {key}, PEM"] = pem
                body = [line for line in pem.splitlines() if line and not line.startswith("-")]
                self.secret[f"{name}: {key}, DER base64"] = "".join(body)
        for cluster in document.get("clusters") or []:
            entry = cluster.get("cluster") or {}
            self.public.append(str(entry.get("server") or ""))
            ca = str(entry.get("certificate-authority-data") or "")
            if ca:
                self.public.extend([ca, base64.b64decode(ca).decode(errors="replace")])

    def windows(self) -> dict[str, str]:
        """Every WINDOW-long stretch of every credential -> its label, less public ones."""
        public = {w for text in self.public for w in _stretches(text)}
        found: dict[str, str] = {}
        for label, text in self.secret.items():
            for stretch in _stretches(text):
                if stretch not in public:
                    found.setdefault(stretch, label)
        return found


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _stretches(text: str) -> set[str]:
    """The WINDOW-long substrings of `text`, line by line (a PEM's lines, or one line)."""
    found: set[str] = set()
    for line in [text, *text.splitlines()]:
        found.update(line[i : i + WINDOW] for i in range(len(line) - WINDOW + 1))
    return found


def leaks(places: Mapping[str, str], needles: Needles) -> list[str]:
    """Where a credential, or a WINDOW-long stretch of one, occurs: "label in place"."""
    windows = needles.windows()
    hits: list[str] = []
    for where, text in places.items():
        for label, needle in needles.secret.items():
            if len(needle) >= 16 and needle in text:  # shorter ones could match by chance
                hits.append(f"{label} in {where}")
        seen: set[str] = set()
        for run in RUN.findall(text):
            for i in range(len(run) - WINDOW + 1):
                owner = windows.get(run[i : i + WINDOW])
                if owner is not None and owner not in seen:
                    seen.add(owner)
                    hits.append(f"a {WINDOW}-character stretch of {owner} in {where}")
    return hits


def fake_jwt() -> str:
    """A bearer token shaped like a Kubernetes one (header.claims.signature, base64url)."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    header = part(json.dumps({"alg": "RS256", "kid": secrets.token_hex(8)}).encode())
    claims = part(json.dumps({"sub": f"leak-{secrets.token_hex(16)}"}).encode())
    return f"{header}.{claims}.{part(secrets.token_bytes(256))}"


# -- the scenario's kubeconfigs ----------------------------------------------------------------


def _ca(fleet: Fleet, member: str) -> tuple[bytes, bytes]:
    pki = fleet.member(member).cluster.run_dir / "pki"
    return (pki / "ca.crt").read_bytes(), (pki / "ca.key").read_bytes()


def refused_kubeconfig(fleet: Fleet, token: str) -> str:
    """member-2's server and a real client certificate of its CA plus a bearer token, but
    `insecure-skip-tls-verify`: refused (M-03), never used."""
    ca_pem, ca_key = _ca(fleet, "member-2")
    cert, key = issue_client_certificate(ca_pem, ca_key, common_name="kro-leak-refused")
    document = yaml.safe_load(
        inline_kubeconfig("refused", fleet.member("member-2").server, ca_pem, cert, key)
    )
    document["users"][0]["user"]["token"] = token
    document["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    return str(yaml.safe_dump(document, sort_keys=False))


def token_kubeconfig(fleet: Fleet, member: str, name: str, token: str) -> str:
    """`member`'s server and CA, and a bearer token."""
    ca_pem, _ = _ca(fleet, member)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": fleet.member(member).server,
                    "certificate-authority-data": _b64(ca_pem),
                },
            }
        ],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    return str(yaml.safe_dump(document, sort_keys=False))


@contextlib.contextmanager
def member_token(fleet: Fleet, member: str, account: str) -> Iterator[str]:
    """A TokenRequest token of a ServiceAccount of `member` bound to cluster-admin; the
    account and its binding are deleted afterwards."""
    admin: AdminApi = fleet.member(member).admin()
    accounts = "/api/v1/namespaces/default/serviceaccounts"
    bindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
    admin.create(accounts, {"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": account}})  # fmt: skip
    try:
        admin.create(
            bindings,
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": account},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}],
            },
        )
        answer = admin.create(
            f"{accounts}/{account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        )
        yield str(answer["status"]["token"])
    finally:
        admin.delete(f"{bindings}/{account}")
        admin.delete(f"{accounts}/{account}")


@contextlib.asynccontextmanager
async def extra_secrets(fleet: Fleet) -> AsyncIterator[list[str]]:
    """Registry Secrets this test adds (names appended), deleted afterwards; member-1's and
    member-2's Secrets are put back as the session made them."""
    added: list[str] = []
    try:
        yield added
    finally:
        for name in added:
            await asyncio.to_thread(
                fleet.hub.delete, f"/api/v1/namespaces/{REGISTRY}/secrets/{name}"
            )
        await asyncio.to_thread(fleet.register)


async def put_secret(fleet: Fleet, name: str, kubeconfig: str, needles: Needles) -> None:
    secret = registry_secret(name, kubeconfig, namespace=REGISTRY)
    needles.add_kubeconfig(name, kubeconfig, secret["data"]["kubeconfig"])
    await asyncio.to_thread(apply_registry, fleet.hub, [secret])


# -- reading back everything kro wrote ---------------------------------------------------------


def kro_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kro", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )


async def written(
    kro: KroEnv, controller: ControllerThread, logs: RenderedLines, kinds: list[GVR]
) -> dict[str, str]:
    """Every place kro's words end up, as text: place -> content."""
    client, places = kro.client, {}
    for gvr in kinds:
        for item in (await client.list(gvr, namespace=kro.namespace)).get("items") or []:
            places[f"status of {gvr.resource}/{meta(item)['name']}"] = json.dumps(
                item.get("status")
            )
    for gvr in EVENTS:
        for namespace in (kro.namespace, REGISTRY, "default"):
            items, _ = await client.list_all(gvr, namespace=namespace)
            for item in items:
                where = f"{gvr.group or 'core'} Event {namespace}/{meta(item)['name']}"
                places[where] = json.dumps(item)
    rgd_names = set()
    for rgd in (await client.list(RGDS)).get("items") or []:
        if str(meta(rgd)["name"]).endswith(kro.suffix):
            rgd_names.add(meta(rgd)["name"])
            places[f"status of RGD {meta(rgd)['name']}"] = json.dumps(rgd.get("status"))
    for revision in (await client.list(GRAPH_REVISIONS)).get("items") or []:
        if (revision.get("spec") or {}).get("snapshot", {}).get("name") in rgd_names:
            places[f"status of GraphRevision {meta(revision)['name']}"] = json.dumps(
                revision.get("status")
            )
    places["/metrics"] = await asyncio.to_thread(controller.scrape)
    for output in ("json", "wide"):
        argv = ("clusters", "--kubeconfig", str(controller.kubeconfig), "-n", REGISTRY)
        done = await asyncio.to_thread(kro_cli, *argv, "-o", output)
        assert done.returncode == 0, done.stderr
        places[f"kro clusters -o {output}"] = done.stdout
        places[f"kro clusters -o {output} (stderr)"] = done.stderr
    for number, line in enumerate(logs.lines):
        places[f"log line {number}"] = line
    return places


# -- the test ----------------------------------------------------------------------------------


async def token_refused(tmp_path: Path, kubeconfig: str) -> bool:
    """Whether the server of `kubeconfig` refuses its credentials (401)."""
    path = tmp_path / "revoked.kubeconfig"
    await asyncio.to_thread(path.write_text, kubeconfig)
    async with Client.from_config(await load_default(str(path))) as client:
        try:
            await client.request("GET", "/api")
        except Unauthorized:
            return True
    return False


async def known(controller: ControllerThread, cluster: str, reason: str) -> None:
    """kro's registry holds `cluster` and has judged it (`reason` in its reason): an instance
    created after that is told at once (M-12)."""

    async def judged() -> bool:
        assert controller.app is not None
        assert controller.app.members is not None
        member = controller.app.members.registry.get(cluster)
        return member is not None and reason in member.reason

    await eventually(judged, what=f"kro's registry judging {cluster}", timeout_s=TIMEOUT_S)


def _messages(obj: Mapping[str, Any]) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return " | ".join(f"{c.get('reason')}: {c.get('message')}" for c in conditions)


async def _member_value(fleet: Fleet, member: str, name: str) -> str | None:
    config = await load_default(str(fleet.member(member).kubeconfig_path))
    async with Client.from_config(config) as client:
        try:
            found = await client.get(CONFIGMAPS, name, namespace="default")
        except NotFound:
            return None
    return str((found.get("data") or {}).get("value"))


def test_the_scanner_finds_a_stretch_of_a_credential() -> None:
    """The check below can fail: a 40-character piece of a key inside a longer line is found,
    a public CA is not."""
    needles = Needles()
    token = fake_jwt()
    text = token_kubeconfig_text(token)
    needles.add_kubeconfig("probe", text, _b64(text.encode()))
    assert leaks({"line": f"error sending {token[7:60]}... to the server"}, needles)
    assert leaks({"line": f"x={_b64(token.encode())[3:50]}"}, needles)
    ca = yaml.safe_load(text)["clusters"][0]["cluster"]["certificate-authority-data"]
    assert not leaks({"line": f"ca={ca} server=https://127.0.0.1:6443"}, needles)


def token_kubeconfig_text(token: str) -> str:
    """A kubeconfig with a public CA and `token`, for the scanner's own check."""
    body = _b64(secrets.token_bytes(300)).encode()
    ca = _b64(b"-----BEGIN CERTIFICATE-----\n" + body + b"\n-----END CERTIFICATE-----\n")
    document = {
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:6443",
                                               "certificate-authority-data": ca}}],
        "users": [{"name": "x", "user": {"token": token}}],
    }  # fmt: skip
    return str(yaml.safe_dump(document))


async def test_no_member_credential_in_any_status_event_log_or_cli_output(
    fleet: Fleet, kro: KroEnv, controller: ControllerThread, logs: RenderedLines, tmp_path: Path
) -> None:
    needles = Needles()
    for secret in fleet.secrets(namespace=REGISTRY):
        data = secret["data"]["kubeconfig"]
        needles.add_kubeconfig(secret["metadata"]["name"], base64.b64decode(data).decode(), data)

    spec = {"name": "string", "cluster": "string", "value": "string"}
    resource = {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.name}", "namespace": "default"},
            "data": {"value": "${schema.spec.value}"},
        },
    }
    rgd = kro.rgd("leak", "FleetLeak", spec, [resource], status={"uid": "${settings.metadata.uid}"})
    rgd["spec"]["target"] = {"cluster": {"kubeconfigSecretName": "${schema.spec.cluster}"}}
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("leak"))
    gvr = await kro.gvr_of("FleetLeak")
    cm = f"leak-{kro.suffix}"

    def told(reason: str) -> Callable[[dict[str, Any]], bool]:
        def check(obj: dict[str, Any]) -> bool:
            return reason in condition(obj, "Ready").get("message", "")

        return check

    async def instance(name: str, cluster: str, value: str) -> None:
        body = {"name": f"{cm}-{name}", "cluster": cluster, "value": value}
        await kro.apply_instance("FleetLeak", name, body)

    async with extra_secrets(fleet) as added:
        # A targeted instance, ACTIVE.
        await instance("one", "member-1", "first")
        await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)

        # A refused Secret full of credentials, and an instance told why.
        refused = f"refused-{kro.suffix}"
        added.append(refused)
        await put_secret(fleet, refused, refused_kubeconfig(fleet, fake_jwt()), needles)
        await known(controller, refused, "InsecureSkipTLSVerify")
        await instance("refused", refused, "x")

        found = await kro.wait_instance(
            gvr, "refused", told("InsecureSkipTLSVerify"), what="the refusal", timeout_s=TIMEOUT_S
        )
        print(f"refused: {state(found)}: {_messages(found)}")

        # An accepted Secret whose token is rejected: kro sends it and fails.
        rejected = f"rejected-{kro.suffix}"
        added.append(rejected)
        await put_secret(fleet, rejected, token_kubeconfig(fleet, "member-2", rejected,
                                                           fake_jwt()), needles)  # fmt: skip
        await known(controller, rejected, "401")
        await instance("rejected", rejected, "x")
        found = await kro.wait_instance(
            gvr, "rejected", told("401"), what="the rejected token", timeout_s=TIMEOUT_S
        )
        print(f"rejected: {state(found)}: {_messages(found)}")

        # A rotation of member-1 to a ServiceAccount token, an edit through it, and back.
        with member_token(fleet, "member-1", f"kro-leak-{kro.suffix}") as token:
            rotated = token_kubeconfig(fleet, "member-1", "member-1", token)
            await put_secret(fleet, "member-1", rotated, needles)
            await instance("one", "member-1", "rotated")

            async def converged() -> bool:
                live = await kro.get(gvr, "one")
                value = await _member_value(fleet, "member-1", f"{cm}-one")
                return is_ready(live) and value == "rotated"

            await eventually(converged, what="the edit through member-1's token",
                             timeout_s=TIMEOUT_S)  # fmt: skip

            # The token revoked (its ServiceAccount deleted): kro's requests carrying it are
            # refused with 401 and the instance reports the failure.
            account = f"/api/v1/namespaces/default/serviceaccounts/kro-leak-{kro.suffix}"
            await asyncio.to_thread(fleet.member("member-1").admin().delete, account)
            await eventually(
                functools.partial(token_refused, tmp_path, rotated),
                what="member-1 refusing the revoked token",
                timeout_s=TIMEOUT_S,
            )
            await instance("one", "member-1", "revoked")
            found = await kro.wait_instance(
                gvr, "one", told("Unauthorized"), what="the revoked token", timeout_s=TIMEOUT_S
            )
            print(f"revoked: {state(found)}: {_messages(found)}")
            places = await written(kro, controller, logs, [gvr])
    assert any(p.startswith("log line") for p in places), "no controller log line captured"
    assert any("cluster.rotated" in t for p, t in places.items() if p.startswith("log line"))
    assert "InsecureSkipTLSVerify" in places["kro clusters -o json"]
    assert any("401" in t for p, t in places.items() if p.startswith("status of"))
    print(f"scanned {len(places)} places, {sum(len(t) for t in places.values())} characters, "
          f"for {len(needles.secret)} credentials")  # fmt: skip
    # The needles come from the real Secrets: each Secret's kubeconfig is flagged, whole.
    for secret in fleet.secrets(namespace=REGISTRY):
        text = base64.b64decode(secret["data"]["kubeconfig"]).decode()
        assert leaks({"kubeconfig": text}, needles)
    hits = leaks(places, needles)
    assert not hits, "\n".join(hits)
