"""kro.graph.template.quote: Go's `strconv.Quote` / `strconv.Unquote` for double-quoted strings.

Why Go's rules and not `json.dumps`/`repr`: upstream kro builds CEL source for string templates
with `strconv.Quote` (C-03) and prints field-path keys and marker keys with `%q`; matching its
escapes keeps generated CEL and messages byte-identical. The output is also a valid CEL string
literal (CEL accepts every escape Go emits).

Public API:
    go_quote(text) -> str          `"..."` with Go escapes
    go_unquote(text) -> str        inverse; ValueError if `text` is not a Go double-quoted string
"""

from __future__ import annotations

from typing import Final

_SIMPLE_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}
_UNESCAPES: Final = {v[1]: k for k, v in _SIMPLE_ESCAPES.items()}
_HEX_WIDTH: Final = {"x": 2, "u": 4, "U": 8}


def go_quote(text: str) -> str:
    """Quote like Go's strconv.Quote: printable runes verbatim, the rest escaped in lower hex."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif ch.isprintable():
            # Python's printable set equals Go's unicode.IsPrint: L, M, N, P, S and U+0020.
            out.append(ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")  # Go replaces invalid runes (lone surrogates) with U+FFFD
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_unquote(text: str) -> str:
    """Inverse of `go_quote` (Go's strconv.Unquote for `"..."` strings)."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ValueError("not a double-quoted string")
    body = text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch in '"\n':
            raise ValueError(f"unescaped {ch!r} in quoted string")
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError("trailing backslash")
        esc = body[i + 1]
        if esc in _UNESCAPES:
            out.append(_UNESCAPES[esc])
            i += 2
        elif esc in _HEX_WIDTH:
            width = _HEX_WIDTH[esc]
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"invalid \\{esc} escape")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise ValueError("escape out of range")
            out.append(chr(code))
            i += 2 + width
        elif esc in "01234567":
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not all(c in "01234567" for c in digits):
                raise ValueError("invalid octal escape")
            code = int(digits, 8)
            if code > 0xFF:
                raise ValueError("octal escape out of range")
            out.append(chr(code))
            i += 4
        else:
            raise ValueError(f"invalid escape \\{esc}")
    return "".join(out)
