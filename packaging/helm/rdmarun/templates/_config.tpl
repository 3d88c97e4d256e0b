{{/*
The exporter's configuration. Peers come from the headless Service's SRV
record, so a new node is probed after the next refresh with no change here.
Without a token the exporter turns its responder off at start and logs
how to make one; the chart never allows an unauthenticated responder.
*/}}
{{- define "rdmarun.config" -}}
{{- $responder := dict "enabled" true "listen" (printf ":%d" (int .Values.responder.port)) "cm_port" (int .Values.responder.cmPort) "allow_unauthenticated" false }}
{{- if include "rdmarun.tokenSecret" . }}
{{- $_ := set $responder "token_file" (printf "%s/token" (include "rdmarun.configDir" .)) }}
{{- end }}
{{- with .Values.responder.device }}
{{- $_ := set $responder "device" . }}
{{- end }}
{{- $dns := list (dict "name" (include "rdmarun.peersSRV" .) "module" .Values.config.peerModule "refresh" .Values.config.peerRefresh) }}
{{- $targets := dict "dns" $dns "max_probes_per_second" .Values.config.maxProbesPerSecond "jitter" .Values.config.jitter }}
{{- with .Values.config.staticTargets }}
{{- $_ := set $targets "static" . }}
{{- end }}
{{- $config := dict "modules" .Values.config.modules "targets" $targets "responder" $responder }}
{{- with .Values.config.mesh }}
{{- $_ := set $config "mesh" (dict "max_targets" (int .maxTargets) "rotate" .rotate "max_probes_per_second" .maxProbesPerSecond) }}
{{- end }}
{{- $config | toYaml }}
{{- end }}
