"""kro.graph: SimpleSchema, `${...}` expression parsing, the DAG, type checking, CRD generation
and per-instance evaluation.

Pure: cluster facts (OpenAPI schemas, resource scope) arrive through injected Protocols such as
`SchemaResolver`. Must not import: kro.runtime, kro.dynamic, kro.applyset, kro.controllers,
aiohttp, kubernetes_asyncio, prometheus_client.
"""
