"""Line stream → Interval records: engines per pid, V0 cumulative deltas and restarts, config."""

from __future__ import annotations

import time
from datetime import datetime

from exporter.intervals.clock import LogClock
from exporter.intervals.from_log import LogInterpreter
from exporter.records import RawLine

API = "(APIServer pid=812) INFO 11-30 18:02:44 "


def v1e(accepted: int, drafted: int, mean_length: str, rates: str, pid: int = 812) -> str:
    return (
        f"(APIServer pid={pid}) INFO 11-30 18:02:44 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {mean_length}, "
        f"Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
    )


def engine(n: int, pid: int = 812) -> str:
    return f"(APIServer pid={pid}) INFO 11-30 18:02:44 [loggers.py:259] Engine {n:03d}: Avg prompt throughput: 1.0 tokens/s"


def v0(accepted: int, drafted: int, emitted: int, k: int = 4) -> str:
    return (
        "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.500, System efficiency: 0.500, "
        f"Number of speculative tokens: {k}, Number of accepted tokens: {accepted}, Number of draft tokens: {drafted}, "
        f"Number of emitted tokens: {emitted}."
    )


def feed(interpreter: LogInterpreter, *lines: str):
    return [interpreter.feed(RawLine("log", line, read_at=1000.0 + i)) for i, line in enumerate(lines)]


def test_data_parallel_lines_go_to_the_engine_line_before_them_from_the_same_pid():
    interpreter = LogInterpreter("log")
    outcomes = feed(
        interpreter,
        engine(0),
        engine(0, pid=999),  # another API server (external LB): must not steal pid 812's attribution
        engine(1),
        v1e(30, 360, "1.50", "0.300, 0.150, 0.050, 0.000, 0.000, 0.000"),  # engine 1 of pid 812
        v1e(20, 40, "2.00", "0.500, 0.300, 0.200, 0.000", pid=999),  # engine 0 of pid 999
        engine(0),
        v1e(10, 40, "1.25", "0.150, 0.075, 0.025, 0.000"),  # engine 0 of pid 812
    )
    engines = [o.interval.key.engine for o in outcomes if o.interval]
    assert engines == ["1", "0", "0"]


def test_aggregated_mode_is_one_series():
    outcomes = feed(
        LogInterpreter("log"),
        f"{API}[loggers.py:259] 4 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s",
        v1e(30, 360, "1.50", "0.300, 0.150, 0.050, 0.000, 0.000, 0.000"),
    )
    assert outcomes[1].interval.key.engine == "all"


def test_model_name_comes_from_startup_lines_or_the_override():
    lines = (
        "(APIServer pid=812) INFO 11-30 18:00:00 [api_utils.py:273] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'served_model_name': ['qwen'], 'speculative_config': {'method': 'eagle3', 'model': 'x/e', 'num_speculative_tokens': 3}}",
        v1e(11924, 19425, "2.84", "0.812, 0.601, 0.429"),
    )
    interval = feed(LogInterpreter("log"), *lines)[1].interval
    assert interval.key.model_name == "qwen"
    assert interval.k == 3
    assert feed(LogInterpreter("log", model_name="forced"), *lines)[1].interval.key.model_name == "forced"
    assert feed(LogInterpreter("log"), lines[1])[0].interval.key.model_name == "unknown"


def test_v0_counts_are_deltas_and_the_first_line_joined_mid_run_is_a_baseline():
    interpreter = LogInterpreter("log")
    interpreter.joined_mid_run()  # the follower starts at the end of a running server's log
    outcomes = feed(interpreter, v0(100, 400, 250), v0(160, 600, 370), v0(160, 600, 370))
    assert outcomes[0].interval is None and outcomes[0].spec_line
    second = outcomes[1].interval
    # 200 draft tokens at k = 4 → 50 drafts; A as logged (60: V0 counts non-prefix acceptances too,
    # so it is not emitted − drafts = 70), and E = 120 kept for L = E/D
    assert (second.draft_tokens, second.drafts, second.accepted_tokens, second.emitted_tokens) == (200, 50, 60, 120)
    assert second.accepted_per_position == ()  # V0 prints none: reported as null
    assert outcomes[2].interval is None  # no new drafts: nothing, never a zero-rate interval


def test_a_v0_file_read_from_its_start_counts_its_first_line_since_the_server_started():
    """A V0 line's counts are totals since the server started: a result, not only a baseline (one
    cumulative line used to report "no speculative-decoding lines found" above "spec lines 1")."""
    first = feed(LogInterpreter("log"), v0(100, 400, 250))[0].interval
    assert (first.draft_tokens, first.drafts, first.accepted_tokens, first.emitted_tokens, first.start) == (400, 100, 100, 250, None)


def test_v0_restart_without_startup_lines_counts_from_zero_not_a_spike():
    interpreter = LogInterpreter("log")
    outcomes = feed(interpreter, v0(100, 400, 250), v0(10, 40, 25), v0(30, 80, 55))
    assert interpreter.restarts == 1
    assert (outcomes[1].interval.draft_tokens, outcomes[1].interval.drafts) == (40, 10)  # since the restart
    assert (outcomes[2].interval.draft_tokens, outcomes[2].interval.drafts) == (40, 10)


def test_v0_k_change_is_a_new_run_with_its_own_config():
    k5 = "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.600, System efficiency: 0.640, Number of speculative tokens: 5, Number of accepted tokens: 1200, Number of draft tokens: 2000, Number of emitted tokens: 1536."
    k10 = "INFO 10-16 19:09:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.500, System efficiency: 0.444, Number of speculative tokens: 10, Number of accepted tokens: 2500, Number of draft tokens: 5000, Number of emitted tokens: 2440."
    interpreter = LogInterpreter("log")
    first, second = feed(interpreter, k5, k10)
    assert (first.interval.k, first.interval.drafts, first.interval.emitted_tokens) == (5, 400, 1536)
    assert interpreter.restarts == 1  # more of every count, but another k: a new server run
    assert (second.interval.k, second.interval.drafts, second.interval.emitted_tokens) == (10, 500, 2440)
    assert second.config is not None and second.config.num_speculative_tokens == 10


def test_v0_emitting_fewer_tokens_than_drafts_is_refused():
    line = "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.100, System efficiency: 0.100, Number of speculative tokens: 5, Number of accepted tokens: 200, Number of draft tokens: 2000, Number of emitted tokens: 300."
    outcome = feed(LogInterpreter("log"), line)[0]  # 400 drafts emit at least 400 tokens: L = E/D < 1 cannot be
    assert outcome.interval is None and outcome.problem.reason == "inconsistent_counts"


def test_v0_restart_with_startup_lines_counts_from_zero():
    startup = "INFO 10-16 19:05:00 llm_engine.py:100] Initializing an LLM engine (v0.6.3) with config: model='m', speculative_config=SpeculativeConfig(draft_model='d', num_spec_tokens=4), tokenizer='m'"
    outcomes = feed(LogInterpreter("log"), startup, v0(10, 40, 25))
    assert outcomes[1].interval.draft_tokens == 40


def test_nan_lines_with_nothing_drafted_produce_no_interval_and_no_error():
    outcome = feed(
        LogInterpreter("log"),
        "INFO 04-10 08:31:32 [metrics.py:52] SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens",
    )[0]
    assert outcome.spec_line and outcome.interval is None and outcome.problem is None


def test_v1b_interval_has_tokens_but_unknown_drafts():
    interval = feed(
        LogInterpreter("log"),
        "INFO 04-10 08:31:22 [metrics.py:52] SpecDecoding metrics: Draft acceptance rate: 67.3%, Accepted: 1346 tokens, Drafted: 2000 tokens",
    )[0].interval
    assert (interval.accepted_tokens, interval.draft_tokens, interval.drafts) == (1346, 2000, None)


def test_problems_are_counted_by_reason_never_raised():
    outcomes = feed(
        LogInterpreter("log"),
        v1e(30, 20, "2.50", "0.300"),  # more accepted than drafted
        v1e(10, 40, "3.00", "0.100, 0.000"),  # L says A/D = 2, rates say 0.1: nothing fits
        f"{API}[metrics.py:101] SpecDecoding metrics: Accepted: lots",
        "error: cannot parse 'SpecDecoding metrics: Accepted: 1 tokens, Drafted: 2 tokens'",  # quoted, not a record
    )
    assert [o.problem.reason for o in outcomes] == ["inconsistent_counts", "reconstruction_failed", "bad_value", "unknown_layout"]
    assert all(o.interval is None for o in outcomes)


def test_log_clock_takes_the_year_from_the_reference_and_container_time_wins():
    reference = datetime(2026, 12, 2, 9, 0, 0).timestamp()
    interpreter = LogInterpreter("log", clock=LogClock("log", year_reference=reference))
    line = v1e(30, 360, "1.50", "0.300, 0.150, 0.050, 0.000, 0.000, 0.000")  # 11-30 18:02:44
    interval = interpreter.feed(RawLine("log", line, read_at=time.time())).interval
    assert interval.end == datetime(2026, 11, 30, 18, 2, 44).timestamp()
    framed = interpreter.feed(RawLine("log", line, read_at=time.time(), stream_stamp="2026-11-30T18:02:44.5Z")).interval
    assert framed.end == datetime.fromisoformat("2026-11-30T18:02:44.500000+00:00").timestamp()
    assert framed.start == interval.end  # consecutive lines of one series chain their intervals


def test_a_cut_json_record_is_truncated_and_a_whole_one_with_its_year_is_dated_by_it():
    record = ('{"asctime": "2024-07-24 10:00:10,112", "levelname": "INFO", "name": "vllm.v1.spec_decode.metrics", '
              '"processName": "MainProcess", "process": 7, "message": "SpecDecoding metrics: Mean acceptance length: 1.80, '
              'Accepted throughput: 1.20 tokens/s, Drafted throughput: 1.50 tokens/s, Accepted: 12 tokens, Drafted: 15 tokens, '
              'Per-position acceptance rate: 0.533, 0.267, Avg Draft acceptance rate: 80.0%", "vllm_process_name": "APIServer"}')
    interpreter = LogInterpreter("log", clock=LogClock("log", year_reference=datetime(2026, 12, 3).timestamp()))
    cut = interpreter.feed(RawLine("log", record[:260], read_at=time.time()))
    assert cut.problem is not None and cut.problem.reason == "truncated" and cut.interval is None
    whole = interpreter.feed(RawLine("log", record, read_at=time.time())).interval
    assert whole is not None and whole.end == datetime(2024, 7, 24, 10, 0, 10).timestamp()  # asctime's year, not the mtime's
