"""kro.testing.fakeapi: an in-process fake Kubernetes API server for unit tests.

A test of an operator needs an API server; a real one (kro.testing's control plane) costs
seconds to start and cannot be made to fail on cue. This one is an aiohttp application on
127.0.0.1 in the test's own event loop: it starts in milliseconds, answers a real
`kro.runtime.Client` over HTTP (so the client, informers, manager and builder run unmodified),
records every request, and injects the failures a real server will not produce on demand.

    from kro.runtime import Client
    from kro.runtime.config import ConnectionConfig
    from kro.testing.fakeapi import FakeApiServer, Fault

    async def test_something() -> None:
        async with FakeApiServer() as api:
            api.seed(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
            async with Client.from_config(ConnectionConfig(server=api.url)) as client:
                ...
            assert api.object(CONFIGMAPS, "a", "ns")["metadata"]["labels"] == {...}

What it serves, for the kinds it is given (`DEFAULT_RESOURCES`: Namespaces, ConfigMaps,
Secrets, ServiceAccounts, Pods, core/v1 Events, Deployments, Leases, CRDs; `add_resource` or a
created CRD adds more):

* get, list (limit and continue, label and field selectors, resourceVersion, the
  PartialObjectMetadataList form), watch (from a resourceVersion, replaying its event log,
  bookmarks, timeoutSeconds, 410 Gone once `compact()`ed);
* create, update (and the status subresource), patch (merge, JSON, strategic treated as merge,
  server-side apply with field managers and conflicts), delete (finalizers, deletionTimestamp,
  preconditions), with uid, generation and one global resourceVersion;
* aggregated (v2) and legacy discovery, /version, /readyz; a bearer-token check if given
  `tokens`;
* faults (`inject(Fault(...))`): any status (429 with Retry-After, 500, 403 with `forbidden()`),
  410 on a watch, a dropped connection (mid-event for watches), a stalled response.

Its limits, which a real control plane (kro.testing's pytest plugin) does not have:

* no admission at all: no schema validation or defaulting, no CEL rules, no RBAC (every caller
  may do everything), no webhooks, no namespace lifecycle (objects need no Namespace);
* no controllers: nothing garbage-collects by ownerReferences, no Deployment gets a ReplicaSet
  or a status, nothing publishes kube-root-ca.crt; what a test needs it seeds itself;
* server-side apply is approximated (leaf paths owned per manager, lists atomic,
  metadata.finalizers a set), not structured-merge-diff; strategic merge is a merge patch;
* one resourceVersion counter and an in-memory log (no etcd, no compaction unless asked), one
  version per resource (no conversion), label and field selectors of the simple forms only.

So it proves what the operator asks of the API and how it copes with failures; whether the
real server accepts it is for an e2e test (kro.testing.operator runs the same operator against
the local control plane).

`python -m kro.testing.fakeapi [--port N]` serves one from its own process (benchmarks).
"""

from __future__ import annotations

from .discovery import parse_selector, selector_matches
from .server import FakeApiServer, Fault, RecordedRequest, forbidden, unthrottled_client
from .state import DEFAULT_RESOURCES, FakeApiError, FakeResource, Obj

__all__ = [
    "DEFAULT_RESOURCES",
    "FakeApiError",
    "FakeApiServer",
    "FakeResource",
    "Fault",
    "Obj",
    "RecordedRequest",
    "forbidden",
    "parse_selector",
    "selector_matches",
    "unthrottled_client",
]
