{{/* Names and labels, as `helm create` lays them out. */}}
{{- define "gpuscope.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpuscope.fullname" -}}
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

{{- define "gpuscope.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpuscope.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpuscope.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gpuscope.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: gpu-metrics-agent
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gpuscope.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpuscope.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Features and what they need. Each helper prints "true" or nothing, so `if include ...` reads as a test.
*/}}
{{- define "gpuscope.apiLookups" -}}
{{- if and .Values.kubernetes.enabled (ne .Values.kubernetes.apiServer "off") }}true{{- end }}
{{- end }}

{{- define "gpuscope.pushSinks" -}}
{{- $s := .Values.sinks }}
{{- if or $s.loki.url $s.otlp.url $s.otlp.metricsUrl $s.otlp.tracesUrl $s.remoteWrite.urls }}true{{- end }}
{{- end }}

{{- define "gpuscope.eventSources" -}}
{{- if or (ne .Values.events.kernelLog "off") .Values.events.logFiles }}true{{- end }}
{{- end }}

{{/* The host's /proc: GPU processes' cgroups (procAttribution) and the host collector's per-process view. */}}
{{- define "gpuscope.hostProc" -}}
{{- if or .Values.procAttribution .Values.collectors.host.enabled .Values.ebpf.enabled }}true{{- end }}
{{- end }}

{{/* The host's /sys: InfiniBand ports and PCIe links (infiniband, host collectors). */}}
{{- define "gpuscope.hostSys" -}}
{{- if or .Values.collectors.infiniband.enabled .Values.collectors.host.enabled }}true{{- end }}
{{- end }}

{{/* The writable host directory shared with prologs and training ranks (/run/gpuscope). */}}
{{- define "gpuscope.runDir" -}}
{{- if or .Values.mapping.enabled .Values.collectors.training.enabled }}true{{- end }}
{{- end }}

{{/* DCGM's profiling module inside the agent (dcgm.mode embedded), on a driver that restricts profiling to
admin users: CAP_SYS_ADMIN. */}}
{{- define "gpuscope.dcgmProfilingAdmin" -}}
{{- if and (eq .Values.dcgm.mode "embedded") .Values.dcgm.profilingAdmin (ne .Values.dcgm.enabled "off") }}true{{- end }}
{{- end }}

{{/*
User 0 where a root-only host file is read or a root-owned host directory written: the pod-resources socket,
the journal (root:systemd-journal 0640), /dev/kmsg, other users' /proc/<pid>/environ, job logs, the eBPF
programs and DCGM's embedded profiling (Kubernetes gives added capabilities to user 0 only: no ambient set),
the prolog's and training directory /run/gpuscope, and the state directory on the host (hostPath creates it
root:root 0755) that event sources and push sinks write. Otherwise nobody (65534).
*/}}
{{- define "gpuscope.stateOnHost" -}}
{{- if or (include "gpuscope.eventSources" .) (include "gpuscope.pushSinks" .) }}true{{- end }}
{{- end }}

{{- define "gpuscope.root" -}}
{{- if or .Values.kubernetes.enabled (include "gpuscope.stateOnHost" .) .Values.procAttribution .Values.mapping.enabled .Values.collectors.training.enabled .Values.ebpf.enabled (include "gpuscope.dcgmProfilingAdmin" .) }}true{{- end }}
{{- end }}

{{/*
Capabilities added to the agent container (every other one dropped): other users' /proc/<pid>/environ
(procAttribution); the eBPF programs (ebpf.enabled), SYS_ADMIN only for the cuda program's uprobes; SYS_ADMIN
for DCGM's embedded profiling (dcgm.mode embedded with dcgm.profilingAdmin).
*/}}
{{- define "gpuscope.capabilities" -}}
{{- $caps := list }}
{{- if or .Values.procAttribution .Values.ebpf.enabled }}{{ $caps = concat $caps (list "DAC_READ_SEARCH" "SYS_PTRACE") }}{{ end }}
{{- if .Values.ebpf.enabled }}{{ $caps = concat $caps (list "BPF" "PERFMON") }}{{ end }}
{{- if or (and .Values.ebpf.enabled (has "cuda" .Values.ebpf.programs)) (include "gpuscope.dcgmProfilingAdmin" .) }}{{ $caps = append $caps "SYS_ADMIN" }}{{ end }}
{{- if $caps }}{{ $caps | toJson }}{{ end }}
{{- end }}

{{- define "gpuscope.privileged" -}}
{{- if eq .Values.events.kernelLog "kmsg" }}true{{- end }}
{{- end }}

{{/* The metrics endpoint's scheme for probes: https when the web config has TLS. */}}
{{- define "gpuscope.webTLS" -}}
{{- if and .Values.web.config (hasKey .Values.web.config "tls_server_config") }}true{{- end }}
{{- end }}

{{- define "gpuscope.webBasicAuth" -}}
{{- if and .Values.web.config (hasKey .Values.web.config "basic_auth_users") }}true{{- end }}
{{- end }}

{{- define "gpuscope.sinkSecretPath" -}}
/etc/gpuscope/sink-secrets
{{- end }}

{{/* Where the profiling token's Secret is mounted (profiling.tokenSecret). */}}
{{- define "gpuscope.profilingSecretPath" -}}
/etc/gpuscope/profiling
{{- end }}
