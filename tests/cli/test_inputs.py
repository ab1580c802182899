"""kro.cli.inputs: `-f` sources and YAML read as the API server receives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kro.cli.inputs import InputError, expand_sources, parse_documents


def test_duplicate_keys_are_recorded_with_their_paths() -> None:
    text = "a: 1\nb: {c: 2, c: 3}\nl:\n- {x: 1, x: 2}\na: 4\n"
    (document,) = parse_documents(text, "f.yaml")
    assert document.duplicates == ("b.c", "l[0].x", "a")
    assert document.body == {"a": 4, "b": {"c": 3}, "l": [{"x": 2}]}


def test_merge_keys_are_not_duplicates() -> None:
    (document,) = parse_documents("base: &b {x: 1}\nother:\n  <<: *b\n  <<: *b\n", "f.yaml")
    assert document.duplicates == ()


def test_timestamps_stay_strings() -> None:
    (document,) = parse_documents("when: 2024-01-01\nat: 2024-01-01T10:00:00Z\n", "f.yaml")
    assert document.body == {"when": "2024-01-01", "at": "2024-01-01T10:00:00Z"}


def test_empty_documents_are_skipped_and_lists_expanded() -> None:
    text = "---\n---\nkind: List\nitems:\n- kind: A\n- kind: B\n---\nkind: C\n"
    assert [d.body["kind"] for d in parse_documents(text, "f.yaml")] == ["A", "B", "C"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [b\n", "f.yaml: line 2, column 1: did not find expected ',' or ']'"),
        ("a: b\n c: d\n", "f.yaml: line 2, column 3: mapping values are not allowed"),
        ("just text\n", "f.yaml: document 1 is a str, not an object"),
    ],
    ids=["unclosed-flow", "bad-indent", "scalar"],
)  # fmt: skip
def test_errors_are_one_line_and_name_the_file(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_documents(text, "f.yaml")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_directories_expand_to_manifests_in_name_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "c.json", "notes.md"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.yaml").write_text("{}", encoding="utf-8")
    names = [Path(p).name for p in expand_sources([str(tmp_path)])]
    assert names == ["a.yml", "b.yaml", "c.json"]
    recursive = [Path(p).name for p in expand_sources([str(tmp_path)], recursive=True)]
    assert recursive == ["a.yml", "b.yaml", "c.json", "d.yaml"]


def test_standard_input_only_once() -> None:
    with pytest.raises(InputError, match="only once"):
        expand_sources(["-", "-"])
