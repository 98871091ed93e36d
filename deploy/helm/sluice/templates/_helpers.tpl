{{/* The chart's name, or nameOverride. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: fullnameOverride, else RELEASE-NAME (RELEASE alone when it already holds the name). */}}
{{- define "sluice.fullname" -}}
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

{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sluice.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "sluice.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret the pods read their variables from: existingSecret, or the chart's own. */}}
{{- define "sluice.secretName" -}}
{{- default (include "sluice.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* Whether the configuration needs the store URLs written in at pod start (an init container). */}}
{{- define "sluice.rendersStores" -}}
{{- if or .Values.store.redis.enabled .Values.store.postgres.enabled }}true{{ end }}
{{- end }}

{{/* The variables the init container writes into the configuration, in the order it takes them. */}}
{{- define "sluice.storeVariables" -}}
{{- $names := list }}
{{- if .Values.store.redis.enabled }}{{ $names = append $names "SLUICE_REDIS_URL" }}{{ end }}
{{- if .Values.store.postgres.enabled }}{{ $names = append $names "SLUICE_POSTGRES_URL" }}{{ end }}
{{- join " " $names }}
{{- end }}

{{/* Seconds from the start of a pod's deletion to its end: preStop sleep, the drain, the rest of the shutdown. */}}
{{- define "sluice.terminationGracePeriodSeconds" -}}
{{- add (int .Values.drain.preStopSleepSeconds) (int .Values.drain.seconds) (int .Values.drain.shutdownMarginSeconds) }}
{{- end }}

{{/*
The gateway's configuration as the ConfigMap holds it: .Values.config (copied, never changed in place) with the
listener, the drain and the stores' placeholders set by the chart. Fails on the keys the chart owns.
*/}}
{{- define "sluice.config" -}}
{{- $config := deepCopy (.Values.config | default dict) }}
{{- $server := get $config "server" | default dict }}
{{- range $key := list "host" "port" "drainMs" }}
{{- if hasKey $server $key }}
{{- fail (printf "config.server.%s is set by the chart (listenHost, containerPort, drain.seconds): remove it from config" $key) }}
{{- end }}
{{- end }}
{{- $_ := set $server "host" .Values.listenHost }}
{{- $_ = set $server "port" (int .Values.containerPort) }}
{{- $_ = set $server "drainMs" (mul (int .Values.drain.seconds) 1000) }}
{{- $_ = set $config "server" $server }}
{{- $store := get $config "store" | default dict }}
{{- range $name := list "redis" "postgres" }}
{{- if hasKey (get $store $name | default dict) "url" }}
{{- fail (printf "config.store.%s.url would put a password in the ConfigMap: set store.%s.enabled and secrets.%sUrl (or existingSecret) instead" $name $name $name) }}
{{- end }}
{{- end }}
{{- if .Values.store.redis.enabled }}
{{- $redis := get $store "redis" | default dict }}
{{- $_ = set $redis "url" "${SLUICE_REDIS_URL}" }}
{{- if and .Values.store.redis.setReplicas (not (hasKey $redis "replicas")) }}
{{- $_ = set $redis "replicas" (int (ternary .Values.autoscaling.maxReplicas .Values.replicaCount .Values.autoscaling.enabled)) }}
{{- end }}
{{- $_ = set $store "redis" $redis }}
{{- end }}
{{- if .Values.store.postgres.enabled }}
{{- $postgres := get $store "postgres" | default dict }}
{{- if hasKey $postgres "dataDir" }}
{{- fail "config.store.postgres.dataDir and store.postgres.enabled exclude each other: the gateway takes a url or a dataDir" }}
{{- end }}
{{- $_ = set $postgres "url" "${SLUICE_POSTGRES_URL}" }}
{{- $_ = set $store "postgres" $postgres }}
{{- end }}
{{- if $store }}
{{- $_ = set $config "store" $store }}
{{- end }}
{{- /* A listener of its own for /metrics binds to 127.0.0.1 unless told: Prometheus must reach it. */}}
{{- $telemetry := get $config "telemetry" | default dict }}
{{- $metrics := get $telemetry "metrics" | default dict }}
{{- if and (hasKey $metrics "port") (not (hasKey $metrics "host")) }}
{{- $_ = set $metrics "host" .Values.listenHost }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* The metrics port when config.telemetry.metrics.port gives /metrics a listener of its own; empty otherwise. */}}
{{- define "sluice.metricsPort" -}}
{{- $metrics := dig "telemetry" "metrics" dict (.Values.config | default dict) }}
{{- with $metrics.port }}{{ int . }}{{ end }}
{{- end }}

{{/* https when config.server.tls is set: the one port then speaks TLS only. */}}
{{- define "sluice.scheme" -}}
{{- if dig "server" "tls" "" (.Values.config | default dict) }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
