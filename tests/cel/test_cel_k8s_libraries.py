"""The Kubernetes CEL libraries kro enables (C-18): quantity, url, ip, cidr, semver, regex,
lists. Vectors follow the k8s.io/apiserver library documentation."""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import CelCompileError, CelEnvironment, ExpressionError, Value
from kro.cel.lib_quantity import Amount, canonical, parse

ENV = CelEnvironment(declarations={"x": None})


def ok(expression: str) -> Any:
    result = ENV.compile(expression).evaluate_json(ENV.bind({"x": None}))
    assert isinstance(result, Value), result
    return result.value


def fails(expression: str) -> str:
    result = ENV.compile(expression).evaluate(ENV.bind({"x": None}))
    assert isinstance(result, ExpressionError), result
    return result.message


CASES = [
    # quantity
    ('quantity("512Mi").isLessThan(quantity("1Gi"))', True),
    ('quantity("1Gi").isGreaterThan(quantity("512Mi"))', True),
    ('quantity("1Gi").compareTo(quantity("1024Mi"))', 0),
    ('quantity("1Gi") == quantity("1024Mi")', True),
    ('quantity("500m").add(quantity("500m"))', "1"),
    ('quantity("1").add(1)', "2"),
    ('quantity("1Gi").sub(quantity("512Mi"))', "512Mi"),
    ('quantity("1.5").asApproximateFloat()', 1.5),
    ('quantity("1k").asInteger()', 1000),
    ('quantity("1.5").isInteger()', False),
    ('quantity("-1").sign()', -1),
    ('isQuantity("1.5Gi")', True),
    ('isQuantity("1.5Gb")', False),
    ('quantity("1500m")', "1500m"),
    ('quantity("0.5")', "500m"),
    ('quantity("1000")', "1k"),
    ('quantity("1e3")', "1e3"),
    ('quantity("100Mi")', "100Mi"),
    ('quantity("0.5Ki")', "512"),
    # url
    ('url("https://example.com:8080/a/b?x=1&x=2&y").getScheme()', "https"),
    ('url("https://example.com:8080/a/b").getHost()', "example.com:8080"),
    ('url("https://example.com:8080/a/b").getHostname()', "example.com"),
    ('url("https://example.com:8080/a/b").getPort()', "8080"),
    ('url("https://[::1]:80/").getHostname()', "::1"),
    ('url("https://[::1]/").getPort()', ""),
    ('url("https://example.com/a%20b").getEscapedPath()', "/a%20b"),
    ('url("https://e.com/?x=1&x=2&y").getQuery()', {"x": ["1", "2"], "y": [""]}),
    ('url("/absolute/path").getEscapedPath()', "/absolute/path"),
    ('isURL("https://example.com")', True),
    ('isURL("relative/path")', False),
    ('isURL("")', False),
    # ip
    ('ip("127.0.0.1").family()', 4),
    ('ip("::1").family()', 6),
    ('ip("127.0.0.1").isLoopback()', True),
    ('ip("0.0.0.0").isUnspecified()', True),
    ('ip("224.0.0.1").isLinkLocalMulticast()', True),
    ('ip("ff02::1").isLinkLocalMulticast()', True),
    ('ip("169.254.1.1").isLinkLocalUnicast()', True),
    ('ip("fe80::1").isLinkLocalUnicast()', True),
    ('ip("10.0.0.1").isGlobalUnicast()', True),
    ('ip("255.255.255.255").isGlobalUnicast()', False),
    ('string(ip("2001:db8:0:0:0:0:0:1"))', "2001:db8::1"),
    ('ip.isCanonical("2001:db8::1")', True),
    ('ip.isCanonical("2001:DB8::1")', False),
    ('isIP("1.2.3.4")', True),
    ('isIP("::ffff:1.2.3.4")', False),
    ('isIP("fe80::1%eth0")', False),
    ('isIP("01.2.3.4")', False),
    # cidr
    ('cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))', True),
    ('cidr("10.0.0.0/8").containsIP("11.1.2.3")', False),
    ('cidr("10.0.0.0/8").containsIP("::1")', False),
    ('cidr("10.0.0.0/8").containsCIDR(cidr("10.1.0.0/16"))', True),
    ('cidr("10.0.0.0/16").containsCIDR("10.0.0.0/8")', False),
    ('string(cidr("192.168.1.5/24").ip())', "192.168.1.5"),
    ('string(cidr("192.168.1.5/24").masked())', "192.168.1.0/24"),
    ('cidr("192.168.1.5/24").prefixLength()', 24),
    ('isCIDR("10.0.0.0/8")', True),
    ('isCIDR("10.0.0.0")', False),
    # semver
    ('semver("1.2.3").major()', 1),
    ('semver("1.2.3").minor()', 2),
    ('semver("1.2.3").patch()', 3),
    ('semver("1.10.0").isGreaterThan(semver("1.9.0"))', True),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0-alpha.1").compareTo(semver("1.0.0-alpha.beta"))', -1),
    ('semver("1.0.0+build1").compareTo(semver("1.0.0+build2"))', 0),
    ('semver("v1.02", true).minor()', 2),
    ('isSemver("1.2")', False),
    ('isSemver("v1.2", true)', True),
    ('isSemver("01.2.3")', False),
    # regex
    ('"abc 123 def 456".find("[0-9]+")', "123"),
    ('"abc".find("[0-9]+")', ""),
    ('"abc 123 def 456".findAll("[0-9]+")', ["123", "456"]),
    ('"a1b2c3".findAll("[0-9]", 2)', ["1", "2"]),
    ('"a1b2c3".findAll("[0-9]", 0)', []),
    # lists
    ("[1, 2, 3].isSorted()", True),
    ('["b", "a"].isSorted()', False),
    ("[1, 2, 3].sum()", 6),
    ("[1.5, 2.5].sum()", 4.0),
    ('[duration("1s"), duration("1m")].sum()', "1m1s"),
    ("[3, 1, 2].min()", 1),
    ('["b", "c", "a"].max()', "c"),
    ("[1, 2, 1].indexOf(1)", 0),
    ("[1, 2, 1].lastIndexOf(1)", 2),
    ("[1, 2].indexOf(3)", -1),
    ('"abc".indexOf("c")', 2),
]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_library(expression: str, expected: Any) -> None:
    assert ok(expression) == expected


ERRORS = [
    ('quantity("1.5Gb")', "quantities must match the regular expression"),
    ('quantity("1.5").asInteger()', "cannot convert value to integer"),
    ('url("relative")', "URL parse error during conversion from string"),
    ('ip("1.2.3")', "parse error during conversion from string"),
    ('ip("::ffff:1.2.3.4")', "IPv4-mapped IPv6 address is not allowed"),
    ('cidr("10.0.0.0")', "network address parse error"),
    ('semver("1.2")', "could not parse semver"),
    ('"a".find("(")', "error parsing regexp"),
    ("[].min()", "min called on empty list"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_library_error(expression: str, message: str) -> None:
    assert message in fails(expression)


@pytest.mark.parametrize(
    "expression",
    [
        'quantity("1") + 1',
        'quantity("1").isLessThan(semver("1.0.0"))',
        'ip("1.2.3.4").prefixLength()',
        '[1].sum() + "x"',
        'url("https://a").getHost() + 1',
    ],
)
def test_library_types_are_checked(expression: str) -> None:
    with pytest.raises(CelCompileError, match="no matching overload"):
        ENV.compile(expression)


def test_dyn_receivers_reach_the_right_library() -> None:
    env = CelEnvironment(declarations={"a": None, "b": None})
    compiled = env.compile("a.isLessThan(b)")
    q = env.bind({"a": None, "b": None})
    assert isinstance(compiled.evaluate(q), ExpressionError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("1.5Gi", "1536Mi"), ("0.1", "100m"),
     ("1n", "1n"), ("0.0000000001", "1n"), ("2E", "2E"), ("1200000", "1200k"), ("0", "0"),
     ("-1.5", "-1500m"), ("12e6", "12e6")],
)  # fmt: skip
def test_quantity_canonical_form(text: str, expected: str) -> None:
    assert canonical(parse(text)) == expected


def test_quantity_keeps_binary_format_for_sums() -> None:
    assert parse("1Gi") == Amount(parse("1Gi").value, "BinarySI")
