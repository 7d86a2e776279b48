"""Every alert keeps the labels the operator routes on, tried on series labelled as Kubernetes labels them.

The committed promtool tests (deploy/prometheus/tests/) are rewritten as if kube-prometheus-stack's
PodMonitor had scraped their servers: each target gets `pod`, `container` and `endpoint` (beside
the `namespace` they carry already). The same alerts must fire, now carrying `namespace` and `pod`
(the raw-gauge alerts also `container` and `endpoint`: they aggregate nothing) and no longer the
`instance` (a replaced pod's new address must not make a new alert), with summaries naming
`namespace/pod` instead of the address. Run by the real promtool against the committed rule files.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow  # promtool as a process

ROOT = Path(__file__).parent.parent
TESTS = sorted((ROOT / "deploy/prometheus/tests").glob("*-test.yaml"))
ALERTS = {rule["alert"]: rule for group in yaml.safe_load((ROOT / "deploy/prometheus/specdecode.alerts.yml").read_text())["groups"]
          for rule in group["rules"]}
NAMESPACE = "inference"


def pod_of(instance: str) -> str:
    return "vllm-specdecode-" + re.sub(r"[^a-z0-9]+", "-", instance.split(":")[0].lower())


def scrape_labels(instance: str) -> dict[str, str]:
    return {"namespace": NAMESPACE, "pod": pod_of(instance), "container": "vllm", "endpoint": "http"}


def relabel(series: str) -> str:
    match = re.search(r'instance="([^"]+)"', series)
    if not match or 'pod="' in series:
        return series
    extra = ",".join(f'{k}="{v}"' for k, v in scrape_labels(match.group(1)).items() if f'{k}="' not in series)
    return series.replace("{", "{" + extra + ",", 1)


def aggregated(alert: str) -> bool:
    """Whether the alert reads a recording rule or a sum (which keep the topology labels, not container/endpoint)."""
    expr = ALERTS[alert]["expr"]
    inner = re.sub(r"^(max|min|count) without \([^)]*\) \((label_replace\()*\(*", "", expr)
    return re.match(r"(sum|min|max) by|[a-z_]+:[a-z0-9_]+:", inner) is not None


def expected(alert: str, case: dict[str, Any]) -> dict[str, Any]:
    if "instance" not in case["exp_labels"]:  # written with pods already (integration-test.yaml)
        return case
    instance = case["exp_labels"]["instance"]
    labels = scrape_labels(instance)
    if aggregated(alert):
        labels = {k: labels[k] for k in ("namespace", "pod")}
    annotations = dict(case["exp_annotations"])
    assert instance in annotations["summary"], f"{alert}'s summary should name the server: {annotations['summary']}"
    annotations["summary"] = annotations["summary"].replace(instance, f"{NAMESPACE}/{labels['pod']}")
    kept = {k: v for k, v in case["exp_labels"].items() if k != "instance"}  # the pod names the server: no address
    return {"exp_labels": {**kept, **labels}, "exp_annotations": annotations}


def operator_labelled(path: Path) -> tuple[dict[str, Any], set[str]]:
    document = yaml.safe_load(path.read_text())
    document["rule_files"] = [str((path.parent / f).resolve()) for f in document["rule_files"]]
    fired: set[str] = set()
    for test in document["tests"]:
        for series in test["input_series"]:
            series["series"] = relabel(series["series"])
        test.pop("promql_expr_test", None)  # their expected samples name the old labels; the originals check the values
        for case in test.get("alert_rule_test", []):
            case["exp_alerts"] = [expected(case["alertname"], alert) for alert in case["exp_alerts"]]
            if case["exp_alerts"]:
                fired.add(case["alertname"])
    return document, fired


def test_every_alert_fires_with_namespace_and_pod_and_names_the_pod(tmp_path):
    tool = shutil.which("promtool")
    assert tool, "promtool missing: scripts/test installs Debian's prometheus"
    fired: set[str] = set()
    files = []
    for path in TESTS:
        document, names = operator_labelled(path)
        fired |= names
        out = tmp_path / path.name
        out.write_text(yaml.safe_dump(document, sort_keys=False, width=1 << 20))
        files.append(str(out))
    assert fired == set(ALERTS), "every alert has a firing case here"
    result = subprocess.run([tool, "test", "rules", *files], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr
    assert result.stdout.count("SUCCESS") == len(files)


def test_the_rewrite_changes_what_the_alerts_must_carry():
    original = yaml.safe_load(TESTS[0].read_text())
    document, _ = operator_labelled(TESTS[0])
    cases = [(a, b) for t0, t1 in zip(original["tests"], document["tests"], strict=True)
             for a, b in zip(t0.get("alert_rule_test", []), t1.get("alert_rule_test", []), strict=True) if a["exp_alerts"]]
    assert cases and all(b["exp_alerts"][0]["exp_labels"]["pod"].startswith("vllm-specdecode-") for _, b in cases)
    assert all("instance" not in b["exp_alerts"][0]["exp_labels"] for _, b in cases)
    assert all(copy.deepcopy(a) != b for a, b in cases)
