"""An in-process fake Kubernetes API server (aiohttp.web on 127.0.0.1) for unit tests and benches.

What it serves, for any registered GVR (and for CRs once their CRD is created):
get / list (limit + continue, labelSelector, fieldSelector, resourceVersion, the
PartialObjectMetadataList Accept) / watch (from a resourceVersion, replaying the event log;
bookmarks; timeoutSeconds; 410 once the log is compacted) / create / update (+status) /
patch (merge, json, strategic-as-merge, apply) / delete (finalizers, preconditions), plus
aggregated (v2) and legacy discovery, /version and /readyz. Write semantics live in
`_fakeapi_state.py`; discovery documents and selectors in `_fakeapi_discovery.py`.

Fault injection (`inject(Fault(...))`) for what a real server will not do on demand:
status replies (429 + Retry-After, 500 with a text body), 410 on a watch (as an ERROR event or
as HTTP 410), a dropped connection (mid-event for watches), and a silent stall.

Every request is recorded in `requests` so tests can check what went on the wire.

    async with FakeApiServer() as api:
        client = Client.from_config(ConnectionConfig(server=api.url))

Run as `python tests/runtime/fakeapi.py [--port N]` to serve from another process (bench).
"""

from __future__ import annotations

import asyncio
import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.gvk import GVR

from .discovery import (
    AGGREGATED_CT,
    aggregated,
    legacy_root,
    parse_selector,
    resource_list,
    selector_matches,
)
from .state import (
    DEFAULT_RESOURCES,
    Event,
    FakeApiError,
    FakeResource,
    FakeState,
    Obj,
    json_patch,
    merge_patch,
)

__all__ = [
    "DEFAULT_RESOURCES",
    "FakeApiServer",
    "FakeResource",
    "Fault",
    "RecordedRequest",
    "unthrottled_client",
]


@dataclass
class Fault:
    """One injected failure, consumed by the next `times` matching requests.

    action: "status" replies `status` with `body` (text, or a dict sent as JSON);
        "gone" on a watch sends an ERROR 410 event (or HTTP 410 with `http=True`);
        "drop" closes the connection (watches: after `after_events` events, mid-line);
        "stall" sends nothing more (watches: headers and `after_events` events first).
    match: method ("GET", "POST", ...), `watch` (True/False/None=any) and a path substring;
        the first `skip` matching requests pass untouched.
    """

    action: Literal["status", "gone", "drop", "stall"]
    method: str | None = None
    path: str | None = None
    watch: bool | None = None
    times: int = 1
    status: int = 500
    body: str | Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    after_events: int = 0
    http: bool = False
    skip: int = 0
    hits: int = 0

    def matches(self, method: str, path: str, is_watch: bool) -> bool:
        return (
            (self.method is None or self.method == method)
            and (self.watch is None or self.watch == is_watch)
            and (self.path is None or self.path in path)
        )


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


@dataclass(frozen=True)
class _Target:
    gvr: GVR
    namespace: str
    name: str
    subresource: str | None


class _Watcher:
    def __init__(
        self, server: FakeApiServer, target: _Target, query: Mapping[str, str], metadata_only: bool
    ) -> None:
        self.server = server
        self.target = target
        self.labels = parse_selector(query.get("labelSelector", ""))
        self.fields = parse_selector(query.get("fieldSelector", ""))
        self.bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        self.metadata_only = metadata_only
        self.queue: asyncio.Queue[tuple[str, Obj] | None] = asyncio.Queue()

    def offer(self, event: Event) -> None:
        if event.gvr != self.target.gvr:
            return
        new_ok = self._matches(event.obj)
        old_ok = event.old is not None and self._matches(event.old)
        kind = event.type
        if kind == "MODIFIED" and new_ok and not old_ok:
            kind = "ADDED"
        elif kind == "MODIFIED" and old_ok and not new_ok:
            kind = "DELETED"
        elif not new_ok:
            return
        self.queue.put_nowait((kind, event.obj))

    def _matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if self.target.namespace and meta.get("namespace", "") != self.target.namespace:
            return False
        return selector_matches(self.labels, meta.get("labels") or {}) and selector_matches(
            self.fields,
            {
                "metadata.name": meta.get("name", ""),
                "metadata.namespace": meta.get("namespace", ""),
            },
        )


class FakeApiServer:
    """A stateful fake API server; start with `async with` or `start()`/`close()`."""

    def __init__(
        self,
        resources: tuple[FakeResource, ...] = DEFAULT_RESOURCES,
        *,
        aggregated_discovery: bool = True,
        tokens: set[str] | None = None,
        bookmark_interval_s: float | None = None,
        ssl_context: Any = None,
    ) -> None:
        self.state = FakeState(resources)
        self.aggregated_discovery = aggregated_discovery
        self.tokens = tokens  # None: no auth; else the accepted bearer tokens (mutable)
        self.bookmark_interval_s = bookmark_interval_s
        self.faults: list[Fault] = []
        self.requests: list[RecordedRequest] = []
        self.watchers: set[_Watcher] = set()
        self._ssl_context = ssl_context
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self._changed = asyncio.Event()
        self.url = ""
        self.state.listeners.append(self._fan_out)

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, port: int = 0) -> str:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a watch handler must notice when its client goes away
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, handler_cancellation=True
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=self._ssl_context)
        await site.start()
        bound = self._runner.addresses[0][1]
        scheme = "https" if self._ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{bound}"
        return self.url

    async def close(self) -> None:
        self._closing.set()
        for watcher in list(self.watchers):
            watcher.queue.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- test controls ---------------------------------------------------------------------

    def inject(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def add_resource(self, res: FakeResource) -> None:
        self.state.add_resource(res)

    def remove_resource(self, gvr: GVR) -> None:
        self.state.remove_resource(gvr)

    def compact(self) -> None:
        """Forget the event log: watches from any earlier resourceVersion now get 410."""
        self.state.compacted_rv = self.state.rv
        self.state.log.clear()

    def send_bookmark(self) -> None:
        """Every bookmark-enabled watch gets a BOOKMARK at the current resourceVersion."""
        for watcher in list(self.watchers):
            if watcher.bookmarks:
                watcher.queue.put_nowait(("BOOKMARK", self._bookmark(watcher)))

    def end_watches(self) -> None:
        """Close every open watch cleanly (as the server does at timeoutSeconds)."""
        for watcher in list(self.watchers):
            watcher.queue.put_nowait(None)

    def seed(self, gvr: GVR, obj: Obj, *, manager: str | None = "seed") -> Obj:
        """Create directly (no HTTP); the namespace comes from the object."""
        ns = (obj.get("metadata") or {}).get("namespace", "")
        return self.state.create(gvr, ns, obj, manager=manager, dry_run=False)

    def modify(self, gvr: GVR, obj: Obj, *, manager: str | None = "seed") -> Obj:
        meta = obj.get("metadata") or {}
        return self.state.replace(
            gvr,
            meta.get("namespace", ""),
            meta["name"],
            obj,
            subresource=None,
            manager=manager,
            dry_run=False,
            precondition_rv=None,
        )

    def remove(self, gvr: GVR, name: str, namespace: str = "") -> None:
        self.state.delete(gvr, namespace, name, {}, dry_run=False)

    def object(self, gvr: GVR, name: str, namespace: str = "") -> Obj | None:
        try:
            return self.state.get(gvr, namespace, name)
        except FakeApiError:
            return None

    def objects(self, gvr: GVR, namespace: str | None = None) -> list[Obj]:
        """Every object of `gvr` (in `namespace`; None: all), as the server holds it now."""
        return copy.deepcopy(self.state.items(gvr, namespace))

    async def wait_for(self, predicate: Any) -> None:
        """Wait (wrap in a deadline) until `predicate()` holds; re-checked on every request."""
        while not predicate():
            self._changed.clear()
            await self._changed.wait()

    async def wait_for_watchers(self, count: int) -> None:
        await self.wait_for(lambda: len(self.watchers) >= count)

    def watch_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_watch]

    # -- dispatch ----------------------------------------------------------------------------

    def _fan_out(self, event: Event) -> None:
        for watcher in list(self.watchers):
            watcher.offer(event)

    def _signal(self) -> None:
        self._changed.set()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        query = {k: v for k, v in request.query.items()}
        self.requests.append(
            RecordedRequest(
                request.method,
                request.path,
                query,
                {k.lower(): v for k, v in request.headers.items()},
                body,
            )
        )
        self._signal()
        is_watch = query.get("watch") in ("true", "1")
        try:
            self._authenticate(request)
            fault = self._take_fault(request.method, request.path, is_watch)
            if fault is not None and not (is_watch and fault.action != "status"):
                return await self._apply_fault(request, fault)
            return await self._route(request, query, body, fault)
        except FakeApiError as e:
            return _json_response(e.status(), status=e.code)

    def _authenticate(self, request: web.Request) -> None:
        if self.tokens is None:
            return
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or header[7:] not in self.tokens:
            raise FakeApiError(401, "Unauthorized", "Unauthorized")

    def _take_fault(self, method: str, path: str, is_watch: bool) -> Fault | None:
        for fault in self.faults:
            if fault.matches(method, path, is_watch):
                if fault.skip > 0:
                    fault.skip -= 1
                    return None
                fault.hits += 1
                if fault.hits >= fault.times:
                    self.faults.remove(fault)
                return fault
        return None

    async def _apply_fault(self, request: web.Request, fault: Fault) -> web.StreamResponse:
        if fault.action == "status":
            if isinstance(fault.body, Mapping):
                return _json_response(dict(fault.body), status=fault.status, headers=fault.headers)
            return web.Response(
                status=fault.status,
                text=fault.body or "",
                headers=dict(fault.headers),
                content_type="text/plain",
            )
        if fault.action == "gone":
            raise FakeApiError(410, "Expired", "too old resource version")
        if fault.action == "stall":
            await self._closing.wait()
        _abort(request)
        return web.Response(status=500)

    async def _route(
        self, request: web.Request, query: dict[str, str], body: bytes, fault: Fault | None
    ) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        accept = request.headers.get("Accept", "")
        if path in ("/readyz", "/livez", "/healthz"):
            return web.Response(text="ok")
        if path == "/version":
            return _json_response({"major": "1", "minor": "35", "gitVersion": "v1.35.0-fake"})
        if path in ("/api", "/apis"):
            resources = self.state.resources.values()
            if self.aggregated_discovery and "as=APIGroupDiscoveryList" in accept:
                return _json_response(
                    aggregated(resources, path == "/api"), content_type=AGGREGATED_CT
                )
            return _json_response(legacy_root(resources, path == "/api"))
        segments = path.strip("/").split("/")
        if segments[0] == "api" and len(segments) == 2:
            return _json_response(resource_list(self.state.resources.values(), "", segments[1]))
        if segments[0] == "apis" and len(segments) == 3:
            return _json_response(
                resource_list(self.state.resources.values(), segments[1], segments[2])
            )
        target = self._target(segments)
        method = request.method
        if method == "GET" and not target.name:
            if query.get("watch") in ("true", "1"):
                return await self._watch(request, target, query, accept, fault)
            return _json_response(self._list(target, query, accept))
        payload = orjson.loads(body) if body else {}
        result = self._write(
            method, target, query, payload, request.headers.get("Content-Type", "")
        )
        if result is None:
            return _json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"name": target.name, "kind": target.gvr.resource},
                }
            )
        return _json_response(result, status=201 if method == "POST" else 200)

    def _target(self, segments: list[str]) -> _Target:
        if segments[0] == "api" and len(segments) >= 3:
            group, version, rest = "", segments[1], segments[2:]
        elif segments[0] == "apis" and len(segments) >= 4:
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise FakeApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        gvr = GVR(group, version, rest[0])
        self.state.resource(gvr)
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else None
        return _Target(gvr, namespace, name, sub)

    def _write(
        self, method: str, t: _Target, query: Mapping[str, str], payload: Any, content_type: str
    ) -> Obj | None:
        st = self.state
        manager = query.get("fieldManager")
        dry = query.get("dryRun") == "All"
        if method == "GET":
            return st.get(t.gvr, t.namespace, t.name)
        if method == "POST":
            if t.subresource == "token":
                st.get(t.gvr, t.namespace, t.name)
                return {
                    **payload,
                    "status": {
                        "token": f"fake-token-{t.name}",
                        "expirationTimestamp": "2099-01-01T00:00:00Z",
                    },
                }
            return st.create(t.gvr, t.namespace, payload, manager=manager, dry_run=dry)
        if method == "PUT":
            rv = (payload.get("metadata") or {}).get("resourceVersion")
            return st.replace(
                t.gvr,
                t.namespace,
                t.name,
                payload,
                subresource=t.subresource,
                manager=manager,
                dry_run=dry,
                precondition_rv=rv,
            )
        if method == "PATCH":
            return self._patch(
                t,
                query=query,
                payload=payload,
                content_type=content_type,
                manager=manager,
                dry=dry,
            )
        if method == "DELETE":
            return st.delete(t.gvr, t.namespace, t.name, payload or {}, dry_run=dry)
        raise FakeApiError(405, "MethodNotAllowed", f"{method} is not supported")

    def _patch(
        self,
        t: _Target,
        *,
        query: Mapping[str, str],
        payload: Any,
        content_type: str,
        manager: str | None,
        dry: bool,
    ) -> Obj:
        st = self.state
        ctype = content_type.partition(";")[0].strip()
        if ctype == "application/apply-patch+yaml":
            return st.apply(
                t.gvr,
                t.namespace,
                t.name,
                payload,
                subresource=t.subresource,
                manager=manager,
                force=query.get("force") in ("true", "1"),
                dry_run=dry,
            )
        current = st.get(t.gvr, t.namespace, t.name)
        if ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            new = merge_patch(current, payload)
            rv = ((payload or {}).get("metadata") or {}).get("resourceVersion")
        elif ctype == "application/json-patch+json":
            new, rv = json_patch(current, payload), None
        else:
            raise FakeApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format: {ctype}",
            )
        return st.replace(
            t.gvr,
            t.namespace,
            t.name,
            new,
            subresource=t.subresource,
            manager=manager,
            dry_run=dry,
            precondition_rv=rv,
        )

    # -- list & watch ------------------------------------------------------------------------

    def _select(self, target: _Target, query: Mapping[str, str]) -> list[Obj]:
        labels = parse_selector(query.get("labelSelector", ""))
        fields = parse_selector(query.get("fieldSelector", ""))
        out = []
        for obj in self.state.items(target.gvr, target.namespace):
            meta = obj["metadata"]
            field_values = {
                "metadata.name": meta.get("name", ""),
                "metadata.namespace": meta.get("namespace", ""),
            }
            if selector_matches(labels, meta.get("labels") or {}) and selector_matches(
                fields, field_values
            ):
                out.append(obj)
        return out

    def _list(self, target: _Target, query: Mapping[str, str], accept: str) -> Obj:
        res = self.state.resource(target.gvr)
        items = self._select(target, query)
        list_rv = self.state.rv
        start = 0
        if query.get("continue"):
            token = orjson.loads(base64.b64decode(query["continue"]))
            list_rv = token["rv"]
            if list_rv < self.state.compacted_rv:
                raise FakeApiError(410, "Expired", "The provided continue parameter is too old")
            keys = [_key_of(o) for o in items]
            start = next((i for i, k in enumerate(keys) if k > token["after"]), len(items))
        limit = int(query.get("limit") or 0)
        page = items[start : start + limit] if limit else items[start:]
        meta: Obj = {"resourceVersion": str(list_rv)}
        if limit and start + limit < len(items):
            meta["continue"] = base64.b64encode(
                orjson.dumps({"rv": list_rv, "after": _key_of(page[-1])})
            ).decode()
            meta["remainingItemCount"] = len(items) - start - limit
        if "as=PartialObjectMetadata" in accept:
            return {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
                "items": [_partial(o) for o in page],
            }
        stripped = [
            {k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
            if not res.from_crd
            else o
            for o in page
        ]
        return {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": meta,
            "items": stripped,
        }

    def _bookmark(self, watcher: _Watcher) -> Obj:
        res = self.state.resources.get(watcher.target.gvr)
        kind = res.kind if res else ""
        if watcher.metadata_only:
            return {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": str(self.state.rv)},
            }
        return {
            "kind": kind,
            "apiVersion": res.api_version if res else "",
            "metadata": {"resourceVersion": str(self.state.rv)},
        }

    async def _watch(
        self,
        request: web.Request,
        target: _Target,
        query: Mapping[str, str],
        accept: str,
        fault: Fault | None,
    ) -> web.StreamResponse:
        metadata_only = "as=PartialObjectMetadata" in accept
        rv_param = query.get("resourceVersion", "")
        rv = int(rv_param) if rv_param.isdigit() else 0
        if fault is not None and fault.action == "gone" and fault.http:
            raise FakeApiError(410, "Expired", "too old resource version")
        if rv and rv < self.state.compacted_rv and fault is None:
            fault = Fault("gone")
        watcher = _Watcher(self, target, query, metadata_only)
        backlog: list[tuple[str, Obj]] = []
        if not rv:
            backlog = [("ADDED", o) for o in self._select(target, query)]
        elif fault is None or fault.action != "gone":
            for ev in self.state.log:
                if ev.rv > rv:
                    watcher.offer(ev)
                    while not watcher.queue.empty():
                        item = watcher.queue.get_nowait()
                        if item is not None:
                            backlog.append(item)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        self.watchers.add(watcher)
        self._signal()
        try:
            async with asyncio.timeout(float(query.get("timeoutSeconds") or 3600)):
                await self._stream(request, resp, watcher, backlog, fault)
        except (TimeoutError, ConnectionResetError):
            pass
        finally:
            self.watchers.discard(watcher)
            self._signal()
        return resp

    async def _stream(
        self,
        request: web.Request,
        resp: web.StreamResponse,
        watcher: _Watcher,
        backlog: list[tuple[str, Obj]],
        fault: Fault | None,
    ) -> None:
        sent = 0

        async def send(kind: str, obj: Obj) -> None:
            nonlocal sent
            if watcher.metadata_only and kind != "BOOKMARK":
                obj = _partial(obj)
            await resp.write(orjson.dumps({"type": kind, "object": obj}) + b"\n")
            sent += 1
            if fault is not None and sent == fault.after_events:
                await self._watch_fault(request, resp, fault)

        if fault is not None and fault.after_events == 0:
            await self._watch_fault(request, resp, fault)
        for kind, obj in backlog:
            await send(kind, obj)
        while True:
            item = await self._next(watcher)
            if item is None:
                return
            await send(*item)

    async def _next(self, watcher: _Watcher) -> tuple[str, Obj] | None:
        if not (watcher.bookmarks and self.bookmark_interval_s):
            return await watcher.queue.get()
        try:
            async with asyncio.timeout(self.bookmark_interval_s):
                return await watcher.queue.get()
        except TimeoutError:
            return ("BOOKMARK", self._bookmark(watcher))

    async def _watch_fault(
        self, request: web.Request, resp: web.StreamResponse, fault: Fault
    ) -> None:
        if fault.action == "gone":
            status = FakeApiError(410, "Expired", "too old resource version").status()
            await resp.write(orjson.dumps({"type": "ERROR", "object": status}) + b"\n")
            raise ConnectionResetError  # ends the stream the way the server does
        if fault.action == "stall":
            await self._closing.wait()
            raise ConnectionResetError
        if fault.action == "drop":
            await resp.write(b'{"type":"MODIFIED","object":{"kind":')
            _abort(request)
            raise ConnectionResetError

    # -- discovery ---------------------------------------------------------------------------


def _key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _partial(obj: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def _json_response(
    obj: Any,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    content_type: str = "application/json",
) -> web.Response:
    resp = web.Response(body=orjson.dumps(obj), status=status, headers=dict(headers or {}))
    resp.headers["Content-Type"] = content_type
    return resp


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()


async def serve_forever(port: int) -> None:
    api = FakeApiServer()
    await api.start(port)
    print(api.url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await api.close()


def forbidden(resource: str, group: str = "", *, verb: str = "list") -> Obj:
    """The Status the API server answers a `verb` RBAC refuses on `resource` (plural) of
    `group` across namespaces with: a body for `Fault(..., status=403, body=...)`."""
    named = f"{resource}.{group}" if group else resource
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "Forbidden",
        "code": 403,
        "message": f'{named} is forbidden: User "system:serviceaccount:kro:kro" cannot {verb} '
        f'resource "{resource}" in API group "{group}" at the cluster scope',
    }


def unthrottled_client(server: FakeApiServer) -> Client:
    """A real kro.runtime Client on `server` with no rate limit and no retries, so that tests
    count exactly the requests the code under test makes (use with `async with`)."""
    options = ClientOptions(qps=10_000.0, burst=10_000, max_retries=0)
    return Client.from_config(ConnectionConfig(server=server.url), options)
