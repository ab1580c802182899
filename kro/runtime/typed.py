"""kro.runtime.typed: pydantic v2 models for an operator's own kinds, where the author wants them.

Plain dicts remain the lingua franca of kro.runtime (the client, informers and caches never copy
an object into a model, because decoding is where a controller's CPU goes). A typed model is
opt-in, per kind, at the edges of a reconciler: the cache-backed reader validates an object into
the author's model when asked for that model (`reader.get(Website, ...)`), so a malformed spec
fails once, loudly, as `InvalidObject` (a TerminalError: no retry fixes it until someone edits
the object), instead of as a KeyError deep in the reconcile. Going the other way, `to_dict()`
serialises with camelCase aliases and *only the fields that were set*, which is what server-side
apply needs: a field the author never set is not claimed by the field manager.

    class WebsiteSpec(BaseModel):
        image: str
        replicas: int = Field(1, ge=0, le=10)

    class Website(KubeModel):
        gvk = GVK("example.com", "v1", "Website")   # the resource is found through discovery
        spec: WebsiteSpec

    site = Website.from_object(raw_dict)            # validated; InvalidObject if not
    site.metadata.name, site.spec.replicas
    manager.client.apply(site)                       # apiVersion/kind filled in from gvk

There is no generated client for the whole Kubernetes API: built-in kinds stay dicts.
Field names are snake_case in Python and camelCase on the wire (`resource_version` <->
`resourceVersion`); both spellings are accepted on input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from .gvk import GVK, GVR
from .reconcile import TerminalError

__all__ = [
    "Condition",
    "InvalidObject",
    "KubeModel",
    "ObjectMeta",
    "OwnerReference",
    "WireModel",
    "as_dict",
]


class InvalidObject(TerminalError):
    """An object did not validate into its model: it cannot converge until someone edits it."""

    def __init__(self, model: type[BaseModel], obj: Mapping[str, Any], error: ValidationError):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        where = f"{(meta or {}).get('namespace') or ''}/{(meta or {}).get('name') or '?'}"
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors(include_url=False)
        )
        super().__init__(f"{model.__name__} {where.lstrip('/')} is invalid: {problems}")
        self.errors = error.errors(include_url=False)


class WireModel(BaseModel):
    """A model whose wire names are camelCase: a base for the spec and status of a CRD.

    Unknown fields are ignored on read (an older operator meeting a newer CRD keeps working);
    declare `model_config = ConfigDict(extra="forbid")` in a subclass to refuse them.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, camelCase, and only the fields that were set (what apply should own)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class OwnerReference(WireModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(WireModel):
    """metadata; fields kro.runtime reads are typed, anything else is kept as it came."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = None


class Condition(WireModel):
    """One entry of status.conditions (metav1.Condition), for typed status models."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class KubeModel(WireModel):
    """A whole Kubernetes object of an author's kind: apiVersion, kind, metadata and the rest.

    Subclasses set the class attribute `gvk` (what manifests say). `gvr` (what URLs say) and
    `namespaced` are looked up through discovery on first use (kro.runtime.reader.gvr_of) and
    remembered on the class; a subclass may still set them. apiVersion and kind are filled in
    from `gvk` when missing. Extra top-level fields are kept, so a round trip through the model
    loses nothing.

    A model read from the API (`from_object`) remembers the status it was read with
    (`loaded_status`, the cache's own dict, not a copy), so the reconciler may change
    `status` in place and StatusWriter still knows what the server holds.
    """

    model_config = ConfigDict(extra="allow")

    gvk: ClassVar[GVK]
    gvr: ClassVar[GVR]
    namespaced: ClassVar[bool] = True

    api_version: str
    kind: str
    metadata: ObjectMeta = ObjectMeta()
    _loaded_status: Mapping[str, Any] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _fill_type(cls, data: Any) -> Any:
        gvk = getattr(cls, "gvk", None)
        if isinstance(data, Mapping) and gvk is not None:
            filled = dict(data)
            if "apiVersion" not in filled and "api_version" not in filled:
                filled["apiVersion"] = gvk.api_version
            filled.setdefault("kind", gvk.kind)
            return filled
        return data

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Self:
        """Validate a dict from the API (or the cache) into this model; InvalidObject if not."""
        try:
            model = cls.model_validate(obj)
        except ValidationError as error:
            raise InvalidObject(cls, obj, error) from None
        status = obj.get("status")
        model._loaded_status = status if isinstance(status, Mapping) else {}
        return model

    def __eq__(self, other: object) -> bool:
        """Equal by data, as pydantic compares: what the status was read as does not count."""
        if not isinstance(other, KubeModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like any pydantic model

    @property
    def loaded_status(self) -> Mapping[str, Any] | None:
        """The status as read from the API (None for a model built in code)."""
        return self._loaded_status

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""


def as_dict(obj: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    """A dict view of either form of an object, for helpers that accept both."""
    if isinstance(obj, WireModel):
        return obj.to_dict()
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return obj
