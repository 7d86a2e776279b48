"""Kubernetes manifests, generated from the same source as the rule files and dashboards.

One directory `kubectl apply -k` takes (its kustomization.yaml only lists resources) per config:
`deploy/kubernetes/gpu/` (vLLM with the sidecar beside it, the defaults) and `demo/` (the
simulator in vLLM's place, deploy/mixin/demo.toml). Every object lives in the tenant's namespace.
A StatefulSet rather than a Deployment: each replica's sidecar state (its references of normal)
and model cache sit on claims that outlive the pod, so a replaced pod resumes what its predecessor
learnt (and a GPU pod is replaced, not surged, which a node with no spare GPU could not schedule
anyway).

The sidecar never blocks serving: it runs under `supervise` (exporter/cli/supervise.py), so its
container keeps running whatever the sidecar does, and it has neither a readiness nor a liveness
probe — a pod is Ready only when all its containers are (native sidecars included: kubelet's
ContainersReady counts restartable init containers), and a liveness restart would take the
container out of running.
Generated Python rather than a Helm chart or kustomize patches: the PrometheusRule must equal the
plain rule files and the dashboards ConfigMap the committed JSON, which a generator guarantees by
construction, and neither helm nor kustomize can be fetched onto the machines that validate them.
"""

from __future__ import annotations

import json
import math
from typing import Any

from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import MixinConfig
from exporter.mixin.dashboards import dashboards
from exporter.mixin.inhibition import inhibit_rules
from exporter.mixin.rules import recording_rule_groups

APP = "vllm-specdecode"
SIDECAR_PORT = ("specdecode", 9847)  # not "metrics": charts (llm-d) scrape the port of that name as vLLM's
STATE_DIR = "/var/lib/specdecode"
LOG_DIR = "/var/log/vllm"
PLUGIN_DIR = "/var/lib/specdecode-plugin"  # our vLLM plugin's records (an image built from deploy/vllm/Dockerfile)
LABELS = {"app.kubernetes.io/name": APP, "app.kubernetes.io/part-of": "specdecode-exporter"}

# vLLM's own logging config: stdout as usual (kubectl logs) and a rotating file the sidecar follows.
# The file formatter writes the process prefix the sidecar parses (vLLM adds it only to stdout).
VLLM_LOGGING_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "vllm": {"format": "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s", "datefmt": "%m-%d %H:%M:%S"},
        "file": {
            "format": "(vLLM pid=%(process)d) %(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s",
            "datefmt": "%m-%d %H:%M:%S",
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "vllm", "stream": "ext://sys.stdout"},
        "file": {
            "class": "logging.handlers.RotatingFileHandler",
            "formatter": "file",
            "filename": f"{LOG_DIR}/vllm.log",
            "maxBytes": 50 * 1024 * 1024,
            "backupCount": 3,
        },
    },
    "loggers": {"vllm": {"handlers": ["console", "file"], "level": "INFO", "propagate": False}},
}


def _meta(config: MixinConfig, name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if config.namespace:
        meta["namespace"] = config.namespace
    meta["labels"] = {**LABELS, **labels}
    return meta


SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def sidecar_container(config: MixinConfig) -> dict[str, Any]:
    """The sidecar, as it is added to this pod or to a production-stack / llm-d release's (deploy/README.md)."""
    name, port = SIDECAR_PORT
    serve = ["serve", "--vllm-plugin-dir", PLUGIN_DIR, "--log", f"{LOG_DIR}/vllm.log", "--target", "http://127.0.0.1:8000/metrics",
             "--listen", f"0.0.0.0:{port}", "--state-dir", STATE_DIR]
    return {
        "name": "specdecode-exporter",
        "image": config.sidecar_image,
        "imagePullPolicy": "IfNotPresent",
        # plugin records when the vLLM image carries the plugin (exact), else the log and /metrics alone; under
        # `supervise`, which restarts a sidecar that exits or hangs inside the running container
        "args": ["supervise", "--health-url", f"http://127.0.0.1:{port}/-/healthy", "--", *serve],
        "ports": [{"name": name, "containerPort": port}],
        "volumeMounts": [
            {"name": "plugin-records", "mountPath": PLUGIN_DIR, "readOnly": True},
            {"name": "vllm-logs", "mountPath": LOG_DIR, "readOnly": True},
            {"name": "sidecar-state", "mountPath": STATE_DIR},
        ],
        "resources": config.sidecar_resources,
        # no readiness and no liveness probe: a pod is Ready when all its containers are, so either would take vLLM
        # out of its Service whenever the sidecar (not vLLM) is slow or restarted; `supervise` watches /-/healthy instead
        "securityContext": SECURITY,
    }


def _vllm_container(config: MixinConfig) -> dict[str, Any]:
    return {
        "name": "vllm",
        "image": config.vllm_image,
        "args": [
            "--model", "$(MODEL)", "--served-model-name", "$(SERVED_MODEL_NAME)",
            "--speculative-config", "$(SPECULATIVE_CONFIG)", "--port", "8000",
        ],
        "envFrom": [{"configMapRef": {"name": f"{APP}-model"}}],
        "env": [
            {"name": "VLLM_LOGGING_CONFIG_PATH", "value": "/etc/vllm/logging.json"},
            {"name": "SPECDECODE_PLUGIN_DIR", "value": PLUGIN_DIR},  # read only by the plugin; unused without it
        ],
        "ports": [{"name": "http", "containerPort": 8000}],
        "volumeMounts": [
            {"name": "plugin-records", "mountPath": PLUGIN_DIR},
            {"name": "vllm-logs", "mountPath": LOG_DIR},
            {"name": "vllm-logging", "mountPath": "/etc/vllm", "readOnly": True},
            {"name": "hf-cache", "mountPath": "/root/.cache/huggingface"},
        ],
        "resources": config.vllm_resources,
        # the start-up budget: a large model's download and load (SpecDecodeSidecarSourceDown waits as long)
        "startupProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": STARTUP_PERIOD,
                         "failureThreshold": _startup_checks(config)},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 30, "failureThreshold": 3},
    }


STARTUP_PERIOD = 10


def _startup_checks(config: MixinConfig) -> int:
    from exporter.config import parse_duration

    return max(1, math.ceil(parse_duration(config.startup_budget) / STARTUP_PERIOD))


def _simulator_container(config: MixinConfig) -> dict[str, Any]:
    return {
        "name": "vllm",
        "image": config.sidecar_image,
        "args": ["simulate", "--scenario", "drop-off", "--drop-after", "300", "--listen", "0.0.0.0:8000", "--log-file", f"{LOG_DIR}/vllm.log"],
        "ports": [{"name": "http", "containerPort": 8000}],
        "volumeMounts": [{"name": "vllm-logs", "mountPath": LOG_DIR}],
        "resources": config.sidecar_resources,
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 20},
        "securityContext": SECURITY,
    }


def _claim(name: str, storage: str, config: MixinConfig) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    if config.state_storage_class:
        spec["storageClassName"] = config.state_storage_class
    return {"metadata": {"name": name, "labels": dict(LABELS)}, "spec": spec}


def _scheduling(config: MixinConfig) -> dict[str, Any]:
    """The operator's knobs of where and how the pods run: node pool, taints, priority, private registry."""
    spec: dict[str, Any] = {}
    if config.node_selector:
        spec["nodeSelector"] = dict(config.node_selector)
    if config.tolerations:
        spec["tolerations"] = [dict(t) for t in config.tolerations]
    if config.priority_class:
        spec["priorityClassName"] = config.priority_class
    if config.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": secret} for secret in config.image_pull_secrets]
    return spec


def _stateful_set(config: MixinConfig) -> dict[str, Any]:
    gpu = config.workload == "vllm"
    volumes: list[dict[str, Any]] = [
        {"name": "vllm-logs", "emptyDir": {"sizeLimit": "256Mi"}},
        {"name": "plugin-records", "emptyDir": {"sizeLimit": "64Mi"}},
    ]
    claims = [_claim("sidecar-state", config.state_storage, config)]
    if gpu:
        volumes.append({"name": "vllm-logging", "configMap": {"name": f"{APP}-logging"}})
        if config.model_cache_claim:  # one shared cache: downloaded once for every replica
            volumes.append({"name": "hf-cache", "persistentVolumeClaim": {"claimName": config.model_cache_claim}})
        else:
            claims.append(_claim("hf-cache", config.model_cache_storage, config))
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(config, APP),
        "spec": {
            "replicas": config.replicas,
            "serviceName": APP,
            "podManagementPolicy": "Parallel",  # replicas start together; each keeps its own claims
            "selector": {"matchLabels": {"app.kubernetes.io/name": APP}},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "automountServiceAccountToken": False,  # neither container talks to the API server
                    "containers": [_vllm_container(config) if gpu else _simulator_container(config), sidecar_container(config)],
                    "volumes": volumes,
                    # the sidecar (uid 10001) writes its claim; OnRootMismatch: the 100 Gi model cache is not
                    # walked and re-owned at every start, only when its root is not ours yet
                    "securityContext": {"fsGroup": 10001, "fsGroupChangePolicy": "OnRootMismatch"},
                    **_scheduling(config),
                },
            },
            # immutable once created: a change of size or class needs the steps of deploy/README.md
            "volumeClaimTemplates": claims,
            "persistentVolumeClaimRetentionPolicy": dict(config.claim_retention),
        },
    }


def _service(config: MixinConfig) -> dict[str, Any]:
    name, port = SIDECAR_PORT
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(config, APP),
        "spec": {
            "selector": {"app.kubernetes.io/name": APP},
            "ports": [{"name": "http", "port": 8000, "targetPort": "http"}, {"name": name, "port": port, "targetPort": name}],
        },
    }


def pod_monitor(config: MixinConfig) -> dict[str, Any]:
    """The sidecar's port (scraped as job `sidecar_job`, which SpecDecodeSidecarDown watches), and vLLM's
    /metrics unless another job scrapes it already (scrape_vllm)."""
    sidecar_job = [{"action": "replace", "targetLabel": "job", "replacement": config.sidecar_job}]
    endpoints: list[dict[str, Any]] = [{"port": SIDECAR_PORT[0], "interval": "15s", "relabelings": sidecar_job}]
    if config.scrape_vllm:
        endpoints.append({"port": "http", "path": "/metrics", "interval": "15s"})
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _meta(config, APP, **config.monitor_labels),
        "spec": {"selector": {"matchLabels": dict(config.pod_selector)}, "podMetricsEndpoints": endpoints},
    }


def _network_policy(config: MixinConfig) -> dict[str, Any]:
    port = SIDECAR_PORT[1]
    sidecar: dict[str, Any] = {"ports": [{"port": port, "protocol": "TCP"}]}
    if config.scrapers:  # the scrapers of the config, in any namespace; none listed: every pod may
        sidecar["from"] = [{"namespaceSelector": {}, "podSelector": {"matchLabels": dict(labels)}} for labels in config.scrapers]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(config, f"{APP}-metrics"),
        "spec": {
            "podSelector": {"matchLabels": dict(config.pod_selector)},
            "policyTypes": ["Ingress"],
            "ingress": [
                sidecar,
                # vLLM's API (and its /metrics) stays open to its clients
                {"ports": [{"port": 8000, "protocol": "TCP"}]},
            ],
        },
    }


def _disruption_budget(config: MixinConfig) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(config, APP),
        "spec": {**config.pod_disruption_budget, "selector": {"matchLabels": dict(config.pod_selector)}},
    }


def prometheus_access(config: MixinConfig) -> list[tuple[str, dict[str, Any]]]:
    """A Role and RoleBinding letting a Prometheus that may not list pods here (kube-prometheus' `prometheus-k8s`) discover them."""
    account = config.prometheus_rbac
    name = f"specdecode-{account['service_account']}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(config, name),
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "services", "endpoints"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(config, name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account["service_account"], "namespace": account["namespace"]}],
    }
    return [("prometheus-role.yaml", role), ("prometheus-rolebinding.yaml", binding)]


def prometheus_rule(config: MixinConfig) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _meta(config, "specdecode", **config.monitor_labels),
        "spec": {"groups": recording_rule_groups(config) + alert_groups(config)},
    }


def _camel(rule: dict[str, Any]) -> dict[str, Any]:
    """An Alertmanager inhibit rule (alertmanager.yml's) as AlertmanagerConfig's `inhibitRules` item."""

    def matchers(texts: list[str]) -> list[dict[str, str]]:
        out = []
        for text in texts:
            label, op, value = (text.partition("=~") if "=~" in text else text.partition("="))
            out.append({"name": label, "value": value.strip('"'), "matchType": op})
        return out

    return {"sourceMatch": matchers(rule["source_matchers"]), "targetMatch": matchers(rule["target_matchers"]), "equal": rule["equal"]}


def alertmanager_config(config: MixinConfig) -> dict[str, Any]:
    """Inhibition for an operator-managed Alertmanager. The operator adds the AlertmanagerConfig's
    namespace to both sides of each rule (its default OnNamespace matcher strategy): it lives in the
    tenant's namespace, where these alerts are."""
    return {
        "apiVersion": "monitoring.coreos.com/v1alpha1",
        "kind": "AlertmanagerConfig",
        "metadata": _meta(config, "specdecode", **config.alertmanager_config_labels),
        "spec": {"inhibitRules": [_camel(rule) for rule in inhibit_rules(config)]},
    }


def dashboards_configmap(config: MixinConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**_meta(config, "specdecode-dashboards", **config.dashboard_labels), "annotations": dict(config.dashboard_annotations)},
        "data": {name: json.dumps(board, indent=2, sort_keys=True) + "\n" for name, board in dashboards(config).items()},
    }


def _model_configmap(config: MixinConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(config, f"{APP}-model"),
        "data": {
            "MODEL": "Qwen/Qwen3-8B",
            "SERVED_MODEL_NAME": "qwen3-8b",
            "SPECULATIVE_CONFIG": json.dumps({"method": "eagle3", "model": "AngelSlim/Qwen3-8B_eagle3", "num_speculative_tokens": 3}),
        },
    }


def _logging_configmap(config: MixinConfig) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(config, f"{APP}-logging"),
            "data": {"logging.json": json.dumps(VLLM_LOGGING_CONFIG, indent=2)}}


def manifests(config: MixinConfig) -> dict[str, dict[str, Any]]:
    """File name → manifest."""
    files = {
        "podmonitor.yaml": pod_monitor(config),
        "prometheusrule.yaml": prometheus_rule(config),
        "alertmanagerconfig.yaml": alertmanager_config(config),
        "dashboards-configmap.yaml": dashboards_configmap(config),
    }
    if config.prometheus_rbac:
        files |= dict(prometheus_access(config))
    if config.workload == "none":  # another chart owns the pods (and their network policy): monitoring and vLLM's log config
        return files | {"logging-configmap.yaml": _logging_configmap(config)}
    files |= {"statefulset.yaml": _stateful_set(config), "service.yaml": _service(config), "networkpolicy.yaml": _network_policy(config)}
    if config.pod_disruption_budget:
        files["poddisruptionbudget.yaml"] = _disruption_budget(config)
    if config.workload == "vllm":
        files |= {"model-configmap.yaml": _model_configmap(config), "logging-configmap.yaml": _logging_configmap(config)}
    return files
