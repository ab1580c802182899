"""kro.graph.plural: byte-for-byte agreement with github.com/gobuffalo/flect v1.0.3 (N-18)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kro.graph.plural import pluralize, resource_plural

VECTORS: dict[str, str] = json.loads(
    (Path(__file__).parent / "data" / "flect_plural_vectors.json").read_text(encoding="utf-8")
)


def test_every_vector_from_real_flect_matches() -> None:
    mismatches = {word: (want, pluralize(word)) for word, want in VECTORS.items()}
    mismatches = {w: pair for w, pair in mismatches.items() if pair[0] != pair[1]}
    assert mismatches == {}
    assert len(VECTORS) > 1000


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Application", "applications"),
        ("WebApp", "webapps"),
        ("Policy", "policies"),
        ("NetworkPolicy", "networkpolicies"),
        ("Ingress", "ingresses"),
        ("Status", "statuses"),
        ("Person", "people"),
        ("Datum", "data"),
        ("Index", "indices"),
        ("Proxy", "proxies"),
        ("Gateway", "gateways"),
        ("Leaf", "leaves"),
        ("Analysis", "analyses"),
        ("Box", "boxes"),
        ("Hero", "heroes"),
        ("Memo", "memoes"),
        ("Sheep", "sheep"),
        ("Api", "apis"),
        ("Dns", "dnsDNSes"),
    ],
    ids=str,
)
def test_kind_plurals(kind: str, plural: str) -> None:
    assert resource_plural(kind) == plural


def test_empty_and_separator_only_words() -> None:
    assert pluralize("") == ""
    assert pluralize("  ") == ""
