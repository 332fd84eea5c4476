{{/*
Names. A release named capwright (or one that contains the chart's name)
is named capwright, so the default install names its objects as
manifests/default does: capwright-manager and capwright-artifacts.
*/}}

{{- define "capwright.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "capwright.fullname" -}}
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
The manager's Deployment, ServiceAccount, ClusterRole and
ClusterRoleBinding. Truncated before the suffix, so the suffix survives.
*/}}
{{- define "capwright.managerName" -}}
{{- printf "%s-manager" (include "capwright.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{/*
The Service (and its NetworkPolicy) kustomize-controller fetches the
artifacts of providers' additional manifests from.
*/}}
{{- define "capwright.artifactsName" -}}
{{- printf "%s-artifacts" (include "capwright.fullname" . | trunc 53 | trimSuffix "-") }}
{{- end }}

{{/*
The Service Prometheus scrapes the manager's metrics through.
*/}}
{{- define "capwright.metricsName" -}}
{{- printf "%s-metrics" (include "capwright.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{/*
The labels the ServiceMonitor selects the metrics Service by: the
manager's selector labels and capwright.io/metrics, which the artifact
Service lacks.
*/}}
{{- define "capwright.metricsSelectorLabels" -}}
{{ include "capwright.selectorLabels" . }}
capwright.io/metrics: "true"
{{- end }}

{{- define "capwright.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "capwright.selectorLabels" -}}
app.kubernetes.io/name: {{ include "capwright.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "capwright.labels" -}}
helm.sh/chart: {{ include "capwright.chart" . }}
{{ include "capwright.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The manager image: repository@digest when a digest is set (as releases
set it), else repository:tag, the tag defaulting to the appVersion.
*/}}
{{- define "capwright.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}
