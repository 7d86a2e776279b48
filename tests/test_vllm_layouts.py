"""The log layouts of vLLM 0.24 → 0.33 (docs/vllm-versions.md §3–§6): both orders of the process
prefix, colour around it, the JSON formatter of 0.32+, iteration-detail lines, the startup lines'
new keys, and the methods each version has."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.config import DEFAULT_COSTS, DeriveSettings
from exporter.intervals.draft_length import draft_length, drafts_from_tokens, unknown_drafts_reason
from exporter.intervals.from_log import LogInterpreter
from exporter.judge.methods import known_methods, method_problem
from exporter.parse.envelope import parse_envelope
from exporter.parse.scan import might_matter
from exporter.parse.vllm_log import parse_config_message, parse_engine_marker
from exporter.records import RawLine

CYAN, RESET, GREEN, GREY, OFF = "\x1b[0;36m", "\x1b[0;0m", "\x1b[32m", "\x1b[90m", "\x1b[0m"
SPEC = ("SpecDecoding metrics: Mean acceptance length: 2.00, Accepted throughput: 30.00 tokens/s, Drafted throughput: 60.00 tokens/s, "
        "Accepted: 300 tokens, Drafted: 600 tokens, Per-position acceptance rate: 0.700, 0.300, Avg Draft acceptance rate: 50.0%")


@pytest.mark.parametrize(
    "line",
    [
        "(APIServer pid=7) [pod-a] INFO 12-01 10:00:50 [loggers.py:310] Engine 001: Avg prompt throughput: 1.0 tokens/s",  # ≤ 0.30
        "[pod-a] (APIServer pid=7) INFO 12-01 10:00:50 [loggers.py:320] Engine 001: Avg prompt throughput: 1.0 tokens/s",  # ≥ 0.31
        f"[pod a] {CYAN}(APIServer pid=7){RESET} {GREEN}INFO{OFF} {GREY}12-01 10:00:50{OFF} {GREY}[loggers.py:335]{OFF} Engine 001: x",
        f"{CYAN}(APIServer pid=7){RESET} [pod-a] {GREEN}INFO{OFF} {GREY}12-01 10:00:50{OFF} [loggers.py:310] Engine 001: x\r",
    ],
)
def test_both_orders_of_the_process_prefix_with_or_without_colour(line):
    envelope = parse_envelope(line)
    assert envelope is not None
    assert (envelope.process, envelope.pid, envelope.level, envelope.month_day_time) == ("APIServer", 7, "INFO", "12-01 10:00:50")
    assert envelope.message.startswith("Engine 001: ")


def json_record(message: str, *, name: str = "vllm.v1.metrics.loggers", pid: int = 7, process: str = "APIServer", **extra: str) -> str:
    record = {"asctime": "2026-12-01 10:00:40,404", "levelname": "INFO", "name": name, "processName": "MainProcess",
              "process": pid, "message": message, "vllm_process_name": process, **extra}
    return json.dumps(record)


def test_a_json_record_is_the_same_envelope_and_keeps_the_markers():
    line = json_record(SPEC, name="vllm.v1.spec_decode.metrics")
    assert might_matter(line)  # the scan stage's prefilter still sees the marker text
    envelope = parse_envelope(line)
    assert envelope is not None
    assert (envelope.process, envelope.pid, envelope.month_day_time, envelope.message) == ("APIServer", 7, "12-01 10:00:40", SPEC)


def test_uvicorn_json_records_and_raw_lines_are_not_vllm_lines():
    uvicorn = json_record("Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", name="uvicorn.error",
                          color_message="Uvicorn running on \x1b[1m%s://%s:%d\x1b[0m")
    assert parse_envelope(uvicorn) is None
    assert parse_envelope("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01]") is None
    assert parse_envelope('{"not": "a record"}') is None and parse_envelope("{broken json") is None


def test_a_json_log_gives_one_series_per_engine_with_the_engine_line_before_each_spec_line():
    interpreter = LogInterpreter("json.log")
    lines = [
        json_record("non-default args: {'model': 'm', 'speculative_config': {'method': 'eagle3', 'num-speculative-tokens': 2}}"),
        json_record("Engine 001: Avg prompt throughput: 0.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%"),
        json_record("Engine 000: Iteration(9): 0 context requests, 0 context tokens, 4 generation requests, 8 generation tokens, "
                    "iteration elapsed time: 20.00 ms, GPU KV cache usage: 1.0%"),
        "[rank0]:[W1201 10:00:41.000000000 ProcessGroupNCCL.cpp:1250] Warning: a raw C-level line",
        json_record(SPEC, name="vllm.v1.spec_decode.metrics"),
    ]
    outcomes = [interpreter.feed(RawLine("json.log", line, 0.0)) for line in lines]
    assert all(o.problem is None for o in outcomes)
    (interval,) = [o.interval for o in outcomes if o.interval is not None]
    assert interval.key.engine == "1"  # the iteration line of engine 0 neither marks an engine nor breaks the pairing
    assert (interval.k, interval.drafts, interval.accepted_per_position) == (2, 300, (210, 90))
    assert interpreter.config.method == "eagle3" and interpreter.config.num_speculative_tokens == 2


def test_iteration_lines_are_not_engine_markers():
    assert parse_engine_marker("Engine 003: Iteration(12): 1 context requests, 5 context tokens") is None
    assert parse_engine_marker("Iteration(12): 1 context requests, 5 context tokens") is None
    marker = parse_engine_marker("Engine 003: Avg prompt throughput: 0.0 tokens/s")
    assert marker is not None and marker.engine == "3"


@pytest.mark.parametrize(
    "message, method, k, draft",
    [
        ("non-default args: {'model': 'm', 'speculative_config': {'method': 'eagle', 'model': 'e', 'num-speculative-tokens': 5}}", "eagle", 5, "e"),
        ("non-default args: {'model': 'm', 'spec_method': 'eagle', 'spec_model': 'yuhuili/x', 'spec_tokens': 5}", "eagle", 5, "yuhuili/x"),
        ("Initializing a V1 LLM engine (v0.28.0) with config: model='m', speculative_config=SpeculativeConfig(method='dspark', "
         "model='z/dspark', num_spec_tokens=6), tokenizer='m'", "dspark", 6, "z/dspark"),
    ],
)
def test_startup_lines_of_the_newer_versions(message, method, k, draft):
    config = parse_config_message(message)
    assert config is not None
    assert (config.method, config.num_speculative_tokens, config.draft_model) == (method, k, draft)


@pytest.mark.parametrize(
    "method, version, fixed",
    [("eagle3", "0.24.0", True), ("qwen3_next_mtp", None, True), ("dspark", "0.28.0", True), ("dflash", "0.33.0", True),
     ("ngram", "0.31.0", False), ("ngram", "0.32.0", True), ("ngram_gpu", "0.33.0", True), ("ngram", None, False),
     ("suffix", "0.33.0", False), (None, "0.33.0", False), ("custom_class", "0.30.0", False)],
)
def test_which_drafters_always_draft_k(method, version, fixed):
    length = draft_length(method, version)
    assert length.fixed is fixed and length.reason
    assert drafts_from_tokens(600, 3, length) == (200 if fixed else None)
    assert drafts_from_tokens(601, 3, length) is None  # not a multiple of k: never pinned


def test_the_reason_for_an_unknown_d_names_the_cause():
    assert "k is unknown" in unknown_drafts_reason("eagle", "0.8.4", None)
    assert "shorter than k" in unknown_drafts_reason("ngram", "0.8.4", 4)
    assert "not a multiple" in unknown_drafts_reason("eagle", "0.8.4", 3)


def test_methods_per_version():
    assert {"dspark", "medusa", "mlp_speculator", "step5_mtp"} & known_methods("0.24.0") == {"medusa", "mlp_speculator"}
    assert {"dspark", "medusa", "mlp_speculator", "step5_mtp"} & known_methods("0.33.0") == {"dspark", "step5_mtp"}
    assert len({m for m in known_methods("0.33.0") if m.endswith("mtp")}) == 28
    assert method_problem("medusa", "0.33.0") == ("error", "vLLM 0.33.0 has no method medusa (removed in 0.33)")
    assert method_problem("dspark", "0.24.0") == ("error", "vLLM 0.24.0 has no method dspark (added in 0.25)")
    alias = method_problem("qwen3_next_mtp", "0.33.0")
    assert alias is not None and alias[0] == "info"
    assert method_problem("eagle3", "0.33.0") is None


def test_every_method_has_a_cost_model():
    settings = DeriveSettings()
    newest, oldest = known_methods("0.33.0"), known_methods("0.24.0")
    assert newest is not None and oldest is not None
    for method in newest | oldest:
        if method in ("extract_hidden_states", "custom_class"):
            continue  # no drafting of their own to cost: the fallback applies
        expected = DEFAULT_COSTS["mtp"] if method.endswith("_mtp") else DEFAULT_COSTS[method]
        assert settings.cost_for(method) == expected, method


STARTUP = ("INFO 12-01 10:00:00 [core.py:115] Initializing a V1 LLM engine (v{version}) with config: model='m', "
           "speculative_config=SpeculativeConfig(method='{method}', model=None, num_spec_tokens={k}), tokenizer='m'")


def drafted(data: st.DataObject, k: int, full: bool) -> tuple[int, int, int, list[int]]:
    """Random drafts as vLLM's SpecDecodingStats.observe_draft counts them: (D, T, A, A_i)."""
    drafts = data.draw(st.integers(1, 400))
    per_position = [0] * k
    draft_tokens = accepted = 0
    for _ in range(drafts):
        length = k if full else data.draw(st.integers(1, k))
        taken = data.draw(st.integers(0, length))
        draft_tokens += length
        accepted += taken
        for i in range(taken):
            per_position[i] += 1
    return drafts, draft_tokens, accepted, per_position


@settings(max_examples=30, deadline=None)
@given(data=st.data(), k=st.integers(1, 8), method=st.sampled_from(["eagle", "eagle3", "mtp", "dspark", "ngram"]))
def test_a_v1b_line_gives_t_over_k_exactly_when_the_drafter_fills_k(data, k, method):
    version = data.draw(st.sampled_from(["0.8.4", "0.33.0"]))
    full = method != "ngram" or version == "0.33.0"
    drafts, draft_tokens, accepted, _ = drafted(data, k, full)
    interpreter = LogInterpreter("v1b.log")
    interpreter.feed(RawLine("v1b.log", STARTUP.format(version=version, method=method, k=k), 0.0))
    line = (f"INFO 12-01 10:00:10 [loggers.py:111] SpecDecoding metrics: Draft acceptance rate: {100 * accepted / draft_tokens:.1f}%, "
            f"Accepted: {accepted} tokens, Drafted: {draft_tokens} tokens")
    interval = interpreter.feed(RawLine("v1b.log", line, 0.0)).interval
    assert interval is not None and interval.accepted_per_position == ()
    if full:
        assert interval.drafts == drafts  # fixed-length: D = T/k, never off
    else:
        assert interval.drafts is None and interval.drafts_range is None  # variable-length: unknown, not a guess


@settings(max_examples=30, deadline=None)
@given(data=st.data(), k=st.integers(1, 8))
def test_a_v1e_line_of_a_fixed_length_drafter_pins_d_and_keeps_a_i_in_the_bound(data, k):
    drafts, draft_tokens, accepted, per_position = drafted(data, k, True)
    interpreter = LogInterpreter("v1e.log")
    interpreter.feed(RawLine("v1e.log", STARTUP.format(version="0.33.0", method="eagle3", k=k), 0.0))
    rates = ", ".join(f"{a / drafts:.3f}" for a in per_position)
    line = (f"INFO 12-01 10:00:10 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
            f"Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: {accepted} tokens, "
            f"Drafted: {draft_tokens} tokens, Per-position acceptance rate: {rates}, "
            f"Avg Draft acceptance rate: {100 * accepted / draft_tokens:.1f}%")
    interval = interpreter.feed(RawLine("v1e.log", line, 0.0)).interval
    assert interval is not None and interval.drafts == drafts and interval.drafts_range == (drafts, drafts)
    assert sum(interval.accepted_per_position) == accepted
    assert all(abs(a - b) <= 0.001 * drafts + 1 for a, b in zip(interval.accepted_per_position, per_position, strict=True))


@pytest.mark.parametrize(
    "startup, fixed",
    [
        ("non-default args: {'model': 'm', 'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3}}", True),
        ("non-default args: {'model': 'm', 'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3, "
         "'num_speculative_tokens_per_batch_size': [[1, 3], [64, 1]]}}", False),
        ("non-default args: {'model': 'm', 'speculative_config': {'method': 'dspark', 'num_speculative_tokens': 3, "
         "'enable_adaptive_verification': True}}", False),
    ],
)
def test_dynamic_k_and_adaptive_verification_are_never_taken_as_t_over_k(startup, fixed):
    interpreter = LogInterpreter("x.log")
    interpreter.feed(RawLine("x.log", f"(APIServer pid=7) INFO 12-01 10:00:00 [startup.py:96] {startup}", 0.0))
    line = "(APIServer pid=7) INFO 12-01 10:00:10 [loggers.py:111] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 300 tokens, Drafted: 600 tokens"
    interval = interpreter.feed(RawLine("x.log", line, 0.0)).interval
    assert interval is not None and (interval.drafts == 200 if fixed else interval.drafts is None)


def test_the_v1_runner_fallback_makes_ngram_variable_again_on_032():
    interpreter = LogInterpreter("x.log")
    for text in (
        STARTUP.format(version="0.33.0", method="ngram", k=3),
        "WARNING 12-01 10:00:01 [vllm.py:3053] Model Runner V2 does not yet support structured outputs; using the V1 model runner instead.",
        "INFO 12-01 10:00:10 [loggers.py:111] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 300 tokens, Drafted: 600 tokens",
    ):
        outcome = interpreter.feed(RawLine("x.log", text, 0.0))
    assert outcome.interval is not None and outcome.interval.drafts is None
    assert "V1 model runner" in unknown_drafts_reason("ngram", "0.33.0", 3, interpreter.config.variable_drafts)
