"""An upstream's state has one writer per piece: its source's SourceHealth, the interval stage's counts."""

from exporter.records import ReadCounts, SourceHealth
from exporter.state.persist import counters_json, restore_counters
from exporter.state.store import Store
from exporter.state.upstreams import SourceCounts


def test_a_source_posts_its_health_whole_and_the_counts_stay():
    store = Store()
    store.count_read("a.log", ReadCounts(lines=10, spec_lines=2, problems={"truncated": 1}, variants={"V1-e": 2}, read_at=5.0, restarts=1))
    store.post_health("a.log", SourceHealth(up=True, rotations=2, too_long=3))
    store.post_health("a.log", SourceHealth(up=False, rotations=3, too_long=4))  # replaces, never adds
    (source,) = store.snapshot().sources
    assert (source.up, source.rotations, source.lines, source.spec_lines) == (False, 3, 10, 2)
    assert source.problems == {"truncated": 1, "line_too_long": 4}  # the source's over-long lines beside the parse problems
    assert (source.last_success, source.last_spec_line, source.resets, source.variants) == (5.0, 5.0, 1, {"V1-e": 2})


def test_a_pipeline_with_no_source_behind_it_is_up_once_read_from():
    store = Store()
    store.count_read("a.log", ReadCounts(zone=("UTC", 0.0, "flag")))
    assert not store.snapshot().sources[0].up  # only the zone is known: nothing read yet
    store.count_read("a.log", ReadCounts(lines=1, read_at=1.0))
    assert store.snapshot().sources[0].up


def test_counts_add_up_and_restarts_keep_each_kinds_rule():
    counts = SourceCounts(resets=3).plus(ReadCounts(lines=2, problems={"x": 1}), "log").plus(ReadCounts(lines=1, problems={"x": 2}, restarts=1), "log")
    assert (counts.lines, counts.problems, counts.resets, counts.last_success) == (3, {"x": 3}, 3, None)  # a log's never drop below restored
    assert SourceCounts(resets=3).plus(ReadCounts(restarts=1), "metrics").resets == 1  # a scrape's are its deltas' own
    assert SourceCounts().plus(ReadCounts(), "log") == SourceCounts()


def test_the_saved_counters_continue_with_the_source_health_apart():
    store = Store()
    store.count_read("http://127.0.0.1:1/metrics", ReadCounts(variants={"vllm": 1}, read_at=1.0, restarts=2), kind="metrics")
    store.post_health("http://127.0.0.1:1/metrics", SourceHealth(up=False, failures={"timeout": 2}), kind="metrics")
    restored = Store()
    restore_counters(restored, counters_json(store))
    (source,) = restored.snapshot().sources
    assert (source.kind, source.up, source.problems, source.variants, source.resets) == ("metrics", False, {"timeout": 2}, {"vllm": 1}, 2)
