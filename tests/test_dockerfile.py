"""The controller image's Dockerfile keeps its promises.

Final stage: glibc Python base, runs `kro controller` as a non-root user, holds no compiler and no
dev extras, and needs no writable root filesystem. The same steps work on the official python
image (the default) and on Debian 12 with Debian's python3, which `make image` builds the image
on (tools/image.py); `make image-test` runs the built image. Neither is part of `make test`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Instruction:
    keyword: str
    argument: str


def _instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    joined: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    out = []
    for line in joined:
        keyword, _, argument = line.partition(" ")
        out.append(Instruction(keyword.upper(), argument.strip()))
    return out


def _stages() -> list[list[Instruction]]:
    stages: list[list[Instruction]] = []
    for instruction in _instructions((REPO / "Dockerfile").read_text()):
        if instruction.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def _args() -> dict[str, str]:
    """Global ARG defaults (declared before the first FROM)."""
    found: dict[str, str] = {}
    for instruction in _instructions((REPO / "Dockerfile").read_text()):
        if instruction.keyword == "FROM":
            break
        if instruction.keyword == "ARG" and "=" in instruction.argument:
            name, value = instruction.argument.split("=", 1)
            found[name] = value
    return found


def _final() -> list[Instruction]:
    stages = _stages()
    assert len(stages) >= 2, "expected a builder stage and a final stage"
    return stages[-1]


def _base_image(stage: list[Instruction]) -> str:
    image = stage[0].argument.split()[0]
    return re.sub(r"\$\{(\w+)\}", lambda m: _args()[m.group(1)], image)


def test_final_base_is_a_glibc_python_image() -> None:
    base = _base_image(_final())
    assert base == "python:3.11-slim-bookworm"
    assert "alpine" not in base


def test_final_stage_runs_as_a_non_root_numeric_user() -> None:
    users = [i.argument for i in _final() if i.keyword == "USER"]
    assert users, "no USER in the final stage"
    user = users[-1].split(":")[0]
    assert user.isdigit(), "use a numeric uid so runAsNonRoot can verify it"
    assert int(user) == 1000


def test_entrypoint_runs_the_controller() -> None:
    entrypoints = [i.argument for i in _final() if i.keyword == "ENTRYPOINT"]
    assert entrypoints == ['["kro", "controller"]']


def test_final_stage_has_no_build_tools() -> None:
    text = " ".join(i.argument for i in _final()).lower()
    for tool in ("gcc", "build-essential", "make ", "g++", "clang", "git "):
        assert tool not in text, tool


def test_no_dev_extras_anywhere() -> None:
    for instruction in _instructions((REPO / "Dockerfile").read_text()):
        assert "[dev" not in instruction.argument, instruction


def test_final_stage_installs_the_builders_wheels_without_a_cache() -> None:
    runs = [i.argument for i in _final() if i.keyword == "RUN"]
    installs = [r for r in runs if "pip install" in r]
    assert len(installs) == 1
    words = shlex.split(installs[0])
    assert "--no-cache-dir" in words
    assert "--no-index" in words  # only what the builder stage built
    assert "from=builder" in installs[0]


def test_final_stage_writes_no_bytecode_at_run_time() -> None:
    envs = " ".join(i.argument for i in _final() if i.keyword == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in envs


def test_builder_builds_wheels_from_the_project_only() -> None:
    builder = _stages()[0]
    copies = [i.argument for i in builder if i.keyword == "COPY"]
    sources = {word for copy in copies for word in copy.split()[:-1]}
    assert sources == {"pyproject.toml", "README.md", "LICENSE", "kro"}  # license-files
    assert all((REPO / source).exists() for source in sources)
    assert any("pip wheel" in i.argument for i in builder if i.keyword == "RUN")


def test_dockerignore_keeps_local_state_out_of_the_context() -> None:
    lines = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[0] == "*"  # allow-list: only what the build needs
    assert set(lines) >= {"!pyproject.toml", "!README.md", "!LICENSE", "!kro/"}
    assert not any(line.startswith("!") and (".venv" in line or ".git" in line)
                   for line in lines)


def test_steps_work_on_the_official_image_and_on_debians_python3() -> None:
    """`python3`, never `python` (Debian has none) nor a system `pip` (Debian has none, and its
    python3 refuses system-wide installs): pip runs from virtual environments."""
    for instruction in _instructions((REPO / "Dockerfile").read_text()):
        if instruction.keyword != "RUN":
            continue
        for command in re.split(r"&&|\|\||;|\|", instruction.argument):
            words = [w for w in command.split() if not w.startswith("--mount=")]
            assert words[:1] not in (["python"], ["pip"]), instruction
    runs = " ".join(i.argument for i in _final() if i.keyword == "RUN")
    assert "python3 -m venv /opt/kro" in runs
    assert any(i.keyword == "ENV" and i.argument.startswith("PATH=/opt/kro/bin:")
               for i in _final())


def test_the_install_layer_follows_the_builders_wheels() -> None:
    """podman's layer cache keys a RUN on its text, not on a `--mount=from=builder`: a COPY of
    the wheels' checksums before the install makes a new kro wheel rebuild that layer."""
    final = _final()
    copy = next(n for n, i in enumerate(final)
                if i.keyword == "COPY" and "--from=builder" in i.argument
                and "wheels.sha256" in i.argument)
    install = next(n for n, i in enumerate(final)
                   if i.keyword == "RUN" and "pip install" in i.argument)
    assert copy < install
    builder_runs = " ".join(i.argument for i in _stages()[0] if i.keyword == "RUN")
    assert "sha256sum" in builder_runs
    assert "/wheels.sha256" in builder_runs


def test_default_base_stays_the_official_image_for_both_stages() -> None:
    stages = _stages()
    assert all(stage[0].argument.split()[0] == "${PYTHON_IMAGE}" for stage in stages)
    assert _args()["PYTHON_IMAGE"] == "python:3.11-slim-bookworm"
