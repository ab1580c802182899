"""kro._redact: remove credentials from text that leaves the process, and cap its size.

Text leaves kro through four doors: logs, Kubernetes Events, status conditions and exception
messages (which end up in the other three). Every door calls `scrub`, so a credential that slips
into a message anywhere (an aiohttp repr with the request headers, a proxy's error page, a
kubeconfig fragment in a parse error) is removed on the way out.

What is removed (each replaced by `REDACTED`):

* `Authorization: <scheme> <credentials>` and `Bearer <token>` / `Basic <b64>` anywhere;
* JWT-looking strings: three base64url segments (service-account and OIDC tokens);
* `key=value` / `key: value` / `"key": "value"` pairs whose key names a credential (`token`,
  `password`, `passphrase`, `secret`, `api_key`, `private_key`, `client-key-data`, ...);
* PEM private key blocks (a cut-off block to the end of the text) and base64-encoded PEM, the
  form of kubeconfig `client-key-data`;
* user:password in URLs.

It cannot recognise a Secret's *value*: that stays out of messages because nothing formats
Secret data into one (see docs/troubleshooting.md, "What kro never writes").

Why this module sits in the root package: conditions are set in `kro.api`, which must not import
`kro.runtime` (the compiler is pure), and Events and logs are written by `kro.runtime`, which
imports no other kro package. One implementation serves both from here, below every layer; it
imports nothing but `re`. `kro.runtime.redact` is its public face.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

REDACTED: Final = "[REDACTED]"
"""What a removed credential is replaced with."""
TRUNCATED: Final = " [truncated]"
"""Appended to text cut by `cap` (counted within the limit)."""
EVENT_MESSAGE_LIMIT: Final = 1024
"""Bytes: the API server rejects an events.k8s.io/v1 `note` (core/v1 `message`) beyond 1 KiB."""
CONDITION_MESSAGE_LIMIT: Final = 4096
"""Bytes: a condition message longer than this is noise in `kubectl describe` and bloats every
status write and watch event of the object (metav1.Condition allows 32 KiB)."""

_MARKERS: Final = (REDACTED, TRUNCATED.strip())
_MAX_PASSES: Final = 3
"""Rules run until the text stops changing, so `scrub(scrub(x)) == scrub(x)`."""

# A replacement never matches again: values that are already a marker are skipped.
_MARKER_AHEAD = r"(?!\[(?:REDACTED|truncated)\])"
_SCHEMES = r"(?:bearer|basic|digest|negotiate|ntlm|token)"
_CREDENTIAL_KEYS = (
    r"(?:token|passw(?:or)?d|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|client[_-]?key(?:[_-]?data)?|credentials?)"
)

_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)",  # a block cut short: to the end
    re.DOTALL,
)
_PEM_BASE64 = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]*")  # base64 of "-----BEGIN"
_URL_USERINFO = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}://)[^\s/?#@'\"<>\[\]]+@")
_AUTHORIZATION = re.compile(
    r"(?i)\b((?:proxy-)?authorization)([\"']?\s*[:=]\s*[\"']?)"
    + _MARKER_AHEAD
    + r"("
    + _SCHEMES
    + r"\s+"
    + _MARKER_AHEAD
    + r"[^\s\"',;\\]+|[A-Za-z0-9._~+/=-]{16,})"
)
_BEARER = re.compile(r"\b([Bb]earer|BEARER)(\s+)([A-Za-z0-9._~+/-]+=*)")
_BASIC = re.compile(r"\b(Basic|BASIC)(\s+)([A-Za-z0-9+/]{8,}={0,2})")
_JWT = re.compile(r"\be[wy][A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*")
_DOTTED = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{16,}(?:\.[A-Za-z0-9_-]{16,}){2,}")
_KEY_VALUE = re.compile(
    # The key is matched by its last word only (`client_secret` by `secret`), which keeps the
    # pattern linear: whatever precedes it stays in the text untouched.
    r"(?i)(?P<key>" + _CREDENTIAL_KEYS + r")(?P<kq>[\"']?)(?P<sep>\s*[:=]\s*)(?:"
    r"(?P<vq>[\"'])" + _MARKER_AHEAD + r"(?P<quoted>(?:\\.|(?!(?P=vq))[^\\\n])*)(?P=vq)"
    r"|" + _MARKER_AHEAD + r"(?P<bare>[^\s\"',;&)}\]\\]+))"
)
_HARMLESS = re.compile(r"[a-z]+|(?i:null|none|true|false)|\[\]|\{\}")
"""Unquoted values after `key:` that are prose, not credentials ("token: expired",
`secret: not found`); anything else after a credential key is removed."""


def _authorization(match: re.Match[str]) -> str:
    return f"{match[1]}{match[2]}{REDACTED}"


def _bearer(match: re.Match[str]) -> str:
    keyword, space, credential = match[1], match[2], match[3]
    if keyword == "bearer" and credential.isalpha() and credential.islower():
        return match[0]  # prose: "the bearer token is ..."
    return f"{keyword}{space}{REDACTED}"


def _basic(match: re.Match[str]) -> str:
    keyword, space, credential = match[1], match[2], match[3]
    if len(credential) % 4 or (credential.isalpha() and credential.islower()):
        return match[0]  # not base64 user:password ("Basic authentication")
    return f"{keyword}{space}{REDACTED}"


def _dotted(match: re.Match[str]) -> str:
    # Three or more long base64url segments with an upper-case letter: a token. Kubernetes
    # names and DNS names are lower case, so they are left alone.
    text = match[0]
    return REDACTED if any(c.isupper() for c in text) else text


def _key_value(match: re.Match[str]) -> str:
    key, kq, sep, vq, bare = match["key"], match["kq"], match["sep"], match["vq"], match["bare"]
    if bare is not None and "=" not in sep:
        if _HARMLESS.fullmatch(bare):
            return match[0]
        if kq and not bare[:1].isdigit():
            # `"mysecret": failed to ...`: a quoted name followed by prose, not a JSON pair.
            return match[0]
    if vq:
        return f"{key}{kq}{sep}{vq}{REDACTED}{vq}"
    return f"{key}{kq}{sep}{REDACTED}"


_Replacement = str | Callable[[re.Match[str]], str]
_KEY_WORDS: Final = ("token", "passw", "passphrase", "secret", "key", "credential")

_RULES: Final[tuple[tuple[tuple[str, ...], re.Pattern[str], _Replacement], ...]] = (
    # (substrings of the lower-cased text without which the rule cannot match, rule, replacement)
    # The substring test is a fast C scan; most text (event names, object references) has none
    # and costs a microsecond instead of a regex pass per rule.
    (("private key",), _PEM_PRIVATE_KEY, REDACTED),
    (("ls0tls1crudjti",), _PEM_BASE64, REDACTED),
    (("://",), _URL_USERINFO, r"\1" + REDACTED + "@"),
    (("authorization",), _AUTHORIZATION, _authorization),
    (("bearer",), _BEARER, _bearer),
    (("basic",), _BASIC, _basic),
    (("ey", "ew"), _JWT, REDACTED),
    ((".",), _DOTTED, _dotted),
    (_KEY_WORDS, _KEY_VALUE, _key_value),
)


_TRIGGER: Final = re.compile(
    "|".join(re.escape(n) for n in sorted({n for rule in _RULES for n in rule[0]} - {"."}))
)
"""Any rule's substring but the dotted-token one's "." (most text has a dot): one C-level scan
that clears most text (event names, object references, timestamps) at once."""


_LONG_SEGMENT: Final = re.compile(r"[A-Za-z0-9_-]{16}\.")


def redact(text: str) -> str:
    """`text` with every credential the rules recognise replaced by `REDACTED`."""
    lowered = text.lower()
    if _TRIGGER.search(lowered) is None and (
        # The dotted-token rule needs a long segment and an upper-case letter: timestamps and
        # lower-case dotted names are cleared here.
        lowered == text or _LONG_SEGMENT.search(text) is None
    ):
        return text
    for _ in range(_MAX_PASSES):
        before = text
        for needles, pattern, replacement in _RULES:
            if any(needle in lowered for needle in needles):
                text = pattern.sub(replacement, text)
        if text == before:
            break
        lowered = text.lower()
    return text


def cap(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, ending in `TRUNCATED` when cut.

    Bytes, not characters, because the API server's limits are Go string lengths. A cut never
    splits a character or a marker (`[REDACTED]`, `[truncated]`): half a marker would read as
    data on the next pass, and `scrub(scrub(x)) == scrub(x)` must hold.
    """
    raw = text.encode()
    if len(raw) <= limit:
        return text
    room = limit - len(TRUNCATED)
    if room <= 0:
        return raw[: max(limit, 0)].decode(errors="ignore")
    head = raw[:room].decode(errors="ignore")
    for marker in _MARKERS:
        start = head.rfind("[", max(0, len(head) - len(marker) + 1))
        if start >= 0 and text.startswith(marker, start):
            head = head[:start]
    return head + TRUNCATED


def scrub(text: str, limit: int | None = None) -> str:
    """`text` without credentials (`redact`), then cut to `limit` bytes (`cap`) if given.

    Redaction runs first so that a cut can never leave a token too short to be recognised. A
    cut can leave the start of a word that reads as a credential on its own ("Basic tokenBea"),
    so the cut text is redacted again until it is stable: `scrub(scrub(x)) == scrub(x)`, which
    is what lets a controller compare a stored message with a freshly scrubbed one.
    """
    text = redact(text)
    if limit is None:
        return text
    out = cap(text, limit)
    for _ in range(_MAX_PASSES):
        if out == text:
            break
        text, out = out, cap(redact(out), limit)
    return out
