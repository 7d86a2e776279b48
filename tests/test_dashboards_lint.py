"""Lint the committed dashboards, with rules named after kubernetes-mixin's dashboard linter."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from exporter import metric_names

ROOT = Path(__file__).parent.parent
DASHBOARDS = {p.name: json.loads(p.read_text()) for p in sorted((ROOT / "dashboards").glob("*.json"))}
RECORDED = {
    rule["record"]
    for group in yaml.safe_load((ROOT / "deploy/prometheus/specdecode.rules.yml").read_text())["groups"]
    for rule in group["rules"]
}
VLLM_FAMILIES = {spec.sample_name for spec in metric_names.VLLM}
KNOWN = RECORDED | VLLM_FAMILIES | {spec.sample_name for spec in metric_names.ALL} | {"ALERTS"}
PROMQL_WORDS = {"sum", "by", "count", "rate", "max", "min", "on", "ignoring", "group_left", "label_replace", "increase", "offset", "and", "or", "unless"}


def panels():
    return [(name, panel) for name, dashboard in DASHBOARDS.items() for panel in dashboard["panels"]]


def test_two_dashboards_with_stable_uids_not_vllms():
    """The uid is derived from the configuration (the tenant's namespace: tests/test_tenancy.py), never vLLM's."""
    assert {d["uid"] for d in DASHBOARDS.values()} == {"specdecode-fleet-inference", "specdecode-server-inference"}
    assert "vllm-spec-decode" not in {d["uid"] for d in DASHBOARDS.values()}
    assert all(len(d["uid"]) <= 40 for d in DASHBOARDS.values())  # Grafana's limit


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_template_datasource_and_variables(name):
    variables = {v["name"]: v for v in DASHBOARDS[name]["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert {"job", "namespace", "pod", "model", "engine"} <= set(variables)


@pytest.mark.parametrize("name, panel", panels(), ids=lambda p: p["title"] if isinstance(p, dict) else p)
def test_panel_rules(name, panel):
    assert panel["description"], "panel-description"
    assert panel["fieldConfig"]["defaults"]["unit"], "panel-units"
    assert panel["fieldConfig"]["defaults"]["noValue"] == "No traffic"
    assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, "panel-datasource"
    for target in panel["targets"]:
        expr = target["expr"]
        assert target["datasource"]["uid"] == "${datasource}", "target-datasource"
        for window in re.findall(r"rate\([^\[]*\[([^\]]+)\]", expr):
            assert window == "$__rate_interval", f"target-rate-interval: {expr}"
        names = {n for n in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*[{\[(]|\s*$|\s*[<>=!)])", expr) if ":" in n or n.startswith(("specdecode_", "vllm", "ALERTS"))}
        unknown = {n for n in names - PROMQL_WORDS if n not in KNOWN}
        assert unknown == set(), f"unknown metrics in {panel['title']}: {unknown}"


def test_panel_ids_are_unique_and_grid_fits():
    for dashboard in DASHBOARDS.values():
        ids = [p["id"] for p in dashboard["panels"]]
        assert len(ids) == len(set(ids))
        assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in dashboard["panels"])


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_replicas_are_told_apart(name):
    """pod and instance variables; configured k counted per replica, then max/min — never summed across replicas."""
    variables = {v["name"] for v in DASHBOARDS[name]["templating"]["list"]}
    assert {"namespace", "pod"} <= variables
    k_exprs = [t["expr"] for n, p in panels() if n == name for t in p["targets"] if "accepted_tokens_per_pos" in t["expr"] and "count" in t["expr"]]
    assert k_exprs
    for expr in k_exprs:
        inner = re.search(r"count by \(([^)]*)\)", expr)
        assert inner and {"pod", "instance"} <= {label.strip() for label in inner.group(1).split(",")}, expr
        assert not re.match(r"\s*(sum|avg) ", expr), f"k of several replicas summed: {expr}"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_not_scraped_is_shown_apart_from_no_traffic(name):
    scraped = next(p for p in DASHBOARDS[name]["panels"] if p["title"] == "Scraped")
    assert scraped["targets"][0]["expr"].endswith("or vector(0)")  # 0 series, not no data
    mapping = scraped["fieldConfig"]["defaults"]["mappings"][0]["options"]["0"]
    assert mapping["text"] == "Not scraped"
    assert any("up{" in t["expr"] for p in DASHBOARDS[name]["panels"] for t in p["targets"])
