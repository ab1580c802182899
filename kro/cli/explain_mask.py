"""kro.cli.explain_mask: keep Secret data out of everything `kro explain` prints.

Explain prints no object bodies, only names, expressions and messages. But a message can quote
a value (an expression error over a Secret's data, an API server message about a field), and
a caller with more rights than the `view` role can read Secrets the graph depends on. So every
Secret explain reads leaves its values here — as stored (base64) and decoded — and the whole
output is masked before it is printed, then scrubbed of credentials by `kro._redact` like every
other text kro lets out.

Values shorter than `MIN_MASKED_LENGTH` are not masked: replacing every "1" or "a" in the
output would destroy it while protecting nothing worth the name.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from kro.runtime.redact import REDACTED, scrub

MIN_MASKED_LENGTH: Final = 3


class SecretMask:
    """Collects Secret values while the cluster is read; `apply` masks them in output."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def add(self, obj: Mapping[str, Any]) -> None:
        """Remember the values of `obj` if it is a Secret (anything else is ignored)."""
        if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
            return
        for key in ("data", "stringData"):
            values = obj.get(key)
            for value in values.values() if isinstance(values, Mapping) else ():
                decoded = _decoded(str(value)) if key == "data" else ""
                self._values |= {v for v in (str(value), decoded) if len(v) >= MIN_MASKED_LENGTH}

    def apply(self, text: str) -> str:
        """`text` without any remembered Secret value and without credentials."""
        for value in sorted(self._values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return scrub(text)


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
