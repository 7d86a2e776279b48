"""Rules, alerts and dashboards against a real Prometheus and Alertmanager (Debian's packages) on loopback.

Four teams' simulated vLLM servers, each in its own namespace with its own copy of the rules (issue
34: tenancy), are scraped by Prometheus directly and through one sidecar whose series are labelled
with the namespace and pod of the server they read (as a sidecar in each pod would be). A fifth
namespace holds another team's vLLM without speculation (a real vLLM exposition without its
spec-decode families). The rules are rendered from the same generators with a fast config (seconds
instead of minutes), not from copies. Two Alertmanagers receive every alert: one with the shipped
routes (alertmanager.yml), one as kube-prometheus-stack configures it by default (its values' routes,
`group_by: [namespace]`, and our AlertmanagerConfig's inhibit rules as the operator scopes them).

Then: the drop-off, broken and restarted servers each send exactly one notification to each
Alertmanager (one incident, one page; the restarted one is stopped for longer than its rate window
and comes back degraded); the healthy one fires only the informational wasted-positions alert;
every alert carries its own copy's team; the plain vLLM stays quiet; every dashboard panel's query
returns data.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from helpers import cli, free_port, running_process, wait_http
from servers import Webhook, http_server, send
from waiting import wait_until

from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import DEFAULT, AlertSettings, MixinConfig
from exporter.mixin.dashboards import dashboards
from exporter.mixin.inhibition import alertmanager_file, inhibit_rules
from exporter.mixin.rules import recording_rule_groups

pytestmark = pytest.mark.slow  # a real Prometheus, Alertmanager and simulators

ROOT = Path(__file__).parent.parent
CAPTURE = ROOT / "tests/golden/vllm-0.26.0/ngram-k5-plugin/metrics/130_final.prom"  # a real vLLM 0.26.0 /metrics
TEAMS = {"drop": ("drop-off", "40"), "broken": ("broken", None), "restart": ("drop-off", "40"), "healthy": ("healthy", None)}
OUTAGE = 12.0  # seconds the restarted server is down: longer than its rate window, inside the start-up budget


def fast(namespace: str) -> MixinConfig:
    """The shipped defaults in seconds, for one team: its namespace, its team label on every alert. `for:` is the
    rate window (the one-page rule: a sudden change reaches every condition within one rate window)."""
    return replace(
        DEFAULT,
        namespace=namespace,
        alert_labels={"team": namespace},
        rate_window="15s",
        reference_pool="1m",
        reference_hold="10m",
        reference_settle="10s",
        config_change_guard="5s",
        reference_interval="1s",
        startup_budget="20s",
        keep_firing_for="60s",
        evaluation_interval="1s",
        alerts={name: AlertSettings(for_="15s", severity=alert.severity) for name, alert in DEFAULT.alerts.items()},
        disagreement_window="2m",
    )


FAST = fast("drop")  # the copy whose dashboards are checked
ACCEPTANCE_ALERTS = {"SpecDecodeAcceptanceLengthLow", "SpecDecodeAcceptanceDropped", "SpecDecodePositionZeroCollapse"}
PRIMARY = {"drop": "SpecDecodeAcceptanceDropped", "broken": "SpecDecodePositionZeroCollapse", "restart": "SpecDecodeAcceptanceDropped"}
DEADLINE = 150.0


class PlainVLLM:
    """Another team's vLLM serving without speculation: a real vLLM exposition without its spec-decode families,
    its generation counter growing at every scrape."""

    def __init__(self) -> None:
        text = CAPTURE.read_text()
        blocks = re.split(r"(?m)^(?=# HELP )", text)
        self.text = "".join(b for b in blocks if not re.match(r"# HELP vllm:spec_decode", b))
        self.generated = 0

    def __call__(self, handler: Any) -> None:
        self.generated += 1000
        body = re.sub(r'(?m)^(vllm:generation_tokens_total\{[^}]*\}) .*$', lambda m: f"{m.group(1)} {self.generated}.0", self.text)
        send(handler, 200, body.encode(), "text/plain; version=0.0.4; charset=utf-8")


def simulator(name: str, address: str, log: Path, scenario: str, drop_after: str | None) -> list[str]:
    args = ["simulate", "--scenario", scenario, "--listen", address, "--log-interval", "1", "--seed", "5", "--log-file", str(log)]
    return cli(*args, *(["--drop-after", drop_after] if drop_after else []))


def scaled(route: dict[str, Any]) -> dict[str, Any]:
    """A route's timers in seconds: every change of a group is a notification within a second, none is merged away."""
    return {**route, "group_wait": "1s", "group_interval": "1s", "repeat_interval": "1h",
            "routes": [{**r, "repeat_interval": "1h"} if "repeat_interval" in r else r for r in route.get("routes", [])]}


def shipped_alertmanager(url: str) -> dict[str, Any]:
    config = alertmanager_file(FAST)
    config["route"] = scaled(config["route"])
    config["receivers"][0]["webhook_configs"][0]["url"] = url
    return config


def kube_prometheus_stack_alertmanager(url: str) -> dict[str, Any]:
    """kube-prometheus-stack's default Alertmanager config (tests/golden/charts/), a team's receiver in place of its
    `null` root receiver, and our AlertmanagerConfig's inhibit rules in every team's namespace, as the operator
    writes them (its OnNamespace strategy adds the namespace to both sides of each rule)."""
    values = yaml.safe_load((ROOT / "tests/golden/charts/kube-prometheus-stack/values.yaml").read_text())
    config = values["alertmanager"]["config"]
    config.pop("templates", None)
    config["route"] = {**scaled(config["route"]), "receiver": "team"}
    config["receivers"].append({"name": "team", "webhook_configs": [{"url": url, "send_resolved": True}]})
    for namespace in TEAMS:
        for rule in inhibit_rules(fast(namespace)):
            scoped = f'namespace="{namespace}"'
            config["inhibit_rules"].append({**rule, "source_matchers": [*rule["source_matchers"], scoped],
                                            "target_matchers": [*rule["target_matchers"], scoped]})
    assert config["route"]["group_by"] == ["namespace"]
    return config


def rule_files(directory: Path) -> list[str]:
    """Each team's own copy of the rules: the same record and group names, four times."""
    paths = []
    for namespace in TEAMS:
        path = directory / f"{namespace}.rules.yml"
        path.write_text(yaml.safe_dump({"groups": recording_rule_groups(fast(namespace)) + alert_groups(fast(namespace))}, sort_keys=False))
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[dict]:  # type: ignore[type-arg]
    prometheus, alertmanager = shutil.which("prometheus"), shutil.which("prometheus-alertmanager")
    assert prometheus and alertmanager, "scripts/test installs Debian's prometheus and prometheus-alertmanager"
    tmp = tmp_path_factory.mktemp("stack")
    ports = {name: free_port() for name in (*TEAMS, "sidecar", "prometheus", "shipped", "kps")}
    sims = {team: f"127.0.0.1:{ports[team]}" for team in TEAMS}
    hooks = {"shipped": Webhook(), "kps": Webhook()}
    with ExitStack() as stack:
        urls = {name: stack.enter_context(http_server(hook)) for name, hook in hooks.items()}
        chat = stack.enter_context(http_server(PlainVLLM())).removeprefix("http://")
        processes: dict[str, subprocess.Popen[bytes]] = {}
        for team, (scenario, drop_after) in TEAMS.items():
            processes[team] = stack.enter_context(running_process(
                simulator(team, sims[team], tmp / f"{team}.log", scenario, drop_after), f"http://{sims[team]}/health", f"simulator {team}"))
        targets = [arg for address in sims.values() for arg in ("--target", f"http://{address}/metrics")]
        sidecar = f"127.0.0.1:{ports['sidecar']}"
        # the simulators run 16 requests at ~50–80 drafts/s: a plain server slower than that at 16, whose steps grow
        # past 16 (its verification of 16·(1+k) tokens costs more than the whole step observed), so the pay-off
        # gauges are there (speed-up over 1) and a break-even is extrapolated just above 16: every panel has data
        (tmp / "calibration.json").write_text(json.dumps({"kind": "specdecode-exporter plain-decoding calibration", "version": 1,
            "source": "integration test", "points": [{"running": 1, "tokens_per_second": 5}, {"running": 16, "tokens_per_second": 40},
                                                   {"running": 64, "tokens_per_second": 80}]}))
        drop_log = tmp / "drop.log"
        stack.enter_context(running_process(
            cli("serve", *targets, "--log", str(drop_log), "--from-start", "--pair", f"{drop_log}=http://{sims['drop']}/metrics",
                "--scrape-interval", "1", "--window", "30s,2m", "--health-window", "30s", "--listen", sidecar,
                "--calibration", str(tmp / "calibration.json")),
            f"http://{sidecar}/-/healthy", "sidecar",
        ))
        managers = {}
        for name, config in (("shipped", shipped_alertmanager(f"{urls['shipped']}/alerts")), ("kps", kube_prometheus_stack_alertmanager(f"{urls['kps']}/alerts"))):
            (tmp / f"{name}.yml").write_text(yaml.safe_dump(config))
            managers[name] = f"127.0.0.1:{ports[name]}"
            stack.enter_context(running_process(
                [alertmanager, f"--config.file={tmp / f'{name}.yml'}", f"--storage.path={tmp / f'{name}-data'}",
                 f"--web.listen-address={managers[name]}", "--cluster.listen-address="],
                f"http://{managers[name]}/-/ready", f"alertmanager ({name})",
            ))
        # the sidecar's series of each server get that server's namespace and pod, as the sidecar in its pod would
        relabel = []
        for team, address in sims.items():
            upstreams = re.escape(f"http://{address}/metrics") + ("|" + re.escape(str(drop_log)) if team == "drop" else "")
            relabel += [{"source_labels": ["upstream"], "regex": upstreams, "target_label": label, "replacement": value}
                        for label, value in (("namespace", team), ("pod", f"vllm-{team}"))]
        (tmp / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": rule_files(tmp),
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": list(managers.values())}]}]},
            "scrape_configs": [
                # each target with the topology labels an operator's PodMonitor would add
                {"job_name": "vllm", "static_configs": [
                    *({"targets": [address], "labels": {"namespace": team, "pod": f"vllm-{team}"}} for team, address in sims.items()),
                    {"targets": [chat], "labels": {"namespace": "chat", "pod": "vllm-chat"}},
                ]},
                {"job_name": "specdecode", "static_configs": [{"targets": [sidecar]}], "metric_relabel_configs": relabel},
            ],
        }))
        prom = f"127.0.0.1:{ports['prometheus']}"
        stack.enter_context(running_process(
            [prometheus, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'prom-data'}",
             f"--web.listen-address={prom}"],
            f"http://{prom}/-/ready", "prometheus",
        ))
        yield {"prometheus": f"http://{prom}", "hooks": hooks, "webhook": hooks["shipped"], "sims": sims, "processes": processes, "tmp": tmp}


def query(stack: dict, expr: str) -> list[dict]:  # type: ignore[type-arg]
    answer = httpx.get(stack["prometheus"] + "/api/v1/query", params={"query": expr}, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    return answer["data"]["result"]  # type: ignore[no-any-return]


def firing(stack: dict, namespace: str) -> set[str]:  # type: ignore[type-arg]
    alerts = httpx.get(stack["prometheus"] + "/api/v1/alerts", timeout=5).json()["data"]["alerts"]
    return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing" and a["labels"].get("namespace") == namespace}


def delivered(stack: dict, namespace: str, hook: str = "shipped") -> set[str]:  # type: ignore[type-arg]
    return {a["labels"]["alertname"] for a in stack["hooks"][hook].alerts() if a["labels"].get("namespace") == namespace}


def pages(stack: dict, namespace: str, hook: str) -> list[set[str]]:  # type: ignore[type-arg]
    """The firing notifications a receiver got for a namespace: the alert names in each."""
    with stack["hooks"][hook].lock:
        notifications = list(stack["hooks"][hook].notifications)
    return [{a["labels"]["alertname"] for a in n["alerts"] if a["status"] == "firing"} for n in notifications
            if n["status"] == "firing" and {a["labels"].get("namespace") for a in n["alerts"]} == {namespace}]


def wait_long(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Alerts need rule evaluations and `for:` durations: a longer deadline and a slower poll."""
    wait_until(condition, what, timeout=DEADLINE, every=0.5)


@pytest.fixture(scope="module")
def incidents(stack) -> dict[str, Any]:  # type: ignore[type-arg]
    """The three incidents played out: the drop and the collapse page, then the restart team's server (degraded,
    its page sent) is stopped for OUTAGE seconds and started again degraded; its page is watched throughout."""
    wait_long(lambda: all(PRIMARY[team] in delivered(stack, team) for team in PRIMARY), "each incident's page")
    restart = stack["processes"]["restart"]
    restart.terminate()
    restart.wait(timeout=15)
    watched: list[tuple[float, bool]] = []

    def watch() -> None:
        watched.append((time.monotonic(), "SpecDecodeAcceptanceDropped" in firing(stack, "restart")))

    stopped = time.monotonic()
    wait_until(lambda: watch() or time.monotonic() - stopped >= OUTAGE, f"{OUTAGE:g} s of the restart team's server down", timeout=60, every=0.5)
    address = stack["sims"]["restart"]
    again = subprocess.Popen(simulator("restart", address, stack["tmp"] / "restart-2.log", "drop-off", "0.1"), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://{address}/health", again, "the restarted simulator")
        back = time.monotonic()
        # the condition itself again (guarded rates of the new counters), then a flush's worth of Alertmanager time
        condition = 'instance_model_engine_k:vllm_spec_decode_mean_acceptance_length:ratio_rate15s{namespace="restart"} < 2'
        wait_until(lambda: watch() or query(stack, condition), "the restarted server's drop condition again", timeout=90, every=0.5)
        settled = time.monotonic()
        wait_until(lambda: watch() or time.monotonic() - settled >= 5, "Alertmanager's flushes", timeout=30, every=0.5)
        return {"watched": watched, "down_for": back - stopped}
    finally:
        again.terminate()
        again.wait(timeout=15)


def test_one_incident_one_page_under_the_shipped_routes_and_kube_prometheus_stacks(stack, incidents):
    for team, primary in PRIMARY.items():
        for hook in ("shipped", "kps"):
            assert pages(stack, team, hook) == [{primary}], (team, hook, pages(stack, team, hook))


def test_a_restart_inside_the_start_up_budget_keeps_the_page_firing(stack, incidents):
    assert incidents["down_for"] >= OUTAGE
    assert incidents["watched"] and all(firing for _, firing in incidents["watched"]), "the drop resolved during the restart"
    assert delivered(stack, "restart") == {"SpecDecodeAcceptanceDropped"}  # no source-down page for the load


def test_copies_never_page_each_other_and_a_plain_vllm_stays_quiet(stack, incidents):
    alerts = httpx.get(stack["prometheus"] + "/api/v1/alerts", timeout=5).json()["data"]["alerts"]
    assert alerts and all(a["labels"]["team"] == a["labels"]["namespace"] for a in alerts), [a["labels"] for a in alerts]
    assert not any(a["labels"]["namespace"] == "chat" for a in alerts)
    assert query(stack, 'vllm:generation_tokens_total{namespace="chat"}')  # scraped, and quiet
    # four copies with the same record names write disjoint series: no evaluation failed on a duplicate
    metrics = httpx.get(stack["prometheus"] + "/metrics", timeout=10).text
    failures = [float(v) for v in re.findall(r"^prometheus_rule_evaluation_failures_total\{[^}]*\} (\S+)$", metrics, re.M)]
    assert failures and sum(failures) == 0
    for team in TEAMS:
        assert query(stack, f'model:vllm_spec_decode_mean_acceptance_length:ratio_rate15s{{namespace="{team}"}}'), team


def test_broken_and_drop_off_fire_and_alertmanager_delivers(stack, incidents):
    assert "SpecDecodePositionZeroCollapse" in delivered(stack, "broken")
    assert "SpecDecodeAcceptanceLengthLow" not in delivered(stack, "broken")  # waits behind the collapse
    (notice,) = [a for a in stack["webhook"].alerts() if a["labels"]["alertname"] == "SpecDecodeAcceptanceDropped"
                 and a["labels"]["namespace"] == "drop"][:1]
    assert notice["labels"]["severity"] == "warning" and notice["labels"]["pod"] == "vllm-drop" and "instance" not in notice["labels"]
    assert notice["annotations"]["runbook_url"].endswith("#specdecodeacceptancedropped")
    # the description's template queried the reference of the alert's own config
    assert re.match(r"Mean acceptance length is \d\.\d\d against \d\.\d\d for this config \(k=\d+\)", notice["annotations"]["description"])
    assert notice["labels"]["num_speculative_tokens"].isdigit()


def test_healthy_fires_only_the_wasted_positions_alert(stack, incidents):
    wait_long(lambda: "SpecDecodeWastedPositions" in firing(stack, "healthy"), "the healthy server's wasted-positions alert")
    assert firing(stack, "healthy") & ACCEPTANCE_ALERTS == set()
    assert delivered(stack, "healthy") & ACCEPTANCE_ALERTS == set()


VARIABLES = {"$__rate_interval": "15s", "$job": ".*", "$namespace": ".*", "$pod": ".*", "$instance": ".*", "$model": ".*", "$engine": ".*", "$upstream": ".*", "$window": "30s"}


def panel_queries(config: MixinConfig = FAST) -> list[tuple[str, str, str]]:
    result = []
    for filename, dashboard in dashboards(config).items():
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expr = target["expr"]
                for variable, value in VARIABLES.items():
                    expr = expr.replace(variable, value)
                result.append((filename, panel["title"], expr))
    return result


def test_every_dashboard_query_returns_data(stack, incidents):
    """Each panel shows data in some team's copy of the dashboards (each reads its own namespace only: the drop
    team's has a degraded server, which gets no recommended k; the healthy team's sidecar reads no log)."""
    shown: dict[tuple[str, str, int], list[str]] = {}
    for team in TEAMS:
        for index, (filename, title, expr) in enumerate(panel_queries(fast(team))):
            assert not re.search(r"\$\w+", expr), f"unsubstituted variable in {title}: {expr}"
            result = httpx.get(stack["prometheus"] + "/api/v1/query", params={"query": expr}, timeout=10).json()
            assert result["status"] == "success", (title, expr, result)
            shown.setdefault((filename, title, index), []).extend([team] if result["data"]["result"] else [])
    assert [key for key, teams in shown.items() if not teams] == []


def test_every_dashboard_variable_lists_values_and_the_window_is_the_health_window(stack):
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, "drop"), "every series to be scraped")
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
    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, "drop"), "every series to be scraped")

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

    wait_long(lambda: "SpecDecodeAcceptanceDropped" in delivered(stack, "drop"), "every series to be scraped")
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
