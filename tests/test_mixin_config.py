"""The mixin's config file: defaults, presets, errors that name the key, and the `mixin` command."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from exporter.cli.main import main
from exporter.config import ConfigError
from exporter.mixin.alerts import alerts
from exporter.mixin.build import artefacts
from exporter.mixin.config import DEFAULT, load
from exporter.mixin.kubernetes import manifests

ROOT = Path(__file__).parent.parent
PRESETS = sorted((ROOT / "deploy/mixin").glob("*.toml"))


def test_every_generated_alert_has_settings_and_every_setting_an_alert():
    assert {alert["alert"] for alert in alerts(DEFAULT)} == set(DEFAULT.alerts)


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_preset_loads_and_renders(preset):
    assert artefacts(load(preset))


def test_kube_prometheus_stack_selects_by_release_and_kube_prometheus_by_its_labels():
    stack = manifests(load(ROOT / "deploy/mixin/kube-prometheus-stack.toml"))
    for name in ("podmonitor.yaml", "prometheusrule.yaml", "alertmanagerconfig.yaml"):
        assert stack[name]["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert manifests(DEFAULT)["podmonitor.yaml"]["metadata"]["labels"]["release"] == "kube-prometheus-stack"  # out of the box
    kp = manifests(load(ROOT / "deploy/mixin/kube-prometheus.toml"))["prometheusrule.yaml"]["metadata"]["labels"]
    assert kp["prometheus"] == "k8s" and kp["role"] == "alert-rules" and "release" not in kp


@pytest.mark.parametrize("preset, job", [("production-stack", ".+-engine-service"), ("llm-d", ".+-decode-podmonitor")])
def test_an_existing_scrape_is_reused_not_doubled(preset, job):
    config = load(ROOT / f"deploy/mixin/{preset}.toml")
    files = manifests(config)
    endpoints = files["podmonitor.yaml"]["spec"]["podMetricsEndpoints"]
    assert [e["port"] for e in endpoints] == ["specdecode"]  # the sidecar only: vLLM is theirs to scrape
    assert "statefulset.yaml" not in files and "networkpolicy.yaml" not in files
    rules = [rule for group in files["prometheusrule.yaml"]["spec"]["groups"] for rule in group["rules"]]
    raw = [rule["expr"] for rule in rules if "vllm:" in rule["expr"]]
    assert raw and all(f'job=~"{job}"' in expr for expr in raw)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, says", [
    ("[thresholds]\nrelative_dorp = 0.2\n", "unknown key 'relative_dorp' in [thresholds]"),
    ("[threshold]\nrelative_drop = 0.2\n", "unknown table [threshold]"),
    ("[thresholds]\nrelative_drop = '20%'\n", "[thresholds] relative_drop must be a float"),
    ("[alerts.SpecDecodeNope]\nfor = '1m'\n", "unknown alert [alerts.SpecDecodeNope]"),
    ("[alerts.SpecDecodeLogStale]\nfor = 5\n", "[alerts.SpecDecodeLogStale]"),
    ("[links]\nrunbook_url = 'docs/runbook.md#{anchor}'\n", "runbook_url must be an absolute"),
    ("[windows]\nrate_window = 'five minutes'\n", "rate_window: not a duration"),
    ("[kubernetes]\nscrape_vllm = 'no'\n", "scrape_vllm must be a bool"),
    ("[prometheus\n", "not valid TOML"),
])
def test_bad_config_is_an_error_naming_the_key(tmp_path, text, says):
    with pytest.raises(ConfigError) as error:
        load(write(tmp_path, text))
    assert says in str(error.value) and "mine.toml" in str(error.value)


def test_a_file_changes_only_what_it_names(tmp_path):
    config = load(write(tmp_path, "[alerts.SpecDecodeAcceptanceDropped]\nseverity = 'critical'\n[prometheus]\ntopology_labels = ['namespace', 'pod', 'cluster']\n"))
    assert config.alerts["SpecDecodeAcceptanceDropped"].severity == "critical"
    assert config.alerts["SpecDecodeAcceptanceDropped"].for_ == DEFAULT.alerts["SpecDecodeAcceptanceDropped"].for_
    assert config.topology_labels == ("namespace", "pod", "cluster") and config.relative_drop == DEFAULT.relative_drop
    dropped = next(a for a in alerts(config) if a["alert"] == "SpecDecodeAcceptanceDropped")
    assert dropped["labels"]["severity"] == "critical" and "cluster" in dropped["expr"]


def test_the_command_writes_what_the_config_renders(tmp_path):
    result = CliRunner().invoke(main, ["mixin", "--config", str(ROOT / "deploy/mixin/llm-d.toml"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    expected = artefacts(load(ROOT / "deploy/mixin/llm-d.toml"))
    assert sorted(result.output.split()) == sorted(str(tmp_path / p) for p in expected)
    assert all((tmp_path / p).read_text() == content for p, content in expected.items())
    assert yaml.safe_load((tmp_path / "kubernetes/kustomization.yaml").read_text())["resources"]


def test_the_command_refuses_a_bad_config_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["mixin", "--config", str(write(tmp_path, "[nope]\n")), "--out", str(out)])
    assert result.exit_code == 2 and "unknown table [nope]" in result.output and not out.exists()


def test_print_defaults_is_the_shipped_file():
    result = CliRunner().invoke(main, ["mixin", "--print-defaults"])
    assert result.exit_code == 0 and "[alerts.SpecDecodeAcceptanceDropped]" in result.output and "runbook_url" in result.output
