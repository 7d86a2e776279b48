"""The knobs an operator needs, in the one config, each checked by the schema it ends up in (issue 34):
static alert labels, a PodDisruptionBudget, node selector and tolerations, image pull secrets, a
priority class, the scrapers the NetworkPolicy admits, the claims' retention and a shared model cache.
Also what the sidecar's resources and image promise: a memory request above the measured RSS, and an
image a release workflow publishes where the config names it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from test_operator_objects import CRDS, strict

from exporter import __version__
from exporter.mixin.alerts import alerts
from exporter.mixin.config import DEFAULT, load
from exporter.mixin.kubernetes import manifests

ROOT = Path(__file__).parent.parent
KNOBS = """
[prometheus]
alert_labels = { team = "inference-platform", tier = "1" }

[kubernetes]
replicas = 2
node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H200" }
tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
image_pull_secrets = ["mirror-credentials"]
priority_class = "inference-critical"
pod_disruption_budget = { maxUnavailable = 1 }
scrapers = [{ "app.kubernetes.io/name" = "prometheus" }, { "app.kubernetes.io/name" = "alloy" }]
claim_retention = { whenDeleted = "Delete", whenScaled = "Retain" }
model_cache_claim = "shared-hf-cache"
sidecar_image = "registry.internal:5000/mirror/specdecode-exporter:0.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
"""


@pytest.fixture(scope="module")
def knobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("knobs") / "knobs.toml"
    path.write_text(KNOBS)
    return path


def validate(manifest: dict) -> None:  # type: ignore[type-arg]
    key = (manifest["apiVersion"], manifest["kind"])
    if key in CRDS:
        jsonschema.validate(manifest, strict(CRDS[key]))
    else:
        kubernetes_validate.validate(manifest, desired_version=kubernetes_validate.latest_version(), strict=True)


@pytest.mark.slow  # kubernetes-validate loads the schemas
def test_every_knob_lands_where_it_belongs_and_validates(knobs):
    config = load(knobs)
    files = manifests(config)
    for manifest in files.values():
        validate(manifest)
    pod = files["statefulset.yaml"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H200"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["imagePullSecrets"] == [{"name": "mirror-credentials"}] and pod["priorityClassName"] == "inference-critical"
    assert {"name": "hf-cache", "persistentVolumeClaim": {"claimName": "shared-hf-cache"}} in pod["volumes"]
    claims = {c["metadata"]["name"] for c in files["statefulset.yaml"]["spec"]["volumeClaimTemplates"]}
    assert claims == {"sidecar-state"}  # the model cache is the shared claim, not one per replica
    assert files["statefulset.yaml"]["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    sidecar = next(c for c in pod["containers"] if c["name"] == "specdecode-exporter")
    assert sidecar["image"].startswith("registry.internal:5000/mirror/") and "@sha256:" in sidecar["image"]
    assert files["poddisruptionbudget.yaml"]["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": dict(config.pod_selector)}}
    admitted = files["networkpolicy.yaml"]["spec"]["ingress"][0]["from"]
    assert [peer["podSelector"]["matchLabels"] for peer in admitted] == [{"app.kubernetes.io/name": "prometheus"}, {"app.kubernetes.io/name": "alloy"}]
    for rule in files["prometheusrule.yaml"]["spec"]["groups"][-1]["rules"]:
        assert rule["labels"]["team"] == "inference-platform" and rule["labels"]["tier"] == "1"
    assert {a["alert"] for a in alerts(config)} == set(config.alerts)  # every alert, a later one too, gets them


@pytest.mark.slow
@pytest.mark.parametrize("wrong, field", [
    ("pod_disruption_budget = { maxUnavailabel = 1 }", "maxUnavailabel"),
    ('node_selector = { zone = 3 }', "3"),
    ('tolerations = [{ key = "nvidia.com/gpu", tolerationSeconds = "soon" }]', "soon"),
    ('image_pull_secrets = [{ name = "mirror" }]', "name"),
])
def test_a_knob_of_the_wrong_shape_is_refused_by_the_schema(tmp_path, wrong, field):
    path = tmp_path / "wrong.toml"
    path.write_text(f"[kubernetes]\n{wrong}\n")
    files = manifests(load(path))
    with pytest.raises(kubernetes_validate.ValidationError) as refused:  # type: ignore[attr-defined]
        for manifest in files.values():
            validate(manifest)
    assert field in str(refused.value)


@pytest.mark.parametrize("wrong, says", [
    ('[kubernetes]\ntolerations = [{ key = "nvidia.com/gpu", operator = "Sometimes" }]', "operator must be one of Exists, Equal"),
    ('[kubernetes]\nclaim_retention = { whenDeleted = "Archive" }', "whenDeleted must be Retain or Delete"),
    ('[prometheus]\nalert_labels = { "bad label" = "x" }', "'bad label' is not a Prometheus label name"),
])
def test_what_the_schemas_leave_to_admission_is_refused_by_the_config(tmp_path, wrong, says):
    """Enum values and label names: the OpenAPI schemas take any string; the API server or Prometheus would refuse later."""
    from exporter.config import ConfigError

    path = tmp_path / "wrong.toml"
    path.write_text(wrong + "\n")
    with pytest.raises(ConfigError, match=re.escape(says)):
        load(path)


def test_no_knob_set_writes_none_of_them():
    files = manifests(DEFAULT)
    pod = files["statefulset.yaml"]["spec"]["template"]["spec"]
    assert not {"nodeSelector", "tolerations", "imagePullSecrets", "priorityClassName"} & set(pod)
    assert "poddisruptionbudget.yaml" not in files


def test_the_memory_request_sits_above_the_measured_peak_rss():
    """benchmarks/RESULTS.md: the sidecar's peak RSS with hostile targets; the request is above it, the limit above that."""
    results = (ROOT / "benchmarks/RESULTS.md").read_text()
    peak = re.search(r"^\| hostile targets \| .*peak RSS \| (\d+) MiB \| (\d+) MiB \(the good target alone\)", results, re.M)
    assert peak, "the hostile-targets row of benchmarks/RESULTS.md"
    worst, alone = int(peak.group(1)), int(peak.group(2))

    def mib(quantity: str) -> float:
        number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
        return int(number) * (1024 if unit == "Gi" else 1)

    resources = DEFAULT.sidecar_resources
    assert mib(resources["requests"]["memory"]) > worst > alone
    assert mib(resources["limits"]["memory"]) >= 2 * worst
    assert f"{worst} MiB" in (ROOT / "exporter/mixin/defaults.toml").read_text()  # the figure is cited where the request is set


def test_the_release_workflow_publishes_the_image_the_config_names_with_its_digest():
    workflow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    owner = re.search(r"github\.com/([^/]+)/", DEFAULT.runbook_url).group(1)  # type: ignore[union-attr]
    image = workflow["env"]["IMAGE"].replace("${{ github.repository_owner }}", owner)
    repository, _, tag = DEFAULT.sidecar_image.partition(":")
    assert image == repository and tag == __version__
    steps = workflow["jobs"]["image"]["steps"]
    push = next(s for s in steps if s.get("uses", "").startswith("docker/build-push-action"))
    assert push["with"]["push"] is True and push["with"]["file"] == "Dockerfile"
    assert push["with"]["tags"] == "${{ env.IMAGE }}:${{ steps.version.outputs.version }}"
    version_check = next(s for s in steps if s.get("id") == "version")["run"]
    assert "exporter/__init__.py" in version_check and 'v${version}' in version_check
    assert any("steps.push.outputs.digest" in json.dumps(s) and "image.txt" in json.dumps(s) for s in steps)
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML reads the key `on` as true
