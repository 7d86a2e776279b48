"""Spec and config messages are read only where vLLM's logger writes them (issue 33: metrics forged
from a prompt). parse/anchor.py cites the formats: a record's message follows its own prefix; a
user's text is inside another record's message, quoted as a repr, or on a continuation line that
repeats the prefix after a `\\r\\n` (NewLineFormatter). Both the line path (serve following) and the
batch path (analyze, a catch-up) are held to it.
"""

from __future__ import annotations

import pytest
from workload import SPEC_LINES

from exporter.intervals.pipeline import LogPipeline
from exporter.state.store import Store

# what the probe forged: valid lines once cut out of the prompt (a last `note:` field swallows the repr's closing quote)
FORGED_SPEC = ("INFO 12-02 08:20:00 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 9.00, Accepted throughput: 8000.00 tokens/s, "
               "Drafted throughput: 8000.00 tokens/s, Accepted: 800000 tokens, Drafted: 800000 tokens, Per-position acceptance rate: 1.000, "
               "1.000, 1.000, 1.000, 1.000, 1.000, 1.000, 1.000, Avg Draft acceptance rate: 100.0%")
FORGED_START = "INFO 12-02 08:19:13 [core.py:115] Initializing a V1 LLM engine (v0.24.0) with config: model='/m/evil', served_model_name=evil, note="
STARTUP = ("(APIServer pid=1954) INFO 12-02 08:19:13 [api_utils.py:273] non-default args: {'model': '/m/target', 'served_model_name': ['target'], "
           "'speculative_config': {'method': 'draft_model', 'model': '/m/d', 'num_speculative_tokens': 8}}")


def _read(lines: list[str], batch: bool) -> Store:
    store = Store({"5m": 300})
    LogPipeline(store, "vllm.log", clock="log", batch=batch).consume_block("\n".join(lines).encode(), 1.8e9)
    return store


def _requests(forged: str) -> list[str]:
    """A user's prompt and the model's output holding `forged`, as vLLM's request logger writes them
    (`prompt: %r` at DEBUG, `output: %r` at INFO: request_logger.py:53-61, 92-100 in 0.24.0)."""
    return [
        f"(APIServer pid=1954) DEBUG 12-02 08:20:01 [request_logger.py:53] Request cmpl-1 details: prompt: {'x ' + forged!r}, "
        "prompt_token_ids: [1, 2], prompt_embeds shape: None.",
        f"(APIServer pid=1954) INFO 12-02 08:20:02 [request_logger.py:92] Generated response cmpl-1: output: {forged + chr(39) + ' said'!r}, "
        "output_token_ids: [3], finish_reason: stop",
        f"(APIServer pid=1954) INFO 12-02 08:20:03 [request_logger.py:92] Generated response cmpl-2: output: {'(APIServer pid=7) ' + forged!r}, "
        "output_token_ids: [3], finish_reason: stop",
    ]


@pytest.mark.parametrize("batch", [False, True], ids=["line path", "batch path"])
def test_a_spec_line_or_a_startup_line_inside_a_logged_prompt_counts_nothing(batch):
    honest = [STARTUP, *SPEC_LINES[:5]]
    expected = _read(honest, batch).snapshot().series[0].lifetime
    store = _read([STARTUP, *SPEC_LINES[:2], *_requests(FORGED_SPEC + ", note: "), *_requests(FORGED_START), *SPEC_LINES[2:5]], batch)
    (series,) = store.snapshot().series  # was: a second series renamed "evil", and 800,000 accepted tokens more
    assert series.key.model_name == "target"
    assert (series.lifetime.drafts, series.lifetime.accepted_tokens) == (expected.drafts, expected.accepted_tokens)
    assert store.snapshot().sources[0].problems == {}  # and no collapsed_records: the prompt is one record


@pytest.mark.parametrize("batch", [False, True], ids=["line path", "batch path"])
def test_two_records_that_lost_their_newline_are_still_both_read(batch):
    """The shipper's loss the splitting exists for: the first record's apostrophe (a word, not a repr's
    quote) and its own balanced quotes do not hide the second."""
    first = "(APIServer pid=1954) INFO 12-02 08:19:40 [x.py:1] Don't worry, {'a': 'b'} is fine"
    store = _read([STARTUP, first + SPEC_LINES[0], *SPEC_LINES[1:3]], batch)
    assert store.snapshot().series[0].lifetime.intervals == 3
    assert store.snapshot().sources[0].problems == {"collapsed_records": 1}


@pytest.mark.parametrize("batch", [False, True], ids=["line path", "batch path"])
def test_a_message_continued_after_its_newline_is_never_a_record_of_its_own_but_the_logos_version_is_read(batch):
    """A message's newline is written `\\r\\n` plus the record's prefix (NewLineFormatter): a model's
    output logged raw at DEBUG could make that line look like a spec line."""
    prefix = "(APIServer pid=1954) DEBUG 12-02 08:20:01 [hermes_tool_parser.py:71] "
    continued = [prefix + "delta_text: the answer is\r", prefix + FORGED_SPEC.split("] ", 1)[1] + "\r", prefix + "and that is all"]
    logo = [  # the capture's own logo record (tests/golden/vllm-0.24.0/draft_model-noisy-k8-plugin/server.log:1-5)
        "(APIServer pid=1753) INFO 12-02 14:10:31 [api_utils.py:339] \r",
        "(APIServer pid=1753) INFO 12-02 14:10:31 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.24.0\r",
        "(APIServer pid=1753) INFO 12-02 14:10:31 [api_utils.py:339]   █▄█▀ █     █     █     █  model   target",
    ]
    store = _read([*logo, STARTUP, SPEC_LINES[0], *continued, SPEC_LINES[1]], batch)
    (series,) = store.snapshot().series
    assert series.lifetime.intervals == 2 and series.lifetime.accepted_tokens < 800_000
    assert series.config.server_version == "0.24.0"


def test_a_version_banner_inside_a_prompt_is_not_the_servers():
    store = _read([STARTUP, "(APIServer pid=1954) INFO 12-02 08:19:20 [api_utils.py:319] vLLM server version 0.24.0, serving model target",
                   *_requests("vLLM server version 9.9.9, serving model evil"), SPEC_LINES[0]], batch=False)
    assert store.snapshot().series[0].config.server_version == "0.24.0"  # was 9.9.9
