"""tools.image without podman: when it skips, and what it would run.

The build and the image test themselves (`make image`, `make image-test`) need root, podman and
minutes; they are not part of `make test`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import image

REPO = Path(__file__).resolve().parents[2]


def _tools(monkeypatch: pytest.MonkeyPatch, *, missing: set[str], uid: int = 0) -> None:
    monkeypatch.setattr(image.os, "geteuid", lambda: uid)
    monkeypatch.setattr(
        image.shutil, "which", lambda tool: None if tool in missing else f"/usr/bin/{tool}"
    )


def _never(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("must not get this far")


@pytest.mark.parametrize(
    ("uid", "missing", "base_available", "reason"),
    [
        (1000, set(), True, "not root"),
        (0, {"podman"}, True, "podman is not installed"),
        (0, {"debootstrap"}, False, "debootstrap is not installed"),
        (0, {"unshare"}, True, "unshare is not installed"),
    ],
)
@pytest.mark.parametrize("command", ["build", "test"])
def test_skips_with_a_clear_message_and_exit_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *, uid: int,
    missing: set[str], base_available: bool, reason: str, command: str,
) -> None:
    _tools(monkeypatch, missing=missing, uid=uid)
    monkeypatch.setattr(image, "image_exists", lambda _name: base_available)
    monkeypatch.setattr(image, "base_tarball", lambda: Path("/nonexistent/base.tar"))
    monkeypatch.setattr(image, "build_image", _never)
    monkeypatch.setattr(image, "run_image_test", _never)
    assert image.main([command]) == 0
    out = capsys.readouterr().out
    target = "make image-test" if command == "test" else "make image"
    assert out.startswith(f"SKIP: {target}: ")
    assert reason in out


def test_debootstrap_is_needed_only_without_a_base(monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(monkeypatch, missing={"debootstrap"})
    image.check_prerequisites(lambda: True)  # base cached: no skip
    with pytest.raises(image.Skip, match="debootstrap"):
        image.check_prerequisites(lambda: False)


def test_base_availability_is_asked_only_once_podman_is_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _tools(monkeypatch, missing={"podman"})
    with pytest.raises(image.Skip, match="podman"):
        image.check_prerequisites(_never)  # type: ignore[arg-type]


def test_a_failed_step_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _tools(monkeypatch, missing=set())
    monkeypatch.setattr(image, "image_exists", lambda _name: True)

    def fail(_tag: str) -> None:
        raise image.ImageError("podman build failed (exit 125): see the output above")

    monkeypatch.setattr(image, "build_image", fail)
    assert image.main(["build"]) == 1
    assert "FAIL: podman build failed" in capsys.readouterr().err


def test_pip_settings_reach_the_build_only_when_set(tmp_path: Path) -> None:
    assert image.pip_conf({}) is None
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    found = image.pip_conf(
        {"PIP_CERT": str(ca), "PIP_INDEX_URL": "https://pypi.example/simple", "HOME": "/x"}
    )
    assert found is not None
    text, bundle = found
    assert bundle == ca
    assert text.splitlines() == [
        "[global]",
        "index-url = https://pypi.example/simple",
        f"cert = {image.BUILD_HOME}/.config/pip/ca.pem",
    ]
    # A CA variable naming a missing file is ignored rather than breaking pip in the build.
    assert image.pip_conf({"PIP_CERT": str(tmp_path / "missing.pem")}) is None


def _deployment(**security: object) -> dict[str, object]:
    """A Deployment shaped like the chart's (charts/kro/templates/deployment.yaml)."""
    context = {
        "runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": True,
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    context.update(security)
    return {"spec": {"template": {"spec": {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "kro", "command": ["kro", "controller"],
            "args": ["--metrics-bind-address=127.0.0.1:18078", "--leader-elect=true"],
            "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
            "securityContext": context,
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        }],
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
    }}}}


def test_the_container_runs_as_the_chart_says(tmp_path: Path) -> None:
    chart = image.chart_container(_deployment())
    assert (chart.uid, chart.gid, chart.read_only_root) == (1000, 1000, True)
    assert chart.empty_dirs == {"/tmp": "64m"}
    config = {"Entrypoint": ["kro", "controller"], "User": "1000:1000",
              "Env": ["PATH=/opt/kro/bin:/usr/bin", "PYTHONUNBUFFERED=1"]}
    spec = image.ContainerSpec.of(config, chart, image_root=tmp_path / "image",
                                  root=tmp_path / "root", secrets=tmp_path / "secrets")
    assert spec.argv == ["kro", "controller", *chart.args,
                         f"--kubeconfig={image.SECRETS_IN_IMAGE}/kubeconfig"]
    assert spec.env["PATH"].startswith("/opt/kro/bin")  # the image's
    assert spec.env["PYTHONDONTWRITEBYTECODE"] == "1"  # the chart's
    env = spec.process_env()
    assert (env["KRO_UID"], env["KRO_GID"], env["KRO_READ_ONLY_ROOT"]) == ("1000", "1000", "1")
    assert env["KRO_EMPTY_DIRS"] == "/tmp=64m"
    argv = image.container_argv(spec)
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[-len(spec.argv):] == spec.argv
    script = argv[argv.index("-c") + 1]
    assert "remount,bind,ro" in script  # readOnlyRootFilesystem
    for flag in ("--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"):
        assert flag in script


def test_without_a_command_the_image_entrypoint_runs(tmp_path: Path) -> None:
    deployment = _deployment()
    del deployment["spec"]["template"]["spec"]["containers"][0]["command"]  # type: ignore[index]
    spec = image.ContainerSpec.of({"Entrypoint": ["kro", "controller"]},
                                  image.chart_container(deployment), image_root=tmp_path,
                                  root=tmp_path, secrets=tmp_path)
    assert spec.argv[:2] == ["kro", "controller"]


@pytest.mark.parametrize(
    ("security", "message"),
    [
        ({"capabilities": {"drop": ["NET_RAW"]}}, "does not drop ALL"),
        ({"allowPrivilegeEscalation": True}, "allows privilege escalation"),
        ({"runAsUser": None}, "no runAsUser"),
    ],
)
def test_a_chart_this_test_cannot_mimic_is_an_error(
    security: dict[str, object], message: str
) -> None:
    with pytest.raises(image.ImageError, match=message):
        image.chart_container(_deployment(**security))


def test_the_real_charts_security_context_is_what_the_test_mimics() -> None:
    values = (REPO / "charts" / "kro" / "values.yaml").read_text()
    for line in ("runAsUser: 1000", "runAsGroup: 1000", "readOnlyRootFilesystem: true",
                 "allowPrivilegeEscalation: false"):
        assert line in values


@pytest.mark.parametrize(
    ("limit", "size"), [(None, "64m"), ("64Mi", "64m"), ("512Ki", "512k"), ("1Gi", "1g"),
                        ("1048576", "1048576")],
)
def test_emptydir_size_limits_become_tmpfs_sizes(limit: str | None, size: str) -> None:
    assert image._tmpfs_size(limit) == size


def test_slim_rootfs_keeps_copyrights_and_stops_dpkg_adding_docs(tmp_path: Path) -> None:
    doc = tmp_path / "usr/share/doc/python3"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text("c")
    (doc / "changelog.gz").write_text("x")
    (tmp_path / "usr/share/man/man1").mkdir(parents=True)
    (tmp_path / "usr/share/locale/de").mkdir(parents=True)
    (tmp_path / "usr/share/locale/locale.alias").write_text("a")
    (tmp_path / "var/cache/apt/archives").mkdir(parents=True)
    (tmp_path / "var/cache/apt/archives/python3.deb").write_text("d")
    image.slim_rootfs(tmp_path)
    assert sorted(p.name for p in doc.iterdir()) == ["copyright"]
    assert not (tmp_path / "usr/share/man").exists()
    assert sorted(p.name for p in (tmp_path / "usr/share/locale").iterdir()) == ["locale.alias"]
    assert not list((tmp_path / "var/cache/apt/archives").iterdir())
    excludes = (tmp_path / "etc/dpkg/dpkg.cfg.d/excludes").read_text()
    assert "path-exclude /usr/share/doc/*" in excludes


def test_make_test_does_not_run_the_image_targets() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^image: ", makefile, re.M)
    assert re.search(r"^image-test: ", makefile, re.M)
    test_line = re.search(r"^test: (.*)$", makefile, re.M)
    assert test_line is not None
    assert "image" not in test_line.group(1)
