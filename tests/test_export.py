"""The /metrics renderer in-process: sampled values, staleness, labels, caching, exact text format."""

from __future__ import annotations

from conftest import CAPTURE
from helpers import Rendered
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import DeriveSettings
from exporter.expose.labels import MAX_LABEL_LENGTH, clean
from exporter.expose.metrics import MetricsRenderer
from exporter.intervals.pipeline import LogPipeline
from exporter.records import Interval, ReadCounts, SeriesKey, SourceHealth
from exporter.state.store import Store

SGLANG = [
    "[2026-04-05 20:02:51 DP1 TP0] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, accept len: 3.21, accept rate: 0.55, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0, ",
    "[2026-04-05 20:02:51 DP1 TP1] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, accept len: 9.99, accept rate: 0.99, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0, ",
]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def registry_for(store: Store, settings: DeriveSettings | None = None) -> Rendered:
    return Rendered(MetricsRenderer(store, settings or DeriveSettings()))


class _Reparsed:
    def __init__(self, text: str) -> None:
        self.families = list(text_string_to_metric_families(text))

    def collect(self):  # type: ignore[no-untyped-def]
        return iter(self.families)


def prometheus_client_rendering(text: str) -> str:
    """prometheus_client's own text for the families it parses out of `text`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Reparsed(text))  # type: ignore[arg-type]
    return generate_latest(registry).decode()


def capture_store() -> Store:
    store = Store({"1m": 60.0, "1h": 3600.0})
    LogPipeline(store, "capture").consume((CAPTURE / "server.log").read_text().split("\n"), read_at=1000.0)
    return store


def test_sglang_log_lines_are_exported_as_sampled_values_only():
    store = Store({"5m": 300})
    LogPipeline(store, "sglang.log").consume(SGLANG, read_at=1000.0)
    registry = registry_for(store)
    labels = {"upstream": "sglang.log", "model_name": "unknown", "engine": "1", "source": "log"}
    assert registry.get_sample_value("specdecode_sampled_mean_acceptance_length", labels) == 3.21  # TP0, not TP1
    assert registry.get_sample_value("specdecode_sampled_draft_acceptance_ratio", labels) == 0.55
    assert registry.get_sample_value("specdecode_mean_acceptance_length", {**labels, "window": "5m"}) is None
    assert registry.get_sample_value("specdecode_log_spec_lines_total", {"upstream": "sglang.log", "format": "SG-d"}) == 1


def test_a_source_down_past_the_grace_period_exports_no_stale_gauges():
    clock = Clock(1000.0)
    store = Store({"1h": 3600}, clock=clock)
    key = SeriesKey("http://t/metrics", "m", "0", "metrics")
    store.record_interval(Interval(key=key, end=1000.0, draft_tokens=400, accepted_tokens=200, drafts=100, accepted_per_position=(120, 80), k=2))

    store.post_health("http://t/metrics", SourceHealth(up=False), kind="metrics")
    store.count_read("http://t/metrics", ReadCounts(read_at=1000.0), kind="metrics")
    registry = registry_for(store, DeriveSettings(stale_after=300.0))
    labels = {"upstream": "http://t/metrics", "model_name": "m", "engine": "0", "source": "metrics", "window": "1h"}
    clock.now = 1200.0  # down, but within the grace period
    assert registry.get_sample_value("specdecode_mean_acceptance_length", labels) == 3.0
    clock.now = 1400.0  # past it: no acceptance gauge, no verdict; the counters remain true totals
    assert registry.get_sample_value("specdecode_mean_acceptance_length", labels) is None
    health = {k: v for k, v in labels.items() if k != "window"}
    assert registry.get_sample_value("specdecode_health", {**health, "state": "ok"}) is None
    assert registry.get_sample_value("specdecode_accepted_tokens_total", health) == 200
    assert registry.get_sample_value("specdecode_source_up", {"source": "metrics", "upstream": "http://t/metrics"}) == 0


def test_label_values_from_input_are_capped_and_cleaned():
    assert len(clean("x" * 1000)) == MAX_LABEL_LENGTH
    assert clean("a\nb\x00c") == "a?b?c"
    store = Store({"5m": 300})
    hostile = 'model"with\\quotes\nand newline'
    LogPipeline(store, "log", model_name=hostile).consume(
        ["(APIServer pid=1) INFO 12-02 08:19:42 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 3.00, Accepted throughput: 0.42 tokens/s, Drafted throughput: 1.68 tokens/s, Accepted: 2 tokens, Drafted: 8 tokens, Per-position acceptance rate: 1.000, 1.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, Avg Draft acceptance rate: 25.0%"],
        read_at=1.0,
    )
    text = MetricsRenderer(store, DeriveSettings()).render()
    assert 'model_name="model\\"with\\\\quotes?and newline"' in text
    assert prometheus_client_rendering(text) == text


def test_text_is_byte_for_byte_what_prometheus_client_writes():
    text = MetricsRenderer(capture_store(), DeriveSettings(health_window="1h")).render()
    assert "specdecode_verdict_info{" in text and "specdecode_accepted_tokens_per_position_total{" in text
    assert prometheus_client_rendering(text) == text


def test_unchanged_series_are_not_rendered_again():
    store = capture_store()
    renderer = MetricsRenderer(store, DeriveSettings(health_window="1h"))
    first = renderer.render()
    assert renderer.rendered_series == 1
    assert renderer.render() == first and renderer.rendered_series == 1  # nothing changed: reused
    key = SeriesKey("capture", "target", "0", "log")
    store.record_interval(Interval(key=key, end=1001.0, draft_tokens=8, accepted_tokens=8, drafts=1, accepted_per_position=(1,) * 8, k=8))
    changed = renderer.render()
    assert renderer.rendered_series == 2 and changed != first
    assert "specdecode_accepted_tokens_total{engine=\"0\",model_name=\"target\",source=\"log\",upstream=\"capture\"} 78463.0" in changed
