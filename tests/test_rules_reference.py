"""promtool over days: the drop-off alerts keep firing for a sustained drop and stay quiet otherwise.

Each scenario is days of one-minute samples built in Python (tests/rule_series.py) and run by the
real `promtool test rules` against the committed rules, cut down to the alert under test and the
records it reads (same expressions). The scenarios run as parallel promtool processes.

Check times are the issue's: 1 h, 12 h, 26 h, 50 h and 74 h after the drop began (the drop begins
at 2 h). Beyond single instants, `count_over_time(ALERTS{…}[…])` proves an alert fired at every
evaluation of a span (firing throughout) or never even went pending (quiet throughout). The end of
the hold is shown with the same generator at hours-for-days scale.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from rule_series import (
    DEGRADED_K15,
    HEALTHY_K15,
    MINUTES_PER_HOUR,
    Phase,
    clock,
    gauge_values,
    geometric_rates,
    hours,
    promtool_tests,
    realistic_noise,
    rules_for,
    vllm_series,
)

from exporter import metric_names as names
from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import DEFAULT, MixinConfig
from exporter.mixin.rules import recording_rule_groups

pytestmark = pytest.mark.slow  # promtool over days of series, one process per scenario

ROOT = Path(__file__).parent.parent
RULE_FILES = [str(ROOT / "deploy/prometheus/specdecode.rules.yml"), str(ROOT / "deploy/prometheus/specdecode.alerts.yml")]
DROPPED = "SpecDecodeAcceptanceDropped"
BELOW = "SpecDecodeAcceptanceBelowReference"
DROP_AT = 2.0  # hours
CHECKS = [DROP_AT + h for h in (1, 12, 26, 50, 74)]
REFERENCE = "identity_model_engine_k:vllm_spec_decode_mean_acceptance_length:ratio_reference"
RUNBOOK = DEFAULT.runbook_url.removesuffix("#{anchor}")
IDENTITY = '{engine="0", job="vllm", model_name="m", namespace="inference", num_speculative_tokens="15"}'
NAMESPACE, POD_JOB = "inference", "inference/vllm-specdecode"  # the tenant (the rules read its series only); a PodMonitor's job
NGRAM_K3 = (0.45, 0.25, 0.12)  # a different drafter with k = 3: L = 1.82, 49% below the k = 15 level


def server(instance: str, job: str = "vllm") -> str:
    """A vLLM server of the tenant's namespace, scraped without pods (a plain scrape config)."""
    return f'namespace="{NAMESPACE}",job="{job}",instance="{instance}",model_name="m",engine="0"'


def pod(name: str, ip: str) -> str:
    """A vLLM container's series as kube-prometheus-stack's PodMonitor labels them."""
    return f'job="{POD_JOB}",namespace="{NAMESPACE}",pod="{name}",container="vllm",endpoint="http",instance="{ip}:8000",model_name="m",engine="0"'


def dropped_alert(instance: str, value: str, reference: str, k: int = 15, pod: str | None = None) -> dict[str, Any]:
    job = POD_JOB if pod else "vllm"
    where = {"pod": pod} if pod else {"instance": instance}  # the pod names the server: its address is not kept
    return {
        "exp_labels": {"severity": "warning", "job": job, "namespace": NAMESPACE, **where, "model_name": "m", "engine": "0",
                       "num_speculative_tokens": str(k)},
        "exp_annotations": {
            "summary": f"Speculative decoding acceptance dropped on {f'{NAMESPACE}/{pod}' if pod else instance} (m, engine 0)",
            "description": f"Mean acceptance length is {value} against {reference} for this config (k={k}): more than 30% fewer "
            f"accepted tokens per step than its best 1d within 7d, pooled over the replicas of {job}.",
            "runbook_url": f"{RUNBOOK}#specdecodeacceptancedropped",
        },
    }


def firing_throughout(alert: str, instance: str, start: float, end: float, label: str = "instance") -> dict[str, Any]:
    """Firing at every one-minute evaluation in (start, end] hours: as many samples as the `clock` series."""
    window = f"{round((end - start) * MINUTES_PER_HOUR)}m"
    return {
        "expr": f'count_over_time(ALERTS{{alertname="{alert}", alertstate="firing", {label}="{instance}"}}[{window}])'
        f" == bool on() count_over_time(clock[{window}])",
        "eval_time": hours(end),
        "exp_samples": [{"labels": "{}", "value": 1}],
    }


def never(alert: str, end: float, selector: str = "") -> dict[str, Any]:
    """Neither pending nor firing at any evaluation up to `end` hours."""
    extra = f", {selector}" if selector else ""
    window = round(end * MINUTES_PER_HOUR)
    return {"expr": f'count_over_time(ALERTS{{alertname="{alert}"{extra}}}[{window}m])', "eval_time": hours(end), "exp_samples": []}


def near(expr: str, value: float, labels: str, at: float, tolerance: float = 0.01) -> dict[str, Any]:
    return {"expr": f"abs({expr} - {value}) < bool {tolerance}", "eval_time": hours(at), "exp_samples": [{"labels": labels, "value": 1}]}


def drop() -> dict[str, Any]:
    """The issue's case: k = 15, 100 drafts/s, L 2.62 → 1.97 (every position × 0.6) for 74 h."""
    phases = [Phase(120, 100, HEALTHY_K15), Phase(74 * MINUTES_PER_HOUR, 100, DEGRADED_K15)]
    return {
        "name": "a drop that lasts days fires at every check and throughout",
        "input_series": vllm_series(server("a:8000"), phases),
        "alert_rule_test": [{"eval_time": hours(1.5), "alertname": DROPPED, "exp_alerts": []}]
        + [{"eval_time": hours(at), "alertname": DROPPED, "exp_alerts": [dropped_alert("a:8000", "1.97", "2.62")]} for at in CHECKS],
        "promql_expr_test": [firing_throughout(DROPPED, "a:8000", DROP_AT + 0.25, CHECKS[-1])],
    }


def restart() -> dict[str, Any]:
    """A restart in the middle of the drop: counters back to 0 (b), and back to 0 after 8 minutes down (c)."""
    healthy, first = Phase(120, 100, HEALTHY_K15), Phase(12 * MINUTES_PER_HOUR, 100, DEGRADED_K15)
    after = 14 * MINUTES_PER_HOUR
    return {
        "name": "a restart in the middle of a drop keeps the alert firing",
        "input_series": vllm_series(server("b:8000"), [healthy, first, Phase(after, 100, DEGRADED_K15, restart=True)])
        + vllm_series(server("c:8000"), [healthy, first, Phase(after - 8, 100, DEGRADED_K15, restart=True, gap=8)]),
        "alert_rule_test": [
            {"eval_time": hours(at), "alertname": DROPPED, "exp_alerts": [dropped_alert(i, "1.97", "2.62") for i in ("b:8000", "c:8000")]}
            for at in CHECKS[:3]
        ],
        "promql_expr_test": [firing_throughout(DROPPED, i, DROP_AT + 0.25, CHECKS[2]) for i in ("b:8000", "c:8000")],
    }


def healthy() -> dict[str, Any]:
    """74 h of a healthy server with a daily traffic cycle, bursts and acceptance jitter."""
    phases = [Phase(74 * MINUTES_PER_HOUR, 100, HEALTHY_K15, noise=realistic_noise(seed=17))]
    return {
        "name": "74 hours of healthy noise never even go pending",
        "input_series": vllm_series(server("a:8000"), phases),
        "alert_rule_test": [{"eval_time": hours(at - DROP_AT), "alertname": DROPPED, "exp_alerts": []} for at in CHECKS],
        "promql_expr_test": [never(DROPPED, 74)],
    }


def k_change() -> dict[str, Any]:
    """Position series stop (a: k 15 → 3, another drafter, 49% lower L) or appear (b: k 4 → 8, 50% lower L):
    a new reference and no alert; then a real drop of the new k = 3 alerts against the new reference."""
    phases = [
        Phase(120, 100, HEALTHY_K15, restart=True),
        Phase(26 * MINUTES_PER_HOUR, 100, NGRAM_K3, restart=True),
        Phase(3 * MINUTES_PER_HOUR, 100, tuple(r * 0.6 for r in NGRAM_K3)),
    ]
    wider = [Phase(120, 100, (0.9, 0.8, 0.7, 0.6)), Phase(29 * MINUTES_PER_HOUR, 100, geometric_rates(0.6, 1.5, 8), restart=True)]
    key = 'engine="0", job="vllm", model_name="m", namespace="inference"'
    return {
        "name": "a change of k starts a new reference and never alerts; the previous reference stays visible",
        "input_series": vllm_series(server("a:8000"), phases) + vllm_series(server("b:8000"), wider),
        "promql_expr_test": [
            never(DROPPED, 28),
            never(DROPPED, 31, 'instance="b:8000"'),
            near(f'{REFERENCE}{{num_speculative_tokens="3"}}', 1.82, f'{{{key}, num_speculative_tokens="3"}}', 27),
            near(f'{REFERENCE}{{num_speculative_tokens="15"}}', 2.62, f'{{{key}, num_speculative_tokens="15"}}', 27),
            near(f'{REFERENCE}{{num_speculative_tokens="8"}}', 2.5, f'{{{key}, num_speculative_tokens="8"}}', 27),
        ],
        "alert_rule_test": [
            {"eval_time": hours(at), "alertname": DROPPED, "exp_alerts": []} for at in (2.25, 3.5, 14, 27)
        ] + [{"eval_time": hours(30), "alertname": DROPPED, "exp_alerts": [dropped_alert("a:8000", "1.49", "1.82", k=3)]}],
    }


def lull() -> dict[str, Any]:
    """Hours of near-idle traffic, with awful (a) or excellent (b) acceptance, then normal traffic again."""
    awful = tuple(r * 0.1 for r in HEALTHY_K15)
    excellent = tuple(min(0.97, r * 2.2) for r in HEALTHY_K15)
    return {
        "name": "a lull neither alerts nor moves the reference",
        # two jobs: replicas of one job pool into one reference, and each lull must stand alone
        "input_series": vllm_series(server("a:8000", "a"), [Phase(120, 100, HEALTHY_K15), Phase(6 * 60, 0.05, awful), Phase(28 * 60, 100, HEALTHY_K15)])
        + vllm_series(server("b:8000", "b"), [Phase(120, 100, HEALTHY_K15), Phase(30 * 60, 0.05, excellent), Phase(4 * 60, 100, HEALTHY_K15)]),
        "promql_expr_test": [
            never(DROPPED, 36),
            # the lull's drafts weigh at most its draft rate over the floor's (0.05/0.5) when a day first counts
            near(f'{REFERENCE}{{job="b"}}', 2.62, '{engine="0", job="b", model_name="m", namespace="inference", num_speculative_tokens="15"}', 36, 0.15),
        ],
    }


def sidecar_series(pod: str, judged: list[tuple[int, str]], reference: str | None, since: str) -> list[dict[str, str]]:
    """One pod's sidecar, reading its vLLM's /metrics."""
    labels = (f'namespace="{NAMESPACE}",pod="{pod}",job="specdecode",instance="{pod}:9847",upstream="http://127.0.0.1:8000/metrics",'
              'model_name="m",engine="0",source="metrics"')
    total = sum(m for m, _ in judged)
    series = [
        {"series": f'{names.MEAN_ACCEPTANCE_LENGTH.name}{{{labels},window="5m"}}', "values": gauge_values(judged)},
        {"series": f"{names.DRAFTS.sample_name}{{{labels}}}", "values": f"0+6000x{total - 1}"},
        {"series": f'{names.HEALTH.name}{{{labels},state="degraded"}}', "values": gauge_values([(120, "0"), (total - 120, "1")])},
        {"series": f"{names.HEALTH_SINCE.name}{{{labels}}}", "values": f"{since}x{total - 1}"},
    ]
    if reference is not None:
        series.append({"series": f"{names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name}{{{labels}}}", "values": f"{reference}x{total - 1}"})
    return series


def sidecar() -> dict[str, Any]:
    """The sidecar's judged window against its frozen reference gauge (and its health-since gauge)."""
    minutes = round(CHECKS[-1] * MINUTES_PER_HOUR) + 1
    degraded = [(120, "2.62"), (minutes - 120, "1.97")]
    healthy_noise = [(60, value) for value in ("2.61", "2.55", "2.70", "2.48", "2.66", "2.58")] * (minutes // 360 + 1)
    alert = {
        "exp_labels": {"severity": "warning", "job": "specdecode", "namespace": NAMESPACE, "pod": "vllm-a", "model_name": "m", "engine": "0"},
        "exp_annotations": {
            "summary": "Acceptance on inference/vllm-a (m, engine 0) is below the sidecar's reference",
            "description": "The sidecar's 5m mean acceptance length is 1.97 (the lowest of its sources) against its frozen reference 2.62: "
            "more than 30% fewer accepted tokens per step; its verdict has been degraded since 1970-01-01 02:04:00 +0000 UTC.",
            "runbook_url": f"{RUNBOOK}#specdecodeacceptancebelowreference",
        },
    }
    return {
        "name": "the sidecar-fed alert reads the frozen reference: fires for days, quiet when healthy or without a reference",
        "input_series": sidecar_series("vllm-a", degraded, "2.62", "7440")
        + sidecar_series("vllm-b", healthy_noise, "2.62", "0")
        + sidecar_series("vllm-c", degraded, None, "7440"),
        "alert_rule_test": [{"eval_time": hours(1.5), "alertname": BELOW, "exp_alerts": []}]
        + [{"eval_time": hours(at), "alertname": BELOW, "exp_alerts": [alert]} for at in CHECKS],
        "promql_expr_test": [never(BELOW, CHECKS[-1], 'pod=~"vllm-[bc]"')],
    }


# The same generator with hours for days (a 1h pool, a 7h hold): what happens when the hold ends is
# the same at any scale, and 7 days of one-minute steps would take promtool minutes.
HOURS_FOR_DAYS = replace(DEFAULT, reference_pool="1h", reference_hold="7h", reference_settle="10m")


def hold() -> dict[str, Any]:
    """A drop fires for the whole hold, then resolves: the lower level is the new normal (hold 7h here)."""
    phases = [Phase(120, 100, HEALTHY_K15), Phase(10 * MINUTES_PER_HOUR, 100, DEGRADED_K15)]
    return {
        "name": "a drop alerts for the whole hold, then it is the new reference",
        "input_series": vllm_series(server("a:8000"), phases),
        "promql_expr_test": [
            firing_throughout(DROPPED, "a:8000", DROP_AT + 0.25, DROP_AT + 7),
            never(DROPPED, 2),
            {"expr": f'count_over_time(ALERTS{{alertname="{DROPPED}"}}[2h])', "eval_time": hours(12), "exp_samples": []},
            near(REFERENCE, 1.97, IDENTITY, 12),
        ],
    }


# Kubernetes: a rollout replaces the pod (new `pod`, new `instance`, counters from 0), and the job,
# namespace, model and k stay. The day of normal the old pod set is the new pod's reference.
DAY = 24 * MINUTES_PER_HOUR
ROLLOUT_CHECKS = [24 + h for h in (1, 12, 26)]


def rollout(after: tuple[float, ...]) -> list[dict[str, str]]:
    """Healthy a day on pod A; then pod B (another IP) serves with `after`'s rates."""
    return vllm_series(pod("vllm-specdecode-6f9c8-a", "10.1.0.7"), [Phase(DAY, 100, HEALTHY_K15)]) + vllm_series(
        pod("vllm-specdecode-7d4b2-b", "10.1.3.9"), [Phase(ROLLOUT_CHECKS[-1] * MINUTES_PER_HOUR - DAY + 1, 100, after, gap=DAY, restart=True)]
    )


def rollout_drop() -> dict[str, Any]:
    """The rollout ships a worse drafter config: every rate × 0.6 on the new pod."""
    b = ("10.1.3.9:8000", "vllm-specdecode-7d4b2-b")
    return {
        "name": "a rollout to a pod with every rate x0.6 fires against the old pod's normal, and keeps firing",
        "input_series": rollout(DEGRADED_K15),
        "alert_rule_test": [{"eval_time": hours(at), "alertname": DROPPED, "exp_alerts": [dropped_alert(b[0], "1.97", "2.62", pod=b[1])]}
                            for at in ROLLOUT_CHECKS],
        "promql_expr_test": [never(DROPPED, 24), firing_throughout(DROPPED, b[1], 24.5, ROLLOUT_CHECKS[-1], label="pod")],
    }


def rollout_same() -> dict[str, Any]:
    return {
        "name": "a rollout without a drop stays quiet",
        "input_series": rollout(HEALTHY_K15),
        "alert_rule_test": [{"eval_time": hours(at), "alertname": DROPPED, "exp_alerts": []} for at in ROLLOUT_CHECKS],
        "promql_expr_test": [never(DROPPED, ROLLOUT_CHECKS[-1])],
    }


def replicas() -> dict[str, Any]:
    """Three replicas of one job healthy a day; then one of them degrades (× 0.6) and the other two do not."""
    pods = [(f"vllm-specdecode-{i}", f"10.1.0.{i + 10}") for i in range(3)]
    series = []
    for i, (name, ip) in enumerate(pods):
        later = DEGRADED_K15 if i == 1 else HEALTHY_K15
        series += vllm_series(pod(name, ip), [Phase(DAY, 100, HEALTHY_K15), Phase(ROLLOUT_CHECKS[-1] * MINUTES_PER_HOUR - DAY + 1, 100, later)])
    degraded = dropped_alert(f"{pods[1][1]}:8000", "1.97", "2.62", pod=pods[1][0])
    return {
        "name": "of three replicas the degraded one fires, alone",
        "input_series": series,
        "alert_rule_test": [{"eval_time": hours(at), "alertname": DROPPED, "exp_alerts": [degraded]} for at in ROLLOUT_CHECKS],
        "promql_expr_test": [
            never(DROPPED, ROLLOUT_CHECKS[-1], 'pod=~"vllm-specdecode-[02]"'),
            firing_throughout(DROPPED, pods[1][0], 24.5, ROLLOUT_CHECKS[-1], label="pod"),
            # one reference for the three: the job's, not a pod's
            {"expr": f"count({REFERENCE})", "eval_time": hours(30), "exp_samples": [{"labels": "{}", "value": 1}]},
        ],
    }


SCENARIOS = {"drop": (drop, DROPPED), "restart": (restart, DROPPED), "healthy": (healthy, DROPPED),
             "k-change": (k_change, DROPPED), "lull": (lull, DROPPED), "sidecar": (sidecar, BELOW), "hold": (hold, DROPPED),
             "rollout-drop": (rollout_drop, DROPPED), "rollout-same": (rollout_same, DROPPED), "replicas": (replicas, DROPPED)}
CONFIGS = {"hold": HOURS_FOR_DAYS}


def _render(config: MixinConfig, directory: Path) -> list[str]:
    """The rule files the build writes, rendered from another config."""
    paths = []
    for name, groups in (("rules", recording_rule_groups(config)), ("alerts", alert_groups(config))):
        path = directory / f"rendered.{name}.yml"
        path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False, width=1 << 20))
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp("promtool")
    documents = {}
    for name, (build, alert) in SCENARIOS.items():
        rule_files = _render(CONFIGS[name], tmp_path_factory.mktemp(name)) if name in CONFIGS else RULE_FILES
        (tmp / f"{name}.rules.yml").write_text(yaml.safe_dump(rules_for({alert}, rule_files), sort_keys=False, width=1 << 20))
        scenario = build()
        scenario["input_series"].append(clock(round((CHECKS[-1] + 1) * MINUTES_PER_HOUR)))
        documents[name] = {"rule_files": [f"{name}.rules.yml"], "evaluation_interval": "1m", "tests": [{"interval": "1m", **scenario}]}
    return promtool_tests(documents, tmp)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario(results: dict[str, subprocess.CompletedProcess[str]], scenario: str) -> None:
    result = results[scenario]
    assert result.returncode == 0, result.stdout[-6000:]
    assert "SUCCESS" in result.stdout


def test_the_cut_down_rules_keep_the_committed_expressions() -> None:
    committed = {rule.get("record", rule.get("alert")): rule["expr"] for path in RULE_FILES for group in yaml.safe_load(Path(path).read_text())["groups"] for rule in group["rules"]}
    cut = rules_for({DROPPED}, RULE_FILES)
    kept = {rule.get("record", rule.get("alert")): rule["expr"] for group in cut["groups"] for rule in group["rules"]}
    assert kept and all(committed[name] == expr for name, expr in kept.items())
    assert {REFERENCE, DROPPED} <= set(kept)
