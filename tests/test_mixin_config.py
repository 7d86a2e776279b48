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


def test_one_release_setting_labels_both_monitors_and_the_rules():
    """monitor_labels is the one setting: our PodMonitor, our PrometheusRule and the chart's vLLM monitor
    (chart-values.yaml) carry it; the AlertmanagerConfig needs none (both stacks select every one)."""
    for config in (DEFAULT, load(ROOT / "deploy/mixin/kube-prometheus-stack.toml")):
        stack = manifests(config)
        for name in ("podmonitor.yaml", "prometheusrule.yaml"):
            assert stack[name]["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert "release" not in stack["alertmanagerconfig.yaml"]["metadata"]["labels"]
    mine = load_text("[kubernetes]\nmonitor_labels = { release = 'monitoring' }\nchart = 'llm-d'\nscrape_vllm = false\nworkload = 'none'\n")
    files = artefacts(mine)
    values = yaml.safe_load(files["deploy/kubernetes/gpu/chart-values.yaml"])
    assert values == {"decode": {"monitoring": {"podmonitor": {"enabled": True, "labels": {"release": "monitoring"}}}}}
    assert manifests(mine)["podmonitor.yaml"]["metadata"]["labels"]["release"] == "monitoring"
    kp = manifests(load(ROOT / "deploy/mixin/kube-prometheus.toml"))
    assert kp["prometheus-rolebinding.yaml"]["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}]


def load_text(text: str) -> object:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "mine.toml"
        path.write_text(text)
        return load(path)


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
    ("[kubernetes]\npod_monitor_labels = {}\n", "[kubernetes] pod_monitor_labels is now [kubernetes] monitor_labels"),
    ("[kubernetes]\nsidecar_image = 'specdecode-exporter:0.1.0'\n", "names no registry"),
    ("[windows]\nkeep_firing_for = '15m'\n", "keep_firing_for (15m) must cover a restart"),
    ("[kubernetes]\nchart = 'llm-d'\n", "set scrape_vllm = false"),
    ("[kubernetes]\nchart = 'kserve'\n", "chart must be one of"),
    ("[prometheus]\ntopology_labels = ['pod']\n", "list it in topology_labels"),
    ("[kubernetes]\ntolerations = {}\n", "[kubernetes] tolerations must be a list"),
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


def test_generated_files_name_the_preset_that_made_them():
    assert artefacts(DEFAULT)["deploy/prometheus/specdecode.rules.yml"].startswith(
        "# Generated by `specdecode-exporter mixin` from exporter/mixin/defaults.toml:")
    for preset in PRESETS:
        for path, content in artefacts(load(preset)).items():
            if path.endswith((".yml", ".yaml")):
                assert content.startswith(f"# Generated by `specdecode-exporter mixin` from {preset.name} over exporter/mixin/defaults.toml:"), path


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
