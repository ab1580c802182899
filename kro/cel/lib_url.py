"""kro.cel.lib_url: the Kubernetes URL library (`url`, `isURL`, `getScheme`, `getHost`,
`getHostname`, `getPort`, `getEscapedPath`, `getQuery`).

Upstream parses with Go's `url.ParseRequestURI`: an absolute URI or an absolute path,
nothing relative. The checks below reproduce the cases that matter for that decision
(scheme syntax, absolute path, control characters, bad escapes, host characters).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from google.protobuf.message import Message

from kro.cel.library import Overload
from kro.cel.opaque import URL, make, text_of

_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_BAD_ESCAPE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_CHARS: Final = re.compile(r"^[A-Za-z0-9.\-_~!$&'()*+,;=:\[\]%]*$")


def _parse_error(text: str) -> str | None:
    """Go's ParseRequestURI verdict: None if valid, else its error text."""
    prefix = f'parse "{text}": '
    if text == "":
        return prefix + "empty url"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return prefix + "net/url: invalid control character in URL"
    bad_escape = _BAD_ESCAPE.search(text)
    if bad_escape is not None:
        return prefix + f'invalid URL escape "{text[bad_escape.start() :][:3]}"'
    if text.startswith("/"):
        return None
    if _SCHEME.match(text) is None:
        return prefix + "invalid URI for request"
    parts = urlsplit(text)
    if text[len(parts.scheme) + 1 :].startswith("//") and not _HOST_CHARS.match(parts.netloc):
        bad = next(c for c in parts.netloc if not _HOST_CHARS.match(c))
        return prefix + f'invalid character "{bad}" in host name'
    return None


def url(text: str) -> Message:
    error = _parse_error(text)
    if error is not None:
        raise ValueError(f"URL parse error during conversion from string: {error}")
    return make(URL, value=text)


def is_url(text: str) -> bool:
    return _parse_error(text) is None


def _split(value: Message) -> tuple[str, str, str, str]:
    text = text_of(value)
    parts = urlsplit(text)
    netloc = parts.netloc.rpartition("@")[2]
    return parts.scheme, netloc, parts.path, parts.query


def get_scheme(value: Message) -> str:
    return _split(value)[0]


def get_host(value: Message) -> str:
    return _split(value)[1]


def get_hostname(value: Message) -> str:
    host = _split(value)[1]
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rpartition(":")[0] if ":" in host else host


def get_port(value: Message) -> str:
    host = _split(value)[1]
    if host.startswith("["):
        rest = host[host.find("]") + 1 :] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rpartition(":")[2] if ":" in host else ""


def get_escaped_path(value: Message) -> str:
    return _split(value)[2]


def get_query(value: Message) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, item in parse_qsl(_split(value)[3], keep_blank_values=True, separator="&"):
        out.setdefault(unquote(key), []).append(item)
    return out


_T: Final = "kubernetes.URL"
OVERLOADS: Final = (
    Overload("url", "string_to_url", ("string",), _T, url),
    Overload("isURL", "is_url_string", ("string",), "bool", is_url),
    Overload("getScheme", "url_get_scheme", (_T,), "string", get_scheme, True),
    Overload("getHost", "url_get_host", (_T,), "string", get_host, True),
    Overload("getHostname", "url_get_hostname", (_T,), "string", get_hostname, True),
    Overload("getPort", "url_get_port", (_T,), "string", get_port, True),
    Overload("getEscapedPath", "url_get_escaped_path", (_T,), "string", get_escaped_path, True),
    Overload("getQuery", "url_get_query", (_T,), "map<string, list<string>>", get_query, True),
)
