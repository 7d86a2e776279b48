"""The classes of real posted logs that were read wrong (issue #32, item 4), one test per fixture under
tests/golden/wild/ (written from vLLM 0.26.0's and SGLang 0.5.23's own format strings by
scripts/version_fixtures/posted.py), each on both of analyze's paths (blocks, and line by line as
serve's live edge reads)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN

from exporter.config import DeriveSettings
from exporter.report.analyze import AnalyzeOptions, analyze
from exporter.report.formats import render_table

WILD = GOLDEN / "wild"
BOTH_PATHS = pytest.mark.parametrize("batch", [True, False], ids=["blocks", "lines"])


def run(case: str, tmp_path: Path | None = None, **options: Any) -> dict[str, Any]:
    path = WILD / case / "server.log"
    if tmp_path is not None:  # a copy with the modification time of a checkout long after the log
        copy = tmp_path / "server.log"
        copy.write_bytes(path.read_bytes())
        os.utime(copy, (1796119200.0, 1796119200.0))  # 2026-12-01
        path = copy
    return analyze([str(path)], DeriveSettings(), AnalyzeOptions(progress=False, **options))


def truth(case: str) -> dict[str, Any]:
    return json.loads((WILD / case / "truth.json").read_text())  # type: ignore[no-any-return]


def totals(series: dict[str, Any]) -> tuple[Any, ...]:
    return series["drafts"], series["draft_tokens"], series["accepted_tokens"]


def expected(case: str) -> tuple[Any, ...]:
    engine = truth(case)["engines"]["0"]
    return engine["drafts"], engine["draft_tokens"], engine["accepted_tokens"]


@BOTH_PATHS
def test_a_per_position_list_joined_by_commas_alone_is_the_same_list(batch):
    """4 of 7 lines were refused (`reconstruction_failed`) and a broken drafter reported `wasteful`."""
    case = "vllm-0.26.0-per-position-no-spaces"
    report = run(case, batch=batch)
    (series,) = report["series"]
    assert report["parse_errors"] == {} and report["spec_lines"] == 7
    assert totals(series) == expected(case)
    assert series["accepted_per_position"] == truth(case)["engines"]["0"]["accepted_per_position"]
    assert series["health"] == "broken" and series["num_speculative_tokens"] == 8


@BOTH_PATHS
def test_an_sglang_line_cut_inside_its_rate_is_refused_not_taken_as_the_last_snapshot(batch):
    """`accept rate: 0` at the end of the text was read as acceptance 0.000 for a drafter at 0.14."""
    case = "sglang-0.5.23-cut-accept-rate"
    report = run(case, batch=batch)
    (sample,) = report["sampled"]
    assert sample["values"] == truth(case)["sampled"]
    assert report["parse_errors"] == truth(case)["parse_errors"]
    assert "draft acceptance ratio 0.000" not in render_table(report)


def test_an_sglang_rate_its_acceptance_length_rules_out_is_refused():
    from exporter.parse.sglang_log import parse_sglang_decode
    from exporter.parse.vllm_log import SpecLineError

    whole = (WILD / "sglang-0.5.23-cut-accept-rate" / "server.log").read_text().splitlines()[0]
    assert parse_sglang_decode(whole) is not None
    with pytest.raises(SpecLineError) as refused:  # printed whole, but 1.44 with 0.00 needs > 64 draft tokens a verify
        parse_sglang_decode(whole.replace("accept rate: 0.15", "accept rate: 0.00"))
    assert refused.value.reason == "inconsistent_counts"
    with pytest.raises(SpecLineError) as cut:
        parse_sglang_decode(whole[: whole.index("accept len: ") + len("accept len: 1.4")])
    assert cut.value.reason == "truncated"


@BOTH_PATHS
def test_spec_bodies_pasted_without_their_label_are_read_where_their_keys_are_a_layouts(batch):
    """`Mean acceptance length: …, Avg Draft acceptance rate: …%` alone was not read at all."""
    case = "vllm-0.26.0-bodies-without-label"
    report = run(case, batch=batch)
    (series,) = report["series"]
    assert totals(series) == expected(case) and series["format"] == "V1-e"
    assert series["accepted_per_position"] == truth(case)["engines"]["0"]["accepted_per_position"]
    assert report["spec_lines"] == 4 and report["parse_errors"] == {}  # the fragment and the fork's body: no layout's, not read


@BOTH_PATHS
def test_two_servers_printing_in_the_same_second_under_one_pid_are_said(batch, caplog):
    """Two API servers (both pid 1, in containers) appending to one log were pooled without a word."""
    case = "vllm-0.26.0-two-servers-same-second"
    with caplog.at_level(logging.WARNING, logger="exporter.intervals.writers"):
        report = run(case, batch=batch)
    (series,) = report["series"]
    assert totals(series) == expected(case)  # pooled, as before: but said
    assert any("two vLLM servers seem to write this log" in note for note in series["notes"])
    assert report["sources"][0]["two_writers"] is not None
    assert sum("two vLLM servers seem to write one log" in record.getMessage() for record in caplog.records) == 1
    assert "two vLLM servers seem to write this log" in render_table(report)


@BOTH_PATHS
def test_one_server_every_ten_seconds_is_no_second_writer(batch):
    report = run("vllm-0.26.0-crash-dump-config", batch=batch)
    assert report["sources"][0]["two_writers"] is None and not any("two vLLM" in note for note in report["series"][0]["notes"])


@BOTH_PATHS
def test_docker_desktops_prefix_gives_the_year(batch, tmp_path):
    """`2026-04-19 17:36:42.061 | …` before each line, and the report said the year is unknown."""
    from datetime import datetime

    case = "vllm-0.26.0-docker-desktop"
    report = run(case, tmp_path, batch=batch)
    (series,) = report["series"]
    assert totals(series) == expected(case)
    assert series["year_known"] is True and series["dates_unknown"] is None
    want = truth(case)
    assert series["end"] == pytest.approx(datetime.fromisoformat(want["last_stamp"]).timestamp(), abs=0.001)
    assert "year unknown" not in render_table(report)


@BOTH_PATHS
def test_a_crash_dumps_engine_config_gives_method_and_k(batch):
    """The crash dump's `SpeculativeConfig(method='mtp', …, num_spec_tokens=5)` was the only config line, unused."""
    case = "vllm-0.26.0-crash-dump-config"
    (series,) = run(case, batch=batch)["series"]
    assert (series["method"], series["num_speculative_tokens"], series["server_version"]) == ("mtp", 5, "0.26.0")
    assert totals(series) == expected(case)
