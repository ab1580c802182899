{{/*
Chart name, truncated to 63 characters (the limit of a DNS label and of a label value).
*/}}
{{- define "kro.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name used for every object: fullnameOverride, else "<release>" when the release name already
contains the chart name, else "<release>-<chart>".
*/}}
{{- define "kro.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Value of the helm.sh/chart label.
*/}}
{{- define "kro.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object. The chart and managed-by labels can be left out, for raw manifests.
*/}}
{{- define "kro.labels" -}}
{{ include "kro.selectorLabels" . }}
app.kubernetes.io/version: {{ include "kro.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
{{- if .Values.metadata.includeHelmChart }}
helm.sh/chart: {{ include "kro.chart" . }}
{{- end }}
{{- if .Values.metadata.includeManagedBy }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Labels that select the controller's pods; they must never change between releases.
*/}}
{{- define "kro.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kro.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Name of the ServiceAccount the controller runs as.
*/}}
{{- define "kro.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kro.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image tag: image.tag, else the chart's appVersion.
*/}}
{{- define "kro.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
Port number of a "host:port" bind address (":8079", "0.0.0.0:8079", "[::]:8079" all give 8079).
*/}}
{{- define "kro.bindPort" -}}
{{- splitList ":" . | last }}
{{- end }}

{{/*
The controller's flags as a YAML list, spelled as the controller defines them (reference §1.S).
Booleans carry an explicit value (--leader-elect=true) so that the chart's value, not the flag's
own default, always decides. Integers go through int64: Helm reads numbers as float64, which
would otherwise print large ones as 1e+06.
*/}}
{{- define "kro.controllerArgs" -}}
{{- $c := .Values.config -}}
{{- $args := list -}}
{{- $args = append $args (printf "--metrics-bind-address=%s" (toString $c.metricsBindAddress)) -}}
{{- $args = append $args (printf "--health-probe-bind-address=%s" $c.healthProbeBindAddress) -}}
{{- if .Values.debug.pprof.enabled -}}
{{- $args = append $args (printf "--pprof-bind-address=:%d" (.Values.debug.pprof.port | int64)) -}}
{{- end -}}
{{- $args = append $args (printf "--leader-elect=%t" $c.enableLeaderElection) -}}
{{- with $c.leaderElectionNamespace -}}
{{- $args = append $args (printf "--leader-election-namespace=%s" .) -}}
{{- end -}}
{{- $args = append $args (printf "--leader-election-lease-duration=%s" $c.leaderElectionLeaseDuration) -}}
{{- $args = append $args (printf "--leader-election-renew-deadline=%s" $c.leaderElectionRenewDeadline) -}}
{{- $args = append $args (printf "--leader-election-retry-period=%s" $c.leaderElectionRetryPeriod) -}}
{{- if $c.enableLeaderElection -}}
{{- $args = append $args (printf "--enable-controller-warmup=%t" $c.enableControllerWarmup) -}}
{{- end -}}
{{- if .Values.shards.enabled -}}
{{- $args = append $args "--shards=auto" -}}
{{- end -}}
{{- $args = append $args (printf "--allow-crd-deletion=%t" $c.allowCRDDeletion) -}}
{{- $args = append $args (printf "--graceful-shutdown-timeout=%s" $c.gracefulShutdownTimeout) -}}
{{- $args = append $args (printf "--resource-graph-definition-concurrent-reconciles=%d" ($c.resourceGraphDefinitionConcurrentReconciles | int64)) -}}
{{- $args = append $args (printf "--graph-revision-concurrent-reconciles=%d" ($c.graphRevisionConcurrentReconciles | int64)) -}}
{{- $args = append $args (printf "--graph-concurrent-reconciles=%d" ($c.graphConcurrentReconciles | int64)) -}}
{{- /* kro's own identity, which no Graph may impersonate (required with GraphKind). */ -}}
{{- $args = append $args (printf "--controller-namespace=%s" .Release.Namespace) -}}
{{- $args = append $args (printf "--controller-service-account=%s" (include "kro.serviceAccountName" .)) -}}
{{- /* Member clusters (MultiCluster gate only: with it off none of these is passed). */ -}}
{{- if include "kro.multiCluster" . -}}
{{- $m := $c.multicluster -}}
{{- $args = append $args (printf "--enable-multicluster=%t" $m.enabled) -}}
{{- $args = append $args (printf "--cluster-secrets-namespace=%s" (include "kro.clusterSecretsNamespace" .)) -}}
{{- $args = append $args (printf "--cluster-secrets-label=%s" $m.clusterSecretsLabel) -}}
{{- $args = append $args (printf "--cluster-secrets-key=%s" $m.clusterSecretsKey) -}}
{{- $args = append $args (printf "--local-cluster-name=%s" $m.localClusterName) -}}
{{- end -}}
{{- $args = append $args (printf "--dynamic-controller-concurrent-reconciles=%d" ($c.dynamicControllerConcurrentReconciles | int64)) -}}
{{- $args = append $args (printf "--dynamic-controller-rate-limiter-min-delay=%s" $c.dynamicControllerRateLimiterMinDelay) -}}
{{- $args = append $args (printf "--dynamic-controller-rate-limiter-max-delay=%s" $c.dynamicControllerRateLimiterMaxDelay) -}}
{{- $args = append $args (printf "--dynamic-controller-rate-limiter-rate-limit=%d" ($c.dynamicControllerRateLimiterRateLimit | int64)) -}}
{{- $args = append $args (printf "--dynamic-controller-rate-limiter-burst-limit=%d" ($c.dynamicControllerRateLimiterBurstLimit | int64)) -}}
{{- $args = append $args (printf "--instance-requeue-interval=%s" (toString $c.instance.requeueInterval)) -}}
{{- $args = append $args (printf "--instance-requeue-max-interval=%s" $c.instance.requeueMaxInterval) -}}
{{- $args = append $args (printf "--apply-concurrency=%d" ($c.applyConcurrency | int64)) -}}
{{- $args = append $args (printf "--skip-unchanged=%t" $c.skipUnchanged) -}}
{{- $args = append $args (printf "--cel-cost-limit=%d" ($c.celCostLimit | int64)) -}}
{{- $args = append $args (printf "--dynamic-controller-default-resync-period=%d" ($c.dynamicControllerDefaultResyncPeriod | int64)) -}}
{{- $args = append $args (printf "--dynamic-controller-default-queue-max-retries=%d" ($c.dynamicControllerDefaultQueueMaxRetries | int64)) -}}
{{- $qps := $c.clientQps -}}
{{- if eq (float64 $qps) (float64 (int64 $qps)) -}}
{{- $qps = int64 $qps -}}
{{- end -}}
{{- $args = append $args (printf "--client-qps=%v" $qps) -}}
{{- $args = append $args (printf "--client-burst=%d" ($c.clientBurst | int64)) -}}
{{- $args = append $args (printf "--rgd-max-collection-size=%d" ($c.rgd.maxCollectionSize | int64)) -}}
{{- $args = append $args (printf "--rgd-max-collection-dimension-size=%d" ($c.rgd.maxCollectionDimensionSize | int64)) -}}
{{- $args = append $args (printf "--rgd-max-graph-revisions=%d" ($c.rgd.maxGraphRevisions | int64)) -}}
{{- $args = append $args (printf "--rgd-progress-requeue-delay=%s" $c.resourceGraphDefinitionProgressRequeueDelay) -}}
{{- with $c.featureGates -}}
{{- $gates := list -}}
{{- range $name, $enabled := . -}}
{{- $gates = append $gates (printf "%s=%t" $name $enabled) -}}
{{- end -}}
{{- $args = append $args (printf "--feature-gates=%s" (join "," $gates)) -}}
{{- end -}}
{{- $args = append $args (printf "--zap-log-level=%s" (toString $c.logLevel)) -}}
{{- $args = append $args (printf "--zap-encoder=%s" $c.logEncoder) -}}
{{- $args = append $args (printf "--zap-devel=%t" $c.development) -}}
{{- toYaml $args -}}
{{- end }}

{{/*
Whole seconds in a duration such as "60s", "1m30s" or "500ms" (rounded up), for fields that
need an integer, like terminationGracePeriodSeconds.
*/}}
{{- define "kro.durationSeconds" -}}
{{- $ms := 0 -}}
{{- range regexFindAll "[0-9]+(ms|h|m|s)" (toString .) -1 -}}
{{- $amount := regexFind "^[0-9]+" . | int64 -}}
{{- $unit := regexReplaceAll "^[0-9]+" . "" -}}
{{- $scale := get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) $unit -}}
{{- $ms = add $ms (mul $amount $scale) -}}
{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- end }}

{{/*
Whether the GraphKind feature gate is on (config.featureGates.GraphKind): "true" or "".
*/}}
{{- define "kro.graphKind" -}}
{{- if (.Values.config.featureGates | default dict).GraphKind -}}true{{- end -}}
{{- end }}

{{/*
Whether the MultiCluster feature gate is on (config.featureGates.MultiCluster): "true" or "".
*/}}
{{- define "kro.multiCluster" -}}
{{- if (.Values.config.featureGates | default dict).MultiCluster -}}true{{- end -}}
{{- end }}

{{/*
Namespace of the member clusters' kubeconfig Secrets: config.multicluster.clusterSecretsNamespace,
else the release's (the controller's own default, --controller-namespace, is the same). The
chart passes it explicitly so that the flag and the Role granting the Secrets always agree.
*/}}
{{- define "kro.clusterSecretsNamespace" -}}
{{- .Values.config.multicluster.clusterSecretsNamespace | default .Release.Namespace -}}
{{- end }}

{{/*
Checks across values that values.schema.json cannot express; rendered by deployment.yaml.
*/}}
{{- define "kro.validateValues" -}}
{{- $metricsAddress := toString .Values.config.metricsBindAddress -}}
{{- if and (ne $metricsAddress "0") (ne (include "kro.bindPort" $metricsAddress) (toString (.Values.deployment.containerPort | int64))) -}}
{{- fail (printf "deployment.containerPort (%d) must be the port of config.metricsBindAddress (%s)" (.Values.deployment.containerPort | int64) $metricsAddress) -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.create) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.create=true: the ServiceMonitor scrapes that Service" -}}
{{- end -}}
{{- if and .Values.debug.pprof.service.enabled (not .Values.debug.pprof.enabled) -}}
{{- fail "debug.pprof.service.enabled needs debug.pprof.enabled=true: the Service fronts the profiling port" -}}
{{- end -}}
{{- if and .Values.config.enableControllerWarmup (not .Values.config.enableLeaderElection) -}}
{{- fail "config.enableControllerWarmup needs config.enableLeaderElection=true: warm-up starts watches before leadership is won" -}}
{{- end -}}
{{- if and .Values.config.multicluster.enabled (not (include "kro.multiCluster" .)) -}}
{{- fail "config.multicluster.enabled needs config.featureGates.MultiCluster=true: the controller refuses --enable-multicluster without the gate" -}}
{{- end -}}
{{- if and (gt (.Values.deployment.replicaCount | int64) 1) (not .Values.config.enableLeaderElection) -}}
{{- fail "deployment.replicaCount > 1 needs config.enableLeaderElection=true, or the replicas would reconcile the same objects at once" -}}
{{- end -}}
{{- end }}
