{{/*
The fleet run: its scenario and the Job that runs it, shared by the Job
and the CronJob.
*/}}

{{/* Where the Job finds the scenario and its token, and writes reports. */}}
{{- define "rdmarun.fleetScenarioDir" -}}/scenario{{- end }}
{{- define "rdmarun.fleetResultsDir" -}}/results{{- end }}

{{/*
The fleet scenario (spec: runner/doc.go). The hosts are whatever the
headless Service's name resolves to when the Job starts, so a node added
since the install is tested without a change here; the token file sits
beside the scenario, projected from the Secret the responders use.
*/}}
{{- define "rdmarun.fleetScenario" -}}
{{- $f := .Values.fleetJob -}}
name: {{ include "rdmarun.fleetName" . }}
description: the nodes that run {{ include "rdmarun.fullname" . }}, tested through their responders
hosts: {dns: {{ include "rdmarun.peersFQDN" . }}, port: {{ .Values.responder.port }}}
{{- with $f.devices }}
devices: {{ toJson . }}
{{- end }}
pattern: {{ $f.pattern }}
{{- if $f.bothDirections }}
both_directions: true
{{- end }}
parallel: {{ $f.parallel }}
confirm: {{ $f.confirm }}
token_file: token
cases:
{{ toYaml $f.cases }}
{{- end }}

{{/* The spec of the Job, as is and as a CronJob's jobTemplate. */}}
{{- define "rdmarun.fleetJobSpec" -}}
{{- $f := .Values.fleetJob -}}
{{- $scenarioDir := include "rdmarun.fleetScenarioDir" . -}}
{{- $resultsDir := include "rdmarun.fleetResultsDir" . -}}
# One attempt: a second would test a fabric the first already judged,
# and a failed threshold is the answer, not a fault to retry.
backoffLimit: 0
activeDeadlineSeconds: {{ $f.activeDeadlineSeconds }}
ttlSecondsAfterFinished: {{ $f.ttlSecondsAfterFinished }}
template:
  metadata:
    annotations:
      checksum/scenario: {{ include "rdmarun.fleetScenario" . | sha256sum }}
      {{- with $f.podAnnotations }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    labels:
      {{- include "rdmarun.fleetLabels" . | nindent 6 }}
  spec:
    restartPolicy: Never
    # The coordinator talks to the responders only, never to the API
    # server, and needs no device: it asks each pair's first node to test
    # the second.
    automountServiceAccountToken: false
    enableServiceLinks: false
    {{- with .Values.imagePullSecrets }}
    imagePullSecrets:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      # The image's rdmarun user; fsGroup makes the token and the results
      # volume readable and writable by it.
      runAsUser: 999
      runAsGroup: 999
      runAsNonRoot: true
      fsGroup: 999
      seccompProfile:
        type: RuntimeDefault
    containers:
      - name: fleet
        image: {{ include "rdmarun.image" . }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        command: [/usr/bin/rdmarun]
        # The text report, matrices and suspects go to the log.
        args:
          - run
          - {{ $scenarioDir }}/fleet.yaml
          - --json={{ $resultsDir }}/report.json
          - --junit={{ $resultsDir }}/junit.xml
          - --html={{ $resultsDir }}/report.html
          {{- with $f.waitForResponders }}
          - --wait-for-responders={{ . }}
          {{- end }}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          runAsNonRoot: true
          capabilities:
            drop: [ALL]
          seccompProfile:
            type: RuntimeDefault
        resources:
          {{- toYaml $f.resources | nindent 10 }}
        volumeMounts:
          - name: scenario
            mountPath: {{ $scenarioDir }}
            readOnly: true
          - name: results
            mountPath: {{ $resultsDir }}
    volumes:
      - name: scenario
        projected:
          sources:
            - configMap:
                name: {{ include "rdmarun.fleetName" . }}
                items:
                  - key: fleet.yaml
                    path: fleet.yaml
            - secret:
                name: {{ include "rdmarun.tokenSecret" . }}
                items:
                  - key: {{ .Values.token.secretKey }}
                    path: token
                    # Group-readable: fsGroup, not the user, owns it.
                    mode: 0440
      - name: results
        {{- if $f.results }}
        {{- toYaml $f.results | nindent 8 }}
        {{- else }}
        emptyDir: {}
        {{- end }}
    {{- with $f.nodeSelector }}
    nodeSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $f.affinity }}
    affinity:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $f.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
