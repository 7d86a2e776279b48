"""Kubernetes manifests, generated from the same source as the rule files and dashboards.

One directory `kubectl apply -k` takes (its kustomization.yaml only lists resources) per config:
`deploy/kubernetes/gpu/` (vLLM with the sidecar beside it, the defaults) and `demo/` (the
simulator in vLLM's place, deploy/mixin/demo.toml). A StatefulSet rather than a Deployment: each
replica's sidecar state (its references of normal) and model cache sit on claims that outlive
the pod, so a replaced pod resumes what its predecessor learnt (and a GPU pod is replaced, not
surged, which a node with no spare GPU could not schedule anyway).
Generated Python rather than a Helm chart or kustomize patches: the PrometheusRule must equal the
plain rule files and the dashboards ConfigMap the committed JSON, which a generator guarantees by
construction, and neither helm nor kustomize can be fetched onto the machines that validate them.
"""

from __future__ import annotations

import json
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


def _meta(name: str, **labels: str) -> dict[str, Any]:
    return {"name": name, "labels": {**LABELS, **labels}}


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
    return {
        "name": "specdecode-exporter",
        "image": config.sidecar_image,
        # plugin records when the vLLM image carries the plugin (exact), else the log and /metrics alone
        "args": ["serve", "--vllm-plugin-dir", PLUGIN_DIR, "--log", f"{LOG_DIR}/vllm.log", "--target", "http://127.0.0.1:8000/metrics",
                 "--listen", f"0.0.0.0:{port}", "--state-dir", STATE_DIR],
        "ports": [{"name": name, "containerPort": port}],
        "volumeMounts": [
            {"name": "plugin-records", "mountPath": PLUGIN_DIR, "readOnly": True},
            {"name": "vllm-logs", "mountPath": LOG_DIR, "readOnly": True},
            {"name": "sidecar-state", "mountPath": STATE_DIR},
        ],
        "resources": config.sidecar_resources,
        # liveness only: a pod is Ready when all its containers are, so a sidecar's readiness probe would
        # take vLLM out of its Service whenever the sidecar (not vLLM) is slow
        "livenessProbe": {"httpGet": {"path": "/-/healthy", "port": name}, "periodSeconds": 20, "failureThreshold": 3},
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
        "startupProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "failureThreshold": 90},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 30, "failureThreshold": 3},
    }


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


def _stateful_set(config: MixinConfig) -> dict[str, Any]:
    gpu = config.workload == "vllm"
    volumes: list[dict[str, Any]] = [
        {"name": "vllm-logs", "emptyDir": {"sizeLimit": "256Mi"}},
        {"name": "plugin-records", "emptyDir": {"sizeLimit": "64Mi"}},
    ]
    claims = [_claim("sidecar-state", config.state_storage, config)]
    if gpu:
        volumes.append({"name": "vllm-logging", "configMap": {"name": f"{APP}-logging"}})
        claims.append(_claim("hf-cache", "100Gi", config))
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(APP),
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
                },
            },
            "volumeClaimTemplates": claims,
        },
    }


def _service() -> dict[str, Any]:
    name, port = SIDECAR_PORT
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(APP),
        "spec": {
            "selector": {"app.kubernetes.io/name": APP},
            "ports": [{"name": "http", "port": 8000, "targetPort": "http"}, {"name": name, "port": port, "targetPort": name}],
        },
    }


def pod_monitor(config: MixinConfig) -> dict[str, Any]:
    """The sidecar's port, and vLLM's /metrics unless another job scrapes it already (scrape_vllm)."""
    endpoints = [{"port": SIDECAR_PORT[0], "interval": "15s"}]
    if config.scrape_vllm:
        endpoints.append({"port": "http", "path": "/metrics", "interval": "15s"})
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _meta(APP, **config.pod_monitor_labels),
        "spec": {"selector": {"matchLabels": dict(config.pod_selector)}, "podMetricsEndpoints": endpoints},
    }


def _network_policy(config: MixinConfig) -> dict[str, Any]:
    port = SIDECAR_PORT[1]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(f"{APP}-metrics"),
        "spec": {
            "podSelector": {"matchLabels": dict(config.pod_selector)},
            "policyTypes": ["Ingress"],
            "ingress": [
                # the sidecar's port: Prometheus only
                {
                    "from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}],
                    "ports": [{"port": port, "protocol": "TCP"}],
                },
                # vLLM's API (and its /metrics) stays open to its clients
                {"ports": [{"port": 8000, "protocol": "TCP"}]},
            ],
        },
    }


def prometheus_rule(config: MixinConfig) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _meta("specdecode", **config.prometheus_rule_labels),
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
    """Inhibition for an operator-managed Alertmanager. The operator scopes a namespaced
    AlertmanagerConfig to its own namespace (it adds a `namespace` matcher), which is where these alerts are."""
    return {
        "apiVersion": "monitoring.coreos.com/v1alpha1",
        "kind": "AlertmanagerConfig",
        "metadata": _meta("specdecode", **config.alertmanager_config_labels),
        "spec": {"inhibitRules": [_camel(rule) for rule in inhibit_rules(config)]},
    }


def dashboards_configmap(config: MixinConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**_meta("specdecode-dashboards", **config.dashboard_labels), "annotations": dict(config.dashboard_annotations)},
        "data": {name: json.dumps(board, indent=2, sort_keys=True) + "\n" for name, board in dashboards(config).items()},
    }


def _model_configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"{APP}-model"),
        "data": {
            "MODEL": "Qwen/Qwen3-8B",
            "SERVED_MODEL_NAME": "qwen3-8b",
            "SPECULATIVE_CONFIG": json.dumps({"method": "eagle3", "model": "AngelSlim/Qwen3-8B_eagle3", "num_speculative_tokens": 3}),
        },
    }


def _logging_configmap() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(f"{APP}-logging"), "data": {"logging.json": json.dumps(VLLM_LOGGING_CONFIG, indent=2)}}


def manifests(config: MixinConfig) -> dict[str, dict[str, Any]]:
    """File name → manifest."""
    files = {
        "podmonitor.yaml": pod_monitor(config),
        "prometheusrule.yaml": prometheus_rule(config),
        "alertmanagerconfig.yaml": alertmanager_config(config),
        "dashboards-configmap.yaml": dashboards_configmap(config),
    }
    if config.workload == "none":  # another chart owns the pods (and their network policy): monitoring and vLLM's log config
        return files | {"logging-configmap.yaml": _logging_configmap()}
    files |= {"statefulset.yaml": _stateful_set(config), "service.yaml": _service(), "networkpolicy.yaml": _network_policy(config)}
    if config.workload == "vllm":
        files |= {"model-configmap.yaml": _model_configmap(), "logging-configmap.yaml": _logging_configmap()}
    return files
