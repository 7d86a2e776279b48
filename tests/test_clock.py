"""intervals/clock.py: a line's own time, the log's zone and year, and the one rule joining a backlog to the live edge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.intervals.batch import interpret_block
from exporter.intervals.clock import CATCH_UP_SECONDS, UNRESOLVED, LogClock, LogZone, parse_zone, resolve_local, resolve_local_many, zone_from
from exporter.intervals.from_log import LogInterpreter
from exporter.intervals.pipeline import LogPipeline
from exporter.records import RawLine
from exporter.state.store import Store

TOKYO = timezone(timedelta(hours=9))
NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC).timestamp()


def spec(stamp: str) -> str:
    return (f"(APIServer pid=7) INFO {stamp} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted throughput: 12.50 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: 7503 tokens, Drafted: 20000 tokens, "
            "Per-position acceptance rate: 0.700, 0.400, 0.250, 0.150, Avg Draft acceptance rate: 37.5%")


def stamp_of(at: float, tz: timezone | ZoneInfo) -> str:
    return datetime.fromtimestamp(at, tz).strftime("%m-%d %H:%M:%S")


def test_year_comes_from_the_reference_across_new_year():
    new_year = datetime(2027, 1, 1, 0, 5).timestamp()
    assert resolve_local("12-31 23:59:50", new_year) == datetime(2026, 12, 31, 23, 59, 50).timestamp()
    assert resolve_local("01-01 00:00:10", new_year) == datetime(2027, 1, 1, 0, 0, 10).timestamp()
    assert resolve_local("02-29 12:00:00", datetime(2027, 6, 1).timestamp()) == datetime(2024, 2, 29, 12).timestamp()
    assert resolve_local("13-45 99:00:00", new_year) is None
    # in a zone: the stamp is that zone's wall time, the year that zone's
    assert resolve_local("01-01 08:00:00", datetime(2027, 1, 1, 0, 0, tzinfo=UTC).timestamp(), TOKYO) == datetime(2026, 12, 31, 23, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("text", "offset"), [("UTC", 0), ("+09:00", 9 * 3600), ("-0500", -5 * 3600), ("UTC+5:45", 20700), ("Asia/Tokyo", 9 * 3600)])
def test_log_timezone_takes_utc_offsets_and_zone_names(text, offset):
    zone = parse_zone(text)
    assert zone.how == "flag" and zone.offset_at(NOW) == offset


@pytest.mark.parametrize("bad", ["+15:00", "Mars/Olympus", "9"])
def test_a_zone_that_is_none_is_an_error_naming_the_value(bad):
    with pytest.raises(ValueError, match="log timezone"):
        parse_zone(bad)


@pytest.mark.parametrize(("hours", "lag"), [(9, 3.0), (-5, 40.0), (5.75, 1.0), (0, 0.0)])
def test_the_zone_is_the_stamps_distance_from_the_wall_rounded_to_15_minutes(hours, lag):
    written = NOW - lag  # the line's stamp is a little before the file's mtime (or its arrival)
    naive = NOW + hours * 3600  # that stamp read as UTC
    zone = zone_from(naive - lag, written, "file")
    assert zone is not None and zone.offset_at(NOW) == hours * 3600


def test_a_distance_no_zone_has_is_an_old_line_not_a_zone():
    assert zone_from(NOW - 20 * 3600, NOW, "arrival") is None
    assert zone_from(NOW + 9 * 3600 - 7 * 60, NOW, "file") is None  # 7 min off a quarter hour: written long before the mtime


def test_the_sidecars_own_offset_keeps_its_zone_rules(monkeypatch):
    zone = zone_from(NOW + LogZone(None, "assumed").offset_at(NOW), NOW, "file")
    assert zone is not None and zone.tz is None  # local: the host's DST rules, as before


def test_a_backlog_keeps_its_own_time_and_the_live_edge_takes_arrival():
    clock = LogClock("live", LogZone(UTC, "flag"))
    assert clock.place(NOW - 3 * 3600, NOW) == NOW - 3 * 3600  # hours behind: the log's clock
    assert clock.place(NOW - 2.0, NOW) == NOW  # at the live edge: arrival, as always
    assert clock.place(NOW - CATCH_UP_SECONDS - 1, NOW) == NOW - CATCH_UP_SECONDS - 1
    assert clock.place(None, NOW) == NOW  # nothing known of the line: its arrival
    assert LogClock("log").place(NOW - 2.0, NOW) == NOW - 2.0  # analyze: always the log's
    assert LogClock("log").place(None, NOW) is None  # analyze never puts a line at the read time
    own = np.array([NOW - 3 * 3600, NOW - 2.0, np.nan])
    assert clock.place_many(own, NOW).tolist() == [NOW - 3 * 3600, NOW, NOW]


def test_serve_without_a_zone_takes_arrival_and_learns_the_zone_from_live_lines():
    interpreter = LogInterpreter("log")  # serve's clock, no file told the zone (stdin)
    first = interpreter.feed(RawLine("log", spec(stamp_of(NOW - 1, TOKYO)), NOW)).interval
    assert first is not None and first.end == NOW and interpreter.clock.zone is None  # one read says UTC+9: not yet enough
    second = interpreter.feed(RawLine("log", spec(stamp_of(NOW + 9, TOKYO)), NOW + 10)).interval  # the next, 10 s later, says it again
    assert second is not None and interpreter.clock.zone is not None
    assert interpreter.clock.zone.offset_at(NOW) == 9 * 3600 and interpreter.clock.zone.how == "arrival"
    assert second.logged_at == NOW + 9
    late = interpreter.feed(RawLine("log", spec(stamp_of(NOW - 600, TOKYO)), NOW + 15)).interval  # a line 10 min late
    assert late is not None and late.end == NOW - 600


def test_a_backlog_read_in_quick_blocks_teaches_no_zone_from_arrival():
    """A copy read from its start: each block's first line is hours old, and one of them lands near a
    whole-hour offset from its arrival (here 5 h: UTC−5); blocks milliseconds apart never confirm it."""
    interpreter = LogInterpreter("log")
    for n, at in enumerate(range(0, 3600, 600)):  # a backlog of an hour that ended 5 h ago, read in six blocks
        interpreter.feed(RawLine("log", spec(stamp_of(NOW - 5 * 3600 - 3600 + at + 600, UTC)), NOW + 0.001 * n))
    assert interpreter.clock.zone is None


def test_a_file_tells_its_zone_from_its_mtime_and_a_backlog_lands_on_its_hours():
    store = Store({"5m": 300.0}, clock=lambda: NOW + 1)
    pipeline = LogPipeline(store, "vllm.log")
    times = [NOW - 3600 + 10 * i for i in range(361)]  # the last hour, written at UTC+9
    lines = [spec(stamp_of(at, TOKYO)) for at in times]
    # the server's own file: born before its first line, last written with its last line
    why = pipeline.learn_written(("\n".join(lines[-3:]) + "\n").encode(), times[-1] + 0.2, head=(lines[0] + "\n").encode(), born=times[0] - 30)
    assert why is None and pipeline.clock.zone is not None and pipeline.clock.zone.offset_at(NOW) == 9 * 3600
    pipeline.consume(lines, read_at=NOW + 1)
    (series,) = store.snapshot().series
    assert series.lifetime.start == times[0] and series.windows["5m"].intervals == 30  # the log's last 5 min, not its hour "now"
    (source,) = store.snapshot().sources
    assert (source.log_zone, source.log_utc_offset, source.log_zone_from) == ("UTC+09:00", 9 * 3600, "file")
    assert (source.last_spec_line, source.last_spec_line_logged) == (NOW + 1, times[-1])  # read at, and its own time


@pytest.mark.parametrize("batch", [False, True])
def test_the_source_says_how_far_behind_it_reads(batch):
    store = Store({"5m": 300.0}, clock=lambda: NOW)
    pipeline = LogPipeline(store, "vllm.log", zone=parse_zone("+09:00"), batch=batch)
    backlog = [spec(stamp_of(NOW - 7200 + 10 * i, TOKYO)) for i in range(100)]
    pipeline.consume_block("\n".join(backlog).encode(), read_at=NOW)
    (source,) = store.snapshot().sources
    assert NOW - source.last_spec_line_logged == 7200 - 990  # two hours behind, less the backlog's span


def test_analyze_counts_a_stamp_it_cannot_resolve_and_never_puts_it_at_the_read_time():
    lines = [spec("11-30 10:00:00"), spec("02-30 10:00:10"), spec("11-30 10:00:20")]  # February 30th
    streamed = LogInterpreter("log", clock=LogClock("log", year_reference=NOW))
    outcomes = [streamed.feed(RawLine("log", line, NOW)) for line in lines]
    assert [o.problem.reason if o.problem else None for o in outcomes] == [None, UNRESOLVED, None]
    batched = interpret_block(LogInterpreter("log", clock=LogClock("log", year_reference=NOW)), lines, NOW)
    assert batched.problems == {UNRESOLVED: 1} and batched.variants == {"V1-e": 2}
    ends = [i.end for item in batched.items for i in (item.intervals() if hasattr(item, "intervals") else [])]
    assert ends == [o.interval.end for o in outcomes if o.interval is not None] and NOW not in ends


def test_serve_places_a_stamp_it_cannot_resolve_at_its_arrival_and_counts_it():
    lines = [spec("11-30 10:00:00"), spec("02-30 10:00:10"), spec("11-30 10:00:20")]
    streamed = LogInterpreter("log", clock=LogClock("live", LogZone(UTC, "flag")))
    outcomes = [streamed.feed(RawLine("log", line, NOW)) for line in lines]
    assert [o.problem.reason if o.problem else None for o in outcomes] == [None, UNRESOLVED, None]
    assert [o.interval.end for o in outcomes if o.interval] == [datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp(), NOW,
                                                                 datetime(2026, 11, 30, 10, 0, 20, tzinfo=UTC).timestamp()]
    batched = interpret_block(LogInterpreter("log", clock=LogClock("live", LogZone(UTC, "flag"))), lines, NOW)
    assert batched.problems == {UNRESOLVED: 1} and batched.variants == {"V1-e": 3}


zones = st.sampled_from([None, UTC, TOKYO, timezone(timedelta(hours=-5)), ZoneInfo("America/New_York"), ZoneInfo("Australia/Lord_Howe")])


@given(st.lists(st.integers(0, 400 * 86400), min_size=1, max_size=30), zones)
def test_the_column_form_places_every_stamp_as_the_line_form_does(offsets, tz):
    reference = datetime(2026, 11, 5, 12, tzinfo=UTC).timestamp()
    stamps = [datetime.fromtimestamp(reference - offset, tz or None).strftime("%m-%d %H:%M:%S") for offset in sorted(offsets)]
    expected = [resolve_local(stamp, reference, tz) for stamp in stamps]
    assert resolve_local_many(stamps, reference, tz).tolist() == [np.nan if e is None else e for e in expected]


def test_serve_takes_its_own_zone_for_a_file_whose_last_line_was_just_written_here():
    """No birth time tells (a copy, or a file system that keeps none): a last line written moments
    before serve opened the file, read in serve's own zone, is a file being written now, here."""
    local = LogZone(None, "assumed").offset_at(NOW)
    stamp = datetime.fromtimestamp(NOW - 4, timezone(timedelta(seconds=local))).strftime("%m-%d %H:%M:%S")
    line = ("\n" + spec(stamp) + "\n").encode()
    fresh = LogPipeline(Store({"5m": 300.0}), "vllm.log")
    assert fresh.learn_written(line, NOW, head=line, born=NOW, opened=NOW) is None
    assert fresh.clock.zone is not None and fresh.clock.zone.how == "arrival" and fresh.clock.zone.offset_at(NOW) == local
    old = LogPipeline(Store({"5m": 300.0}), "vllm.log")  # the same copy opened five hours later: nothing tells
    assert old.learn_written(line, NOW, head=line, born=NOW, opened=NOW + 5 * 3600) is not None and old.clock.zone is None
