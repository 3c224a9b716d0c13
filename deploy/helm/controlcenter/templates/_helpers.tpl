{{/* Names and labels. */}}
{{- define "controlcenter.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "controlcenter.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "controlcenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "controlcenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "controlcenter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "controlcenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The labels of one component: (dict "root" $ "component" "web"). */}}
{{- define "controlcenter.componentLabels" -}}
{{ include "controlcenter.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "controlcenter.componentSelector" -}}
{{ include "controlcenter.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "controlcenter.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "controlcenter.secretName" -}}
{{- required "existingSecret is required: a Secret holding SECRET_KEY, DATABASE_URL and REDIS_URL (docs/DEPLOYMENT.md)" .Values.existingSecret -}}
{{- end -}}

{{- define "controlcenter.sharedClaim" -}}
{{- default (printf "%s-shared" (include "controlcenter.fullname" .)) .Values.shared.existingClaim -}}
{{- end -}}

{{/*
The environment every process gets: the same SECRET_KEY (and SECRETS_KEYS) from one Secret, the
database and the broker, the shared directory.
*/}}
{{- define "controlcenter.env" -}}
- name: SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "controlcenter.secretName" . }}
      key: {{ .Values.secretKeys.secretKey }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "controlcenter.secretName" . }}
      key: {{ .Values.secretKeys.databaseUrl }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "controlcenter.secretName" . }}
      key: {{ .Values.secretKeys.redisUrl }}
{{- with .Values.secretKeys.secretsKeys }}
- name: SECRETS_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "controlcenter.secretName" $ }}
      key: {{ . }}
      optional: true
{{- end }}
{{- with .Values.secretKeys.auditSigningKey }}
- name: AUDIT_SIGNING_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "controlcenter.secretName" $ }}
      key: {{ . }}
      optional: true
{{- end }}
- name: CC_VAR_DIR
  value: {{ .Values.shared.mountPath | quote }}
- name: ALLOWED_HOSTS
  value: {{ prepend .Values.allowedHosts "localhost" | uniq | join "," | quote }}
- name: CSRF_TRUSTED_ORIGINS
  value: {{ join "," .Values.csrfTrustedOrigins | quote }}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod-level settings every app pod shares. */}}
{{- define "controlcenter.podCommon" -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
{{ toYaml . }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{ toYaml . }}
{{- end }}
{{- with .Values.affinity }}
affinity:
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "controlcenter.sharedVolume" -}}
- name: shared
  persistentVolumeClaim:
    claimName: {{ include "controlcenter.sharedClaim" . }}
{{- end -}}

{{- define "controlcenter.sharedMount" -}}
- name: shared
  mountPath: {{ .Values.shared.mountPath }}
{{- end -}}

{{/* A health command probe: (dict "kind" "runner" "probe" .Values.probes.command.liveness). */}}
{{- define "controlcenter.commandProbe" -}}
exec:
  command: ["python", "manage.py", "health", "--kind", {{ .kind | quote }}{{ if .live }}, "--live"{{ end }}]
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end -}}

{{/* An HTTP probe on the web port; Host: localhost is in ALLOWED_HOSTS. */}}
{{- define "controlcenter.httpProbe" -}}
httpGet:
  path: {{ .path }}
  port: http
  httpHeaders:
    - name: Host
      value: localhost
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
{{- end -}}
