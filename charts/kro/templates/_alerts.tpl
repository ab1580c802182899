{{/*
Label matchers that pick kro's own series out of everything Prometheus scrapes: the job the
chart's ServiceMonitor creates (named after the metrics Service), unless prometheusRule.selector
says otherwise. workqueue_depth and friends are exported by every controller-runtime
controller, so alerts without it would fire for other controllers too.
*/}}
{{- define "kro.alertSelector" -}}
{{- .Values.prometheusRule.selector | default (printf "job=%q, namespace=%q" (printf "%s-metrics" (include "kro.fullname" .)) .Release.Namespace) }}
{{- end }}

{{/*
Every alert of the PrometheusRule, as a YAML list; prometheusrule.yaml drops the disabled ones
and adds prometheusRule.additionalRuleLabels. Metric names are the ones kro exports
(tests/charts/test_dashboards.py checks them and runs promtool on the result).
*/}}
{{- define "kro.alertRules" -}}
{{- $s := include "kro.alertSelector" . -}}
{{- $t := .Values.prometheusRule.thresholds -}}
- alert: KroDown
  expr: absent(process_start_time_seconds{ {{- $s -}} })
  for: 15m
  labels:
    severity: critical
  annotations:
    summary: kro's metrics are gone
    description: >-
      Prometheus has scraped no kro controller ({{ $s }}) for 15 minutes: the controller is
      down, or its metrics are not scraped (metrics.service.create and
      metrics.serviceMonitor.enabled). Nothing reconciles ResourceGraphDefinitions or their
      instances meanwhile.
- alert: KroNoLeader
  expr: max by (name) (leader_election_master_status{ {{- $s -}} }) < 1
  for: 5m
  labels:
    severity: critical
  annotations:
    summary: No kro replica holds the leader-election Lease
    description: >-
      No replica has led for 5 minutes (Lease {{`{{ $labels.name }}`}}), so nothing reconciles.
      The controller log says why it cannot acquire or renew the Lease.
- alert: KroLeaderChanges
  expr: >-
    (count by (name) (max_over_time(leader_election_master_status{ {{- $s -}} }[1h]) == 1) > 2)
    or
    (sum by (name) (changes(leader_election_master_status{ {{- $s -}} }[1h])) > 4)
  labels:
    severity: warning
  annotations:
    summary: kro's leadership keeps changing
    description: >-
      Leadership of the Lease {{`{{ $labels.name }}`}} changed hands more than twice in an hour.
      Each change restarts every watch and requeues every object; look for restarting pods
      (memory limits) or Lease renewals that miss their deadline (a slow API server).
- alert: KroReconcileErrors
  expr: sum by (controller) (rate(controller_runtime_reconcile_errors_total{ {{- $s -}} }[5m])) > 0
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: kro's {{`{{ $labels.controller }}`}} controller keeps failing
    description: >-
      Reconciles of the {{`{{ $labels.controller }}`}} controller have failed for 15 minutes.
      The objects concerned say why in their conditions and Warning Events; the controller
      logs one warning per cause.
- alert: KroRGDFailures
  expr: sum by (rgd, reason) (rate(rgd_errors_total{ {{- $s -}} }[5m])) > 0
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: ResourceGraphDefinition {{`{{ $labels.rgd }}`}} keeps failing ({{`{{ $labels.reason }}`}})
    description: >-
      kro cannot serve the RGD {{`{{ $labels.rgd }}`}}: {{`{{ $labels.reason }}`}}. Its
      conditions and Warning Events say what to fix
      (kubectl describe resourcegraphdefinition {{`{{ $labels.rgd }}`}}).
- alert: KroInstanceFailures
  expr: sum by (rgd, reason) (rate(instance_errors_total{ {{- $s -}} }[5m])) > 0
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: Instances of {{`{{ $labels.rgd }}`}} keep failing ({{`{{ $labels.reason }}`}})
    description: >-
      Instances of the RGD {{`{{ $labels.rgd }}`}} have failed for 15 minutes with
      {{`{{ $labels.reason }}`}}, for example a child the API server refuses (422, 403).
      The instances' conditions and Warning Events name the resource and the error.
- alert: KroInstancesInError
  expr: sum by (rgd) (instances_by_state{ {{- $s -}}, state="ERROR"}) > 0
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: "{{`{{ $value }}`}} instances of {{`{{ $labels.rgd }}`}} are in ERROR"
    description: >-
      {{`{{ $value }}`}} instances of the RGD {{`{{ $labels.rgd }}`}} have had
      status.state ERROR for 15 minutes. Their conditions say why.
- alert: KroFieldConflictYielded
  expr: sum by (gvr, manager) (increase(instance_field_conflicts_total{ {{- $s -}}, outcome="yielded"}[30m])) > 0
  labels:
    severity: warning
  annotations:
    summary: kro yielded fields of {{`{{ $labels.gvr }}`}} to {{`{{ $labels.manager }}`}}
    description: >-
      The field manager {{`{{ $labels.manager }}`}} kept changing fields that kro applies on
      children of {{`{{ $labels.gvr }}`}} instances (a fight loop), so kro stopped applying
      them (FieldConflict condition on the instance). Make one of the two stop managing those
      fields; docs/troubleshooting.md explains how.
- alert: KroWorkQueueDepthHigh
  expr: sum by (name) (workqueue_depth{ {{- $s -}} }) > {{ $t.workQueueDepth | int64 }}
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: kro's work queue {{`{{ $labels.name }}`}} holds {{`{{ $value }}`}} items
    description: >-
      More than {{ $t.workQueueDepth | int64 }} items have waited in {{`{{ $labels.name }}`}}
      for 15 minutes: kro is not keeping up. More workers
      (config.dynamicControllerConcurrentReconciles), a higher client QPS, or fewer failing
      objects (retries) help.
- alert: KroWorkQueueLatencyHigh
  expr: histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{ {{- $s -}} }[5m]))) > {{ $t.workQueueLatencySeconds }}
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: Items wait long in kro's work queue {{`{{ $labels.name }}`}}
    description: >-
      The 99th percentile of the time an item waits in {{`{{ $labels.name }}`}} before a worker
      takes it has been above {{ $t.workQueueLatencySeconds }} s for 15 minutes, so changes take
      that long to be acted on.
- alert: KroInstanceReconcileSlow
  expr: histogram_quantile(0.99, sum by (gvr, le) (rate(instance_reconcile_duration_seconds_bucket{ {{- $s -}} }[5m]))) > {{ $t.instanceReconcileSeconds }}
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: Reconciles of {{`{{ $labels.gvr }}`}} instances are slow
    description: >-
      The 99th percentile of one reconcile of {{`{{ $labels.gvr }}`}} instances has been above
      {{ $t.instanceReconcileSeconds }} s for 15 minutes: a slow API server, client-side
      throttling (rest_client_rate_limiter_duration_seconds), or very large graphs.
{{- end }}
