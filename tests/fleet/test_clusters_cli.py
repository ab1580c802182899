"""M-07: `kro clusters` lists the hub and the member Secrets as the caller reads them: server,
reachable, version and refusal; exit 0 with refused or unreachable members, 1 (naming the
namespace) when the Secrets cannot be listed; never a credential in its output."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_fakes import (
    NAMESPACE,
    TOKEN,
    kubeconfig,
    never_shown,
    secret,
    server_context,
    token_kubeconfig,
)

from kro.cli.main import main
from kro.fleet.registry import SECRETS
from kro.runtime import logging as runtime_logging
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer, Fault, forbidden

pytestmark = pytest.mark.usefixtures("no_task_leaks")


@pytest.fixture(autouse=True)
def logging_left_as_found() -> Iterator[None]:
    """The command configures logging for the process (errors only, to stderr), as it should;
    the tests that run after these must find it as it was."""
    configured = runtime_logging.is_configured()
    yield
    if not configured:
        runtime_logging._reset()


@pytest.fixture
async def hub(certs: pki.ClusterPKI, tmp_path: Path) -> AsyncIterator[tuple[FakeApiServer, Path]]:
    """A hub with three member Secrets: `east` (answers), `bad` (an exec plugin), `down`
    (nothing listens there), and a kubeconfig for the caller."""
    async with (
        FakeApiServer() as hub_api,
        FakeApiServer(ssl_context=server_context(certs), tokens={TOKEN}) as member,
    ):
        hub_api.seed(SECRETS, secret(token_kubeconfig(member.url, certs), name="east"))
        exec_user = {"exec": {"command": "touch", "args": [str(tmp_path / "ran")]}}
        hub_api.seed(SECRETS, secret(kubeconfig({"server": member.url}, exec_user), name="bad"))
        down = token_kubeconfig("https://127.0.0.1:1", certs)
        hub_api.seed(SECRETS, secret(down, name="down"))
        config = tmp_path / "kubeconfig"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "hub", "cluster": {"server": hub_api.url}}],
                    "contexts": [{"name": "hub", "context": {"cluster": "hub"}}],
                    "current-context": "hub",
                }
            )
        )
        yield hub_api, config


async def kro(*argv: str) -> int:
    """`kro ...` in a thread: the command runs its own event loop, the fakes serve on ours."""
    return await asyncio.to_thread(main, list(argv))


async def test_json_lists_the_hub_first_then_each_member(
    hub: tuple[FakeApiServer, Path],
    certs: pki.ClusterPKI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub_api, config = hub
    code = await kro("clusters", "--kubeconfig", str(config), "--timeout", "2", "-o", "json")
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    listing = json.loads(out)
    assert (listing["namespace"], listing["label"]) == (
        NAMESPACE,
        "multicluster.runtime/cluster=true",
    )
    rows: dict[str, Any] = {row["name"]: row for row in listing["clusters"]}
    assert [row["name"] for row in listing["clusters"]] == ["local", "bad", "down", "east"]
    local = rows["local"]
    assert (local["local"], local["server"], local["reachable"]) == (True, hub_api.url, True)
    assert local["version"] == "v1.35.0-fake"
    east = rows["east"]
    assert (east["reachable"], east["version"], east["auth"], east["reason"]) == (
        True,
        "v1.35.0-fake",
        "token",
        "",
    )
    assert east["secret"] == f"{NAMESPACE}/east"
    bad = rows["bad"]
    assert (bad["reachable"], bad["refused"], bad["server"]) == (False, "ExecPlugin", "")
    assert "exec plugin" in bad["reason"]
    down = rows["down"]
    assert (down["reachable"], down["server"]) == (False, "https://127.0.0.1:1")
    assert down["reason"].startswith("version: ")
    for text in never_shown(certs):
        assert text not in out
    assert not (tmp_path / "ran").exists()


async def test_the_table_and_the_wide_table(
    hub: tuple[FakeApiServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    hub_api, config = hub
    assert await kro("clusters", "--kubeconfig", str(config), "--timeout", "2") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "SERVER", "REACHABLE", "VERSION", "REASON"]
    assert lines[1].split() == ["local", hub_api.url, "yes", "v1.35.0-fake", "-"]
    bad = next(line for line in lines if line.startswith("bad "))
    assert bad.split()[1:] == ["-", "no", "-", "refused:", "ExecPlugin"]
    assert await kro("clusters", "--kubeconfig", str(config), "--timeout", "2", "-o", "wide") == 0
    wide = capsys.readouterr().out.splitlines()
    assert wide[0].split()[:3] == ["NAME", "SECRET", "AUTH"]
    east = next(line for line in wide if line.startswith("east "))
    assert east.split()[1:3] == [f"{NAMESPACE}/east", "token"]
    assert "refused (ExecPlugin): the user runs an exec plugin" in "\n".join(wide)


async def test_secrets_that_cannot_be_listed_name_the_namespace(
    hub: tuple[FakeApiServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    hub_api, config = hub
    hub_api.inject(
        Fault("status", method="GET", path="/secrets", status=403, body=forbidden("secrets"))
    )
    assert await kro("clusters", "--kubeconfig", str(config), "-n", NAMESPACE) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: cannot list Secrets in namespace {NAMESPACE} ")
    assert "forbidden" in err


async def test_another_namespace_label_and_key(
    hub: tuple[FakeApiServer, Path], certs: pki.ClusterPKI, capsys: pytest.CaptureFixture[str]
) -> None:
    hub_api, config = hub
    doc = token_kubeconfig("https://127.0.0.1:1", certs)
    hub_api.seed(
        SECRETS,
        secret(doc, name="north", namespace="fleet", key="config", labels={"fleet": "yes"}),
    )
    argv = ["-n", "fleet", "--label", "fleet=yes", "--key", "config", "--timeout", "0.5"]
    assert await kro("clusters", "--kubeconfig", str(config), *argv, "-o", "json") == 0
    rows = json.loads(capsys.readouterr().out)["clusters"]
    assert [(row["name"], row["refused"]) for row in rows] == [("local", ""), ("north", "")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", "xml"], "error: unsupported output format: xml"),
        (["--label", "no-value"], "error: --label must be one key=value"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clusters", *argv]) == 2
    assert capsys.readouterr().err.startswith(message)
