"""The ConservativeCRDComparison gate (V-11) from the flag to the CRD update: a schema change
the gate classifies as breaking is refused (KindReady's message) unless the RGD allows
breaking changes; without the gate the same change is applied. v0.10's default classes
(an enum added) are refused either way."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kro.api.names import LABEL_OWNED, LABEL_RGD_NAME
from kro.cli.controller import app_options
from kro.cli.flags import parse_controller_args
from kro.controllers.crd import CRDError, ensure_crd

NAME = "notes.kro.run"


def crd(when: dict[str, Any]) -> dict[str, Any]:
    spec_schema = {"type": "object", "properties": {"when": when}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME, "labels": {LABEL_OWNED: "true", LABEL_RGD_NAME: "notes"}},
        "spec": {
            "group": "kro.run",
            "names": {
                "kind": "Note",
                "plural": "notes",
                "singular": "note",
                "listKind": "NoteList",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


class StubMapper:
    def invalidate(self) -> None:
        pass


class StubClient:
    """The live CRD (Established), and the merge patches kro sends for it."""

    def __init__(self, live: dict[str, Any]) -> None:
        self.live = live
        self.patches: list[dict[str, Any]] = []
        self.mapper = StubMapper()

    async def get(self, gvr: Any, name: str, **_: Any) -> dict[str, Any]:
        return copy.deepcopy(self.live)

    async def patch(self, gvr: Any, name: str, body: dict[str, Any], **_: Any) -> None:
        self.patches.append(body)


STRING = {"type": "string"}
DATE_TIME = {"type": "string", "format": "date-time"}
ENUM = {"type": "string", "enum": ["now", "later"]}


async def _ensure(live: dict[str, Any], desired: dict[str, Any], **kwargs: Any) -> StubClient:
    client = StubClient(live)
    await ensure_crd(client, desired, rgd_name="notes", **kwargs)  # type: ignore[arg-type]
    return client


async def test_without_the_gate_a_format_added_is_applied() -> None:
    client = await _ensure(crd(STRING), crd(DATE_TIME), allow_breaking=False)
    (patch,) = client.patches
    schema = patch["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["properties"]["when"] == DATE_TIME


async def test_with_the_gate_a_format_added_is_refused_naming_it() -> None:
    with pytest.raises(CRDError) as caught:
        await _ensure(crd(STRING), crd(DATE_TIME), allow_breaking=False, conservative=True)
    assert str(caught.value) == (
        f"cannot update CRD {NAME}: breaking changes detected: Format date-time was added"
    )


async def test_with_the_gate_the_allow_annotation_still_lets_it_through() -> None:
    client = await _ensure(crd(STRING), crd(DATE_TIME), allow_breaking=True, conservative=True)
    assert len(client.patches) == 1


@pytest.mark.parametrize("conservative", [False, True], ids=["gate-off", "gate-on"])
async def test_an_enum_added_is_refused_with_or_without_the_gate(conservative: bool) -> None:
    with pytest.raises(CRDError, match="breaking changes detected: Enum constraint was added"):
        await _ensure(crd(STRING), crd(ENUM), allow_breaking=False, conservative=conservative)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [([], False), (["--feature-gates=ConservativeCRDComparison=true"], True)],
    ids=["default-off", "gate-on"],
)
def test_the_feature_gate_reaches_the_rgd_controller(argv: list[str], expected: bool) -> None:
    options = app_options(parse_controller_args(argv))
    assert options.rgd.conservative_crd_comparison is expected
