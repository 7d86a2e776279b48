"""Kubernetes manifests, generated from the same source as the rule files and dashboards.

Two variants, each a plain directory `kubectl apply -k` takes (its kustomization.yaml only lists
resources): `gpu/` (vLLM with the sidecar beside it) and `demo/` (the simulator in vLLM's place).
Generated Python rather than a Helm chart or kustomize patches: the PrometheusRule must equal the
plain rule files and the dashboards ConfigMap the committed JSON, which a generator guarantees by
construction, and neither helm nor kustomize can be fetched onto the machines that validate them.
"""

from __future__ import annotations

import json
from typing import Any

from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import DEFAULT, MixinConfig
from exporter.mixin.dashboards import dashboards
from exporter.mixin.rules import recording_rule_groups

APP = "vllm-specdecode"
SIDECAR_IMAGE = "specdecode-exporter:0.1.0"
VLLM_IMAGE = "vllm/vllm-openai:v0.34.0"
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


def _sidecar_container() -> dict[str, Any]:
    return {
        "name": "specdecode-exporter",
        "image": SIDECAR_IMAGE,
        # plugin records when the vLLM image carries the plugin (exact), else the log and /metrics alone
        "args": ["serve", "--vllm-plugin-dir", PLUGIN_DIR, "--log", f"{LOG_DIR}/vllm.log", "--target", "http://127.0.0.1:8000/metrics",
                 "--listen", "0.0.0.0:9847", "--state-dir", "/var/lib/specdecode"],
        "ports": [{"name": "metrics", "containerPort": 9847}],
        "volumeMounts": [
            {"name": "plugin-records", "mountPath": PLUGIN_DIR, "readOnly": True},
            {"name": "vllm-logs", "mountPath": LOG_DIR, "readOnly": True},
            {"name": "sidecar-state", "mountPath": "/var/lib/specdecode"},
        ],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "readinessProbe": {"httpGet": {"path": "/-/healthy", "port": "metrics"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/-/healthy", "port": "metrics"}, "periodSeconds": 20, "failureThreshold": 3},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


def _vllm_container() -> dict[str, Any]:
    return {
        "name": "vllm",
        "image": VLLM_IMAGE,
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
        "resources": {"requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}, "limits": {"memory": "64Gi", "nvidia.com/gpu": "1"}},
        "startupProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "failureThreshold": 90},
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 30, "failureThreshold": 3},
    }


def _simulator_container() -> dict[str, Any]:
    container = _sidecar_container()
    return {
        **{k: v for k, v in container.items() if k not in ("args", "ports", "volumeMounts", "readinessProbe", "livenessProbe")},
        "name": "vllm",
        "args": ["simulate", "--scenario", "drop-off", "--drop-after", "300", "--listen", "0.0.0.0:8000", "--log-file", f"{LOG_DIR}/vllm.log"],
        "ports": [{"name": "http", "containerPort": 8000}],
        "volumeMounts": [{"name": "vllm-logs", "mountPath": LOG_DIR}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 20},
    }


def _deployment(demo: bool) -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [
        {"name": "vllm-logs", "emptyDir": {"sizeLimit": "256Mi"}},
        {"name": "plugin-records", "emptyDir": {"sizeLimit": "64Mi"}},
        {"name": "sidecar-state", "emptyDir": {"sizeLimit": "16Mi"}},
    ]
    if not demo:
        volumes += [
            {"name": "vllm-logging", "configMap": {"name": f"{APP}-logging"}},
            {"name": "hf-cache", "persistentVolumeClaim": {"claimName": f"{APP}-hf-cache"}},
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(APP),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": APP}},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "containers": [_simulator_container() if demo else _vllm_container(), _sidecar_container()],
                    "volumes": volumes,
                    "securityContext": {"fsGroup": 10001},
                },
            },
        },
    }


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(APP),
        "spec": {
            "selector": {"app.kubernetes.io/name": APP},
            "ports": [{"name": "http", "port": 8000, "targetPort": "http"}, {"name": "metrics", "port": 9847, "targetPort": "metrics"}],
        },
    }


def _pod_monitor() -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _meta(APP),
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": APP}},
            "podMetricsEndpoints": [{"port": "metrics", "interval": "15s"}, {"port": "http", "path": "/metrics", "interval": "15s"}],
        },
    }


def _network_policy() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(f"{APP}-metrics"),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": APP}},
            "policyTypes": ["Ingress"],
            "ingress": [
                # the sidecar's metrics port: Prometheus only
                {
                    "from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}],
                    "ports": [{"port": 9847, "protocol": "TCP"}],
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
        "metadata": _meta("specdecode", prometheus="k8s", role="alert-rules"),
        "spec": {"groups": recording_rule_groups(config) + alert_groups(config)},
    }


def dashboards_configmap(config: MixinConfig = DEFAULT) -> dict[str, Any]:
    """The committed dashboards (rule sets of every variant share their record names)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**_meta("specdecode-dashboards", grafana_dashboard="1"), "annotations": {"grafana_folder": "Speculative decoding"}},
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


def _hf_cache_claim() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(f"{APP}-hf-cache"),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}},
    }


def manifests(config: MixinConfig, demo: bool) -> dict[str, dict[str, Any]]:
    """File name → manifest, for one variant."""
    files = {
        "deployment.yaml": _deployment(demo),
        "service.yaml": _service(),
        "podmonitor.yaml": _pod_monitor(),
        "networkpolicy.yaml": _network_policy(),
        "prometheusrule.yaml": prometheus_rule(config),
        "dashboards-configmap.yaml": dashboards_configmap(),
    }
    if not demo:
        files |= {"model-configmap.yaml": _model_configmap(), "logging-configmap.yaml": _logging_configmap(), "hf-cache-pvc.yaml": _hf_cache_claim()}
    return files
