"""The lean exposition (issue 19): samples per series by k, the options that bring the old series
back, gzip answers, and the cached body against a full re-render."""

from __future__ import annotations

import asyncio
import gzip
from collections import Counter

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from test_export import Clock, prometheus_client_rendering
from waiting import wait_until

from exporter import metric_names as names
from exporter.config import DeriveSettings, ExpositionSettings
from exporter.expose.app import accepts_gzip, create_app
from exporter.expose.metrics import MetricsRenderer
from exporter.expose.refresh import Refresher
from exporter.judge.memory import health_memory
from exporter.judge.verdict import STATES
from exporter.records import Interval, ReadCounts, SeriesKey, SourceHealth, SpecConfig
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

WINDOWS = {"1m": 60.0, "5m": 300.0, "1h": 3600.0}
# the verdict's memory as `serve` keeps it, with a reference that is ready after the first intervals,
# so its gauges (health since, reference L and per position) are rendered and counted too
RULE = ReferenceRule(min_drafts=100)


def _interval(key: SeriesKey, k: int, end: float, plugin: bool, scale: int = 1) -> Interval:
    drafts = 100 * scale
    per_position = tuple(max(1, int(drafts * 0.8 ** (i + 1))) for i in range(k))
    return Interval(
        key=key, end=end, start=end - 5.0, seconds=5.0, draft_tokens=drafts * k, accepted_tokens=sum(per_position), drafts=drafts,
        accepted_per_position=per_position, k=k, draft_tokens_per_position=(drafts,) * k if plugin else (),
    )


def _store(k: int, plugin: bool = False, series: int = 1) -> Store:
    clock = Clock(10_000.0)
    store = Store(WINDOWS, clock=clock, health=health_memory(DeriveSettings(), RULE, 300.0))
    for n in range(series):
        upstream = f"http://127.0.0.1:{9000 + n}/metrics"
        key = SeriesKey(upstream, "m", "0", "plugin" if plugin else "metrics")
        store.record_config(upstream, SpecConfig(method="eagle3", num_speculative_tokens=k))
        store.post_health(upstream, SourceHealth(up=True), kind="metrics")
        for step in range(3):
            store.record_interval(_interval(key, k, 9_990.0 + 5 * step, plugin))
    return store


def _per_series(text: str) -> Counter[str]:
    """specdecode_* samples carrying the series' labels (or its upstream and model, for info), by name."""
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(names.PREFIX) and sample.labels.get("model_name") == "m" and "upstream" in sample.labels:
                counts[sample.name] += 1
    return counts


def test_health_states_match_the_catalogue():
    assert len(STATES) == names.HEALTH_STATES


@pytest.mark.parametrize("k", [1, 2, 4, 8, 15, 16])
@pytest.mark.parametrize("plugin", [False, True])
def test_samples_per_series_are_what_the_catalogue_documents(k, plugin):
    rendered = _per_series(MetricsRenderer(_store(k, plugin), DeriveSettings()).render())
    documented = names.series_samples(k, plugin=plugin)
    speedup = names.EXPECTED_SPEEDUP.sample_name  # two at most: one when the recommended k is the running one
    assert 1 <= rendered.pop(speedup) <= documented.pop(speedup)
    assert documented == dict(rendered)


def test_k15_is_within_the_budget_of_eighty():
    assert sum(names.series_samples(15).values()) <= 80
    assert sum(names.series_samples(15, plugin=True).values()) <= 80
    text = MetricsRenderer(_store(15, plugin=True), DeriveSettings()).render()
    windows = {sample.labels["window"] for family in text_string_to_metric_families(text) for sample in family.samples if "window" in sample.labels}
    assert windows == {"5m"}  # the health window only
    assert "specdecode_position_conditional_acceptance_ratio{" not in text


def test_every_option_brings_the_old_series_back():
    full = ExpositionSettings(derived_windows=("all",), speedup_all=True, conditional=True)
    text = MetricsRenderer(_store(15), DeriveSettings(), full).render()
    rendered = _per_series(text)
    documented = names.series_samples(15, derived_windows=3, speedup_all=True, conditional=True)
    assert documented == dict(rendered)
    assert rendered[names.EXPECTED_SPEEDUP.sample_name] == 3 * 16
    assert prometheus_client_rendering(text) == text  # byte for byte, every family on


def test_chosen_windows_only():
    exposition = ExpositionSettings(derived_windows=("1m", "1h"))
    text = MetricsRenderer(_store(4), DeriveSettings(), exposition).render()
    windows = {sample.labels["window"] for family in text_string_to_metric_families(text) for sample in family.samples if "window" in sample.labels}
    assert windows == {"1m", "1h"}
    assert "specdecode_health{" in text  # the verdict judges the health window even when its gauges are not exported


def test_speedup_is_exported_for_the_recommended_and_the_running_k():
    text = MetricsRenderer(_store(8), DeriveSettings()).render()
    ks = {s.labels["speculative_tokens"] for f in text_string_to_metric_families(text) for s in f.samples if s.name == names.EXPECTED_SPEEDUP.name}
    recommended = {str(int(s.value)) for f in text_string_to_metric_families(text) for s in f.samples if s.name == names.RECOMMENDED_K.name}
    assert ks == recommended | {"8"} and 1 <= len(ks) <= 2


@pytest.mark.parametrize(
    ("header", "expected"),
    [("gzip", True), ("gzip, deflate", True), ("deflate, gzip;q=0.5", True), ("gzip;q=0", False), ("identity", False), ("", False), ("*", True)],
)
def test_accept_encoding(header, expected):
    assert accepts_gzip(header) is expected


def _get(app, headers: dict[str, str]) -> httpx.Response:  # type: ignore[no-untyped-def]
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sidecar") as client:
            return await client.get("/metrics", headers=headers)

    return asyncio.run(go())


def test_gzip_answer_decodes_to_the_same_text():
    app = create_app(_store(15, series=5), DeriveSettings())
    plain = _get(app, {"Accept-Encoding": "identity"})
    zipped = _get(app, {"Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers
    assert zipped.headers["content-encoding"] == "gzip" and zipped.headers["content-type"] == plain.headers["content-type"]
    assert zipped.num_bytes_downloaded < len(plain.content) / 3
    assert zipped.text == plain.text  # httpx undoes the gzip
    assert zipped.text.startswith("# HELP") and "specdecode_accepted_tokens_total{" in zipped.text


# --- the cached body against a full re-render, after arbitrary updates ----------------------------

UPDATE = st.one_of(
    st.tuples(st.just("interval"), st.integers(0, 5), st.integers(1, 16), st.integers(1, 5)),
    st.tuples(st.just("source_down"), st.integers(0, 5)),
    st.tuples(st.just("source_up"), st.integers(0, 5)),
    st.tuples(st.just("config"), st.integers(0, 5), st.integers(1, 16)),
    st.tuples(st.just("forget"), st.integers(0, 5)),
    st.tuples(st.just("tick"), st.floats(0.5, 400.0)),
    st.tuples(st.just("render"), st.booleans()),
)


def _apply(store: Store, clock: Clock, update: tuple) -> None:  # type: ignore[type-arg]
    upstream = f"u{update[1]}" if len(update) > 1 and isinstance(update[1], int) else ""
    key = SeriesKey(upstream, "m", "0", "log")
    if update[0] == "interval":
        store.record_interval(_interval(key, update[2], clock.now, plugin=update[1] % 2 == 0, scale=update[3]))
        store.count_read(upstream, ReadCounts(read_at=clock.now))
    elif update[0] in ("source_down", "source_up"):
        up = update[0] == "source_up"
        store.post_health(upstream, SourceHealth(up=up))
    elif update[0] == "config":
        store.record_config(upstream, SpecConfig(method="draft_model", num_speculative_tokens=update[2]))
    elif update[0] == "forget":
        store.forget(upstream)
    elif update[0] == "tick":
        clock.now += update[1]


@settings(max_examples=60, deadline=None)
@given(st.lists(UPDATE, max_size=30), st.booleans())
def test_incremental_body_equals_a_full_render(updates, every_option):
    clock = Clock(10_000.0)
    store = Store(WINDOWS, clock=clock, health=health_memory(DeriveSettings(), RULE, 300.0))
    exposition = ExpositionSettings(derived_windows=("all",), speedup_all=True, conditional=True) if every_option else None
    kept = MetricsRenderer(store, DeriveSettings(), exposition)
    for update in updates:
        if update[0] == "render":
            body = kept.render_bytes(gzip=update[1])
            fresh = MetricsRenderer(store, DeriveSettings(), exposition).render_bytes()
            assert (gzip.decompress(body) if update[1] else body) == fresh
        else:
            _apply(store, clock, update)
    text = kept.render()
    assert text == MetricsRenderer(store, DeriveSettings(), exposition).render()
    assert gzip.decompress(kept.render_bytes(gzip=True)).decode() == text
    generation = kept.generation
    assert kept.render_bytes() is kept.render_bytes() and kept.generation == generation  # nothing changed: the same bytes


def test_unchanged_store_keeps_the_generation_and_a_change_bumps_it():
    store = _store(4, series=3)
    renderer = MetricsRenderer(store, DeriveSettings())
    first = renderer.render_bytes(gzip=True)
    generation = renderer.generation
    assert renderer.render_bytes(gzip=True) is first and renderer.generation == generation
    store.post_health("http://127.0.0.1:9001/metrics", SourceHealth(up=False), kind="metrics")
    assert renderer.render_bytes(gzip=True) != first and renderer.generation == generation + 1


# --- a young body is sent without rendering; the refresher keeps it young -------------------------


def _down(store: Store, n: int) -> None:
    store.post_health(f"http://127.0.0.1:{9000 + n}/metrics", SourceHealth(up=False), kind="metrics")


def test_a_young_body_is_sent_as_built_and_an_old_one_is_rebuilt():
    store = _store(4, series=2)
    renderer = MetricsRenderer(store, DeriveSettings())
    first = renderer.latest(gzip=True, max_age=3600.0)
    _down(store, 0)
    assert renderer.latest(gzip=True, max_age=3600.0) is first  # young enough: not rendered again
    fresh = renderer.latest(gzip=True, max_age=0.0)
    assert fresh != first and gzip.decompress(fresh).decode() == MetricsRenderer(store, DeriveSettings()).render()
    assert renderer.latest(gzip=False, max_age=3600.0).decode() == gzip.decompress(fresh).decode()


def test_an_old_body_of_an_unchanged_store_is_sent_and_a_rebuild_is_asked_for():
    store = _store(4)
    renderer = MetricsRenderer(store, DeriveSettings())
    first = renderer.latest(gzip=True, max_age=0.0)
    assert not renderer.wanted.is_set()
    assert renderer.cached(gzip=True, max_age=0.0) is first and renderer.wanted.is_set()
    _down(store, 0)
    assert renderer.cached(gzip=True, max_age=0.0) is None  # a source wrote: the scrape waits for a new body


def test_the_refresher_rebuilds_after_a_write_and_stops():
    store = _store(4, series=2)
    renderer = MetricsRenderer(store, DeriveSettings())
    refresher = Refresher(renderer, period=0.01)
    refresher.start()
    try:
        wait_until(lambda: renderer.refreshed[1] == store.version, "the first refresh")
        _down(store, 1)
        wait_until(lambda: renderer.refreshed[1] == store.version, "a refresh after the write")
        assert gzip.decompress(renderer.cached(gzip=True, max_age=3600.0) or b"").decode() == MetricsRenderer(store, DeriveSettings()).render()
    finally:
        refresher.stop()
    assert refresher._thread is not None and not refresher._thread.is_alive()


def test_a_published_body_is_not_sent_once_a_text_build_changed_the_body():
    store = _store(4, series=2)
    renderer = MetricsRenderer(store, DeriveSettings())
    renderer.refresh()
    assert renderer.cached(gzip=True, max_age=3600.0) is not None
    _down(store, 0)
    renderer.render()  # the text form is built from the changed store: what was published is of an older body
    assert renderer.cached(gzip=True, max_age=3600.0) is None
    assert gzip.decompress(renderer.latest(gzip=True, max_age=3600.0)).decode() == renderer.render()


def test_a_kept_body_is_sent_after_a_write_until_released():
    store = _store(4)
    renderer = MetricsRenderer(store, DeriveSettings())
    publisher = renderer.publisher
    first = publisher.publish()
    publisher.keep()
    _down(store, 0)
    assert publisher.cached(gzip=True, max_age=0.0) is first and publisher.wait(0.0)  # sent, and a rebuild asked for
    assert not publisher.wait(0.0)  # the ask is taken once
    publisher.release()
    assert publisher.wait(0.0)  # release wakes the refresher
    assert publisher.cached(gzip=True, max_age=0.0) is None  # no refresher: a scrape after a write waits for a new body
