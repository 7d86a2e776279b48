"""/api/v1/status is rendered once per store version and second of the store's clock, and shared."""

from __future__ import annotations

from exporter.expose.app import StatusBody
from exporter.records import Interval, SeriesKey
from exporter.state.store import Store


def test_requests_share_a_render_until_the_store_or_the_second_changes():
    now = [1000.0]
    store = Store({"5m": 300.0}, clock=lambda: now[0])
    handed_over: list[Interval] = []  # a source that batches its lines, as the log follower does
    store.before_read(lambda: [store.record_interval(handed_over.pop()) for _ in list(handed_over)])
    renders: list[int] = []

    def render() -> bytes:
        renders.append(store.version)
        return str(store.version).encode()

    body = StatusBody(store, render)
    first = body.latest()
    assert body.latest() == first and len(renders) == 1  # the same store, the same second: one render
    now[0] += 0.5
    assert body.latest() == first and len(renders) == 1
    handed_over.append(Interval(SeriesKey("log", "m", "0", "log"), end=1000.0, draft_tokens=30, accepted_tokens=10, drafts=10))
    assert body.latest() != first and len(renders) == 2  # lines read but not handed over yet are counted first
    now[0] += 1.0
    body.latest()
    assert len(renders) == 3  # a new second: windows may have moved
