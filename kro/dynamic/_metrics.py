"""kro.dynamic._metrics: upstream kro's dynamic-controller metrics (reference §1.R, rows 13-29).

Names, types and label names copy upstream exactly. Label values do not quite: upstream writes
a resource in two formats depending on the metric (`group/version/resource` on the reconcile,
requeue and error families, Go's `GroupVersionResource.String()` on the others), so one
dashboard variable could not select a kind across families. Here every `gvr` and `parent_gvr`
label, in this package and in kro.controllers, is Go's `GroupVersionResource.String()`
(`apps/v1, Resource=deployments`, core `/v1, Resource=configmaps`), the form most of upstream's
families use: `gvr_label`. Everything is recorded through the injected MetricsProvider.

Series of a GVR go when kro stops using it, because parent kinds come and go with their RGDs:
a deregistered parent's (`forget_parent`), a GVR no parent watches any more
(`forget_routes`), an informer the pool no longer holds (`forget_informer`). The per-GVR
gauges of kro.dynamic.watches are removed by it when they fall to zero.
"""

from __future__ import annotations

from typing import Final

from kro.runtime.gvk import GVR
from kro.runtime.metrics import MetricsProvider, Removable

RECONCILE_BUCKETS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

PARENT: Final = "parent"  # the `type` label of the handler families


def gvr_label(gvr: GVR) -> str:
    """Go's GVR.String(): `apps/v1, Resource=deployments`, core `/v1, Resource=configmaps`."""
    return gvr.label


gvr_string = gvr_label
"""The label of a resource on the informer and routing families (see `gvr_label`)."""

gvr_key = gvr_label
"""The label of a resource on the reconcile, requeue and error families, and the `gvr` field of
this package's log lines: the same format as every other family (see the module docstring)."""


class DynamicMetrics:
    """The families, created once per provider (providers return the same metric per name)."""

    def __init__(self, provider: MetricsProvider) -> None:
        gvr = ("gvr",)
        kind = ("type",)
        self.reconcile_total = provider.counter(
            "dynamic_controller_reconcile_total", "Total number of reconciliations per GVR", gvr
        )
        self.requeue_total = provider.counter(
            "dynamic_controller_requeue_total",
            "Total number of requeues per GVR and type",
            ("gvr", "type"),
        )
        self.reconcile_duration = provider.histogram(
            "dynamic_controller_reconcile_duration_seconds",
            "Duration of reconciliations per GVR",
            gvr,
            RECONCILE_BUCKETS,
        )
        self.gvr_count = provider.gauge(
            "dynamic_controller_gvr_count", "Number of GVRs registered with the controller"
        )
        self.queue_length = provider.gauge(
            "dynamic_controller_queue_length", "Current length of the dynamic controller queue"
        )
        self.handler_count = provider.gauge(
            "dynamic_controller_handler_count_total", "Number of registered handlers by type", kind
        )
        self.handler_attach = provider.counter(
            "dynamic_controller_handler_attach_total",
            "Total number of informer event handlers attached by type",
            kind,
        )
        self.handler_detach = provider.counter(
            "dynamic_controller_handler_detach_total",
            "Total number of informer event handlers detached by type",
            kind,
        )
        self.handler_errors = provider.counter(
            "dynamic_controller_handler_errors_total", "Total number of handler errors per GVR", gvr
        )
        self.panics = provider.counter(
            "dynamic_controller_reconcile_panics_total",
            "Total number of recovered handler panics per GVR",
            gvr,
        )
        self.informer_sync_duration = provider.histogram(
            "dynamic_controller_informer_sync_duration_seconds",
            "Time taken for an informer to complete its initial sync",
            gvr,
        )
        self.informer_events = provider.counter(
            "dynamic_controller_informer_events_total",
            "Total number of parent informer events enqueued by GVR and event type",
            ("gvr", "event_type"),
        )
        self.watch_count = provider.gauge(
            "dynamic_controller_watch_count", "Number of active informers"
        )
        self.instance_watch_count = provider.gauge(
            "dynamic_controller_instance_watch_count",
            "Number of instances with watch state per parent GVR",
            ("parent_gvr",),
        )
        self.watch_request_count = provider.gauge(
            "dynamic_controller_watch_request_count",
            "Number of active watch requests per watched GVR and type",
            ("gvr", "type"),
        )
        self.route_total = provider.counter(
            "dynamic_controller_route_total", "Total number of informer events routed", gvr
        )
        self.route_match_total = provider.counter(
            "dynamic_controller_route_match_total",
            "Total number of routed events that matched at least one instance",
            gvr,
        )

    def forget_parent(self, gvr: GVR) -> None:
        """Drop the series of a deregistered parent kind: its reconciles, requeues, handler
        errors and informer events (whatever their other labels)."""
        label = gvr_label(gvr)
        family: Removable
        for family in (
            self.reconcile_total,
            self.requeue_total,
            self.reconcile_duration,
            self.handler_errors,
            self.panics,
            self.informer_events,
        ):
            family.remove(gvr=label)

    def forget_routes(self, gvr: GVR) -> None:
        """Drop the routing series of a GVR that no parent watches any more."""
        label = gvr_label(gvr)
        self.route_total.remove(gvr=label)
        self.route_match_total.remove(gvr=label)

    def forget_informer(self, gvr: GVR) -> None:
        """Drop the sync duration of a GVR whose informer nobody holds any more."""
        self.informer_sync_duration.remove(gvr=gvr_label(gvr))
