"""promtool over the committed rules: `check rules` (syntax, lint) and `test rules` (the unit tests)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from exporter.mixin.config import DEFAULT

pytestmark = pytest.mark.slow  # promtool over days of series

ROOT = Path(__file__).parent.parent
RULES = sorted((ROOT / "deploy" / "prometheus").glob("specdecode.*.yml"))
TESTS = sorted((ROOT / "deploy" / "prometheus" / "tests").glob("*-test.yaml"))


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool missing: scripts/test installs Debian's prometheus"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_there_are_rule_files_and_tests():
    assert {p.name for p in RULES} >= {"specdecode.rules.yml", "specdecode.alerts.yml"}
    assert TESTS


def test_promtool_check_rules():
    result = promtool("check", "rules", *map(str, RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_test_rules():
    result = promtool("test", "rules", *map(str, TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(TESTS)


def test_every_alert_has_a_firing_and_a_quiet_case():
    import yaml

    alerts = [rule["alert"] for group in yaml.safe_load((ROOT / "deploy/prometheus/specdecode.alerts.yml").read_text())["groups"] for rule in group["rules"]]
    cases: dict[str, set[str]] = {name: set() for name in alerts}
    for path in TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                cases[case["alertname"]].add("fires" if case["exp_alerts"] else "quiet")
    assert {name: kinds for name, kinds in cases.items() if kinds != {"fires", "quiet"}} == {}


def test_every_alert_has_a_runbook_section_with_meaning_confirmation_checks_and_cost():
    import re

    import yaml

    runbook = (ROOT / "docs" / "runbook.md").read_text()
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", runbook, re.DOTALL | re.MULTILINE))
    for group in yaml.safe_load((ROOT / "deploy/prometheus/specdecode.alerts.yml").read_text())["groups"]:
        for rule in group["rules"]:
            name = rule["alert"]
            assert name in sections, f"no runbook section for {name}"
            assert rule["annotations"]["runbook_url"] == DEFAULT.runbook(name) and DEFAULT.runbook(name).endswith(f"/docs/runbook.md#{name.lower()}")
            assert all(part in sections[name] for part in ("**Means:**", "**Confirm:**", "**Check, in order:**", "**Cost:**")), name
            assert {"severity"} <= set(rule["labels"]) and {"summary", "description"} <= set(rule["annotations"])


def test_provisioning_configs_are_valid():
    result = promtool("check", "config", "deploy/prometheus/prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    amtool = shutil.which("amtool")
    assert amtool, "amtool missing: scripts/test installs Debian's prometheus-alertmanager"
    checked = subprocess.run([amtool, "check-config", "deploy/alertmanager/alertmanager.yml"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    import yaml

    datasource = yaml.safe_load((ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text())
    assert datasource["datasources"][0]["type"] == "prometheus"
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/specdecode.yml").read_text())
    assert provider["providers"][0]["folder"] == "Speculative decoding"


def _string_literals(tree):  # type: ignore[no-untyped-def]
    """Every string constant of a module except docstrings (which may quote names as examples)."""
    import ast

    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body and isinstance(node.body[0], ast.Expr)
    }
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_mixin_takes_metric_names_from_the_catalogue():
    import ast
    import re

    hand_written = {
        path.name: found
        for path in sorted((ROOT / "exporter" / "mixin").glob("*.py"))
        if (found := [m for s in _string_literals(ast.parse(path.read_text())) for m in re.findall(r"vllm:[a-z_]+|\bspecdecode_[a-z_]+", s)])
    }
    assert hand_written == {}


def test_every_metric_the_rules_read_is_catalogued_or_recorded():
    import re

    import yaml

    from exporter import metric_names

    groups = [group for path in RULES for group in yaml.safe_load(path.read_text())["groups"]]
    records = {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}
    catalogue = {spec.sample_name for spec in (*metric_names.ALL, *metric_names.VLLM)}
    read = {
        token
        for group in groups
        for rule in group["rules"]
        for text in (rule["expr"], *rule.get("annotations", {}).values())
        for token in re.findall(r"\b(?:vllm:[a-z_]+|specdecode_[a-z_]+|[a-z_]+:[a-z0-9_]+:[a-z0-9_]+)", text)
    }
    assert read - records - catalogue == set()
    assert {metric_names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name, metric_names.HEALTH_SINCE.name} <= read
