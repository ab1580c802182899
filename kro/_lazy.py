"""kro._lazy: a package's public names, imported when first used (PEP 562).

A package `__init__` that imports every module it re-exports makes `import kro.runtime.gvk`
load the HTTP client, the probe server and pydantic as well; `kro controller` paid ~50 MiB and
~1 s of CPU at start for modules it needed later or never. With `lazy_exports` the package
imports nothing until a name is asked for, then only the module that defines it.

    if TYPE_CHECKING:                                # what type checkers and readers see
        from .client import Client as Client
    else:
        __getattr__, __dir__ = lazy_exports(__name__, {".client": ("Client",)})

Keys are submodules relative to the package ("." for the package itself, whose names are then
submodules); `"configure as configure_logging"` renames. A name that is not exported but is a
submodule is imported too, so `kro.runtime.store` keeps working after a bare `import kro.runtime`
as it did when the package imported everything. Imports nothing of kro (a leaf below every layer).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType


def lazy_exports(
    package: str, exports: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, from {submodule: (name | "name as alias")}."""
    where: dict[str, tuple[str, str | None]] = {}
    for module, names in exports.items():
        for spec in names:
            name, _, alias = spec.partition(" as ")
            if module == ".":  # a submodule, exported as itself
                where[alias or name] = (f"{package}.{name}", None)
            else:
                where[alias or name] = (f"{package}{module}", name)

    def __getattr__(name: str) -> object:
        if name in where:
            module, attribute = where[name]
            loaded = _import(module)
            value = loaded if attribute is None else getattr(loaded, attribute)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            value = _import(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__


def _import(name: str) -> ModuleType:
    """`__import__`, not importlib.import_module: only the former goes through the interpreter's
    own import path, the one `python -X importtime` reports, so lazy imports stay visible."""
    __import__(name)
    return sys.modules[name]
