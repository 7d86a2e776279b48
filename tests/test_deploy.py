"""Deployment files, validated without a container engine or a cluster.

docker-compose (Debian's) validates every profile; kubernetes-validate checks the manifests against
the Kubernetes schemas; the operator's custom resources are checked against their sources; the
Dockerfile against a documented set of rules (hadolint ships as a downloaded binary, which the
machines that run this cannot fetch).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from exporter.mixin.config import load
from exporter.mixin.dashboards import dashboards
from exporter.mixin.kubernetes import VLLM_LOGGING_CONFIG
from exporter.parse.envelope import parse_envelope

pytestmark = pytest.mark.slow  # docker-compose, promtool and kubernetes-validate as processes

ROOT = Path(__file__).parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
KUBERNETES = ROOT / "deploy" / "kubernetes"
CUSTOM_KINDS = {"PodMonitor", "PrometheusRule", "AlertmanagerConfig"}
DEMO = load(ROOT / "deploy/mixin/demo.toml")


def compose(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("docker-compose")
    assert tool, "scripts/test installs Debian's docker-compose"
    return subprocess.run([tool, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("profile", ["gpu", "demo"])
def test_compose_profile_is_valid(profile):
    result = compose("--profile", profile, "config", "-q")
    assert result.returncode == 0, result.stderr


def test_compose_profiles_start_the_right_services():
    by_profile: dict[str, set[str]] = {}
    for name, service in COMPOSE["services"].items():
        for profile in service.get("profiles", []):
            by_profile.setdefault(profile, set()).add(name)
    assert by_profile["gpu"] == {"secrets", "vllm", "sidecar", "prometheus", "alertmanager", "grafana"}
    assert by_profile["demo"] == {"secrets", "simulator", "sidecar", "prometheus-demo", "alertmanager", "grafana"}
    assert COMPOSE["services"]["simulator"]["networks"]["default"]["aliases"] == ["vllm"]


def test_compose_gpu_vllm_is_pinned_with_a_gpu_and_a_rotating_log():
    vllm = COMPOSE["services"]["vllm"]
    # built from deploy/vllm/Dockerfile (the official image + our plugin), tagged with the pinned vLLM version
    assert re.fullmatch(r"vllm-openai-specdecode:v\d+\.\d+\.\d+", vllm["image"])
    base = re.search(r"^FROM (\S+)", (ROOT / vllm["build"]["dockerfile"]).read_text(), re.M)
    assert base and base.group(1) == "vllm/vllm-openai:" + vllm["image"].split(":")[1]
    assert vllm["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "./deploy/vllm/logging.json:/etc/vllm/logging.json:ro" in vllm["volumes"]
    assert VLLM_LOGGING_CONFIG["handlers"]["file"]["class"] == "logging.handlers.RotatingFileHandler"
    for service in COMPOSE["services"].values():
        assert ":" in service.get("image", "x:pinned") and not service.get("image", "").endswith(":latest")
    grafana = COMPOSE["services"]["grafana"]["environment"]
    assert grafana["GF_AUTH_ANONYMOUS_ENABLED"] == "false" and grafana["GF_SECURITY_ADMIN_PASSWORD__FILE"]


def test_compose_mounts_exist_and_grafana_finds_the_dashboards():
    for service in COMPOSE["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), source
    mounts = dict(v.split(":")[:2][::-1] for v in COMPOSE["services"]["grafana"]["volumes"])
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/specdecode.yml").read_text())
    assert mounts[provider["providers"][0]["options"]["path"]] == "./dashboards"


def test_vllms_file_log_format_is_what_the_sidecar_parses():
    formatter = logging.Formatter(VLLM_LOGGING_CONFIG["formatters"]["file"]["format"], VLLM_LOGGING_CONFIG["formatters"]["file"]["datefmt"])
    message = "SpecDecoding metrics: Mean acceptance length: 2.37, Accepted: 89 tokens, Drafted: 975 tokens"
    record = logging.LogRecord("vllm.v1.spec_decode.metrics", logging.INFO, "/x/metrics.py", 120, message, None, None)
    envelope = parse_envelope(formatter.format(record))
    assert envelope is not None and envelope.message == message and envelope.pid is not None


def test_dockerfile_rules():
    """Our stand-in for hadolint: the rules that matter for this image."""
    text = (ROOT / "Dockerfile").read_text()
    bases = re.findall(r"^FROM (\S+)", text, re.M)
    assert bases and all(re.search(r":\d+\.\d+\.\d+-", base) for base in bases), "DL3006/DL3007: pin base images by version"
    assert re.search(r"^USER 10001$", text, re.M), "DL3002: run as a non-root user"
    assert "HEALTHCHECK" in text
    assert re.search(r'^ENTRYPOINT \["specdecode-exporter"\]', text, re.M), "DL3025: exec form"
    assert not re.search(r"^ADD ", text, re.M), "DL3020: COPY, not ADD"
    assert "--no-cache-dir" in text, "DL3042: no pip cache in the image"
    assert "apt-get" not in text or "--no-install-recommends" in text, "DL3015"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ignored[ignored.index("*") if "*" in ignored else 0] == "*", "the build context is an allow-list"


def test_vllm_plugin_image_extends_the_pinned_official_image_and_touches_nothing_else():
    text = (ROOT / "deploy" / "vllm" / "Dockerfile").read_text()
    instructions = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert instructions[0] == "FROM vllm/vllm-openai:v0.34.0" and len(instructions) == 2  # the two lines the docs promise
    assert "--no-deps" in instructions[1] and "--no-cache-dir" in instructions[1]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    vllm = compose["services"]["vllm"]
    assert vllm["build"]["dockerfile"] == "deploy/vllm/Dockerfile" and "SPECDECODE_PLUGIN_DIR" in vllm["environment"]
    plugin_dir = vllm["environment"]["SPECDECODE_PLUGIN_DIR"]
    sidecar = compose["services"]["sidecar"]
    assert sidecar["command"][sidecar["command"].index("--vllm-plugin-dir") + 1] == plugin_dir
    assert any(volume.endswith(f":{plugin_dir}:ro") for volume in sidecar["volumes"])


def manifests(variant: str) -> dict[str, dict]:  # type: ignore[type-arg]
    kustomization = yaml.safe_load((KUBERNETES / variant / "kustomization.yaml").read_text())
    return {name: yaml.safe_load((KUBERNETES / variant / name).read_text()) for name in kustomization["resources"]}


@pytest.mark.parametrize("variant", ["gpu", "demo"])
def test_kubernetes_manifests_validate_against_the_schemas(variant):
    for manifest in manifests(variant).values():
        if manifest["kind"] in CUSTOM_KINDS:
            continue  # not in the Kubernetes schemas: checked against their sources below
        kubernetes_validate.validate(manifest, desired_version=kubernetes_validate.latest_version(), strict=True)


@pytest.mark.parametrize("variant, rules_dir", [("gpu", "deploy/prometheus"), ("demo", "deploy/prometheus/demo")])
def test_prometheus_rule_equals_the_plain_rule_files_and_passes_promtool(variant, rules_dir, tmp_path):
    rule = manifests(variant)["prometheusrule.yaml"]
    plain = [group for name in ("specdecode.rules.yml", "specdecode.alerts.yml") for group in yaml.safe_load((ROOT / rules_dir / name).read_text())["groups"]]
    assert rule["spec"]["groups"] == plain
    extracted = tmp_path / "rules.yml"
    extracted.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    result = subprocess.run([shutil.which("promtool") or "promtool", "check", "rules", str(extracted)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("variant", ["gpu", "demo"])
def test_dashboards_configmap_holds_the_dashboards_in_the_stacks_folder(variant):
    configmap = manifests(variant)["dashboards-configmap.yaml"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "Speculative decoding"}
    if variant == "gpu":  # the committed JSON is the defaults'; the demo's describe its own windows
        for name, text in configmap["data"].items():
            assert json.loads(text) == json.loads((ROOT / "dashboards" / name).read_text())
    assert {name: json.loads(text) for name, text in configmap["data"].items()} == dashboards(DEMO if variant == "demo" else load())


@pytest.mark.parametrize("variant", ["gpu", "demo"])
def test_pod_security_probes_resources_and_network_policy(variant):
    files = manifests(variant)
    workload = files["statefulset.yaml"]
    pod = workload["spec"]["template"]["spec"]
    sidecar = next(c for c in pod["containers"] if c["name"] == "specdecode-exporter")
    security = sidecar["securityContext"]
    assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"] and security["capabilities"]["drop"] == ["ALL"]
    for container in pod["containers"]:
        assert container["resources"]["requests"] and container["resources"]["limits"]
    # vLLM's readiness decides the pod's (its Service's endpoints); the sidecar's must not take it out: no
    # readiness probe, no liveness probe (a restart is a container not running), and a supervisor that keeps
    # the container running whatever the sidecar does (tests/test_supervise.py)
    vllm = next(c for c in pod["containers"] if c["name"] == "vllm")
    assert vllm["readinessProbe"] and vllm["livenessProbe"]
    assert "readinessProbe" not in sidecar and "livenessProbe" not in sidecar and "startupProbe" not in sidecar
    assert sidecar["args"][0] == "supervise" and sidecar["args"][sidecar["args"].index("--") + 1] == "serve"
    assert not pod.get("initContainers")  # a native sidecar's readiness counts too, and an unpullable one blocks vLLM's start
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {"fsGroup": 10001, "fsGroupChangePolicy": "OnRootMismatch"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes["vllm-logs"]
    assert all(any(m["name"] == "vllm-logs" for m in c["volumeMounts"]) for c in pod["containers"])
    # the sidecar's state outlives the pod: a claim per replica, mounted where --state-dir points
    claims = {c["metadata"]["name"]: c for c in workload["spec"]["volumeClaimTemplates"]}
    state_dir = sidecar["args"][sidecar["args"].index("--state-dir") + 1]
    assert workload["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Delete"}
    assert "sidecar-state" in claims and "sidecar-state" not in volumes
    assert {"name": "sidecar-state", "mountPath": state_dir} in sidecar["volumeMounts"]
    policy = files["networkpolicy.yaml"]["spec"]
    metrics_rule = next(rule for rule in policy["ingress"] if rule["ports"][0]["port"] == 9847)
    assert [peer["podSelector"]["matchLabels"] for peer in metrics_rule["from"]] == [
        {"app.kubernetes.io/name": "prometheus"}, {"app.kubernetes.io/name": "prometheus-agent"}]
    if variant == "gpu":
        vllm = next(c for c in pod["containers"] if c["name"] == "vllm")
        assert vllm["resources"]["limits"]["nvidia.com/gpu"] == "1"
