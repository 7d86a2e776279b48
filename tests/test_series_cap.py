"""The series cap and what a log of many names costs (issue 33: 20,000 model names in one log made
one /metrics take 25.9 s with the series capped at 1,000; the cap refused every new series).

The cap keeps the most recently updated series and drops the least recently updated one (README,
`--max-series`); a server restart costs one count whatever the number of series; and what the
sidecar does per line no longer grows with the series it has (or has dropped).
"""

from __future__ import annotations

from helpers import counting
from workload import SPEC_LINES

from exporter.intervals.pipeline import LogPipeline
from exporter.state import store as store_module
from exporter.state.store import Store


def _named(index: int) -> str:
    return (f"(APIServer pid=1954) INFO 12-02 08:19:13 [api_utils.py:273] non-default args: {{'model': '/m/target', "
            f"'served_model_name': ['model-{index}'], 'speculative_config': {{'method': 'draft_model', 'model': '/m/d', "
            f"'num_speculative_tokens': 8}}}}")


def _log_of_names(count: int) -> bytes:
    return "\n".join(line for index in range(count) for line in (_named(index), SPEC_LINES[index % len(SPEC_LINES)])).encode()


def test_the_cap_keeps_the_newest_series_and_drops_the_least_recently_updated():
    store = Store({"5m": 300}, max_series=100)
    LogPipeline(store, "vllm.log", clock="log", batch=False).consume_block(_log_of_names(300), 1.8e9)
    names = {series.key.model_name for series in store.snapshot().series}
    assert names == {f"model-{index}" for index in range(200, 300)}  # was: the first 100 kept, every new one refused
    assert store.snapshot().series_dropped == 200


def test_a_restart_and_a_new_series_cost_the_same_whatever_the_number_of_series(monkeypatch):
    """Each startup line restarts its upstream's series (a new period); each new name past the cap
    drops one. Counted in calls, not seconds: per line, not per line and series."""
    calls = counting(monkeypatch, store_module, "restarted")
    from exporter.config import DeriveSettings
    from exporter.judge.memory import health_memory
    from exporter.state.reference import ReferenceRule

    for batch in (False, True):
        calls.count = 0
        store = Store({"5m": 300}, max_series=1000, health=health_memory(DeriveSettings(), ReferenceRule(), 300.0))
        LogPipeline(store, "vllm.log", clock="log", batch=batch).consume_block(_log_of_names(3000), 1.8e9)
        store.snapshot()
        assert calls.count <= 3000 + 1000  # each series once at most per use; was 1000 per startup line: 2,499,500
        assert len(store.snapshot().series) == 1000
