"""kro.api: kro's API types and every label, annotation, finalizer, field manager and condition
name, each defined once.

Must not import: kro.runtime's network code, aiohttp, kubernetes_asyncio, prometheus_client.
Pure data: pydantic models for user input, TypedDict views, constants.
"""
