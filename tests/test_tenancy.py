"""Scoped to the tenant by default (issue 34): two teams' copies of the mixin in one Prometheus and one
Grafana never read, record over or page each other, and another team's vLLM without speculation
stays quiet.

promtool runs both copies side by side on one set of series; the dashboards and the Kubernetes objects
are checked as rendered. The same holds in a real Prometheus with four copies loaded
(tests/test_prometheus_integration.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import DEFAULT, MixinConfig
from exporter.mixin.dashboards import dashboards
from exporter.mixin.kubernetes import manifests
from exporter.mixin.rules import recording_rule_groups

# team a: the shipped floor; team b: a stricter floor (L 3.0) and its own rate window, so each copy's
# records can be told apart by name and every one of them checked for the namespace it carries
TEAM_A = replace(DEFAULT, namespace="team-a", alert_labels={"team": "team-a"})
TEAM_B = replace(DEFAULT, namespace="team-b", alert_labels={"team": "team-b"}, acceptance_length_floor=3.0, rate_window="10m")


def vllm(namespace: str, job: str, pod: str, per_minute: tuple[int, int, int] | None, generated: int = 9000) -> list[dict[str, str]]:
    """A vLLM pod scraped by a PodMonitor: drafts, accepted and per-position counts a minute (None: no speculation)."""
    labels = f'namespace="{namespace}",job="{job}",pod="{pod}",container="vllm",endpoint="http",instance="{pod}:8000",model_name="m",engine="0"'
    series = [{"series": f"vllm:generation_tokens_total{{{labels}}}", "values": f"0+{generated}x40"}]
    if per_minute:
        drafts, accepted, position0 = per_minute
        series += [
            {"series": f"vllm:spec_decode_num_drafts_total{{{labels}}}", "values": f"0+{drafts}x40"},
            {"series": f"vllm:spec_decode_num_draft_tokens_total{{{labels}}}", "values": f"0+{drafts * 2}x40"},
            {"series": f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}}", "values": f"0+{accepted}x40"},
            {"series": f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="0"}}', "values": f"0+{position0}x40"},
            {"series": f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="1"}}', "values": f"0+{accepted - position0}x40"},
        ]
    return series


def render(config: MixinConfig, directory: Path) -> str:
    path = directory / f"{config.namespace}.rules.yml"
    path.write_text(yaml.safe_dump({"groups": recording_rule_groups(config) + alert_groups(config)}, sort_keys=False, width=1 << 20))
    return str(path)


@pytest.mark.slow  # promtool
def test_two_teams_copies_never_page_or_record_over_each_other_and_a_plain_vllm_stays_quiet(tmp_path):
    # L = 1 + 8400/6000 = 2.4 for both teams: fine under team a's floor (1.5), too low under team b's (3.0)
    series = [
        *vllm("team-a", "team-a/vllm-specdecode", "vllm-a-0", (6000, 8400, 4800)),
        *vllm("team-b", "team-b/vllm-specdecode", "vllm-b-0", (6000, 8400, 4800)),
        # another team's vLLM serving without speculation: it generates and never drafts
        *vllm("chat", "chat/vllm", "vllm-chat-0", None),
        # and team a's own plain vLLM job, which never drafted either
        *vllm("team-a", "team-a/vllm-plain", "vllm-plain-0", None),
    ]
    both = 'namespace=~"team-a|team-b|chat"'
    checks = [
        # each copy's records carry its own namespace only (team b's are the rate10m ones)
        {"expr": 'count({__name__=~".+:.+:.*rate10m", namespace!="team-b"})', "eval_time": "30m", "exp_samples": []},
        {"expr": 'count({__name__=~".+:.+:.*rate5m", namespace!="team-a"})', "eval_time": "30m", "exp_samples": []},
        {"expr": 'count({__name__=~".+:.+:.*rate10m"}) > bool 0', "eval_time": "30m", "exp_samples": [{"labels": "{}", "value": 1}]},
        {"expr": 'count({__name__=~".+:.+:.*rate5m"}) > bool 0', "eval_time": "30m", "exp_samples": [{"labels": "{}", "value": 1}]},
        # model-level records keep the namespace: two teams serving model "m" are never pooled
        {"expr": "model:vllm_spec_decode_mean_acceptance_length:ratio_rate5m", "eval_time": "30m",
         "exp_samples": [{"labels": 'model:vllm_spec_decode_mean_acceptance_length:ratio_rate5m{namespace="team-a", model_name="m"}', "value": 2.4}]},
        {"expr": "model:vllm_spec_decode_mean_acceptance_length:ratio_rate10m", "eval_time": "30m",
         "exp_samples": [{"labels": 'model:vllm_spec_decode_mean_acceptance_length:ratio_rate10m{namespace="team-b", model_name="m"}', "value": 2.4}]},
        # nothing ever pending or firing for team a or chat; every alert carries its own copy's team
        {"expr": 'count_over_time(ALERTS{namespace=~"team-a|chat"}[40m])', "eval_time": "40m", "exp_samples": []},
        {"expr": f'count_over_time(ALERTS{{{both}, team!=""}}[40m]) unless on(namespace, team) '
                 f'label_replace(count_over_time(ALERTS{{{both}}}[40m]), "team", "$1", "namespace", "(.+)")',
         "eval_time": "40m", "exp_samples": []},
    ]
    alerts = [
        {"eval_time": "30m", "alertname": "SpecDecodeAcceptanceLengthLow", "exp_alerts": [{
            "exp_labels": {"severity": "warning", "team": "team-b", "namespace": "team-b", "pod": "vllm-b-0", "job": "team-b/vllm-specdecode",
                           "model_name": "m", "engine": "0"},
            "exp_annotations": {
                "summary": "Speculative decoding barely pays off on team-b/vllm-b-0 (m, engine 0)",
                "description": "Mean acceptance length has been 2.40 tokens per step over 10m (floor 3.0): most drafted tokens are rejected.",
                "runbook_url": DEFAULT.runbook("SpecDecodeAcceptanceLengthLow")}}]},
        {"eval_time": "40m", "alertname": "SpecDecodeDataAbsent", "exp_alerts": []},
    ]
    test = {"rule_files": [render(TEAM_A, tmp_path), render(TEAM_B, tmp_path)], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks, "alert_rule_test": alerts}]}
    path = tmp_path / "tenancy-test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False, width=1 << 20))
    tool = shutil.which("promtool")
    assert tool, "promtool missing: scripts/test installs Debian's prometheus"
    result = subprocess.run([tool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr


def test_every_selector_of_a_copy_is_its_tenants():
    """Every raw metric and record a rule or alert reads carries the tenant's matcher (ALERTS included)."""
    groups = recording_rule_groups(TEAM_A) + alert_groups(TEAM_A)
    unscoped, read = [], 0
    for group in groups:
        for rule in group["rules"]:
            pattern = r"\b(vllm:[a-z_:]+|specdecode_[a-z_]+|[a-z_]+:[a-z0-9_]+:[a-z0-9_]+|ALERTS|up)(\{[^}]*\})?(?![a-z0-9_:(])"
            for name, matchers in re.findall(pattern, rule["expr"]):
                read += 1
                if 'namespace="team-a"' not in matchers:
                    unscoped.append((rule.get("record", rule.get("alert")), name + matchers))
    assert unscoped == [] and read > 200


def test_dashboards_of_two_copies_load_side_by_side_and_read_their_tenant():
    a, b = dashboards(TEAM_A), dashboards(TEAM_B)
    assert {d["uid"] for d in a.values()}.isdisjoint(d["uid"] for d in b.values())
    assert {d["title"] for d in a.values()}.isdisjoint(d["title"] for d in b.values())  # one folder holds one of a title
    assert {d["uid"] for d in a.values()} == {d["uid"] for d in dashboards(TEAM_A).values()}  # derived, so stable
    assert all(len(d["uid"]) <= 40 for d in (*a.values(), *b.values()))
    long = replace(DEFAULT, namespace="a-namespace-whose-name-is-too-long-for-a-uid")
    assert all(len(d["uid"]) <= 40 and d["uid"].startswith("specdecode-") for d in dashboards(long).values())
    for dashboard in a.values():
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                assert 'namespace="team-a"' in target["expr"], (panel["title"], target["expr"])
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                assert 'namespace="team-a"' in variable["definition"], variable["definition"]
    fleet = a["specdecode-fleet.json"]
    model_panel = next(p for p in fleet["panels"] if p["title"] == "Mean acceptance length by model")
    assert model_panel["targets"][0]["legendFormat"] == "{{namespace}}/{{model_name}}"


def test_every_kubernetes_object_lives_in_the_tenants_namespace():
    for config in (TEAM_A, replace(DEFAULT, namespace="team-a", workload="simulator"), replace(DEFAULT, namespace="team-a", workload="none")):
        for name, obj in manifests(config).items():
            assert obj["metadata"]["namespace"] == "team-a", name
    assert all("namespace" not in obj["metadata"] for obj in manifests(replace(DEFAULT, namespace="")).values())
