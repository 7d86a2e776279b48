"""The seed incident's second run, with Alertmanager up (tests/golden/vllm-0.26.0/seed-incident/run-2, issue 36).

The same three lives as the first run (healthy, a stale drafter config.json, fixed) on a real vLLM
0.26.0, watched by the shipped stack, and this time Alertmanager ran: its webhook receiver kept every
notification it was sent (`alertmanager-notifications.jsonl`). These tests read what was sent and
when, against the run's own events: the page came in the stale life, how many pages one incident
gave and why, and what the run could not show (the resolution, held past its end by keep_firing_for).
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config import parse_duration
from exporter.mixin.config import DEFAULT

RUN = Path(__file__).parent / "golden" / "vllm-0.26.0" / "seed-incident" / "run-2"
T0 = float((RUN / "t0_epoch.txt").read_text())
ACCEPTANCE = ("SpecDecodePositionZeroCollapse", "SpecDecodeAcceptanceDropped", "SpecDecodeAcceptanceLengthLow", "SpecDecodeAcceptanceBelowReference")


def events() -> dict[tuple[str, str], float]:
    """(event, phase) -> seconds since the first launch."""
    rows = [json.loads(line) for line in (RUN / "events.jsonl").read_text().splitlines()]
    return {(row["event"], row["phase"]): row["epoch"] - T0 for row in rows}


EVENTS = events()


def seconds(stamp: str) -> float:
    """An RFC 3339 time of Alertmanager or Prometheus, as seconds since the first launch."""
    return datetime.fromisoformat(re.sub(r"\.(\d{6})\d*", r".\1", stamp.replace("Z", "+00:00"))).timestamp() - T0


def notifications() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RUN / "alertmanager-notifications.jsonl").read_text().splitlines()]


def sent_alerts() -> list[dict[str, Any]]:
    return [alert for notification in notifications() for alert in notification["alerts"]]


def active_since() -> dict[str, float]:
    """Each alert's activeAt (when its condition began: pending) in the live Prometheus, first seen."""
    out: dict[str, float] = {}
    for line in gzip.decompress((RUN / "prometheus-alerts.jsonl.gz").read_bytes()).decode().splitlines():
        for alert in json.loads(line)["body"]["data"]["alerts"]:
            out.setdefault(alert["labels"]["alertname"], seconds(alert["activeAt"]))
    return out


def test_alertmanager_paged_the_broken_drafter_inside_the_stale_life():
    stale = (EVENTS[("load_start", "stale")], EVENTS[("launch", "fixed")])
    collapse = [a for a in sent_alerts() if a["labels"]["alertname"] == "SpecDecodePositionZeroCollapse"]
    assert [a["status"] for a in collapse] == ["firing"]
    assert stale[0] < seconds(collapse[0]["startsAt"]) < stale[1]
    for alert in sent_alerts():  # every page: an acceptance alert that began in the stale life, nothing from the healthy life
        assert alert["labels"]["alertname"] in ACCEPTANCE
        assert stale[0] < seconds(alert["startsAt"]) < stale[1]
        assert alert["labels"]["namespace"] == "inference" and alert["labels"]["pod"] == "vllm" and "instance" not in alert["labels"]
    receipts = [json.loads(line) for line in (RUN / "webhook-receipts.jsonl").read_text().splitlines()]
    assert [r["status"] for r in receipts] == ["firing"] * len(notifications())  # the receiver's own log of each POST


def test_one_incident_gave_two_pages_under_the_runs_scaled_for_and_one_under_the_production_for():
    """The shipped routes and inhibitions, live: the sidecar's BelowReference (L under 70 % of its
    reference, on the 5m window) began 210 s before the collapse's stricter condition (position 0 ≤ 25 %
    and L ≤ 1.3 on vLLM's rate5m). With the run's `for: 1m` it fired — and paged — before the collapse
    existed to hold it back, so one broken drafter paged twice. Under the production `for: 10m` the
    collapse goes pending inside BelowReference's `for:`, and BelowReference's `unless ALERTS{…collapse…}`
    ends its condition before it can fire: one page (tests/test_one_page.py proves that gating in promtool)."""
    assert [a["labels"]["alertname"] for a in sent_alerts()] == ["SpecDecodeAcceptanceBelowReference", "SpecDecodePositionZeroCollapse"]
    since = active_since()
    gap = since["SpecDecodePositionZeroCollapse"] - since["SpecDecodeAcceptanceBelowReference"]
    live_for = parse_duration("1m")
    production_for = parse_duration(DEFAULT.alert("SpecDecodeAcceptanceBelowReference").for_)
    assert live_for < gap < production_for
    alerts = yaml.safe_load((RUN / "config" / "specdecode.alerts.yml").read_text())["groups"][0]["rules"]
    (below,) = [rule for rule in alerts if rule["alert"] == "SpecDecodeAcceptanceBelowReference"]
    assert below["for"] == "1m" and "SpecDecodePositionZeroCollapse" in below["expr"].split("unless", 1)[1]
    # the shipped inhibition holds back what the collapse outranks only while it fires: it came second here
    shipped = yaml.safe_load((RUN / "config" / "alertmanager.yml").read_text())
    (collapse_rule,) = [r for r in shipped["inhibit_rules"] if r["source_matchers"] == ['alertname="SpecDecodePositionZeroCollapse"']]
    assert "SpecDecodeAcceptanceBelowReference" in collapse_rule["target_matchers"][0]


def test_the_collapse_condition_ended_after_the_fix_and_keep_firing_for_held_the_page_past_the_run():
    """The run could not show the resolution live: the collapse's condition ended about two minutes
    into the fixed life, and `keep_firing_for: 25m` (production) keeps it firing 25 minutes past that,
    beyond the run's collection. No resolved notification was sent, and none should have been."""
    ranges = json.loads((RUN / "prometheus-query-range.json").read_text())
    (position0,) = ranges["position0"]["data"]["result"]
    values = [(float(t) - T0, float(v)) for t, v in position0["values"]]
    broken = [t for t, v in values if v <= 0.25]
    assert EVENTS[("load_start", "stale")] < broken[0] < EVENTS[("launch", "fixed")]
    ended = broken[-1]
    assert EVENTS[("load_start", "fixed")] < ended < EVENTS[("load_start", "fixed")] + 180
    assert all(v > 0.5 for t, v in values if EVENTS[("load_start", "fixed")] + 240 < t < EVENTS[("load_end", "fixed")])
    rules = yaml.safe_load((RUN / "config" / "specdecode.alerts.yml").read_text())["groups"][0]["rules"]
    (collapse,) = [rule for rule in rules if rule["alert"] == "SpecDecodePositionZeroCollapse"]
    hold = parse_duration(collapse["keep_firing_for"])
    collected = EVENTS[("collected", "")]
    assert collected < ended + hold
    last = gzip.decompress((RUN / "prometheus-alerts.jsonl.gz").read_bytes()).decode().splitlines()[-1]
    assert any(a["labels"]["alertname"] == "SpecDecodePositionZeroCollapse" and a["state"] == "firing"
               for a in json.loads(last)["body"]["data"]["alerts"])
    assert not [n for n in notifications() if n["status"] == "resolved"]


def test_the_runs_alert_file_is_the_production_one_with_only_the_acceptance_alerts_for_scaled():
    live = yaml.safe_load((RUN / "config" / "specdecode.alerts.yml").read_text())
    production = yaml.safe_load((RUN / "config" / "specdecode.alerts.production.yml").read_text())
    scaled = [{**group, "rules": [{**rule, "for": "1m"} if rule["alert"] in ACCEPTANCE else rule for rule in group["rules"]]}
              for group in production["groups"]]
    assert live == {"groups": scaled} and live != production


@pytest.mark.parametrize(("life", "length", "position0"), [("healthy", 4.10, 0.61), ("stale", 1.003, 0.0), ("fixed", 4.10, 0.61)])
def test_each_life_drained_to_the_first_runs_numbers(life, length, position0):
    """The same seeded models and configs (progress.log: the same config.json hashes as the first run)
    gave the same incident: each life's drained counters."""
    with tarfile.open(RUN / "metrics.tar.gz") as snapshots:
        (name,) = [n for n in snapshots.getnames() if n.endswith(f"_{life}_final.prom")]
        body = snapshots.extractfile(name).read().decode()  # type: ignore[union-attr]

    def total(metric: str, extra: str = "") -> float:
        return sum(float(v) for v in re.findall(rf"^vllm:spec_decode_{metric}_total\{{[^}}]*{extra}[^}}]*\}} (\S+)", body, re.M))

    drafts = total("num_drafts")
    assert 1 + total("num_accepted_tokens") / drafts == pytest.approx(length, abs=0.01)
    assert total("num_accepted_tokens_per_pos", 'position="0"') / drafts == pytest.approx(position0, abs=0.01)
