"""kro.runtime.redact: credentials never survive `scrub`, ordinary messages do, and sizes are
capped in bytes (the API server's limits are Go string lengths)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from kro.runtime.redact import (
    CONDITION_MESSAGE_LIMIT,
    EVENT_MESSAGE_LIMIT,
    REDACTED,
    TRUNCATED,
    cap,
    redact,
    scrub,
)

TOKEN_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
PROSE_ALPHABET = "abcdefghijklmnopqrstuvwxyz .,()"


def jwt(payload: str) -> str:
    """A JWT-shaped token (ES256 sized signature), like a service-account token."""

    def segment(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = segment(b'{"alg":"ES256","kid":"k-1"}')
    return f"{header}.{segment(payload.encode())}.{segment(b'signature' * 7)}"


SA_TOKEN = jwt('{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ns:kro"}')
KEY_BODY = "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oapxEYsuq4eUoAoGCCqGSM49"
PRIVATE_KEY = f"-----BEGIN EC PRIVATE KEY-----\n{KEY_BODY}\n-----END EC PRIVATE KEY-----"

# -- what goes ------------------------------------------------------------------------------

LEAKS = [
    ("Authorization: Bearer s3cr3t-Static-Token", "s3cr3t-Static-Token"),
    ("'Authorization': 'Bearer abc.def.ghi123'", "abc.def.ghi123"),
    ('"authorization":"Basic dXNlcjpwYXNzd29yZA=="', "dXNlcjpwYXNzd29yZA=="),
    ("Proxy-Authorization: Negotiate YIIGhgYGKwYBBQUCoII", "YIIGhgYGKwYBBQUCoII"),
    ("request failed with Bearer tok_9Zq8Yx7W", "tok_9Zq8Yx7W"),
    ("got Basic dXNlcjpwYXNz in a header", "dXNlcjpwYXNz"),
    (f"token {SA_TOKEN} rejected", SA_TOKEN.split(".")[2]),
    (f"serviceaccount token: {SA_TOKEN}", SA_TOKEN.split(".")[1]),
    ("https://dashboard?token=Zm9vYmFy1&x=1", "Zm9vYmFy1"),
    ("password=hunter2", "hunter2"),
    ("db_password: 'correct horse battery staple'", "horse battery"),
    ('{"clientSecret": "s3cr3t value", "user": "bob"}', "s3cr3t value"),
    ("{'api_key': 'AKIA0123456789'}", "AKIA0123456789"),
    ("X-Api-Key: Zx81-aaaa", "Zx81-aaaa"),
    ("passphrase=open sesame", "open"),
    ("access_token=ya29.a0Af", "ya29.a0Af"),
    ("client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUJr", "LS0tLS1CRUdJ"),
    (f"key file:\n{PRIVATE_KEY}\nend", KEY_BODY),
    (repr(PRIVATE_KEY), KEY_BODY),
    ("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEG (cut", "MIGHAgEAMBMGByqGSM49AgEG"),
    ("https://admin:pa55w0rd@10.0.0.1:6443/api", "pa55w0rd"),
    (
        "ClientResponseError(RequestInfo(url=URL('https://127.0.0.1:6443/api/v1/x'), "
        "method='GET', headers=<CIMultiDictProxy('Host': '127.0.0.1:6443', "
        "'Authorization': 'Bearer kro-test-token-9Xq', 'Accept': 'application/json')>",
        "kro-test-token-9Xq",
    ),
]


@pytest.mark.parametrize(
    ("text", "secret"),
    LEAKS,
    ids=[
        "authorization-header",
        "authorization-in-a-headers-repr",
        "basic-in-json",
        "proxy-authorization",
        "bearer-anywhere",
        "basic-anywhere",
        "jwt-signature",
        "jwt-payload",
        "token-query-parameter",
        "password-equals",
        "quoted-password-with-spaces",
        "json-client-secret",
        "python-dict-api-key",
        "api-key-header",
        "passphrase",
        "access-token",
        "kubeconfig-client-key-data",
        "pem-private-key",
        "pem-private-key-in-a-repr",
        "pem-private-key-cut-short",
        "url-userinfo",
        "aiohttp-request-info-repr",
    ],
)
def test_credentials_are_removed(text: str, secret: str) -> None:
    out = scrub(text)
    assert secret not in out
    assert REDACTED in out


def test_the_surrounding_text_stays_readable() -> None:
    out = scrub("GET /api/v1/pods failed: Authorization: Bearer abc123xyz\r\nretrying")
    assert out == "GET /api/v1/pods failed: Authorization: [REDACTED]\r\nretrying"


@st.composite
def tokens(draw: st.DrawFn) -> str:
    """Opaque credentials: long, with an upper-case letter and a digit (so never prose)."""
    body = draw(st.text(TOKEN_ALPHABET, min_size=12, max_size=80))
    return "Q7" + body


@st.composite
def framed(draw: st.DrawFn) -> tuple[str, str]:
    """A credential in one of the shapes it reaches a message in, inside random prose."""
    token = draw(tokens())
    frames = [
        "Authorization: Bearer {}",
        "'Authorization': 'Bearer {}'",
        "Bearer {}",
        "token={}",
        "?access_token={}&x=1",
        '"password": "{}"',
        "password: {}",
        "client_secret={}",
        "https://user:{}@host/",
        jwt("{}").replace("{", "").replace("}", "") + "{}",  # a JWT glued to more token text
    ]
    frame = draw(st.sampled_from(frames))
    before = draw(st.text(PROSE_ALPHABET, max_size=40))
    after = draw(st.text(PROSE_ALPHABET, max_size=40))
    return before + " " + frame.format(token) + " " + after, token


@settings(max_examples=300)
@given(framed())
def test_no_framed_credential_survives(case: tuple[str, str]) -> None:
    text, token = case
    assert token not in scrub(text)


@given(st.text(TOKEN_ALPHABET, min_size=8, max_size=60))
def test_a_jwt_never_survives_whatever_its_payload(payload: str) -> None:
    token = jwt(payload)
    out = scrub(f"rejected {token}, retrying")
    assert token not in out
    assert token.split(".")[2] not in out


# -- what stays -----------------------------------------------------------------------------

KEPT = [
    'configmaps "app" is forbidden: User "system:serviceaccount:kro-test-1a2b:kro" cannot patch '
    'resource "configmaps" in API group "" in the namespace "kro-test-1a2b"',
    'ConfigMap "app" is invalid: metadata.labels: Invalid value: "not valid!": a valid label '
    "must be an empty string or consist of alphanumeric characters",
    'secrets "db-credentials" not found',
    "resource reconciliation failed: secret: not found",
    'resource "mysecret": failed to apply: the server could not find the requested resource',
    "the bearer token expired; token: expired",
    "Basic authentication is not enabled",
    "resourcegraphdefinitions.kro.run/webapp is Active",
    "deployments.apps.webapp-frontend-production.eu-west-1.example.com",
    "waiting for external reference source (Secret ns/db-credentials)",
    "GET /api/v1/namespaces/ns/secrets/db: ServerDisconnectedError: the server closed the "
    "connection without a complete response",
    "x-api-key: abc",
    "",
]


@pytest.mark.parametrize("text", KEPT, ids=range(len(KEPT)))
def test_ordinary_messages_are_unchanged(text: str) -> None:
    assert scrub(text) == text


@given(st.text(PROSE_ALPHABET + "/-:\"'0123456789", max_size=200))
def test_prose_without_credential_words_is_unchanged(text: str) -> None:
    lowered = text.lower()
    assume(not any(w in lowered for w in ("token", "passw", "secret", "key", "bearer")))
    assume(not any(w in lowered for w in ("basic", "authoriz", "credential", "://", "passphrase")))
    assert redact(text) == text


# -- size -----------------------------------------------------------------------------------


def test_limits_are_the_documented_ones() -> None:
    assert (EVENT_MESSAGE_LIMIT, CONDITION_MESSAGE_LIMIT) == (1024, 4096)


def test_cut_text_is_marked_and_fits_in_bytes() -> None:
    out = scrub("é" * 3000, EVENT_MESSAGE_LIMIT)
    assert out.endswith(TRUNCATED)
    assert len(out.encode()) <= EVENT_MESSAGE_LIMIT
    assert out.startswith("é" * 100)


def test_text_within_the_limit_is_not_marked() -> None:
    assert scrub("x" * 1024, 1024) == "x" * 1024


def test_a_cut_never_splits_a_redaction_marker() -> None:
    # Redacted, the marker spans bytes 1008..1018; the cut for a 1024-byte limit lands at 1012.
    text = "a" * 998 + " password=hunter2 and more after it"
    out = scrub(text, 1024)
    assert out == "a" * 998 + " password=" + TRUNCATED
    assert scrub(out, 1024) == out


def test_redaction_runs_before_the_cut() -> None:
    # Cut first, the token would lose its third segment and no longer look like a JWT.
    prefix = "x" * (EVENT_MESSAGE_LIMIT - 60) + " "
    out = scrub(prefix + SA_TOKEN, EVENT_MESSAGE_LIMIT)
    assert SA_TOKEN[:20] not in out


PIECES = [
    "token",
    "password",
    "secret",
    "Authorization",
    ":",
    "=",
    " ",
    "'",
    '"',
    "\\",
    "\n",
    "@",
    "Bearer ",
    "Basic ",
    "ey",
    "J",
    "abcdefghijklmnop",
    "ABCDEFGHIJKLMNOPQ",
    ".",
    "://",
    "9",
    "[REDACTED]",
    "[truncated]",
    "-----BEGIN PRIVATE KEY-----",
    "LS0tLS1CRUdJTi",
    "é",
    "x",
]
"""Fragments of every rule, so that random text hits rule boundaries and rule interplay."""


@settings(max_examples=500)
@given(
    st.one_of(st.text(max_size=3000), st.lists(st.sampled_from(PIECES), max_size=60).map("".join)),
    st.integers(min_value=0, max_value=2048),
)
@example("password=" + "x" * 20, 20)
@example("a" * 30 + " token: " + "Zz9" * 5, 40)
@example("tokentokentokentokentokentoken:[truncated]token", 44)
def test_scrub_fits_the_limit_and_is_idempotent(text: str, limit: int) -> None:
    once = scrub(text, limit)
    assert len(once.encode()) <= limit
    assert scrub(once, limit) == once


@given(st.text(max_size=500))
def test_cap_without_a_cut_returns_the_text(text: str) -> None:
    assert cap(text, len(text.encode())) == text


def test_scrub_is_linear_on_large_input() -> None:
    """A 1 MiB message of every trigger word must not make scrub crawl (no backtracking)."""
    text = ("token secret: Bearer eyJhbGciOi.x password " * 25_000)[: 2**20]
    out = scrub(text, CONDITION_MESSAGE_LIMIT)
    assert len(out.encode()) <= CONDITION_MESSAGE_LIMIT


def test_json_stays_json_after_scrubbing() -> None:
    doc = json.dumps({"password": "p@ss w0rd", "user": "bob", "token": "T0k3n"})
    assert json.loads(scrub(doc)) == {"password": REDACTED, "user": "bob", "token": REDACTED}
