{{/*
Where the portal's and the reconciler's Pods may run and what they pull with (values
`scheduling` and `imagePullSecrets`); nothing when those are empty, so the defaults
render exactly the kustomize base.
*/}}
{{- define "portico.scheduling" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . | quote }}
  {{- end }}
{{- end }}
{{- with .Values.scheduling.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scheduling.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scheduling.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The host names the portal answers to (PORTICO_ALLOWED_HOSTS): the Ingress' host, and
the HTTPRoute's when it names another. A name missing here is refused by the portal
(the DNS rebinding guard), however the route reaches it.
*/}}
{{- define "portico.allowedHosts" -}}
{{- $hosts := list .Values.ingress.host -}}
{{- if and .Values.httpRoute.enabled .Values.httpRoute.hostname -}}
{{- $hosts = append $hosts .Values.httpRoute.hostname -}}
{{- end -}}
{{- join "," ($hosts | uniq) -}}
{{- end }}
