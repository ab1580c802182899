"""kro.cel: the one adapter over the CEL engine (cel-expr-python) and kro's function libraries.

Only this package imports the engine. Results are classified as a value, data pending (the
data an expression reads does not exist yet) or an expression error.

Must not import: kro.graph, kro.runtime, aiohttp, kubernetes_asyncio, prometheus_client.
"""
