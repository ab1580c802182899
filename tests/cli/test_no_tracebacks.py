"""Bad input ends a `kro` command with one line per problem and exit 1, never a traceback.

Two kinds of bad input that the table in test_bad_inputs.py does not cover:

* files that are not manifests at all, in every role a file has (`-f`, `-i`, `--observed`,
  `--crd`, standard input): bytes that are not UTF-8, numbers Python refuses to parse,
  documents that are not objects, objects of the wrong shape;
* expressions that fail only for one instance (over kro's size limits, a division by zero, an
  observed value out of range). `kro render` then says what the controller would put in the
  instance's ResourcesReady condition, in one line, exits 1, and still prints every resource
  that does not depend on the failed one, so one bad expression does not hide the rest.
"""

from __future__ import annotations

import copy
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.main import main
from tests.cli.test_bad_inputs import INSTANCE, RGD

BIG_RGD: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "ResourceGraphDefinition",
    "metadata": {"name": "bigs"},
    "spec": {
        "schema": {
            "apiVersion": "v1alpha1",
            "kind": "Big",
            "spec": {"n": "integer | default=100000000", "d": "integer | default=0"},
        },
        "resources": [
            {
                "id": "small",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "small"},
                    "data": {"a": "1"},
                },
            },
            {
                "id": "big",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "big"},
                    "data": {"v": '${random.seededString(schema.spec.n, "x")}'},
                },
            },
            {
                "id": "after",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "after"},
                    "data": {"v": "${big.data.v}"},
                },
            },
        ],
    },
}
BIG_INSTANCE: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "Big",
    "metadata": {"name": "b"},
    "spec": {},
}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_error_line(err: str) -> str:
    """The single line on stderr, after checking that it is the only one and no traceback."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _dump(path: Path, obj: Any) -> str:
    path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return str(path)


# --- expressions that fail for one instance --------------------------------------------------


def test_a_value_over_the_size_limit_fails_its_node_and_the_rest_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _dump(tmp_path / "rgd.yaml", BIG_RGD)
    instance = _dump(tmp_path / "instance.yaml", BIG_INSTANCE)
    code, out, err = _run(["render", "-f", rgd, "-i", instance], capsys)
    assert code == 1
    line = _one_error_line(err)
    assert line.startswith(
        f'error: {instance}: Big "b": resource reconciliation failed: node "big": failed to '
        'evaluate expression "random.seededString(schema.spec.n, "x")" in path "data.v": '
    )
    assert "exceeds the limit of 3145728 (3MiB per value)" in line
    # The node that does not depend on it renders; the one that does waits for it.
    assert "# small (apply order" in out
    assert "name: small" in out
    reason = line.split('Big "b": ', 1)[1]
    assert f"# big: error: {reason}\n" in out
    assert '# after: waiting: node "after": dependent node "big"' in out


def test_a_failed_node_in_machine_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rgd = _dump(tmp_path / "rgd.yaml", BIG_RGD)
    instance = _dump(tmp_path / "instance.yaml", BIG_INSTANCE)
    code, out, err = _run(["render", "-f", rgd, "-i", instance, "-o", "json"], capsys)
    assert code == 1
    assert "exceeds the limit" in _one_error_line(err)
    resources = {r["id"]: r for r in json.loads(out)["instances"][0]["resources"]}
    assert {k: r["state"] for k, r in resources.items()} == {
        "small": "rendered",
        "big": "error",
        "after": "waiting",
    }
    assert resources["big"]["reason"].startswith('resource reconciliation failed: node "big"')
    assert resources["small"]["objects"][0]["metadata"]["name"] == "small"


def test_a_division_by_zero_for_this_instance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = copy.deepcopy(BIG_RGD)
    broken["spec"]["resources"][1]["template"]["data"]["v"] = "${string(10 / schema.spec.d)}"
    rgd = _dump(tmp_path / "rgd.yaml", broken)
    instance = _dump(tmp_path / "instance.yaml", BIG_INSTANCE)
    code, out, err = _run(["render", "-f", rgd, "-i", instance], capsys)
    assert code == 1
    assert _one_error_line(err).endswith(
        'node "big": failed to evaluate expression "string(10 / schema.spec.d)" in path '
        '"data.v": divide by zero'
    )
    assert "name: small" in out


def test_an_observed_value_readyWhen_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A readyWhen over an observed integer beyond int64: the node rendered, but its
    readiness is an error, as in the controller."""
    rgd = _dump(tmp_path / "rgd.yaml", RGD)
    instance = _dump(tmp_path / "instance.yaml", INSTANCE)
    observed = _dump(
        tmp_path / "observed.yaml",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "status": {"readyReplicas": 10**30},
        },
    )
    code, out, err = _run(["render", "-f", rgd, "-i", instance, "--observed", observed], capsys)
    assert code == 1
    assert (
        'resource reconciliation failed: node "deployment": failed to evaluate expression '
        '"deployment.status.readyReplicas > 0" in readyWhen: '
    ) in _one_error_line(err)
    assert "kind: Deployment" in out


# --- files that are not manifests, in every role ------------------------------------------------

NOT_UTF8 = b"kind: caf\xe9\n"
HUGE_NUMBER = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {n: " + b"9" * 5000
HUGE_NUMBER += b"}\n"

FILES: dict[str, tuple[bytes, str]] = {
    "not-utf-8": (NOT_UTF8, "cannot read {path}: 'utf-8' codec can't decode byte 0xe9"),
    "random-bytes": (bytes(range(128, 256)) * 8, "cannot read {path}: 'utf-8' codec"),
    "huge-number": (HUGE_NUMBER, "{path}: document 1: a number has more than 4300 digits"),
    "scalar-document": (b"just words\n", "{path}: document 1 is a str, not an object"),
    "list-document": (b"- 1\n- 2\n", "{path}: document 1 is a list, not an object"),
    "nul-character": (
        b"kind: x\nname: a\x00b\n",
        "{path}: line 2, column 8: unacceptable character #x0000: control characters are not "
        "allowed",
    ),
    "unclosed-flow": (b'{"kind": ', "{path}: line 2, column 1: did not find expected node"),
    "deep-nesting": (b"a: " + b"[" * 20000 + b"]" * 20000, "{path}: line 1, column "),
}


def _argv(role: str, path: str, tmp_path: Path) -> list[str]:
    rgd = _dump(tmp_path / "good-rgd.yaml", RGD)
    instance = _dump(tmp_path / "good-instance.yaml", INSTANCE)
    return {
        "validate -f": ["validate", "-f", path],
        "graph -f": ["graph", "-f", path],
        "generate crd -f": ["generate", "crd", "-f", path],
        "generate rbac -f": ["generate", "rbac", "-f", path],
        "validate --crd": ["validate", "-f", rgd, "--crd", path],
        "render -f": ["render", "-f", path, "-i", instance],
        "render -i": ["render", "-f", rgd, "-i", path],
        "render --observed": ["render", "-f", rgd, "-i", instance, "--observed", path],
    }[role]


ROLES = [
    "validate -f",
    "graph -f",
    "generate crd -f",
    "generate rbac -f",
    "validate --crd",
    "render -f",
    "render -i",
    "render --observed",
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", sorted(FILES))
def test_a_file_that_is_not_a_manifest(
    name: str, role: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, expected = FILES[name]
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    code, _, err = _run(_argv(role, str(path), tmp_path), capsys)
    assert code == 1
    assert _one_error_line(err).startswith("error: " + expected.format(path=path))


@pytest.mark.parametrize(
    "stdin_argv",
    [
        lambda rgd, instance: ["validate", "-f", "-"],
        lambda rgd, instance: ["render", "-f", rgd, "-i", "-"],
        lambda rgd, instance: ["render", "-f", rgd, "-i", instance, "--observed", "-"],
    ],
    ids=["validate -f -", "render -i -", "render --observed -"],
)
def test_bytes_that_are_not_utf_8_on_standard_input(
    stdin_argv: Callable[[str, str], list[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a terminal or pipe gives: a text layer over bytes, which would otherwise let the
    # undecodable bytes through as surrogates that the YAML parser cannot take.
    stream = io.TextIOWrapper(io.BytesIO(NOT_UTF8), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stream)
    rgd = _dump(tmp_path / "rgd.yaml", RGD)
    instance = _dump(tmp_path / "instance.yaml", INSTANCE)
    code, _, err = _run(stdin_argv(rgd, instance), capsys)
    assert code == 1
    assert _one_error_line(err).startswith("error: cannot read STDIN: 'utf-8' codec can't decode")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"metadata": "web"}, "metadata must be an object"),
        ({"metadata": ["web"]}, "metadata must be an object"),
        ({"metadata": {"name": 7}}, "metadata.name must be a string"),
        ({"kind": 5}, "apiVersion and kind must be strings"),
        ({"apiVersion": None}, "apiVersion and kind must be strings"),
    ],
    ids=["metadata-string", "metadata-list", "name-number", "kind-number", "apiVersion-null"],
)
def test_an_observed_object_of_the_wrong_shape(
    change: dict[str, Any], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    observed = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    observed.update(change)
    path = _dump(tmp_path / "observed.yaml", observed)
    argv = _argv("render --observed", path, tmp_path)
    code, out, err = _run(argv, capsys)
    assert code == 1
    assert out == ""
    assert _one_error_line(err) == f"error: {path}: an observed object is invalid: {problem}"


# --- every field of an instance and of an observed object, with a value of the wrong type ------

WRONG_VALUES: tuple[Any, ...] = (None, -1, 10**30, 1.5, True, "x", "${schema}", [], [1], {})
OBSERVED: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 2},
    "status": {"readyReplicas": 2},
}


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a document of maps and lists, the document's own () first."""
    found = [prefix]
    children: Any = ()
    if isinstance(obj, dict):
        children = obj.items()
    elif isinstance(obj, list):
        children = enumerate(obj)
    for key, value in children:
        found += _paths(value, (*prefix, key))
    return found


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    changed = copy.deepcopy(obj)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("role", "base"), [("render -i", INSTANCE), ("render --observed", OBSERVED)], ids=str
)
def test_wrong_types_anywhere_end_in_one_line_messages(
    role: str, base: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not one case per field: the sweep checks that every such input ends as 0 (the value was
    acceptable) or 1 with every stderr line a message, never an exception."""
    for path in _paths(base)[1:]:
        for value in WRONG_VALUES:
            document = _dump(tmp_path / "doc.yaml", _replace(base, path, value))
            code, _, err = _run(_argv(role, document, tmp_path), capsys)
            case = f"{'.'.join(map(str, path))}={value!r}"
            assert code in (0, 1), case
            assert "Traceback" not in err, case
            assert all(line.startswith(("error: ", document)) for line in err.splitlines()), (
                case,
                err,
            )
