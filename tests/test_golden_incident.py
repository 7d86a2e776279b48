"""The seed incident, as a real vLLM 0.26.0 ran it (tests/golden/vllm-0.26.0/seed-incident/), replayed on CPU.

Three lives of one server in one log: a healthy drafter, the same drafter with a stale config.json
(tie_word_embeddings copied from a sibling: position-0 acceptance 0.61 -> 0.00), the right config
back. The tests assert the incident's facts (when it broke, that it was caught, that it recovered,
that the sources agree), not incidental internals: phase boundaries come from the run's own
events.jsonl, and every time is compared with them.
"""

from __future__ import annotations

import calendar
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import DeriveSettings, parse_duration
from exporter.intervals.clock import LogZone
from exporter.intervals.from_log import LogInterpreter
from exporter.records import RawLine
from exporter.report.analyze import AnalyzeOptions, analyze
from exporter.state.reference import ReferenceRule

RUN = Path(__file__).parent / "golden" / "vllm-0.26.0" / "seed-incident"
ROOT = Path(__file__).parents[1]
PHASES = ("healthy", "stale", "fixed")
T0 = float((RUN / "t0_epoch.txt").read_text())
RECOVERY = 60.0  # the run's --reference-recovery (sidecar-command.txt)


def events() -> dict[tuple[str, str], float]:
    """(event, phase) -> seconds since the first launch."""
    rows = [json.loads(line) for line in (RUN / "events.jsonl").read_text().splitlines()]
    return {(row["event"], row["phase"]): row["epoch"] - T0 for row in rows}


EVENTS = events()


def phase_at(seconds: float) -> str:
    """The life whose launch..exit holds this moment (seconds since the first launch)."""
    for phase in PHASES:
        if EVENTS[("launch", phase)] <= seconds <= EVENTS[("exit", phase)]:
            return phase
    return "between"


def counters(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("vllm:spec_decode_") and sample.name.endswith("_total"):
                name = sample.name.removeprefix("vllm:spec_decode_").removesuffix("_total")
                name += f"_{sample.labels['position']}" if "position" in sample.labels else ""
                values[name] = values.get(name, 0) + int(sample.value)
    return values


def totals(drafts: int, draft_tokens: int, accepted: int, per_position: list[int]) -> dict[str, int]:
    return {"num_drafts": drafts, "num_draft_tokens": draft_tokens, "num_accepted_tokens": accepted,
            **{f"num_accepted_tokens_per_pos_{i}": a for i, a in enumerate(per_position)}}


def metrics_truth() -> dict[str, dict[str, int]]:
    """Each life's drained final snapshot: its counters started at 0 with it."""
    out = {}
    for phase in PHASES:
        (path,) = (RUN / "metrics").glob(f"*_{phase}_final.prom.gz")
        out[phase] = counters(gzip.decompress(path.read_bytes()).decode())
    return out


def plugin_totals() -> dict[str, dict[str, int]]:
    out = {}
    for path in sorted((RUN / "plugin").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        (config,) = [r for r in records if r["kind"] == "config"]
        phase = phase_at(config["time"] - T0)
        intervals = [r for r in records if r["kind"] == "interval"]
        per_position = [sum(r["accepted_per_position"][i] for r in intervals) for i in range(8)]
        out[phase] = totals(sum(r["drafts"] for r in intervals), sum(r["draft_tokens"] for r in intervals),
                            sum(r["accepted_tokens"] for r in intervals), per_position)
    return out


def log_totals() -> dict[str, dict[str, int]]:
    """The spec lines of each life, grouped by the API server's pid (each life has its own)."""
    pids = {}
    for path in (RUN / "plugin").glob("*.jsonl"):  # the plugin runs in the API server: same pid
        config = json.loads(path.read_text().splitlines()[0])
        pids[str(config["pid"])] = phase_at(config["time"] - T0)
    interpreter = LogInterpreter(str(RUN / "server.log"))
    sums: dict[str, list[Any]] = {phase: [0, 0, 0, [0] * 8] for phase in PHASES}
    for text in (RUN / "server.log").read_text().split("\n"):
        outcome = interpreter.feed(RawLine(str(RUN / "server.log"), text, 0.0))
        assert outcome.problem is None, outcome.problem
        if outcome.interval is None:
            continue
        interval = outcome.interval
        assert interval.drafts_range[0] == interval.drafts_range[1], "draft_model drafts are k long: D is exact"
        row = sums[pids[text.split("pid=", 1)[1].split(")", 1)[0]]]
        row[0] += interval.drafts
        row[1] += interval.draft_tokens
        row[2] += interval.accepted_tokens
        row[3] = [a + b for a, b in zip(row[3], interval.accepted_per_position, strict=True)]
    return {phase: totals(*row) for phase, row in sums.items()}


def last_spec_line(phase: str) -> float:
    """Seconds since the first launch of the life's last printed spec line (the log's whole seconds)."""
    pids = {phase_at(json.loads(path.read_text().splitlines()[0])["time"] - T0): json.loads(path.read_text().splitlines()[0])["pid"]
            for path in (RUN / "plugin").glob("*.jsonl")}
    lines = [line for line in (RUN / "server.log").read_text().splitlines() if f"(APIServer pid={pids[phase]})" in line and "SpecDecoding metrics" in line]
    clock = lines[-1].split()[4]  # `(APIServer pid=N) INFO MM-DD HH:MM:SS …`
    day = time.strftime("%Y-%m-%d", time.gmtime(T0))
    return calendar.timegm(time.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S")) - T0


def test_log_metrics_and_plugin_agree_on_every_phase():
    truth, plugin, log = metrics_truth(), plugin_totals(), log_totals()
    assert truth == plugin  # the plugin's records add up to each life's final counters, exactly
    for phase in ("healthy", "stale"):  # D, T and A exact; A_i rebuilt from 3-decimal rates
        exact = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
        assert {k: log[phase][k] for k in exact} == {k: truth[phase][k] for k in exact}
        assert all(abs(log[phase][k] - v) <= 0.001 * truth[phase]["num_drafts"] for k, v in truth[phase].items())
    # vLLM prints its stats every 10 s: the fixed life stopped 9 s after its last line, and the
    # drafts of those seconds reached /metrics and the plugin, never the log
    tail = truth["fixed"]["num_drafts"] - log["fixed"]["num_drafts"]
    last = last_spec_line("fixed")
    (path,) = [p for p in (RUN / "plugin").glob("*.jsonl") if phase_at(json.loads(p.read_text().splitlines()[0])["time"] - T0) == "fixed"]
    after = sum(r["drafts"] for r in map(json.loads, path.read_text().splitlines()) if r["kind"] == "interval" and r["end"] - T0 > last - 1)
    assert 0 < tail <= after
    assert EVENTS[("load_end", "fixed")] - last < 10
    healthy, stale, fixed = (truth[p] for p in PHASES)
    # the incident itself: position 0 from 61% to nothing, and back
    assert healthy["num_accepted_tokens_per_pos_0"] / healthy["num_drafts"] == pytest.approx(0.61, abs=0.01)
    assert stale["num_accepted_tokens_per_pos_0"] / stale["num_drafts"] < 0.01
    assert 1 + stale["num_accepted_tokens"] / stale["num_drafts"] < 1.01
    assert fixed["num_accepted_tokens_per_pos_0"] / fixed["num_drafts"] == pytest.approx(0.61, abs=0.01)


@pytest.mark.slow  # the CLI as a process
def test_check_config_names_the_stale_field_and_passes_the_fixed_one():
    def run(drafter: str) -> dict[str, Any]:
        result = subprocess.run(
            [sys.executable, "-m", "exporter", "check-config", str(RUN / drafter), "--target", str(RUN / "target"),
             "--method", "draft_model", "--k", "8", "--vllm-version", "0.26.0", "--format", "json"],
            capture_output=True, text=True, timeout=60,
        )
        doc: dict[str, Any] = json.loads(result.stdout)
        assert result.returncode == doc["status"]
        return doc

    stale = run("drafter-stale")
    assert stale["status"] == 2 and [f["field"] for f in stale["findings"]] == ["tie_word_embeddings"]
    assert run("drafter-fixed")["findings"] == []
    # what changed between the two files is exactly what was named
    fixed_config = json.loads((RUN / "drafter-fixed" / "config.json").read_text())
    stale_config = json.loads((RUN / "drafter-stale" / "config.json").read_text())
    assert {k for k in fixed_config.keys() | stale_config.keys() if fixed_config.get(k) != stale_config.get(k)} == {"tie_word_embeddings"}


def _dated_log(tmp_path: Path) -> Path:
    """server.log with the modification time of its run: the log's lines carry no year. A copy tells
    no zone (tests/test_zone_evidence.py): the run's zone, UTC, is given (LOG_ZONE, --log-timezone)."""
    log = tmp_path / "server.log"
    shutil.copyfile(RUN / "server.log", log)
    os.utime(log, (T0 + 1200, T0 + 1200))
    return log


LOG_ZONE = LogZone(UTC, "flag")  # the run's hosts ran in UTC (README.md)


def test_analyze_tells_the_incident_on_the_logs_own_clock(tmp_path):
    log = _dated_log(tmp_path)
    rule = ReferenceRule.of(7 * 86400.0, 86400.0, 1000, RECOVERY)
    report = analyze([str(log)], DeriveSettings(health_window="5m"), AnalyzeOptions(progress=False, reference=rule, zone=LOG_ZONE))
    assert report["parse_errors"] == {}
    (series,) = report["series"]
    (span,) = series["unhealthy_spans"]  # one incident, closed
    assert span["worst"] == "broken" and not span["ongoing"]
    # in hindsight the span is the stale life, from its first stats interval (10 s, vLLM's default,
    # may begin before the load did) to the fixed life's first, where the numbers recovered
    stats = 10.0
    assert EVENTS[("load_start", "stale")] - stats <= span["start"] - T0 <= EVENTS[("load_end", "stale")]
    assert EVENTS[("load_start", "fixed")] - stats <= span["end"] - T0 <= EVENTS[("load_start", "fixed")] + stats
    assert series["health"] == "ok" and series["health_since"] == span["end"]
    # the live verdict (what serve said) ended it once the recovery had held
    (live,) = series["live"]["unhealthy_spans"]
    assert EVENTS[("load_start", "fixed")] + RECOVERY - 1 <= live["end"] - T0 <= EVENTS[("load_end", "fixed")]
    # one config all along (same drafter path, method and k): the reference is the one learned in
    # the healthy life, never retired or replaced by a restart
    reference = series["reference"]
    assert (reference["method"], reference["num_speculative_tokens"], reference["draft_model"]) == ("draft_model", 8, "/tmp/models/draft_noisy")
    assert reference["start"] - T0 <= EVENTS[("load_end", "healthy")]
    # and at the healthy level: the broken life taught it nothing (the live sidecar of the run, older
    # code, pooled the first broken minutes while its 5m window still said ok: 4.10 -> 2.15)
    healthy = metrics_truth()["healthy"]
    assert reference["mean_acceptance_length"] == pytest.approx(1 + healthy["num_accepted_tokens"] / healthy["num_drafts"], abs=0.01)
    assert series["previous_references"] == [] and series["reference_adopted"] is None


def status_rows() -> list[tuple[float, dict[str, Any]]]:
    """The live sidecar's judged-window verdict per source, every 10 s of the run."""
    rows = []
    for line in gzip.decompress((RUN / "sidecar-status.jsonl.gz").read_bytes()).decode().splitlines():
        record = json.loads(line)
        if "body" not in record:
            continue
        body = record["body"]
        judged = {s["source"]: s for s in body["series"] if s["window"] == body["health_window"]}
        rows.append((record["t"] - T0, judged))
    return rows


def test_the_live_sidecar_caught_it_on_every_source_and_saw_the_recovery():
    rows = status_rows()
    for source in ("log", "metrics", "plugin"):
        seen = [(t, row[source]) for t, row in rows if source in row]
        broken = [(t, s) for t, s in seen if s["health"] == "broken" and s["health_since"] is not None]
        assert broken, f"{source}: never broken"
        since = {s["health_since"] - T0 for _, s in broken}
        assert len(since) == 1, f"{source}: one broken span"
        (began,) = since
        # the 5m judged window turns once it holds mostly stale traffic: inside the stale life
        assert EVENTS[("load_start", "stale")] < began < EVENTS[("load_end", "stale")]
        assert all(phase_at(t) in ("stale", "between", "fixed") for t, _ in broken)
        recovered = [(t, s) for t, s in seen if t > EVENTS[("load_start", "fixed")] and s["health"] == "ok"]
        assert recovered, f"{source}: never ok after the fix"
        assert recovered[0][1]["health_since"] - T0 >= EVENTS[("load_start", "fixed")]
        identities = {(s["reference"]["method"], s["reference"]["num_speculative_tokens"], s["reference"]["draft_model"]) for _, s in seen}
        assert identities == {("draft_model", 8, "/tmp/models/draft_noisy")}
        assert seen[-1][1]["previous_references"] == []


def live_alerts() -> list[tuple[float, set[tuple[str, str, str]]]]:
    """Prometheus's /api/v1/alerts every 10 s of the run: (alertname, instance, state)."""
    out = []
    for line in gzip.decompress((RUN / "prometheus-alerts.jsonl.gz").read_bytes()).decode().splitlines():
        record = json.loads(line)
        alerts = record["body"]["data"]["alerts"]
        out.append((record["t"] - T0, {(a["labels"]["alertname"], a["labels"]["instance"], a["state"]) for a in alerts}))
    return out


def test_the_live_prometheus_fired_the_collapse_in_the_stale_life_and_resolved_it_after_the_fix():
    collapse = [t for t, alerts in live_alerts() if ("SpecDecodePositionZeroCollapse", "127.0.0.1:8000", "firing") in alerts]
    assert collapse
    assert EVENTS[("load_start", "stale")] < collapse[0] < EVENTS[("load_end", "stale")]
    assert EVENTS[("load_start", "fixed")] < collapse[-1] < EVENTS[("load_end", "fixed")]  # resolved during the fixed life
    never_before = [t for t, alerts in live_alerts() if t < EVENTS[("load_start", "stale")] and any(a[2] == "firing" for a in alerts)]
    assert never_before == []  # no alert fired in the healthy life


def test_the_live_alert_file_is_the_production_one_of_its_day_with_only_for_medium_scaled():
    """config/specdecode.alerts.production.yml is deploy/prometheus/specdecode.alerts.yml as shipped at
    the run's commit (fc7fda9); the live run loaded it with every 10m `for:` at 1m, nothing else changed."""
    live = yaml.safe_load((RUN / "config" / "specdecode.alerts.yml").read_text())
    production = yaml.safe_load((RUN / "config" / "specdecode.alerts.production.yml").read_text())
    scaled = [{**group, "rules": [{**rule, "for": "1m"} if rule.get("for") == "10m" else rule for rule in group["rules"]]}
              for group in production["groups"]]
    assert live == {"groups": scaled} and live != production


# --- the /metrics snapshots through promtool, with the production rules ------------------------

STEP = 5  # the run's scraper took a snapshot every 5 s; NNN is whole seconds since the first launch
# what the run's Prometheus attached, and the tenant's namespace the shipped rules read (a target label
# of the compose files: the run predates it)
VLLM_LABELS = {"job": "vllm", "instance": "127.0.0.1:8000"}
TENANT = {"namespace": "inference"}


def snapshot_series() -> tuple[int, dict[str, list[str]]]:
    """promtool input series from every snapshot: slot = round(NNN / STEP), '_' where none was taken."""
    slots: dict[int, dict[str, float]] = {}
    for path in sorted((RUN / "metrics").glob("*.prom.gz")):
        if "final" in path.name:
            continue
        slot = round(int(path.name.split(".")[0]) / STEP)
        assert slot not in slots, f"two snapshots in slot {slot}"
        samples: dict[str, float] = {}
        for family in text_string_to_metric_families(gzip.decompress(path.read_bytes()).decode()):
            for sample in family.samples:
                if (sample.name.startswith("vllm:spec_decode_") and sample.name.endswith("_total")) or sample.name == "vllm:generation_tokens_total":
                    labels = {**sample.labels, **VLLM_LABELS, **TENANT}
                    samples[sample.name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"] = sample.value
        slots[slot] = samples
    first, last = min(slots), max(slots)
    names = sorted({name for samples in slots.values() for name in samples})
    values = {name: [f"{slots[s][name]:g}" if name in slots.get(s, {}) else "_" for s in range(first, last + 1)] for name in names}
    return first * STEP, values


def promtool_test(tmp_path: Path, alerts_file: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool missing: scripts/test installs Debian's prometheus"
    start, values = snapshot_series()
    # promtool's series start at 0: the first snapshot's time is kept by leading blank samples
    series = [{"series": name, "values": " ".join(["_"] * (start // STEP) + points)} for name, points in values.items()]
    for test in tests:
        test["input_series"] = series
        test["interval"] = f"{STEP}s"
    doc = {"rule_files": [str(ROOT / "deploy" / "prometheus" / "specdecode.rules.yml"), str(alerts_file)],
           "evaluation_interval": "30s", "tests": tests}
    path = tmp_path / "incident-test.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=400))
    return subprocess.run([tool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)


def _at(seconds: float) -> str:
    return f"{int(seconds // 30 * 30)}s"  # an evaluation of the 30 s groups


COLLAPSE_LABELS = {"alertname": "SpecDecodePositionZeroCollapse", "severity": "critical", "engine": "0", "model_name": "target", "position": "0", **VLLM_LABELS}


@pytest.mark.slow
def test_promtool_production_rules_see_the_collapse_condition_through_the_stale_life_but_its_10m_for_does_not_pass(tmp_path):
    """The production rules on the real snapshots at their real times: the collapse condition holds
    from inside the stale life until shortly after the fix, under 10 minutes: the production
    alert stays pending (the stale life was 430 s of load; its `for:` needs 600 s of condition)."""
    stale_end, fixed_start = EVENTS[("load_end", "stale")], EVENTS[("load_start", "fixed")]
    condition = ('instance_model_engine_position:vllm_spec_decode_position_acceptance:ratio_rate5m{position="0"} <= 0.25 '
                 'and on(job, instance, model_name, engine) instance_model_engine:vllm_spec_decode_mean_acceptance_length:ratio_rate5m <= 1.3')
    labels = {"engine": "0", "model_name": "target", "position": "0", **VLLM_LABELS, **TENANT}
    tests = [{
        "promql_expr_test": [
            {"expr": f"count({condition})", "eval_time": _at(EVENTS[("load_start", "stale")] - 10), "exp_samples": []},
            {"expr": f"({condition}) * 0", "eval_time": _at(stale_end - 15), "exp_samples": [{"labels": "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "value": 0}]},
            {"expr": f"count({condition})", "eval_time": _at(fixed_start + 90), "exp_samples": []},
        ],
        "alert_rule_test": [
            {"alertname": "SpecDecodePositionZeroCollapse", "eval_time": _at(t), "exp_alerts": []}
            for t in (stale_end - 15, fixed_start + 20, fixed_start + 90)
        ],
    }]
    result = promtool_test(tmp_path, ROOT / "deploy" / "prometheus" / "specdecode.alerts.yml", tests)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_promtool_with_the_runs_scaled_alerts_fires_the_collapse_as_the_live_prometheus_did(tmp_path):
    stale_end, fixed_start = EVENTS[("load_end", "stale")], EVENTS[("load_start", "fixed")]
    live = [t for t, alerts in live_alerts() if ("SpecDecodePositionZeroCollapse", "127.0.0.1:8000", "firing") in alerts]
    firing = {"exp_labels": {**COLLAPSE_LABELS, **TENANT}}  # the run's alert over today's records: they keep the namespace
    tests = [{"alert_rule_test": [
        {"alertname": "SpecDecodePositionZeroCollapse", "eval_time": _at(EVENTS[("load_start", "stale")] + 60), "exp_alerts": []},
        {"alertname": "SpecDecodePositionZeroCollapse", "eval_time": _at(live[0] + 30), "exp_alerts": [firing]},
        {"alertname": "SpecDecodePositionZeroCollapse", "eval_time": _at(stale_end - 15), "exp_alerts": [firing]},
        {"alertname": "SpecDecodePositionZeroCollapse", "eval_time": _at(live[-1] + 40), "exp_alerts": []},
        {"alertname": "SpecDecodePositionZeroCollapse", "eval_time": _at(fixed_start + 120), "exp_alerts": []},
    ]}]
    # promtool compares annotations too; theirs quote the value of each evaluation: left out here
    alerts = yaml.safe_load((RUN / "config" / "specdecode.alerts.yml").read_text())
    for group in alerts["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    bare = tmp_path / "alerts-without-annotations.yml"
    bare.write_text(yaml.safe_dump(alerts, sort_keys=False, width=400))
    result = promtool_test(tmp_path, bare, tests)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_serve_from_start_reads_the_three_lives_as_analyze_does(tmp_path):
    """`serve --from-start` on the whole log: every line, analyze's totals and reference, and — the
    backlog on the log's own clock — analyze's verdict: the broken life is over."""
    from helpers import running_exporter
    from waiting import wait_until

    log = _dated_log(tmp_path)
    report = analyze([str(log)], DeriveSettings(health_window="5m"),
                     AnalyzeOptions(progress=False, reference=ReferenceRule.of(7 * 86400.0, 86400.0, 1000, RECOVERY), zone=LOG_ZONE))
    (offline,) = report["series"]
    spec_lines = report["spec_lines"]
    with running_exporter("--log", str(log), "--from-start", "--reference-recovery", "1m", "--log-timezone", "UTC",
                          "--state-dir", str(tmp_path / "state")) as exporter:
        status = wait_until(lambda: (s := exporter.get_json("/api/v1/status"))["spec_lines"] == spec_lines and s, "every spec line read")
        samples = exporter.scrape()
    (live,) = [s for s in status["series"] if s["window"] == status["health_window"]]
    assert status["parse_errors"] == {}
    lifetime = {k: offline[k] for k in ("drafts", "draft_tokens", "accepted_tokens")}
    served = {k: sum(v for (name, labels), v in samples.items() if name == f"specdecode_{k}_total" and ("source", "log") in labels) for k in lifetime}
    assert served == lifetime  # every line counted (the windows are the last hour of the wall's clock: the log is older)
    # on the log's own clock, as analyze reads it: one broken span, over when the fixed life had held
    assert offline["health"] == "ok"
    assert [(span["worst"], span["ongoing"]) for span in live["unhealthy_spans"]] == [("broken", False)]
    assert [span["start"] for span in live["unhealthy_spans"]] == [span["start"] for span in offline["live"]["unhealthy_spans"]]
    # neither path pooled the broken life into the reference (the collapse never teaches it)
    assert live["reference"]["mean_acceptance_length"] == pytest.approx(offline["reference"]["mean_acceptance_length"], abs=0.01)
    assert live["reference"]["mean_acceptance_length"] == pytest.approx(4.10, abs=0.01)
    assert (live["reference"]["method"], live["reference"]["num_speculative_tokens"], live["reference"]["draft_model"]) == (
        "draft_model", 8, "/tmp/models/draft_noisy")


SCALE = 50  # the Alertmanager replay runs the run's 10 s between alert snapshots in 0.2 s


def _scaled(duration: str) -> str:
    return f"{round(parse_duration(duration) * 1000 / SCALE)}ms"


@pytest.mark.slow
def test_alertmanager_with_the_production_routes_pages_the_collapse_once_and_resolves_it(tmp_path):
    """This run's Alertmanager did not start on the GPU host (Debian's template path, README), so
    the alerts the live Prometheus sent are sent again here, in order, to a real Alertmanager with
    the production alertmanager.yml (its routes, grouping and inhibition), every duration in it and
    between the snapshots divided by the same factor. The second run's live notifications are read
    by tests/test_golden_incident_live.py."""
    import httpx
    from helpers import free_port, running_process
    from servers import Webhook, http_server
    from waiting import wait_until

    alertmanager = shutil.which("prometheus-alertmanager")
    assert alertmanager, "scripts/test installs Debian's prometheus-alertmanager"
    config = yaml.safe_load((ROOT / "deploy" / "alertmanager" / "alertmanager.yml").read_text())
    for route in (config["route"], *config["route"].get("routes", [])):
        for key in ("group_wait", "group_interval", "repeat_interval"):
            if key in route:
                route[key] = _scaled(route[key])
    webhook = Webhook()
    snapshots = [json.loads(line) for line in gzip.decompress((RUN / "prometheus-alerts.jsonl.gz").read_bytes()).decode().splitlines()]
    first = min(s["t"] for s in snapshots if any(a["state"] == "firing" for a in s["body"]["data"]["alerts"]))
    # from just before the first alert fired to past the collapse group's second flush (5 min later)
    snapshots = [s for s in snapshots if first - 20 <= s["t"] <= first + 400]
    with http_server(webhook) as hook:
        config["receivers"][0]["webhook_configs"][0]["url"] = f"{hook}/alerts"
        (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config))
        address = f"127.0.0.1:{free_port()}"
        with running_process([alertmanager, f"--config.file={tmp_path / 'alertmanager.yml'}", f"--storage.path={tmp_path / 'data'}",
                              f"--web.listen-address={address}", "--cluster.listen-address="], f"http://{address}/-/ready", "alertmanager"):
            active: dict[str, dict[str, Any]] = {}
            inhibited: list[bool] = []  # AcceptanceLengthLow's state while the collapse fired too
            start = time.time()
            for snapshot in snapshots:
                # paced on the run's own clock, so Alertmanager's scaled timers see the run's spacing
                time.sleep(max(0.0, start + (snapshot["t"] - snapshots[0]["t"]) / SCALE - time.time()))
                now = time.time()
                firing = {json.dumps(a["labels"], sort_keys=True): a for a in snapshot["body"]["data"]["alerts"] if a["state"] == "firing"}
                batch = [{"labels": a["labels"], "annotations": a["annotations"], "startsAt": a["activeAt"],
                          "endsAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 600))} for a in firing.values()]
                batch += [{"labels": a["labels"], "annotations": a["annotations"], "startsAt": a["activeAt"],
                           "endsAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 1))} for key, a in active.items() if key not in firing]
                active = firing
                if batch:
                    httpx.post(f"http://{address}/api/v2/alerts", json=batch, timeout=5).raise_for_status()
                names = {json.loads(key)["alertname"] for key in firing}
                if {"SpecDecodePositionZeroCollapse", "SpecDecodeAcceptanceLengthLow"} <= names:
                    low = httpx.get(f"http://{address}/api/v2/alerts", params={"filter": 'alertname="SpecDecodeAcceptanceLengthLow"'}, timeout=5).json()
                    inhibited.extend(bool(a["status"]["inhibitedBy"]) for a in low)

            def collapse(status: str) -> list[dict[str, Any]]:
                return [a for a in webhook.alerts() if a["labels"]["alertname"] == "SpecDecodePositionZeroCollapse" and a["status"] == status]

            wait_until(lambda: collapse("resolved"), "the collapse resolved at the webhook", timeout=20, every=0.1)
    (paged,) = {json.dumps(a["labels"], sort_keys=True) for a in collapse("firing")}
    assert json.loads(paged) == {"alertname": "SpecDecodePositionZeroCollapse", "severity": "critical", "position": "0", **{
        k: v for k, v in COLLAPSE_LABELS.items() if k not in ("alertname", "severity", "position")}}
    delivered = {a["labels"]["alertname"] for a in webhook.alerts()}
    # inhibited by the collapse (same instance, model_name, engine) for as long as both fired; once
    # the collapse resolves it may page (it resolved ~30 s later in the run): a flush's timing
    assert inhibited and all(inhibited)
    # the run's sidecar drop alert was: it fired before the collapse did, and the run's rules had no
    # ranks to hold it back (today's do: tests/test_one_page.py replays this incident's shape to one page)
    assert "SpecDecodeAcceptanceBelowReference" in delivered
