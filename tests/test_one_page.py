"""One incident, one page (issue 34), in promtool over the committed rules.

Three incidents on one pod of the tenant's namespace, its neighbour healthy, every series labelled as
kube-prometheus-stack's PodMonitor labels them, the sidecar reading its vLLM three ways (plugin,
log, /metrics):

- a drop of L − 1 by half on one pod,
- a broken drafter (position 0 at 10%, L 1.1),
- a large model's restart in the middle of a drop: the pod replaced (same name, new address,
  counters from 0), vLLM loading for 15 minutes with no /metrics while the sidecar's target is down.

Each must give one notification under any Alertmanager grouping: exactly one alert fires in the
namespace over the whole run, one label set of it, firing at every evaluation from its first to
the end (never resolved and re-sent). The alerts it holds back are shown not to be held back for
want of a condition: each one's condition holds for longer than its `for:`. The same incidents go
through a real Prometheus and Alertmanager in tests/test_prometheus_integration.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from rule_series import MINUTES_PER_HOUR, Phase, clock, minutes, promtool_tests, vllm_series

from exporter import metric_names as names

pytestmark = pytest.mark.slow  # promtool over hours of series

ROOT = Path(__file__).parent.parent
RULE_FILES = [str(ROOT / "deploy/prometheus/specdecode.rules.yml"), str(ROOT / "deploy/prometheus/specdecode.alerts.yml")]
NAMESPACE, JOB = "inference", "inference/vllm-specdecode"
SOURCES = (("plugin", "/var/lib/specdecode-plugin"), ("log", "/var/log/vllm/vllm.log"), ("metrics", "http://127.0.0.1:8000/metrics"))
HEALTHY_FOR = 3 * MINUTES_PER_HOUR  # the reference settles after an hour; the incident starts at 3 h
END = 5 * MINUTES_PER_HOUR
HEALTHY = (0.8, 0.55, 0.35, 0.2)  # k = 4, L 2.9: every position pays (no standing wasted-positions alert)
HALF_DROP = tuple(r * 0.5 for r in HEALTHY)  # L − 1 halved: L 2.9 → 1.95; its last position (10%) is not wasted yet
BROKEN = (0.10, 0.005, 0.0, 0.0)  # the misconfigured-drafter signature: L 1.105, position 0 at 10%
RESTART_AT, LOAD = 4 * MINUTES_PER_HOUR, 15  # the pod is replaced at 4 h; vLLM loads for 15 minutes


def vllm_labels(pod: str, ip: str) -> str:
    return f'job="{JOB}",namespace="{NAMESPACE}",pod="{pod}",container="vllm",endpoint="http",instance="{ip}:8000",model_name="m",engine="0"'


def sidecar_labels(pod: str, ip: str) -> str:
    return f'job="specdecode",namespace="{NAMESPACE}",pod="{pod}",container="specdecode-exporter",endpoint="specdecode",instance="{ip}:9847"'


def _values(column: list[str]) -> str:
    return " ".join(column)


def server(pod: str, ip: str, phases: list[Phase], reference: float, end_stale: bool = False,
           targets_down: tuple[int, int] | None = None) -> list[dict[str, str]]:
    """One pod: vLLM's counters and generation tokens, and its sidecar's three sources (drafts, the judged
    5m L, the frozen reference, source_up). `targets_down` (first minute, minutes): vLLM loading — the
    sidecar's plugin and target sources are down, the log up; no spec lines anywhere."""
    series = vllm_series(vllm_labels(pod, ip), phases)
    generated, drafted = ["0"], ["0"]
    judged: list[str] = []
    up = {source: [] for source, _ in SOURCES}  # type: dict[str, list[str]]
    gen_total = drafts_total = 0
    for minute in minutes(phases):
        loading = targets_down is not None and targets_down[0] <= minute.index < targets_down[0] + targets_down[1]
        if minute.missing:
            for column in (generated, drafted):
                column.append("stale" if column[-1] not in ("_", "stale") else "_")
            judged.append("_")
            for source, column in up.items():
                column.append("0" if loading and source != "log" else ("1" if loading else "_"))
            continue
        if minute.restart:
            gen_total = drafts_total = 0
        gen_total += minute.drafts + sum(minute.accepted)
        drafts_total += minute.drafts
        generated.append(str(gen_total))
        drafted.append(str(drafts_total))
        judged.append(f"{1 + sum(minute.accepted) / minute.drafts:.4f}" if minute.drafts else "_")
        for column in up.values():
            column.append("1")
    if end_stale:
        for column in (generated, drafted):
            column.append("stale")
        judged.append("stale")
        for column in up.values():
            column.append("stale")
    series.append({"series": f"{names.VLLM_GENERATION_TOKENS.sample_name}{{{vllm_labels(pod, ip)}}}", "values": _values(generated)})
    side = sidecar_labels(pod, ip)
    for source, upstream in SOURCES:
        per_source = f'{side},upstream="{upstream}",source="{source}",model_name="m",engine="0"'
        series += [
            {"series": f"{names.DRAFTS.sample_name}{{{per_source}}}", "values": _values(drafted)},
            {"series": f'{names.MEAN_ACCEPTANCE_LENGTH.name}{{{per_source},window="5m"}}', "values": "_ " + _values(judged)},
            {"series": f"{names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name}{{{per_source}}}",
             "values": " ".join(f"{reference:.4f}" if v not in ("_", "stale") else v for v in ["_", *judged])},
            {"series": f'{names.SOURCE_UP.name}{{{side},upstream="{upstream}",source="{source}"}}', "values": "_ " + _values(up[source])},
        ]
    return series


L_HEALTHY = 1 + sum(HEALTHY)


def neighbour() -> list[dict[str, str]]:
    return server("vllm-specdecode-1", "10.1.0.11", [Phase(END, 100, HEALTHY)], L_HEALTHY)


def one_pod_drop() -> list[dict[str, str]]:
    return server("vllm-specdecode-0", "10.1.0.10", [Phase(HEALTHY_FOR, 100, HEALTHY), Phase(END - HEALTHY_FOR, 100, HALF_DROP)],
                  L_HEALTHY) + neighbour()


def broken_drafter() -> list[dict[str, str]]:
    return server("vllm-specdecode-0", "10.1.0.10", [Phase(HEALTHY_FOR, 100, HEALTHY), Phase(END - HEALTHY_FOR, 100, BROKEN)],
                  L_HEALTHY) + neighbour()


def restart_during_drop() -> list[dict[str, str]]:
    """The StatefulSet's pod vllm-specdecode-0 replaced at 4 h: the old address's series end, the new
    address's begin after the load, counters from 0, still degraded."""
    before = server("vllm-specdecode-0", "10.1.0.10", [Phase(HEALTHY_FOR, 100, HEALTHY), Phase(RESTART_AT - HEALTHY_FOR, 100, HALF_DROP)],
                    L_HEALTHY, end_stale=True)
    # the new pod's sidecar is up from the start of the load (its log source up, its targets down)
    after = server("vllm-specdecode-0", "10.1.3.9", [Phase(END - RESTART_AT - LOAD, 100, HALF_DROP, restart=True, gap=RESTART_AT + LOAD)],
                   L_HEALTHY, targets_down=(RESTART_AT, LOAD))
    return before + after + neighbour()


def _at(minute: int) -> str:
    return f"{minute}m"


def one_page(primary: str, first_firing: int, held_back: dict[str, str]) -> list[dict[str, Any]]:
    """The checks: one alert, one label set, firing throughout from `first_firing`; `held_back` maps each
    alert held back to a PromQL condition that shows it would have fired (true for 10+ minutes)."""
    span = END - first_firing
    checks: list[dict[str, Any]] = [
        # nothing but the primary ever fires in the namespace (pending is not a notification)
        {"expr": f'count_over_time(ALERTS{{namespace="{NAMESPACE}", alertstate="firing", alertname!="{primary}"}}[{END}m])',
         "eval_time": _at(END), "exp_samples": []},
        # one label set of it: the pod's replacement is the same alert
        {"expr": f'count(count_over_time(ALERTS{{alertname="{primary}", alertstate="firing"}}[{END}m]))',
         "eval_time": _at(END), "exp_samples": [{"labels": "{}", "value": 1}]},
        # not before the incident, then at every evaluation to the end: never resolved, never sent again
        {"expr": f'count_over_time(ALERTS{{alertname="{primary}"}}[{HEALTHY_FOR}m])', "eval_time": _at(HEALTHY_FOR), "exp_samples": []},
        {"expr": f'count_over_time(ALERTS{{alertname="{primary}", alertstate="firing"}}[{span}m]) == bool on() count_over_time(clock[{span}m])',
         "eval_time": _at(END), "exp_samples": [{"labels": "{}", "value": 1}]},
    ]
    checks += [{"expr": f"count_over_time((count({condition}) > 0)[{END - HEALTHY_FOR}m:1m]) >= bool 11",
                "eval_time": _at(END), "exp_samples": [{"labels": "{}", "value": 1}]} for condition in held_back.values()]
    return checks


RAW_L = f'instance_model_engine:vllm_spec_decode_mean_acceptance_length:ratio_rate5m{{namespace="{NAMESPACE}", pod="vllm-specdecode-0"}}'
SIDECAR_BELOW = (f'{names.MEAN_ACCEPTANCE_LENGTH.name}{{namespace="{NAMESPACE}", pod="vllm-specdecode-0", window="5m"}} < ignoring(window) '
                 f'(1 + 0.7 * ({names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name}{{namespace="{NAMESPACE}"}} - 1))')
REFERENCE = f'identity_model_engine_k:vllm_spec_decode_mean_acceptance_length:ratio_reference{{namespace="{NAMESPACE}"}}'
DROP_CONDITION = f"{RAW_L} < on(namespace, model_name, engine) group_left() (1 + 0.7 * (max({REFERENCE}) by (namespace, model_name, engine) - 1))"

SCENARIOS: dict[str, tuple[Any, str, int, dict[str, str]]] = {
    # the sidecar's three sources see the drop too (earlier than the 5m rate, here): held back, folded
    "one-pod drop, read three ways": (one_pod_drop, "SpecDecodeAcceptanceDropped", HEALTHY_FOR + 20,
                                      {"SpecDecodeAcceptanceBelowReference": SIDECAR_BELOW}),
    "broken drafter": (broken_drafter, "SpecDecodePositionZeroCollapse", HEALTHY_FOR + 20, {
        "SpecDecodeAcceptanceDropped": DROP_CONDITION,
        "SpecDecodeAcceptanceLengthLow": f"{RAW_L} < 1.5",
        "SpecDecodeAcceptanceBelowReference": SIDECAR_BELOW,
    }),
    "large model restart during a drop": (restart_during_drop, "SpecDecodeAcceptanceDropped", HEALTHY_FOR + 20, {
        "SpecDecodeAcceptanceBelowReference": SIDECAR_BELOW,
        # its target down for the 15-minute load: the restart, not the sidecar's fault
        "SpecDecodeSidecarSourceDown": f'{names.SOURCE_UP.name}{{namespace="{NAMESPACE}", source="metrics"}} == 0',
    }),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    documents = {name: {"rule_files": RULE_FILES, "evaluation_interval": "1m", "tests": [{
        "name": name, "interval": "1m", "input_series": [*build(), clock(END + 1)], "promql_expr_test": one_page(primary, first, held_back),
    }]} for name, (build, primary, first, held_back) in SCENARIOS.items()}
    return promtool_tests(documents, tmp_path_factory.mktemp("one-page"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_one_incident_fires_one_alert_throughout(results: dict[str, subprocess.CompletedProcess[str]], scenario: str) -> None:
    result = results[scenario]
    assert result.returncode == 0, result.stdout[-8000:]
    assert "SUCCESS" in result.stdout
