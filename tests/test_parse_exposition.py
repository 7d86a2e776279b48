"""The exposition parser: the real vLLM capture, fixtures for the other engines, deltas and resets."""

from __future__ import annotations

import pytest
from conftest import CAPTURE, GOLDEN
from prometheus_client.parser import text_string_to_metric_families

from exporter.intervals.from_scrape import ScrapeDeltas
from exporter.parse.exposition import _FAMILY_PREFIXES, CounterSet, ExpositionError, detect_engine, parse_exposition, spec_samples
from exporter.sources.targets import TargetsError, parse_targets_file, target_from_url

FIXTURES = GOLDEN / "exposition"


def test_real_vllm_snapshot():
    snapshot = parse_exposition((CAPTURE / "metrics" / "112_final.prom").read_text())
    assert snapshot.engine_kind == "vllm"
    counters = snapshot.counters[("target", "0")]
    assert (counters.drafts, counters.draft_tokens, counters.accepted_tokens) == (25132, 201056, 78455)
    assert counters.accepted_per_position == {0: 15453, 1: 11397, 2: 10172, 3: 9343, 4: 8708, 5: 8233, 6: 7792, 7: 7357}
    assert counters.created[("drafts", None)] == pytest.approx(1796199577.5018158)


PAYLOADS = sorted((CAPTURE / "metrics").glob("*.prom")) + sorted(FIXTURES.glob("*.prom"))


@pytest.mark.parametrize("path", PAYLOADS, ids=lambda path: path.name)
def test_hand_extraction_equals_prometheus_clients_parser(path):
    """prometheus_client's full parser is the oracle for every real and fixture payload."""
    text = path.read_text()
    prefix = _FAMILY_PREFIXES[detect_engine(text)]
    expected = [  # prometheus_client adds `_total` to a counter sample written without it
        (sample.name.removesuffix("_total"), sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith(prefix)
    ]
    extracted = [(name.removesuffix("_total"), labels, value) for name, labels, value in spec_samples(text, prefix)]
    assert expected and extracted == expected


def test_escaped_label_values_timestamps_and_special_values():
    text = (
        '# HELP vllm:spec_decode_num_drafts_total vllm:spec_decode_ in a comment\n'
        'other{note="vllm:spec_decode_x 1"} 1\n'
        'vllm:spec_decode_num_drafts_total{model_name="a \\"q\\" \\\\ b\\nc",engine="0",} 12 1700000000000\n'
        "vllm:spec_decode_num_draft_tokens_total +Inf\n"
    )
    samples = list(spec_samples(text, "vllm:spec_decode_"))
    assert samples[0] == ("vllm:spec_decode_num_drafts_total", {"model_name": 'a "q" \\ b\nc', "engine": "0"}, 12.0)
    assert samples[1][2] == float("inf") and len(samples) == 2


def test_sglang_gauges_are_sampled_values_of_the_leader_rank():
    snapshot = parse_exposition((FIXTURES / "sglang.prom").read_text())
    assert snapshot.engine_kind == "sglang" and snapshot.counters == {}
    assert snapshot.sampled == {
        ("Qwen/Qwen3-8B", "0"): {"mean_acceptance_length": 3.21, "draft_acceptance_ratio": 0.55, "num_draft_tokens": 4.0}
    }


def test_llamacpp_uses_vllms_schema_without_total_suffix():
    snapshot = parse_exposition((FIXTURES / "llamacpp.prom").read_text())
    assert snapshot.engine_kind == "llamacpp"
    counters = snapshot.counters[("unknown", "0")]
    assert (counters.drafts, counters.draft_tokens, counters.accepted_tokens) == (1200, 4800, 2100)
    assert counters.accepted_per_position == {0: 900, 1: 650, 2: 400, 3: 150}


def test_trtllm_counters_positions_and_config():
    snapshot = parse_exposition((FIXTURES / "trtllm.prom").read_text())
    assert snapshot.engine_kind == "trtllm"
    counters = snapshot.counters[("llama-3.1-8b", "0")]
    # drafts = drafted tokens at position 0; the near-identical per-position name is not the total
    assert (counters.drafts, counters.draft_tokens, counters.accepted_tokens) == (3000, 9000, 5400)
    assert counters.accepted_per_position == {0: 2400, 1: 1800, 2: 1200}
    assert snapshot.sampled[("llama-3.1-8b", "0")] == {"mean_acceptance_length": 2.8}
    assert snapshot.config["decoding_type"] == "Eagle3" and snapshot.config["max_draft_len"] == "3"



def test_created_samples_name_the_same_counters_for_every_engine():
    """A `_created` sample stamps a counter by what it counts, not by the engine's name for it."""
    vllm = parse_exposition(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10\n'
        'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 100\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 4\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",model_name="m",position="1"} 101\n'
    )
    trtllm = parse_exposition(
        'trtllm_spec_decode_drafted_tokens_total{model_name="m",token_position="0"} 10\n'
        'trtllm_spec_decode_drafted_tokens_created{model_name="m",token_position="0"} 100\n'
        'trtllm_spec_decode_accepted_tokens_total{model_name="m",token_position="1"} 4\n'
        'trtllm_spec_decode_accepted_tokens_created{model_name="m",token_position="1"} 101\n'
        'trtllm_spec_decode_accepted_tokens_created{model_name="m",token_position="2"} 102\n'
    )
    assert vllm.counters[("m", "0")].created == {("drafts", None): 100, ("accepted_per_position", 1): 101}
    (only,) = trtllm.counters.values()
    assert only.created == {("drafts", None): 100, ("accepted_per_position", 1): 101, ("accepted_per_position", 2): 102}

def test_vllm_v0_counters_are_ignored_and_gauges_sampled():
    snapshot = parse_exposition((FIXTURES / "vllm-v0.prom").read_text())
    assert snapshot.counters == {}
    assert snapshot.sampled[("meta-llama/Llama-2-7b", "0")] == {"draft_acceptance_ratio": 0.642, "system_efficiency_ratio": 0.598}


@pytest.mark.parametrize("payload", ["<!DOCTYPE html><html><body>login</body></html>", '{"error": "nope"}'])
def test_html_and_json_are_unparsable(payload):
    with pytest.raises(ExpositionError):
        parse_exposition(payload)


def test_garbage_in_spec_families_is_unparsable_and_no_families_is_empty():
    with pytest.raises(ExpositionError):
        parse_exposition('vllm:spec_decode_num_drafts_total{engine="0" 12 13 14\n')
    assert parse_exposition("# HELP up x\n# TYPE up gauge\nup 1\n").empty


def test_engine_detection_and_forcing():
    assert detect_engine("vllm:spec_decode_num_drafts_total 1") == "vllm"
    assert detect_engine("process_cpu_seconds_total 1") is None


def counters(drafts: float, tokens: float, accepted: float, positions: dict[int, float], created: float = 100.0) -> dict:
    return {("m", "0"): CounterSet(drafts, tokens, accepted, positions, {"num_drafts": created})}


def test_deltas_become_intervals_and_the_first_scrape_is_a_baseline():
    deltas = ScrapeDeltas("http://t/metrics")
    assert deltas.update(counters(10, 40, 20, {0: 8, 1: 6}), at=1000) == []
    (interval,) = deltas.update(counters(30, 120, 50, {0: 24, 1: 16}), at=1005)
    assert (interval.drafts, interval.draft_tokens, interval.accepted_tokens) == (20, 80, 30)
    assert interval.accepted_per_position == (16, 10)
    assert interval.seconds == 5 and interval.key.source == "metrics"


def test_a_drop_or_a_changed_created_is_a_restart_not_a_spike():
    deltas = ScrapeDeltas("http://t/metrics")
    deltas.update(counters(100, 400, 200, {0: 80}), at=1000)
    assert deltas.update(counters(5, 20, 10, {0: 4}), at=1005) == []  # dropped: a restart
    # restarted between scrapes and already grew past the old values: only _created tells
    assert deltas.update(counters(200, 800, 400, {0: 160}, created=2000.0), at=1010) == []
    assert deltas.resets == 2
    (interval,) = deltas.update(counters(210, 840, 420, {0: 168}, created=2000.0), at=1015)
    assert interval.drafts == 10 and interval.accepted_tokens == 20


def test_idle_scrapes_give_no_interval():
    deltas = ScrapeDeltas("http://t/metrics")
    deltas.update(counters(10, 40, 20, {0: 8}), at=1000)
    assert deltas.update(counters(10, 40, 20, {0: 8}), at=1005) == []


def test_a_position_that_appears_later():
    deltas = ScrapeDeltas("http://t/metrics")
    deltas.update(counters(10, 40, 20, {0: 8}), at=1000)
    grown = counters(20, 80, 40, {0: 16, 1: 5})
    grown[("m", "0")].created[("accepted_per_position", 1)] = 1002.0  # created after the last scrape
    (interval,) = deltas.update(grown, at=1005)
    assert interval.accepted_per_position == (8, 5)
    old = counters(30, 120, 60, {0: 24, 1: 9, 2: 7})  # position 2 existed before we saw it: baseline
    (interval,) = deltas.update(old, at=1010)
    assert interval.accepted_per_position == (8, 4, 0)


def test_file_sd_json_and_yaml():
    json_text = '[{"targets": ["127.0.0.1:8000", "127.0.0.1:8001"], "labels": {"cluster": "a", "__metrics_path__": "/m", "__x": "y"}}]'
    targets = parse_targets_file(json_text, "t.json")
    assert [t.url for t in targets] == ["http://127.0.0.1:8000/m", "http://127.0.0.1:8001/m"]
    assert targets[0].labels == {"cluster": "a"}
    yaml_text = "- targets: ['127.0.0.1:9000']\n  labels:\n    __scheme__: https\n"
    assert [t.url for t in parse_targets_file(yaml_text, "t.yml")] == ["https://127.0.0.1:9000/metrics"]


@pytest.mark.parametrize(
    "text", ["{not json", '{"targets": []}', '[{"targets": "x"}]', '[{"targets": ["http://a:1/metrics"]}]',
             # label names as Prometheus allows them, or the whole /metrics is unparsable (issue 33: `team\n` passed the old `$`)
             '[{"targets": ["a:1"], "labels": {"team\\n": "x"}}]', '[{"targets": ["a:1"], "labels": {"te-am": "x"}}]',
             '[{"targets": ["a:1"], "labels": {"1team": "x"}}]']
)
def test_bad_targets_files_are_errors(text):
    with pytest.raises(TargetsError):
        parse_targets_file(text, "t.json")


def test_target_urls():
    assert target_from_url("127.0.0.1:8000").url == "http://127.0.0.1:8000/metrics"
    with pytest.raises(TargetsError):
        target_from_url("ftp://x/metrics")


def test_tensorrt_llms_drained_json_metrics_is_refused_never_read_as_counters():
    from exporter.intervals.scrapes import ScrapeInterpreter
    from exporter.parse.exposition import looks_drained
    from exporter.state.store import Store

    body = (GOLDEN / "exposition" / "trtllm-iteration-stats.json").read_text()
    assert looks_drained(body) and looks_drained("[]\n")  # nothing ran since the last read: still the drained route
    assert not looks_drained((GOLDEN / "exposition" / "trtllm.prom").read_text()) and not looks_drained('[{"no": 1}]')
    store = Store()
    interpreter = ScrapeInterpreter(store)
    outcome = interpreter.accept("http://127.0.0.1:8000/metrics", body, 1.0)
    assert outcome.stop and outcome.failure is not None and outcome.failure[0] == "drained_endpoint"
    assert "/prometheus/metrics" in outcome.failure[1]
    assert store.snapshot().series == ()  # the drained deltas were not taken for counters


def test_counters_that_fall_under_the_same_created_are_a_drained_endpoint_not_a_restart():
    """Read as counters, a drained-on-read endpoint would be one reset after another, or its
    per-read amounts subtracted from each other: an undercount. A real restart re-creates its
    counters (a new `_created`); a fall without one is no counter at all."""
    from exporter.intervals.scrapes import ScrapeInterpreter
    from exporter.state.store import Store

    def body(drafts: int, created: float) -> str:
        return "\n".join([
            "# TYPE vllm:spec_decode_num_drafts counter",
            f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}.0',
            f'vllm:spec_decode_num_drafts_created{{engine="0",model_name="m"}} {created}',
            "# TYPE vllm:spec_decode_num_draft_tokens counter",
            f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {3 * drafts}.0',
            f'vllm:spec_decode_num_draft_tokens_created{{engine="0",model_name="m"}} {created}',
            "# TYPE vllm:spec_decode_num_accepted_tokens counter",
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {drafts}.0',
            f'vllm:spec_decode_num_accepted_tokens_created{{engine="0",model_name="m"}} {created}',
            "",
        ])

    store = Store()
    restarted = ScrapeInterpreter(store)
    for at, (drafts, created) in enumerate([(500, 100.0), (900, 100.0), (40, 200.0), (90, 200.0)]):
        outcome = restarted.accept("http://127.0.0.1:1/metrics", body(drafts, created), float(at))
        assert outcome.failure is None and not outcome.stop  # a restart (new _created): a new baseline
    assert outcome.resets == 1 and store.snapshot().series[0].lifetime.drafts == 400 + 50

    # one dip of 1 under the same _created is skipped, not a drained endpoint (issue 33: it abandoned the target for good)
    store = Store()
    dipped = ScrapeInterpreter(store)
    results = [dipped.accept("http://127.0.0.1:3/metrics", body(drafts, 100.0), float(at)) for at, drafts in enumerate([500, 499, 500, 520])]
    assert not any(result.stop for result in results) and store.snapshot().series[0].lifetime.drafts == 20

    drained = ScrapeInterpreter(Store())  # falls again and again: the endpoint's values are not cumulative
    results = [drained.accept("http://127.0.0.1:2/metrics", body(drafts, 100.0), float(at)) for at, drafts in enumerate([500, 420, 600, 510, 700, 650])]
    assert results[0].failure is None and not any(result.stop for result in results[:-1])
    assert results[-1].stop and results[-1].failure is not None and results[-1].failure[0] == "drained_endpoint"


def test_the_load_beside_the_spec_counters_is_read_and_becomes_the_intervals():
    """vllm:num_requests_running and vllm:generation_tokens_total of a speculating series (0.26.0
    v1/metrics/loggers.py: the gauge and the counter beside the spec_decode families)."""
    text = "\n".join([
        'vllm:num_requests_running{engine="0",model_name="m"} 64.0',
        'vllm:num_requests_running{engine="0",model_name="plain-model"} 3.0',  # no spec counters: not a series
        'vllm:generation_tokens_total{engine="0",model_name="m"} 10000.0',
        'vllm:generation_tokens_created{engine="0",model_name="m"} 1.7e9',
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0',
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 400.0',
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 200.0',
    ]) + "\n"
    snapshot = parse_exposition(text)
    assert set(snapshot.counters) == {("m", "0")}
    first = snapshot.counters[("m", "0")]
    assert (first.running, first.generation_tokens) == (64.0, 10000.0)
    deltas = ScrapeDeltas("http://t/metrics")
    deltas.update(snapshot.counters, at=1000)
    later = parse_exposition(text.replace("10000.0", "20000.0").replace("} 64.0", "} 60.0").replace("} 100.0", "} 3100.0")
                             .replace("} 400.0", "} 12400.0").replace("} 200.0", "} 7200.0"))
    (interval,) = deltas.update(later.counters, at=1005)
    assert (interval.running, interval.running_before, interval.generation_throughput) == (60, 64, 2000.0)
