"""kro.cli.inputs: what `-f` means, as kubectl users expect it, and YAML read strictly.

* `-f FILE` reads one file; `-f -` reads standard input (shown as `STDIN` in messages, as
  kubectl does); `-f DIR` reads the directory's `.yaml`, `.yml` and `.json` files in name
  order, and with `-R` its subdirectories too.
* Every document keeps its source, so each message can say which file it is about, and a
  `kind: List` document is read as its items.
* YAML is read the way the API server receives it: timestamps stay strings (kubectl converts
  YAML to JSON before sending), and a key given twice in one map is recorded with its path
  (`spec.resources[0].id`) so that `kro validate` can reject it like strict field validation,
  instead of silently keeping the last value.
* Errors name the file and the position in one line (`rgd.yaml: line 3, column 5: ...`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

STDIN: Final = "-"
STDIN_NAME: Final = "STDIN"
MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """SafeLoader (libyaml when available) that keeps timestamps as the strings they are."""


_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


class InputError(Exception):
    """A `-f` source cannot be read or parsed; the message names it and is one line."""


@dataclass(frozen=True, slots=True)
class Document:
    """One object from the input: where it came from, and keys it gave twice."""

    source: str
    body: dict[str, Any]
    duplicates: tuple[str, ...] = ()


def expand_sources(specs: Sequence[str], *, recursive: bool = False) -> list[str]:
    """The files `-f` arguments name: `-` as is, directories expanded to their manifests."""
    files: list[str] = []
    for spec in specs:
        path = Path(spec)
        if spec == STDIN:
            files.append(spec)
        elif path.is_dir():
            pattern = "**/*" if recursive else "*"
            found = sorted(
                p for p in path.glob(pattern) if p.is_file() and p.suffix in MANIFEST_SUFFIXES
            )
            if not found:
                raise InputError(f'error reading "{spec}": no .yaml, .yml or .json files in it')
            files.extend(str(p) for p in found)
        elif not path.exists():
            raise InputError(f'the path "{spec}" does not exist')
        else:
            files.append(spec)
    if files.count(STDIN) > 1:
        raise InputError("standard input (-) can be read only once")
    return files


def display_name(source: str) -> str:
    return STDIN_NAME if source == STDIN else source


def read_documents(sources: Sequence[str], stdin: TextIO | None = None) -> list[Document]:
    """Every object document of `sources`, in order (empty documents skipped)."""
    documents: list[Document] = []
    for source in sources:
        name = display_name(source)
        try:
            text = _read_stdin(stdin or sys.stdin) if source == STDIN else _read_file(source)
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"cannot read {name}: {_reason(error)}") from error
        documents.extend(parse_documents(text, name))
    return documents


def _read_file(source: str) -> str:
    return Path(source).read_text(encoding="utf-8")


def _read_stdin(stream: TextIO) -> str:
    """Standard input as UTF-8, strictly: the text layer would let undecodable bytes through
    as surrogates, which the YAML parser cannot encode again."""
    raw = getattr(stream, "buffer", None)
    return raw.read().decode("utf-8") if raw is not None else stream.read()


def parse_documents(text: str, name: str) -> list[Document]:
    """The object documents of one YAML/JSON text; `name` is used in messages."""
    out: list[Document] = []
    loader = _Loader(text)
    try:
        position = 0
        while loader.check_node():
            node = loader.get_node()
            position += 1
            duplicates = tuple(_duplicate_paths(node, ""))
            body = _construct(loader, node, name, position)
            out.extend(_objects(body, duplicates, name, position))
    except yaml.reader.ReaderError as error:  # a character YAML does not allow, e.g. NUL
        before = text[: error.position]
        where = f"line {before.count(chr(10)) + 1}, column {len(before.rsplit(chr(10), 1)[-1]) + 1}"
        raise InputError(
            f"{name}: {where}: unacceptable character #x{error.character:04x}: {error.reason}"
        ) from error
    except yaml.YAMLError as error:
        raise InputError(f"{name}: {describe_yaml_error(error)}") from error
    finally:
        loader.dispose()
    return out


def _construct(loader: Any, node: yaml.Node, name: str, position: int) -> Any:
    """The document's value. Python refuses to convert integers of more than 4300 digits
    (a guard against quadratic-time parsing); such a number is bad input, said in one line."""
    try:
        return loader.construct_document(node)
    except ValueError as error:
        problem = str(error)
        if "integer string conversion" in problem:
            problem = f"a number has more than {sys.get_int_max_str_digits()} digits"
        raise InputError(f"{name}: document {position}: {' '.join(problem.split())}") from error


def _objects(
    body: Any, duplicates: tuple[str, ...], name: str, position: int
) -> Iterator[Document]:
    if body is None:
        return
    if not isinstance(body, dict):
        raise InputError(
            f"{name}: document {position} is a {type(body).__name__}, not an object "
            "(expected a Kubernetes manifest with apiVersion and kind)"
        )
    items = body.get("items")
    if body.get("kind") == "List" and isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                yield Document(name, item)
        return
    yield Document(name, body, duplicates)


def describe_yaml_error(error: yaml.YAMLError) -> str:
    """`line L, column C: problem (context)` from PyYAML's multi-line message."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = error.problem or "invalid YAML"
        context = f" ({error.context})" if error.context else ""
        return f"{where}{problem}{context}"
    return " ".join(str(error).split())


def _duplicate_paths(node: yaml.Node, path: str) -> Iterator[str]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            child = f"{path}.{key}" if path else key
            if key in seen and key != "<<":
                yield child
            seen.add(key)
            yield from _duplicate_paths(value_node, child)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_paths(item, f"{path}[{index}]")


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return str(error)
