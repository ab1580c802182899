"""kro.runtime: a controller-runtime-style library for asyncio, with no knowledge of kro.

Lives here: the thin aiohttp + orjson REST client (plain dicts in and out), discovery and the
REST mapper, list+watch informers and their stores, rate-limited work queues, controllers with
N workers, the manager (leader election, health, metrics, graceful shutdown), the event recorder.

Must not import: any other `kro.*` package, the CEL engine, pydantic models of kro's API.
An operator author can build a controller with this package alone (see docs/runtime.md).
"""
