"""kro.cli.messages: error text for people: one line, no engine-internal names, a hint.

The graph builder's messages are upstream kro's (conditions and tests compare them), and the
CEL checker's diagnostics come with what the engine knows: `<input>:1:12` positions, a
snippet with a caret on two more lines, and the synthetic message types kro.cel declares
variables with (`not found in struct 'kro.t1.schema_spec'`). A terminal, a CI log and
`grep` all want one line per problem in the user's own terms, so the CLI rewrites them here:

* `undefined field 'foo' not found in struct 'kro.t1.schema_spec'` in expression
  `schema.spec.foo` becomes `spec.foo: no such field in the instance schema` (for a resource:
  `spec.foo: no such field in the schema of resource "deployment"`);
* any other synthetic type name `kro.tN.a_b_c` becomes `object (a.b.c)`;
* `ERROR: <input>:L:C:` prefixes and snippet lines are folded into `(at column C)`;
* a kind the offline resolver does not know gets its name and how to supply it (for a
  resource targeting a member cluster given with `--cluster`, that the cluster lacks it).
"""

from __future__ import annotations

import re
from typing import Final

from kro.graph.errors import GraphError
from kro.graph.resolver import GVK, ClusterSchemaNotFound, SchemaNotFoundError

_ERROR_BLOCK: Final = re.compile(
    r"ERROR: <input>:(?P<line>\d+):(?P<column>\d+): (?P<message>[^\n]*)"
    r"(?:\n \| (?P<source>[^\n]*)\n \| [.\s]*\^)?"
)
_UNDEFINED_FIELD: Final = re.compile(
    r"undefined field '(?P<field>[^']+)' not found in struct '(?P<struct>kro\.t\d+\.\w+)'"
)
_SYNTHETIC_TYPE: Final = re.compile(r"kro\.t\d+\.(?P<name>\w+)")
_OPERAND: Final = re.compile(r"(?:[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*|\[\d+\])*$")

MISSING_KIND_HINT: Final = (
    "give its CustomResourceDefinition with --crd FILE, or read it from a cluster with "
    "--kubeconfig FILE"
)


def user_message(error: BaseException | str) -> str:
    """The one-line, user-facing text of an error from the graph builder or kro.cel."""
    text = str(error)
    if isinstance(error, GraphError):
        text = _with_kind_hint(error, text)
    text = _ERROR_BLOCK.sub(_rewrite_block, text)
    text = _SYNTHETIC_TYPE.sub(lambda m: f"object ({_struct_path(m.group('name'))})", text)
    return one_line(text)


def one_line(text: str) -> str:
    """Fold a multi-line message into one line (snippet and caret lines dropped)."""
    lines = [line.strip() for line in text.splitlines()]
    kept = [line for line in lines if line and not line.startswith("|")]
    return " ".join(kept)


def _with_kind_hint(error: GraphError, text: str) -> str:
    cause = error.__cause__
    if not isinstance(cause, SchemaNotFoundError):
        return text
    return f"{text} for {describe_kind(cause.gvk)}: {missing_kind_hint(cause)}"


def missing_kind_hint(error: SchemaNotFoundError) -> str:
    """How to supply a kind: for a member cluster's, that cluster must serve it."""
    if isinstance(error, ClusterSchemaNotFound):
        return (
            f"the resource targets cluster {error.cluster}, which does not serve it (read "
            f"with --cluster {error.cluster}=FILE)"
        )
    return MISSING_KIND_HINT


def describe_kind(gvk: GVK) -> str:
    """`kind Widget (apiVersion example.com/v1)`, as a user wrote it in the template."""
    return f"kind {gvk.kind} (apiVersion {gvk.api_version})"


def _rewrite_block(match: re.Match[str]) -> str:
    message = match.group("message")
    source = match.group("source")
    column = int(match.group("column"))
    undefined = _UNDEFINED_FIELD.search(message)
    if undefined is not None and source is not None:
        path = _selected_path(source, column, undefined.group("field"))
        if path is not None:
            return path
    return f"{message} (at column {column})"


def _selected_path(source: str, column: int, field: str) -> str | None:
    """`spec.foo: no such field in the instance schema` for `schema.spec.foo` at column 12.

    The checker's column points at the `.` that selects the missing field, so the operand is
    the dotted path just before it; anything more complex (a call, an index by expression)
    keeps the checker's own words.
    """
    before = source[: max(column - 1, 0)]
    operand = _OPERAND.search(before)
    if operand is None:
        return None
    root, _, rest = operand.group(0).partition(".")
    path = f"{rest}.{field}" if rest else field
    if root == "schema":
        return f"{path}: no such field in the instance schema"
    if root == "self":
        return f"self.{path}: no such field in the schema the rule applies to"
    return f'{path}: no such field in the schema of "{root}"'


def _struct_path(name: str) -> str:
    """`schema_spec_nested` -> `schema.spec.nested` (kro.cel names messages by their path)."""
    return name.replace("_items", "[]").replace("_values", "{}").replace("_", ".")
