"""kro.runtime.client: a thin, typed Kubernetes REST client on aiohttp + orjson.

Objects are plain dicts in and out; every failure is a `kro.runtime.errors.KubeError`. The client
knows nothing of kinds: callers name a `GVR` (the `mapper` turns kinds into resources). It costs
several times less CPU per request than kubernetes-asyncio's generated client, whose model layer
and `trust_env` lookups dominate; bench/bench_client.py measures ours. That matters because a
controller's CPU goes mostly to decoding.

Neighbours: `_transport` (sessions, throttling, retries, metrics), `_watch` (the watch stream),
`clientoptions` (how it behaves), `config` (where the server is), `discovery` (the RESTMapper
this client carries).

    async with await Client.from_kubeconfig() as client:
        cm = await client.get(GVR("", "v1", "configmaps"), "kube-root-ca.crt", namespace="default")
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping
from types import TracebackType
from typing import Any, Final, Literal, Self

import orjson

from kro.runtime._paths import (
    fill_item_kinds,
    name_of,
    namespace_of,
    resource_path,
    selector_params,
    write_params,
)
from kro.runtime._transport import Transport, decode_json
from kro.runtime._watch import WatchEvent, decode_event, iter_lines
from kro.runtime.clientoptions import ClientOptions
from kro.runtime.config import ConnectionConfig, load_default
from kro.runtime.discovery import RESTMapper
from kro.runtime.errors import Gone, TransportError
from kro.runtime.gvk import GVR

__all__ = ["Client", "ClientOptions", "WatchEvent", "resource_path"]

JSON: Final = "application/json"
METADATA_LIST_ACCEPT: Final = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + JSON
)
METADATA_ACCEPT: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," + JSON
PATCH_TYPES: Final[Mapping[str, str]] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
APPLY_PATCH: Final = "application/apply-patch+yaml"  # JSON is YAML; the server accepts it as-is


class Client:
    """One API server connection: requests, watches and a RESTMapper. Close it (or use
    `async with`) to release connections. Objects returned are owned by the caller."""

    def __init__(self, config: ConnectionConfig, options: ClientOptions | None = None) -> None:
        self.config = config
        self.options = options or ClientOptions()
        self._transport = Transport(config, self.options)
        self.mapper = RESTMapper(self, clock=self._transport.clock)

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | None = None,
        *,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> Client:
        """`path`, else $KUBECONFIG, else ~/.kube/config, else the in-cluster service account."""
        return cls(await load_default(path, context=context), options)

    @classmethod
    def from_config(cls, config: ConnectionConfig, options: ClientOptions | None = None) -> Client:
        return cls(config, options)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._transport.close()

    # -- raw ------------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
    ) -> Any:
        """Any endpoint (`/openapi/v3`, `/readyz`, TokenRequest). A dict/list body is sent as
        JSON; bytes and str as they are. Returns decoded JSON, or text for non-JSON replies."""
        data: bytes | None
        if body is None:
            data = None
        elif isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = orjson.dumps(body)
            content_type = content_type or JSON
        resp = await self._transport.send(
            method.upper(), path, params=params, body=data, content_type=content_type, accept=accept
        )
        if not resp.body:
            return None
        if "json" in resp.content_type:
            return decode_json(
                resp.body, method.upper(), path, status=resp.status, content_type=resp.content_type
            )
        return resp.body.decode("utf-8", errors="replace")

    async def _json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
    ) -> dict[str, Any]:
        data = None if body is None else orjson.dumps(body)
        if data is not None and content_type is None:
            content_type = JSON
        resp = await self._transport.send(
            method, path, params=params, body=data, content_type=content_type, accept=accept
        )
        result = decode_json(
            resp.body, method, path, status=resp.status, content_type=resp.content_type
        )
        if not isinstance(result, dict):
            raise TransportError(
                f"{method} {path} (HTTP {resp.status}): expected a JSON object, "
                f"got {type(result).__name__}",
                method=method,
                path=path,
                status=resp.status,
                reason="UnexpectedBody",
            )
        return result

    # -- reads ----------------------------------------------------------------------------------

    async def get(
        self,
        gvr: GVR,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        path = resource_path(gvr, namespace=namespace, name=name, subresource=subresource)
        return await self._json("GET", path)

    async def list(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        metadata_only: bool = False,
        shard_selector: str | None = None,
    ) -> dict[str, Any]:
        """One page: a List object with `items` and `metadata.{resourceVersion,continue}`.

        shard_selector: a `shardRange(...)` expression (kro.runtime.sharding); a server with
        the ShardedListAndWatch gate answers only that slice and says so in
        `metadata.shardInfo`, one without it ignores the parameter.
        """
        params = selector_params(label_selector, field_selector, resource_version)
        if shard_selector:
            params["shardSelector"] = shard_selector
        if limit:
            params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        accept = METADATA_LIST_ACCEPT if metadata_only else JSON
        page = await self._json(
            "GET", resource_path(gvr, namespace=namespace), params=params, accept=accept
        )
        fill_item_kinds(page)
        return page

    async def list_all(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        metadata_only: bool = False,
        shard_selector: str | None = None,
        each: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """All items and the list's resourceVersion (start a watch there), following pages.

        Pages bound the server's and our memory per response. If a continue token expires
        mid-way (410), the list restarts unpaginated, like client-go's pager: the items must
        come from one snapshot. `each` is applied to every item as its page arrives (an
        informer's transform drops managedFields there, so a large list never holds all of
        them at once: ~8 MiB for 5,000 ConfigMaps).
        """
        items: builtins.list[dict[str, Any]] = []
        token: str | None = None
        limit: int | None = page_size
        while True:
            try:
                page = await self.list(
                    gvr,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    limit=limit,
                    continue_token=token,
                    metadata_only=metadata_only,
                    shard_selector=shard_selector,
                )
            except Gone:
                if token is None:
                    raise
                items, token, limit = [], None, None
                continue
            found = page.get("items") or ()
            items.extend(map(each, found) if each is not None else found)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                return items, str(meta.get("resourceVersion") or "")

    async def watch(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_s: int | None = 300,
        metadata_only: bool = False,
        drop_managed_fields: bool = False,
        shard_selector: str | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream changes after `resource_version` until the server closes (after `timeout_s`).

        Raises Gone when the version is too old (relist), RequestTimeout when the stream goes
        silent for `watch_idle_timeout_s`, TransportError when it breaks. Close the iterator
        (`contextlib.aclosing`) if you stop early, to free the connection at once.
        """
        params = selector_params(label_selector, field_selector, resource_version)
        params["watch"] = "true"
        if shard_selector:
            params["shardSelector"] = shard_selector
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if timeout_s is not None:
            params["timeoutSeconds"] = str(timeout_s)
        # Watch events carry single objects, so the metadata form is the item kind (as
        # client-go's metadata client asks), not the List kind used for LIST.
        accept = METADATA_ACCEPT if metadata_only else JSON
        resp = await self._transport.open_stream(
            resource_path(gvr, namespace=namespace), params=params, accept=accept
        )
        with contextlib.closing(resp):
            async for line in iter_lines(resp, max_line_bytes=self.options.max_line_bytes):
                yield decode_event(line, drop_managed_fields=drop_managed_fields)

    # -- writes ---------------------------------------------------------------------------------

    async def create(
        self,
        gvr: GVR,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """POST; `namespace` defaults to `metadata.namespace`. With a subresource (e.g.
        `serviceaccounts/<name>/token`), the object's name selects the parent."""
        ns = namespace_of(obj, namespace)
        if subresource:
            path = resource_path(gvr, namespace=ns, name=name_of(obj), subresource=subresource)
        else:
            path = resource_path(gvr, namespace=ns)
        params = write_params(field_manager, dry_run)
        return await self._json("POST", path, params=params, body=obj)

    async def update(
        self,
        gvr: GVR,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PUT; a `metadata.resourceVersion` in `obj` makes it conditional (Conflict if stale)."""
        path = resource_path(gvr, namespace=namespace_of(obj, namespace), name=name_of(obj))
        return await self._json("PUT", path, params=write_params(field_manager, dry_run), body=obj)

    async def update_status(
        self,
        gvr: GVR,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PUT to /status: the server keeps spec and metadata changes out of it."""
        path = resource_path(
            gvr, namespace=namespace_of(obj, namespace), name=name_of(obj), subresource="status"
        )
        return await self._json("PUT", path, params=write_params(field_manager, False), body=obj)

    async def patch(
        self,
        gvr: GVR,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PATCH with an explicit type; strategic merge works only on built-in kinds."""
        path = resource_path(gvr, namespace=namespace, name=name, subresource=subresource)
        return await self._json(
            "PATCH",
            path,
            params=write_params(field_manager, dry_run),
            body=patch,
            content_type=PATCH_TYPES[patch_type],
        )

    async def apply(
        self,
        gvr: GVR,
        obj: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Server-side apply. `obj` needs apiVersion, kind and metadata.name; it should contain
        only the fields this manager owns (anything omitted that it owned is removed)."""
        ns = namespace_of(obj, namespace)
        path = resource_path(gvr, namespace=ns, name=name_of(obj), subresource=subresource)
        params = write_params(field_manager, dry_run)
        if force:
            params["force"] = "true"
        return await self._json("PATCH", path, params=params, body=obj, content_type=APPLY_PATCH)

    async def delete(
        self,
        gvr: GVR,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
        grace_period_s: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any] | None:
        """DELETE. Returns the object while it is still terminating (finalizers, graceful
        deletion), or None once the server reports it removed (a Status)."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if grace_period_s is not None:
            options["gracePeriodSeconds"] = grace_period_s
        if dry_run:
            options["dryRun"] = ["All"]
        path = resource_path(gvr, namespace=namespace, name=name)
        result = await self._json("DELETE", path, body=options)
        return None if result.get("kind") == "Status" else result
