"""kro.cli.rgds: check and build the RGDs given with `-f`, as the API server and kro would.

One pipeline for `validate`, `generate crd`, `graph` and `render`, so they agree on what is
valid. Per RGD, in the order a cluster would fail it:

1. strict decoding (`strict`): duplicate and unknown fields of the RGD and of its templates;
2. admission (`kro.api.v1alpha1`): patterns, enums, exactly-one-of rules;
3. the graph build (`kro.graph.builder`): names, kinds, expressions, types;
4. the generated CRD's CEL rules compile (`kro.graph.schema_rules`), as the API server
   checks when kro creates the CRD.

RGDs given together may build on each other: an RGD whose resources are instances of
another RGD in the input gets that RGD's generated CRD. An RGD whose kind lookup fails is
retried after the others, until no round makes progress. Messages are made one-line and
user-facing by `messages`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kro.api.names import RGD_KIND
from kro.api.v1alpha1 import InvalidObjectError, parse_resource_graph_definition
from kro.cli.build_result import BuildResult
from kro.cli.inputs import Document
from kro.cli.member_schemas import clusters_of
from kro.cli.messages import user_message
from kro.cli.strict import (
    KindNotResolved,
    object_meta_schema,
    rgd_field_errors,
    template_field_errors,
)
from kro.graph.build_errors import ResourceBuildError
from kro.graph.builder import BuildOptions, build_graph
from kro.graph.errors import GraphError
from kro.graph.resolver import OfflineSchemaResolver
from kro.graph.schema_rules import rule_compile_errors


class _Retry(Exception):
    """The RGD names a kind that an RGD not yet built may define."""


def rgd_documents(documents: Sequence[Document]) -> list[Document]:
    """The ResourceGraphDefinitions among the input documents."""
    return [d for d in documents if d.body.get("kind") == RGD_KIND]


def rgd_name(rgd: Mapping[str, Any]) -> str:
    metadata = rgd.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""


def build_rgds(
    rgds: Sequence[dict[str, Any] | Document],
    resolver: OfflineSchemaResolver,
    options: BuildOptions,
) -> list[BuildResult]:
    """Check and build every RGD, each one's CRD served to the others; input order kept."""
    documents = [d if isinstance(d, Document) else Document("", d) for d in rgds]
    object_meta = object_meta_schema(resolver)
    results: dict[int, BuildResult] = {}
    pending = list(range(len(documents)))
    for final in (False, True):
        progressed = True
        while pending and (progressed or final):
            progressed = False
            for index in list(pending):
                try:
                    results[index] = _check(documents[index], resolver, options, object_meta, final)
                except _Retry:
                    continue
                pending.remove(index)
                progressed = True
            if final:
                break
    return [results[i] for i in range(len(documents))]


def _check(
    document: Document,
    resolver: OfflineSchemaResolver,
    options: BuildOptions,
    object_meta: Mapping[str, Any] | None,
    final: bool,
) -> BuildResult:
    rgd = document.body
    try:  # strict decoding first, the RGD's fields and its templates' alike
        errors = rgd_field_errors(rgd, document.duplicates, object_meta)
        errors += template_field_errors(rgd, resolver, final=final)
    except KindNotResolved:
        raise _Retry from None
    if not errors:
        try:
            parse_resource_graph_definition(rgd)
        except InvalidObjectError as error:
            prefix = f'{error.kind} "{error.name}" is invalid: '
            errors = [prefix + f"{path}: {message}" for path, message in error.causes]
    if errors:
        return _failed(document, errors)
    try:
        graph = build_graph(rgd, resolver, options=options, clusters=clusters_of(resolver))
    except ResourceBuildError as error:
        if error.rule == "G-07" and not final:
            raise _Retry from None
        return _failed(document, [user_message(error)])
    except GraphError as error:
        return _failed(document, [user_message(error)])
    rule_errors = [
        user_message(f"generated CRD: {problem}")
        for problem in rule_compile_errors(graph.instance.spec_schema, "spec")
    ]
    if rule_errors:
        return _failed(document, rule_errors)
    resolver.add_crd(graph.instance.crd)
    return BuildResult(rgd_name(rgd), graph, None, document.source)


def _failed(document: Document, errors: list[str]) -> BuildResult:
    return BuildResult(rgd_name(document.body), None, errors[0], document.source, tuple(errors))
