"""Rules, alerts and dashboards against a real Prometheus and Alertmanager (Debian's packages) on loopback.

Three simulated vLLM servers (drop-off, broken, healthy) are scraped by Prometheus directly and
through the sidecar. The rules are rendered from the same generators with a fast config (seconds
instead of minutes), not from copies. Then: the drop-off and broken servers fire their alerts and
Alertmanager delivers them to a webhook run by the test; the healthy one fires only the
informational wasted-positions alert; every dashboard panel's query returns data.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace

import httpx
import pytest
import yaml
from helpers import cli, free_port, running_process
from servers import Webhook, http_server
from waiting import wait_until

from exporter.mixin.build import write
from exporter.mixin.config import DEFAULT, AlertSettings
from exporter.mixin.dashboards import dashboards

pytestmark = pytest.mark.slow  # a real Prometheus, Alertmanager and simulators

FAST = replace(
    DEFAULT,
    rate_window="15s",
    reference_pool="1m",
    reference_hold="10m",
    reference_settle="10s",
    config_change_guard="5s",
    reference_interval="1s",
    keep_firing_for="3s",
    evaluation_interval="1s",
    alerts={name: AlertSettings(for_="3s", severity=alert.severity) for name, alert in DEFAULT.alerts.items()},
    disagreement_window="2m",
)
ACCEPTANCE_ALERTS = {"SpecDecodeAcceptanceLengthLow", "SpecDecodeAcceptanceDropped", "SpecDecodePositionZeroCollapse"}
DEADLINE = 150.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[dict]:  # type: ignore[type-arg]
    prometheus, alertmanager = shutil.which("prometheus"), shutil.which("prometheus-alertmanager")
    assert prometheus and alertmanager, "scripts/test installs Debian's prometheus and prometheus-alertmanager"
    tmp = tmp_path_factory.mktemp("stack")
    write(tmp, FAST)
    ports = {name: free_port() for name in ("dropoff", "broken", "healthy", "sidecar", "prometheus", "alertmanager")}
    sims = {name: f"127.0.0.1:{ports[name]}" for name in ("dropoff", "broken", "healthy")}
    webhook = Webhook()
    with ExitStack() as stack, http_server(webhook) as hook_url:
        for name, scenario in (("dropoff", "drop-off"), ("broken", "broken"), ("healthy", "healthy")):
            args = ["simulate", "--scenario", scenario, "--listen", sims[name], "--log-interval", "1", "--seed", "5",
                    "--log-file", str(tmp / f"{name}.log")]
            if name == "dropoff":
                args += ["--drop-after", "40"]
            stack.enter_context(running_process(cli(*args), f"http://{sims[name]}/health", f"simulator {name}"))
        targets = [arg for address in sims.values() for arg in ("--target", f"http://{address}/metrics")]
        sidecar = f"127.0.0.1:{ports['sidecar']}"
        # the simulators run 16 requests at ~50–80 drafts/s: a plain server slower than that at 16, whose steps grow
        # past 16 (its verification of 16·(1+k) tokens costs more than the whole step observed), so the pay-off
        # gauges are there (speed-up over 1) and a break-even is extrapolated just above 16: every panel has data
        (tmp / "calibration.json").write_text(json.dumps({"kind": "specdecode-exporter plain-decoding calibration", "version": 1,
            "source": "integration test", "points": [{"running": 1, "tokens_per_second": 5}, {"running": 16, "tokens_per_second": 40},
                                                   {"running": 64, "tokens_per_second": 80}]}))
        stack.enter_context(running_process(
            cli("serve", *targets, "--log", str(tmp / "dropoff.log"), "--from-start",
                "--pair", f"{tmp / 'dropoff.log'}=http://{sims['dropoff']}/metrics",
                "--scrape-interval", "1", "--window", "30s,2m", "--health-window", "30s", "--listen", sidecar,
                "--calibration", str(tmp / "calibration.json")),
            f"http://{sidecar}/-/healthy", "sidecar",
        ))
        (tmp / "alertmanager.yml").write_text(yaml.safe_dump({
            "route": {"receiver": "test", "group_by": ["alertname", "instance"], "group_wait": "1s", "group_interval": "1s", "repeat_interval": "1h"},
            "receivers": [{"name": "test", "webhook_configs": [{"url": f"{hook_url}/alerts", "send_resolved": False}]}],
        }))
        am = f"127.0.0.1:{ports['alertmanager']}"
        stack.enter_context(running_process(
            [alertmanager, f"--config.file={tmp / 'alertmanager.yml'}", f"--storage.path={tmp / 'am-data'}",
             f"--web.listen-address={am}", "--cluster.listen-address="],
            f"http://{am}/-/ready", "alertmanager",
        ))
        (tmp / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(tmp / "deploy/prometheus/specdecode.rules.yml"), str(tmp / "deploy/prometheus/specdecode.alerts.yml")],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [am]}]}]},
            "scrape_configs": [
                # each target with the topology labels an operator's PodMonitor would add
                {"job_name": "vllm", "static_configs": [{"targets": [address], "labels": {"namespace": "inference", "pod": f"vllm-{name}"}}
                                                        for name, address in sims.items()]},
                {"job_name": "specdecode", "static_configs": [{"targets": [sidecar], "labels": {"namespace": "inference", "pod": "sidecar"}}]},
            ],
        }))
        prom = f"127.0.0.1:{ports['prometheus']}"
        stack.enter_context(running_process(
            [prometheus, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'prom-data'}",
             f"--web.listen-address={prom}"],
            f"http://{prom}/-/ready", "prometheus",
        ))
        yield {"prometheus": f"http://{prom}", "webhook": webhook, "sims": sims}


def firing(stack: dict, instance: str) -> set[str]:  # type: ignore[type-arg]
    alerts = httpx.get(stack["prometheus"] + "/api/v1/alerts", timeout=5).json()["data"]["alerts"]
    return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing" and a["labels"].get("instance") == instance}


def delivered(stack: dict, instance: str) -> set[str]:  # type: ignore[type-arg]
    return {a["labels"]["alertname"] for a in stack["webhook"].alerts() if a["labels"].get("instance") == instance}


def wait_long(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Alerts need rule evaluations and `for:` durations: a longer deadline and a slower poll."""
    wait_until(condition, what, timeout=DEADLINE, every=0.5)


def test_broken_and_drop_off_fire_and_alertmanager_delivers(stack):
    sims = stack["sims"]
    wait_long(lambda: {"SpecDecodePositionZeroCollapse", "SpecDecodeAcceptanceLengthLow"} <= delivered(stack, sims["broken"]),
               "the broken drafter's alerts at the webhook")
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, sims["dropoff"]), "the drop-off alert at the webhook")
    (notice,) = [a for a in stack["webhook"].alerts() if a["labels"]["alertname"] == "SpecDecodeAcceptanceDropped"][:1]
    assert notice["labels"]["severity"] == "warning"
    assert notice["annotations"]["runbook_url"].endswith("#specdecodeacceptancedropped")
    # the description's template queried the reference of the alert's own config
    assert re.match(r"Mean acceptance length is \d\.\d\d against \d\.\d\d for this config \(k=\d+\)", notice["annotations"]["description"])
    assert notice["labels"]["num_speculative_tokens"].isdigit()


def test_healthy_fires_only_the_wasted_positions_alert(stack):
    healthy = stack["sims"]["healthy"]
    wait_long(lambda: "SpecDecodeWastedPositions" in firing(stack, healthy), "the healthy server's wasted-positions alert")
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, stack["sims"]["dropoff"]), "the drop-off to have happened")
    assert firing(stack, healthy) & ACCEPTANCE_ALERTS == set()
    assert delivered(stack, healthy) & ACCEPTANCE_ALERTS == set()


VARIABLES = {"$__rate_interval": "15s", "$job": ".*", "$namespace": ".*", "$pod": ".*", "$instance": ".*", "$model": ".*", "$engine": ".*", "$upstream": ".*", "$window": "30s"}


def panel_queries() -> list[tuple[str, str, str]]:
    result = []
    for filename, dashboard in dashboards(FAST).items():
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expr = target["expr"]
                for variable, value in VARIABLES.items():
                    expr = expr.replace(variable, value)
                result.append((filename, panel["title"], expr))
    return result


def test_every_dashboard_query_returns_data(stack):
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, stack["sims"]["dropoff"]), "alerts (a panel lists them)")
    empty = []
    for filename, title, expr in panel_queries():
        assert not re.search(r"\$\w+", expr), f"unsubstituted variable in {title}: {expr}"
        result = httpx.get(stack["prometheus"] + "/api/v1/query", params={"query": expr}, timeout=10).json()
        assert result["status"] == "success", (title, expr, result)
        if not result["data"]["result"]:
            empty.append(f"{filename} / {title}: {expr}")
    assert empty == []


def test_every_dashboard_variable_lists_values_and_the_window_is_the_health_window(stack):
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, stack["sims"]["dropoff"]), "every series to be scraped")
    listed: dict[str, list[str]] = {}
    for dashboard in dashboards(FAST).values():
        for variable in dashboard["templating"]["list"]:
            if variable["type"] != "query":
                continue
            match = re.fullmatch(r"label_values\((.*), (\w+)\)", variable["definition"])
            assert match is not None, variable["definition"]
            selector, label = match.groups()
            for name, value in VARIABLES.items():
                selector = selector.replace(name, value)
            answer = httpx.get(stack["prometheus"] + f"/api/v1/label/{label}/values", params={"match[]": selector}, timeout=10).json()
            assert answer["status"] == "success" and answer["data"], (variable["name"], selector, answer)
            listed[variable["name"]] = answer["data"]
    # the lean exposition (issue 19): derived gauges for the health window only, counters for the rest
    assert listed["window"] == ["30s"]


def test_the_lean_exposition_reaches_prometheus(stack):
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, stack["sims"]["dropoff"]), "every series to be scraped")

    def query(expr: str) -> list[dict]:  # type: ignore[type-arg]
        answer = httpx.get(stack["prometheus"] + "/api/v1/query", params={"query": expr}, timeout=10).json()
        assert answer["status"] == "success", (expr, answer)
        return answer["data"]["result"]  # type: ignore[no-any-return]

    series = "upstream, model_name, engine, source"
    assert query('specdecode_mean_acceptance_length{window="2m"}') == []
    assert query("specdecode_position_conditional_acceptance_ratio") == []
    assert query(f"count by ({series}) (specdecode_expected_speedup) > 2") == []
    assert query(f"count by ({series}) (specdecode_expected_speedup)") != []
    per_series = query(f'count by ({series}) ({{__name__=~"specdecode_.+", model_name!="", engine!=""}})')
    assert per_series and all(int(float(sample["value"][1])) <= 80 for sample in per_series), per_series


def test_the_acceptance_length_histogram_panel_sums_to_one_with_mean_l_minus_one(stack):
    """The panel's buckets, from a real Prometheus over the recorded per-position rates: shares of
    all drafts (Σ h_j = 1) whose mean is the recorded L − 1 of the same series and window."""
    from exporter.mixin.counters import sidecar_counters
    from exporter.mixin.dashboards import acceptance_histogram, sidecar_matchers
    from exporter.mixin.rules import rule_names

    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, stack["sims"]["dropoff"]), "every series to be scraped")
    n = rule_names(sidecar_counters(FAST), FAST)
    selector = sidecar_matchers(FAST)
    for variable, value in VARIABLES.items():
        selector = selector.replace(variable, value)

    def query(expr: str) -> list[dict]:  # type: ignore[type-arg]
        answer = httpx.get(stack["prometheus"] + "/api/v1/query", params={"query": expr}, timeout=10).json()
        assert answer["status"] == "success", (expr, answer)
        return answer["data"]["result"]  # type: ignore[no-any-return]

    key = ("upstream", "source", "model_name", "engine")
    buckets: dict[tuple[str, ...], dict[int, float]] = {}
    for sample in query(acceptance_histogram(n["position_acceptance"], selector)):
        buckets.setdefault(tuple(sample["metric"][k] for k in key), {})[int(sample["metric"]["accepted"])] = float(sample["value"][1])
    lengths = {tuple(s["metric"][k] for k in key): float(s["value"][1]) for s in query(f"{n['mean_acceptance_length']}{{{selector}}}")}
    assert buckets
    for series, shares in buckets.items():
        assert sorted(shares) == list(range(len(shares))) and all(-1e-9 <= h <= 1 + 1e-9 for h in shares.values()), (series, shares)
        assert abs(sum(shares.values()) - 1.0) < 1e-6, (series, shares)
        if series in lengths:
            assert abs(sum(j * h for j, h in shares.items()) - (lengths[series] - 1.0)) < 1e-3, (series, shares, lengths[series])
