{{/* Names are cut to 63 characters, the limit of a DNS label. */}}
{{- define "rdmarun.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rdmarun.fullname" -}}
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

{{/* The headless Service's name; "-peers" must fit in the 63. */}}
{{- define "rdmarun.peersService" -}}
{{- printf "%s-peers" (include "rdmarun.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{/* The SRV name that lists every node's responder. */}}
{{- define "rdmarun.peersSRV" -}}
{{- printf "_%s._tcp.%s.%s.svc.%s" .Values.responder.portName (include "rdmarun.peersService" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{- define "rdmarun.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rdmarun.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rdmarun.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rdmarun.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "rdmarun.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if eq $tag "latest" }}
{{- fail "image.tag: \"latest\" is refused; pin a release" }}
{{- end }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding the token, or "" when there is none. */}}
{{- define "rdmarun.tokenSecret" -}}
{{- if .Values.token.existingSecret }}
{{- .Values.token.existingSecret }}
{{- else if .Values.token.value }}
{{- printf "%s-token" (include "rdmarun.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}
{{- end }}

{{/* Where the exporter finds its configuration and token. */}}
{{- define "rdmarun.configDir" -}}/etc/rdmarun{{- end }}

{{/*
The fleet run's objects. A CronJob name may have 52 characters (its Jobs
get 11 more); a Job's is its pods' job-name label, so 63, and carries the
release revision: a Job's pod template cannot change, so each install or
upgrade makes a new Job instead of patching the last one.
*/}}
{{- define "rdmarun.fleetName" -}}
{{- printf "%s-fleet" (include "rdmarun.fullname" . | trunc 46 | trimSuffix "-") }}
{{- end }}

{{- define "rdmarun.fleetJobName" -}}
{{- printf "%s-%d" (include "rdmarun.fleetName" . | trunc 52 | trimSuffix "-") (int .Release.Revision) }}
{{- end }}

{{/*
The fleet Job's pods must not carry the DaemonSet's selector labels: the
headless Service would list the coordinator as a host, and the DaemonSet
would claim its pods.
*/}}
{{- define "rdmarun.fleetSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-fleet" (include "rdmarun.name" . | trunc 57 | trimSuffix "-") }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: fleet
{{- end }}

{{- define "rdmarun.fleetLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rdmarun.fleetSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The headless Service's A/AAAA name: every exporter node's address. */}}
{{- define "rdmarun.peersFQDN" -}}
{{- printf "%s.%s.svc.%s" (include "rdmarun.peersService" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}
