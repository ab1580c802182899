"""kro.cel._engine_compat: everything kro does because of what cel-expr-python 0.1.3 lacks.

kro.cel runs expressions on cel-expr-python (cel-cpp behind pybind11). Version 0.1.3 of that
binding gives Python less than kro needs, and each module here works around one gap. All of
them are written against that exact version (`ENGINE_VERSION`, pinned in pyproject.toml);
tests/cel/test_engine_compat.py fails first if another version is installed and exercises each
workaround, so an engine upgrade shows which of them it makes unnecessary or breaks.

Reading the engine's output:

- `protos`: message classes for the part of `cel.expr` kro reads. The binding hands out a
  compiled expression only as serialized `cel.expr.CheckedExpr` bytes and takes it back the
  same way, but neither it nor any of its dependencies ships Python classes for those protos
  (the only registry package that does, xds-protos, is envoy's whole API and needs grpcio),
  so the messages are declared field by field and the protobuf runtime parses them.
- `ast_decode`: those messages as `kro.cel.checked_ast` nodes, once per compile.
- `checked_types`: the checker's type map and reference map, as kro's types.
- `error_text`: the engine reports missing data and real errors alike, as an error value
  whose only distinguishing feature is its text, and C++ exceptions as generic Python ones;
  this module classifies texts (the only place they are read).

Changing what the engine runs (between checking and evaluating, on the serialized tree):

- `wire`: a minimal protobuf wire codec (varints and length-delimited fields), on which the
  rewrites below still work: they predate `protos`, and moving them onto message classes
  (whose unknown fields survive a round trip) is what would retire it;
- `rewrite`: node builders and a byte-level transform of `cel.expr.Expr` messages, shared by:
- `lowering`: semantics the runtime cannot see because it evaluates plain dicts: escaped
  property names, equality of quantities, semvers and list-type fields, the zero of an empty
  `sum()`, transformMap's map built in one step, optionals kept away from Python functions;
- `optionals`: the binding cannot convert an optional to Python in any position (and crashes
  on one passed to a Python function), so results are unwrapped in CEL before they cross;
- `instrument`: the binding offers no time, memory or cost limit, only a fixed total of
  10,000 comprehension iterations, so budget hooks are planted in every loop;
- `loop_scopes` and `split`: that fixed total stops nested loops upstream runs (150 x 150
  is 22,500), so an expression it stops is evaluated again with its inner loops in
  evaluations of their own (`loop_scopes` decides what can move without changing a result,
  `split` builds and runs the split form);
- `program`: assembles the rewrites into the program that runs, and runs it.

Filling gaps in the engine's library and parser:

- `lib_comprehensions`: the runtime helper of `transformMap` / `transformMapEntry`, which the
  checker declares but 0.1.3 does not implement;
- `syntax`: cel-cpp accepts backtick-quoted field names, cel-go (upstream) refuses them.

Outside this package, `kro.cel.opaque` (library value types as one-field protobuf messages,
because the binding cannot carry abstract types) and `kro.cel.memory` (the memory budget
watches resident memory, because the binding cannot cap its arena) also exist because of the
engine, but are kro's design as much as workarounds.
"""

from __future__ import annotations

from importlib import metadata
from typing import Final

ENGINE_DISTRIBUTION: Final = "cel-expr-python"
ENGINE_VERSION: Final = "0.1.3"


def installed_engine_version() -> str:
    """The installed cel-expr-python version ("" if it is not installed as a distribution)."""
    try:
        return metadata.version(ENGINE_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return ""
