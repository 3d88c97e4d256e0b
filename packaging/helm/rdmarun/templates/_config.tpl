{{/*
The exporter's configuration. Peers come from the headless Service's SRV
record, so a new node is probed after the next refresh with no change here.
Without a token the responder is off: a responder without one would hand
registered memory to anyone who asks.
*/}}
{{- define "rdmarun.config" -}}
{{- $responder := dict "enabled" false }}
{{- if include "rdmarun.tokenSecret" . }}
{{- $responder = dict "enabled" true "listen" (printf ":%d" (int .Values.responder.port)) "token_file" (printf "%s/token" (include "rdmarun.configDir" .)) }}
{{- if .Values.responder.device }}
{{- $_ := set $responder "device" .Values.responder.device }}
{{- end }}
{{- end }}
{{- $dns := list (dict "name" (include "rdmarun.peersSRV" .) "module" .Values.config.peerModule "refresh" .Values.config.peerRefresh) }}
{{- $targets := dict "dns" $dns "max_probes_per_second" .Values.config.maxProbesPerSecond "jitter" .Values.config.jitter }}
{{- with .Values.config.staticTargets }}
{{- $_ := set $targets "static" . }}
{{- end }}
{{- dict "modules" .Values.config.modules "targets" $targets "responder" $responder | toYaml }}
{{- end }}
