"""Every example line of reference/telemetry-formats.md §2 parses to the right fields."""

from __future__ import annotations

import math

import pytest

from exporter.parse.envelope import parse_envelope
from exporter.parse.vllm_log import SpecLineError, parse_config_message, parse_engine_marker, parse_spec_message

# (reference line, variant, accepted, drafted, mean length, per-position rates, percent, k printed)
REFERENCE_LINES = [
    (
        "INFO 05-28 14:02:11 metrics.py:341] Speculative metrics: Draft acceptance rate: 0.612, System efficiency: 0.487, "
        "Number of speculative tokens: 5, Number of accepted tokens: 3062, Number of draft tokens tokens: 5005, "
        "Number of emitted tokens tokens: 2924.",
        "V0-a", 3062, 5005, None, None, 61.2, 5,
    ),
    (
        "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, "
        "Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, "
        "Number of emitted tokens: 10616.",
        "V0-b", 8547, 13311, None, None, 64.2, 3,
    ),
    (
        "INFO 04-20 16:31:02 [metrics.py:481] Speculative metrics: Draft acceptance rate: 0.731, System efficiency: 0.602, "
        "Number of speculative tokens: 4, Number of accepted tokens: 11696, Number of draft tokens: 16000, "
        "Number of emitted tokens: 12040.",
        "V0-b", 11696, 16000, None, None, 73.1, 4,
    ),
    (
        "INFO 02-11 14:50:33 metrics.py:477] Speculative metrics: Draft acceptance rate: nan, System efficiency: nan, "
        "Number of speculative tokens: 8, Number of accepted tokens: 0, Number of draft tokens: 0, Number of emitted tokens: 0.",
        "V0-b", 0, 0, None, None, math.nan, 8,
    ),
    (
        "INFO 03-26 09:12:40 [metrics.py:77] Speculative metrics: Draft acceptance rate: 0.713, Number of accepted tokens: 1426, "
        "Number of draft tokens: 2000, ",
        "V1-a", 1426, 2000, None, None, 71.3, None,
    ),
    (
        "INFO 04-10 08:31:22 [metrics.py:52] SpecDecoding metrics: Draft acceptance rate: 67.3%, Accepted: 1346 tokens, Drafted: 2000 tokens",
        "V1-b", 1346, 2000, None, None, 67.3, None,
    ),
    (
        "INFO 04-10 08:31:32 [metrics.py:52] SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens",
        "V1-b", 0, 0, None, None, math.nan, None,
    ),
    (
        "INFO 06-12 11:05:31 [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 71.2%, Mean acceptance length: 3.14, "
        "Accepted: 2136 tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.872, 0.724, 0.541",
        "V1-c", 2136, 3000, 3.14, (0.872, 0.724, 0.541), 71.2, None,
    ),
    (
        "(APIServer pid=73) INFO 08-21 09:14:55 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 54.0%, "
        "Mean acceptance length: 2.62, Accepted: 810 tokens, Drafted: 1500 tokens, Per-position acceptance rate: 0.760, 0.520, 0.340",
        "V1-c", 810, 1500, 2.62, (0.760, 0.520, 0.340), 54.0, None,
    ),
    (
        "(APIServer pid=2236552) INFO 09-09 11:51:35 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 88.8%, "
        "Mean acceptance length: 5.44, Accepted throughput: 4.37 tokens/s, Drafted throughput: 4.92 tokens/s, "
        "Accepted: 262 tokens, Drafted: 295 tokens, Per-position acceptance rate: 0.983, 0.949, 0.915, 0.881, 0.712",
        "V1-d", 262, 295, 5.44, (0.983, 0.949, 0.915, 0.881, 0.712), 88.8, None,
    ),
    (
        "(APIServer pid=1) INFO 05-01 14:24:50 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.37, "
        "Accepted throughput: 8.90 tokens/s, Drafted throughput: 97.50 tokens/s, Accepted: 89 tokens, Drafted: 975 tokens, "
        "Per-position acceptance rate: 0.600, 0.385, 0.215, 0.108, 0.062, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, "
        "0.000, 0.000, 0.000, Avg Draft acceptance rate: 9.1%",
        "V1-e", 89, 975, 2.37, (0.600, 0.385, 0.215, 0.108, 0.062) + (0.0,) * 10, 9.1, None,
    ),
    (
        "(APIServer pid=812) INFO 11-30 18:02:44 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.84, "
        "Accepted throughput: 1192.40 tokens/s, Drafted throughput: 1942.50 tokens/s, Accepted: 11924 tokens, "
        "Drafted: 19425 tokens, Per-position acceptance rate: 0.812, 0.601, 0.429, Avg Draft acceptance rate: 61.4%",
        "V1-e", 11924, 19425, 2.84, (0.812, 0.601, 0.429), 61.4, None,
    ),
]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == pytest.approx(b) if isinstance(b, float) else a == b


@pytest.mark.parametrize("line, variant, accepted, drafted, mean_length, rates, percent, k", REFERENCE_LINES)
def test_reference_line_parses_to_its_fields(line, variant, accepted, drafted, mean_length, rates, percent, k):
    envelope = parse_envelope(line)
    assert envelope is not None
    parsed = parse_spec_message(envelope.message)
    assert parsed is not None
    assert parsed.variant == variant
    assert (parsed.accepted_tokens, parsed.draft_tokens) == (accepted, drafted)
    assert parsed.cumulative is variant.startswith("V0")
    assert _same(parsed.mean_acceptance_length, mean_length)
    assert parsed.position_rates == (pytest.approx(rates) if rates else None)
    assert _same(parsed.draft_acceptance_percent, percent)
    assert parsed.num_speculative_tokens == k


def test_v0_emitted_tokens_are_kept():
    parsed = parse_spec_message(parse_envelope(REFERENCE_LINES[1][0]).message)
    assert parsed.emitted_tokens == 10616


def test_every_line_of_the_real_capture_is_v1e(golden_log_lines):
    parsed = [parse_spec_message(e.message) for e in map(parse_envelope, golden_log_lines) if e is not None]
    spec = [p for p in parsed if p is not None]
    assert len(spec) == sum("SpecDecoding metrics:" in line for line in golden_log_lines) == 31
    assert {p.variant for p in spec} == {"V1-e"}
    assert all(len(p.position_rates) == 8 for p in spec)


V1E = "SpecDecoding metrics: Mean acceptance length: 2.84, Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: 10 tokens, Drafted: 20 tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: 50.0%"


@pytest.mark.parametrize(
    "message, check",
    [
        # fork: extra keys after and between known ones (DSpark histogram with its own ", ")
        (V1E.format(rates="0.500, 0.300") + ", Avg tree nodes per depth: 1.0, 2.0", lambda p: p.position_rates == (0.5, 0.3)),
        (
            V1E.format(rates="0.500, 0.300").replace(", Avg Draft", ", Draft length histogram: 1:3, 2:5, Avg Draft"),
            lambda p: p.draft_acceptance_percent == 50.0 and p.position_rates == (0.5, 0.3),
        ),
        (V1E.format(rates="0.500") + ", top1: [1, 2], top2: [3]", lambda p: p.accepted_tokens == 10),
        # an empty per-position list (k = 0)
        (V1E.format(rates=""), lambda p: p.position_rates == ()),
        # n-gram with k = 300: a ~2 KB line
        (V1E.format(rates=", ".join(["0.010"] * 300)), lambda p: len(p.position_rates) == 300),
    ],
)
def test_variants_seen_in_forks_parse_permissively(message, check):
    parsed = parse_spec_message(message)
    assert parsed is not None and check(parsed)


def test_the_fast_v1e_reader_agrees_with_the_general_one(golden_log_lines):
    """Every V1-e line of the capture, the simulator's V1-e lines and the reference lines: same fields."""
    from exporter.simulate.scenarios import SCENARIOS
    from exporter.simulate.server import SimulatedServer

    server = SimulatedServer(SCENARIOS["healthy"], seed=5, log_interval=1.0)
    lines = list(golden_log_lines) + server.advance(30.0) + [line for line, *_ in REFERENCE_LINES]
    messages = [e.message for e in map(parse_envelope, lines) if e is not None and e.message.startswith("SpecDecoding metrics: ")]
    fast = [parse_spec_message(m) for m in messages]
    assert sum(p.variant == "V1-e" for p in fast) >= 50
    assert repr(fast) == repr([parse_spec_message(m, fast=False) for m in messages])  # repr: nan == nan


@pytest.mark.parametrize(
    "message, reason",
    [
        ("SpecDecoding metrics: Mean acceptance length: 2.84, Drafted: 20 tokens", "missing_field"),
        ("SpecDecoding metrics: Accepted: many tokens, Drafted: 20 tokens", "bad_value"),
        ("SpecDecoding metrics: Mean acceptance length: x.yz, Accepted: 1 tokens, Drafted: 2 tokens", "bad_value"),
        ("SpecDecoding metrics: Accepted: 1 tokens, Drafted: 2 tokens, Per-position acceptance rate: 1.500", "bad_value"),
        ("SpecDecoding metrics: ", "truncated"),  # cut right after the prefix
        ("Speculative metrics: Draft acceptance rate: 0.5, System efficiency: 0.5, Number of accepted tokens: 1", "missing_field"),
    ],
)
def test_broken_spec_lines_raise_with_a_reason(message, reason):
    with pytest.raises(SpecLineError) as error:
        parse_spec_message(message)
    assert error.value.reason == reason


def test_other_messages_are_not_spec_lines():
    assert parse_spec_message("Engine 000: Avg prompt throughput: 662.3 tokens/s") is None
    assert parse_spec_message("DiffusionDecoding metrics: Committed token throughput: 412.50 tokens/s") is None


@pytest.mark.parametrize(
    "message, engine",
    [
        ("Engine 000: Avg prompt throughput: 662.3 tokens/s, Avg generation throughput: 9.5 tokens/s", "0"),
        ("Engine 007: Avg prompt throughput: 0.0 tokens/s", "7"),
        ("4 Engines Aggregated: Avg prompt throughput: 0.0 tokens/s", "all"),
    ],
)
def test_engine_markers(message, engine):
    marker = parse_engine_marker(message)
    assert marker is not None and marker.engine == engine


def test_config_from_the_captures_non_default_args(golden_log_lines):
    line = next(line for line in golden_log_lines if "non-default args" in line)
    config = parse_config_message(parse_envelope(line).message)
    assert (config.method, config.num_speculative_tokens, config.draft_model) == ("draft_model", 8, "/tmp/models/draft_noisy")
    assert (config.served_model_name, config.model) == ("target", "/tmp/models/target")


def test_config_from_the_captures_engine_init_line(golden_log_lines):
    line = next(line for line in golden_log_lines if "Initializing a V1 LLM engine" in line)
    config = parse_config_message(parse_envelope(line).message)
    assert config.server_version == "0.24.0"
    assert (config.method, config.num_speculative_tokens, config.draft_model) == ("draft_model", 8, "/tmp/models/draft_noisy")
    assert config.served_model_name == "target"


@pytest.mark.parametrize(
    "message, method, k, draft",
    [
        # speculative_config given on the command line as a JSON string
        ("non-default args: {'model': 'Qwen/Qwen3-8B', 'speculative_config': '{\"method\": \"eagle3\", \"model\": \"x/eagle\", \"num_speculative_tokens\": 3}'}", "eagle3", 3, "x/eagle"),
        ("non-default args: {'model': 'm', 'speculative_config': {'model': 'ngram', 'num_speculative_tokens': 5, 'prompt_lookup_max': 4}}", "ngram", 5, "ngram"),
        ("Initializing an LLM engine (v0.6.3) with config: model='meta/llama', speculative_config=SpeculativeConfig(draft_model='meta/small', num_spec_tokens=5), tokenizer='meta/llama'", "draft_model", 5, "meta/small"),
            # V0 ran n-gram lookup as draft_model='[ngram]'
            ("Initializing an LLM engine (v0.6.3) with config: model='m', speculative_config=SpeculativeConfig(draft_model='[ngram]', num_spec_tokens=4), tokenizer='m'", "ngram", 4, "[ngram]"),
    ],
)
def test_config_variants(message, method, k, draft):
    config = parse_config_message(message)
    assert (config.method, config.num_speculative_tokens, config.draft_model) == (method, k, draft)


V1E_LINE = (
    "SpecDecoding metrics: Mean acceptance length: 1.80, Accepted throughput: 1.20 tokens/s, Drafted throughput: 1.50 tokens/s, "
    "Accepted: 12 tokens, Drafted: 15 tokens, Per-position acceptance rate: 0.533, 0.267, Avg Draft acceptance rate: 80.0%"
)
V0_LINE = (
    "Speculative metrics: Draft acceptance rate: 0.606, System efficiency: 0.477, Number of speculative tokens: 5, "
    "Number of accepted tokens: 761, Number of draft tokens: 1255, Number of emitted tokens: 718."
)


@pytest.mark.parametrize("cut", range(len("SpecDecoding metrics: "), len(V1E_LINE)))
def test_a_v1e_line_cut_anywhere_is_truncated_never_another_reason_or_a_number(cut):
    """Wherever a shipper or a paste cut the line, one reason, and never a result (`…Drafted: 15 tokens, Per-pos`
    used to read as a complete line with D = 1): a cut inside the per-position list or a number keeps the fields'
    shapes but lacks the `Avg Draft acceptance rate` V1-e always ends with, and a cut there lacks its `%`."""
    with pytest.raises(SpecLineError) as error:
        parse_spec_message(V1E_LINE[:cut])
    assert error.value.reason == "truncated", V1E_LINE[:cut]


@pytest.mark.parametrize("cut", range(len("Speculative metrics: "), len(V0_LINE)))
def test_a_v0_line_cut_anywhere_is_truncated(cut):
    with pytest.raises(SpecLineError) as error:
        parse_spec_message(V0_LINE[:cut])
    assert error.value.reason == "truncated", V0_LINE[:cut]


def test_whole_lines_and_fork_additions_are_not_taken_for_cut_ones():
    assert parse_spec_message(V1E_LINE) is not None and parse_spec_message(V0_LINE) is not None
    for tail in (", Avg tree nodes per depth: 1.0, 2.0", ", top1: [0.5, 0.2], top2: [0.1]", ", Draft time/step: 0.123 ms"):
        assert parse_spec_message(V1E_LINE + tail) is not None, tail
    assert parse_spec_message("SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens") is not None
    assert parse_spec_message("Speculative metrics: Draft acceptance rate: 0.713, Number of accepted tokens: 1426, Number of draft tokens: 2000, ") is not None


@pytest.mark.parametrize("message, seen", [
    ("DiffusionDecoding metrics: Committed token throughput: 412.50 tokens/s, Mean denoising steps per canvas: 5.32, "
     "Mean tokens committed per denoising step: 12.03, Committed: 4125 tokens, Denoising steps: 343, Canvas positions evaluated: 21952", "V1-f"),
    ("SpecDecoding timing (mean ms/step over 120 steps): draft 1.20, verify 8.40", "spec-timing"),
])
def test_lines_printed_near_the_spec_line_are_seen_not_spec_lines(message, seen):
    from exporter.parse.vllm_log import seen_line

    assert parse_spec_message(message) is None
    assert seen_line(message) == seen


@pytest.mark.parametrize("text, version", [
    ("vLLM API server version 0.26.1rc0+gabc.d20250724", "0.26.1rc0+gabc.d20250724"),
    ("vLLM server version 0.34.0, serving model Qwen/Qwen3-8B", "0.34.0"),
    (" ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.34.0", "0.34.0"),
    ("Initializing a V1 LLM engine (...) with config: model='m'", None),
])
def test_the_version_comes_from_a_banner_never_from_an_elided_init_line(text, version):
    from exporter.parse.vllm_log import parse_config_message

    config = parse_config_message(text)
    assert (config.server_version if config is not None else None) == version
