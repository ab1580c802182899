"""kro.graph.template: the `${...}` syntax in resource templates, status fields and condition lists.

What lives here: splitting strings into literal text and CEL expressions with upstream kro's
exact rules (scanner), naming where a value sits in a template (fieldpath), listing every
templated field of an object (fields), and putting evaluated values back into a copy
(substitute). What does not: compiling or type-checking CEL and finding dependencies (kro.cel),
deciding which contexts may reference what (the graph builder).

Must not import: kro.runtime, aiohttp, kubernetes_asyncio, prometheus_client, nor the CEL engine.

Entry points:
    extract_fields(template) -> list[FieldDescriptor]
    substitute(template, {path: value}, omit=sentinel) -> new object
    parse_template(text) -> Template, parse_standalone(text) -> str, is_standalone(text)
    FieldPath, FieldPath.parse(text), ROOT
    go_quote(text), go_unquote(text)

Example:
    >>> tmpl = {"metadata": {"name": "${schema.spec.name}-svc"}, "spec": {"replicas": "${n}"}}
    >>> [(str(f.path), f.expressions, f.standalone) for f in extract_fields(tmpl)]
    [('metadata.name', ('schema.spec.name',), False), ('spec.replicas', ('n',), True)]
    >>> substitute(tmpl, {"metadata.name": ["web"], "spec.replicas": 3})
    {'metadata': {'name': 'web-svc'}, 'spec': {'replicas': 3}}
"""

from kro.graph.template.fieldpath import ROOT as ROOT
from kro.graph.template.fieldpath import FieldPath as FieldPath
from kro.graph.template.fieldpath import Segment as Segment
from kro.graph.template.fields import FieldDescriptor as FieldDescriptor
from kro.graph.template.fields import extract_fields as extract_fields
from kro.graph.template.fields import walk_leaves as walk_leaves
from kro.graph.template.quote import go_quote as go_quote
from kro.graph.template.quote import go_unquote as go_unquote
from kro.graph.template.scanner import ExpressionPart as ExpressionPart
from kro.graph.template.scanner import Template as Template
from kro.graph.template.scanner import TextPart as TextPart
from kro.graph.template.scanner import is_standalone as is_standalone
from kro.graph.template.scanner import parse_standalone as parse_standalone
from kro.graph.template.scanner import parse_template as parse_template
from kro.graph.template.substitute import substitute as substitute

__all__ = [
    "ROOT",
    "ExpressionPart",
    "FieldDescriptor",
    "FieldPath",
    "Segment",
    "Template",
    "TextPart",
    "extract_fields",
    "go_quote",
    "go_unquote",
    "is_standalone",
    "parse_standalone",
    "parse_template",
    "substitute",
    "walk_leaves",
]
