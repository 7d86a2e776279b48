"""The real sidecar scraping real HTTP servers on loopback.

The capture's 13 /metrics snapshots are served in sequence; the sidecar's totals and windows
must reproduce the capture's ground truth. Faulty targets must each show as down with their own
reason while a good target keeps working; a restart mid-sequence must not produce a negative or a
spike; a file_sd file rewritten while serving must switch targets.
"""

from __future__ import annotations

import json
import re
import threading

import pytest
from conftest import CAPTURE
from helpers import free_port, running_exporter, value
from servers import MetricsSequence, hanging, html_page, http_server, huge, status, trickling

pytestmark = pytest.mark.slow  # a running sidecar scraping real HTTP servers

SNAPSHOTS = sorted((CAPTURE / "metrics").glob("*.prom"))
FINAL = {"drafts": 25132, "draft_tokens": 201056, "accepted": 78455}
PER_POSITION = [15453, 11397, 10172, 9343, 8708, 8233, 7792, 7357]


def payloads() -> list[str]:
    return [path.read_text() for path in SNAPSHOTS]


def test_capture_snapshots_in_sequence_reproduce_the_ground_truth():
    sequence = MetricsSequence(payloads())
    windows = ("--derived-windows", "1m,5m,1h")  # every window's gauges: opt-in since issue 19
    with http_server(sequence) as base, running_exporter("--target", f"{base}/metrics", "--scrape-interval", "0.1", *windows) as exporter:
        target = {"upstream": f"{base}/metrics"}
        samples = exporter.wait_for(
            lambda s: sequence.exhausted and value(s, "specdecode_accepted_tokens_total", **target) == FINAL["accepted"],
            "every snapshot to be scraped",
        )
        series = {**target, "model_name": "target", "engine": "0", "source": "metrics"}
        assert value(samples, "specdecode_drafts_total", **series) == FINAL["drafts"]
        assert value(samples, "specdecode_draft_tokens_total", **series) == FINAL["draft_tokens"]
        for position, count in enumerate(PER_POSITION):
            assert value(samples, "specdecode_accepted_tokens_per_position_total", **series, position=str(position)) == count
        for window in ("1m", "5m", "1h"):
            length = value(samples, "specdecode_mean_acceptance_length", **series, window=window)
            assert abs(length - 4.1217) < 1e-4
            assert abs(value(samples, "specdecode_position_acceptance_ratio", **series, window=window, position="7") - 0.2927) < 1e-4
        assert value(samples, "specdecode_source_up", source="metrics", **target) == 1
        assert value(samples, "specdecode_info", **target, server_version="0.24.0", num_speculative_tokens="8") == 1
        assert value(samples, "specdecode_scrape_duration_seconds", **target) > 0
        status_doc = exporter.get_json("/api/v1/status")
        assert {s["window"]: s["accepted_per_position"] for s in status_doc["series"]}["1h"] == PER_POSITION


def restarted(text: str, base: dict[str, float], created_shift: float) -> str:
    """The same payload as if the server had restarted: counters minus `base`, new _created values."""

    def rewrite(match: re.Match[str]) -> str:
        name, labels, number = match.group(1), match.group(2) or "", float(match.group(3))
        if name.endswith("_created"):
            return f"{name}{labels} {number + created_shift}"
        return f"{name}{labels} {number - base.get(name + labels, 0.0)}"

    return re.sub(r"^(vllm:spec_decode_\w+)(\{[^}]*\})? (\S+)$", rewrite, text, flags=re.M)


def counter_values(text: str) -> dict[str, float]:
    return {m.group(1) + (m.group(2) or ""): float(m.group(3)) for m in re.finditer(r"^(vllm:spec_decode_\w+_total)(\{[^}]*\})? (\S+)$", text, re.M)}


def test_a_restart_mid_sequence_is_no_negative_and_no_spike():
    texts = payloads()
    cut = 7  # restart after the 7th snapshot (079.prom)
    base = counter_values(texts[cut - 1])
    sequence_texts = texts[:cut] + [restarted(t, base, 1000.0) for t in texts[cut:]]
    sequence = MetricsSequence(sequence_texts)
    # the interval across the restart is dropped: from 079 to the restarted 084 nothing is counted
    lost = counter_values(texts[cut])["vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"target\"}"] - base[
        "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"target\"}"
    ]
    expected = FINAL["accepted"] - lost
    seen: list[float] = []

    def recorded(samples) -> bool:  # type: ignore[no-untyped-def]
        accepted = value(samples, "specdecode_accepted_tokens_total")
        if accepted is not None:
            seen.append(accepted)
        length = value(samples, "specdecode_mean_acceptance_length", window="1m")
        assert length is None or 1.0 <= length <= 9.0, f"mean acceptance length {length} out of range"
        return sequence.exhausted and accepted == expected

    with http_server(sequence) as base_url, running_exporter("--target", f"{base_url}/metrics", "--scrape-interval", "0.1") as exporter:
        samples = exporter.wait_for(recorded, "the restarted sequence to be scraped")
        assert value(samples, "specdecode_server_restarts_total") == 1
    assert seen == sorted(seen), "the rebuilt counter went down"
    assert all(v >= 0 for v in seen)


def test_faulty_targets_are_down_with_their_reason_while_a_good_one_works():
    release = threading.Event()
    sequence = MetricsSequence(payloads())
    refused = f"http://127.0.0.1:{free_port()}/metrics"
    with (
        http_server(sequence) as good,
        http_server(status(500)) as failing,
        http_server(html_page) as html,
        http_server(huge(50 << 20)) as big,
        http_server(hanging(release)) as hang,
        http_server(trickling(release)) as loris,
    ):
        targets = {
            "refused": refused,
            "http_status": f"{failing}/metrics",
            "unparsable": f"{html}/metrics",
            "too_large": f"{big}/metrics",
            "timeout": f"{hang}/metrics",
        }
        slow = f"{loris}/metrics"  # answers, but a byte at a time: the whole-request timeout still applies
        args = [arg for url in [f"{good}/metrics", slow, *targets.values()] for arg in ("--target", url)]
        try:
            with running_exporter(*args, "--scrape-interval", "0.2", "--scrape-timeout", "1") as exporter:
                samples = exporter.wait_for(
                    lambda s: sequence.exhausted
                    and value(s, "specdecode_accepted_tokens_total", upstream=f"{good}/metrics") == FINAL["accepted"]
                    and all(value(s, "specdecode_scrape_errors_total", upstream=url, reason=reason) for reason, url in targets.items())
                    and value(s, "specdecode_scrape_errors_total", upstream=slow, reason="timeout"),
                    "every faulty target to fail with its reason",
                )
                for reason, url in targets.items():
                    assert value(samples, "specdecode_source_up", upstream=url) == 0, reason
                    other_reasons = [r for r in targets if r != reason]
                    assert all(value(samples, "specdecode_scrape_errors_total", upstream=url, reason=r) is None for r in other_reasons)
                    assert value(samples, "specdecode_mean_acceptance_length", upstream=url) is None
                    assert value(samples, "specdecode_accepted_tokens_total", upstream=url) is None
                assert value(samples, "specdecode_source_up", upstream=f"{good}/metrics") == 1
                sources = {s["upstream"]: s for s in exporter.get_json("/api/v1/status")["sources"]}
                assert sources[refused]["last_error"].startswith("refused")
        finally:
            release.set()


def test_targets_file_is_reloaded_while_serving(tmp_path):
    first, second = MetricsSequence(payloads()), MetricsSequence(payloads())
    targets_file = tmp_path / "targets.json"
    with http_server(first) as a, http_server(second) as b:
        def write(base: str) -> None:
            address = base.removeprefix("http://")
            (tmp_path / "tmp.json").write_text(json.dumps([{"targets": [address], "labels": {"pod": "vllm-0"}}]))
            (tmp_path / "tmp.json").replace(targets_file)

        write(a)
        # a target that left the file is retired after --stale-after (a file emptied for a moment changes nothing)
        with running_exporter("--targets-file", str(targets_file), "--scrape-interval", "0.1", "--stale-after", "1s") as exporter:
            samples = exporter.wait_for(lambda s: value(s, "specdecode_source_up", upstream=f"{a}/metrics") == 1, "target A")
            assert value(samples, "specdecode_target_info", upstream=f"{a}/metrics", pod="vllm-0") == 1
            write(b)
            samples = exporter.wait_for(
                lambda s: value(s, "specdecode_source_up", upstream=f"{b}/metrics") == 1
                and value(s, "specdecode_source_up", upstream=f"{a}/metrics") is None,
                "target B to replace target A",
            )
            assert value(samples, "specdecode_accepted_tokens_total", upstream=f"{a}/metrics") is None


def halved(text: str) -> str:
    """The same payload with half the accepted tokens: a different server's numbers."""
    return re.sub(
        r"^(vllm:spec_decode_num_accepted_tokens(?:_per_pos)?_total\{[^}]*\}) (\S+)$",
        lambda m: f"{m.group(1)} {float(m.group(2)) // 2}",
        text,
        flags=re.M,
    )


def test_log_and_metrics_of_one_server_are_cross_checked(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes((CAPTURE / "server.log").read_bytes())
    same, other = MetricsSequence(payloads()), MetricsSequence([halved(t) for t in payloads()])
    with http_server(same) as a, http_server(other) as b:
        args = ["--log", str(log), "--from-start", "--target", f"{a}/metrics", "--target", f"{b}/metrics",
                "--pair", f"{log}={a}/metrics", "--pair", f"{log}={b}/metrics", "--scrape-interval", "0.1"]
        with running_exporter(*args) as exporter:
            samples = exporter.wait_for(
                lambda s: same.exhausted and other.exhausted
                and value(s, "specdecode_accepted_tokens_total", upstream=f"{a}/metrics") == FINAL["accepted"]
                and value(s, "specdecode_log_spec_lines_total", upstream=str(log)) == 31,
                "both sources to have read the whole run",
            )
            quantity = {"window": "1h", "quantity": "mean_acceptance_length", "compared_upstream": str(log)}
            assert value(samples, "specdecode_source_disagreement_ratio", upstream=f"{a}/metrics", **quantity) < 1e-9
            assert value(samples, "specdecode_source_disagreement_ratio", upstream=f"{b}/metrics", **quantity) > 0.5
            checks = {(c["reference_upstream"], c["window"], c["quantity"]): c for c in exporter.get_json("/api/v1/status")["cross_check"]}
            assert {(c["reference_source"], c["compared_source"]) for c in checks.values()} == {("metrics", "log")}
            assert checks[(f"{a}/metrics", "1h", "draft_acceptance_ratio")]["agree"] is True
            assert checks[(f"{b}/metrics", "1h", "mean_acceptance_length")]["agree"] is False
            # the target borrows the method and draft model its paired log announced
            assert value(samples, "specdecode_info", upstream=f"{a}/metrics", method="draft_model", draft_model="/tmp/models/draft_noisy") == 1


def test_nan_counters_and_truncated_bodies_are_counted_and_the_sidecar_stays_up():
    from servers import truncated

    texts = payloads()
    poisoned = re.sub(r"^(vllm:spec_decode_num_accepted_tokens_total\{[^}]*\}) \S+$", r"\1 NaN", texts[5], flags=re.M)
    sequence = MetricsSequence(texts[:5] + [poisoned] * 3 + texts[5:])
    with http_server(sequence) as good, http_server(truncated) as cut:
        args = ["--target", f"{good}/metrics", "--target", f"{cut}/metrics", "--scrape-interval", "0.1"]
        with running_exporter(*args) as exporter:
            samples = exporter.wait_for(
                lambda s: sequence.exhausted
                and value(s, "specdecode_scrape_errors_total", upstream=f"{good}/metrics", reason="invalid_values")
                and value(s, "specdecode_scrape_errors_total", upstream=f"{cut}/metrics", reason="transport"),
                "the poisoned scrapes and the truncated body to be counted",
            )
            assert value(samples, "specdecode_source_up", upstream=f"{good}/metrics") == 1
            assert value(samples, "specdecode_source_up", upstream=f"{cut}/metrics") == 0
            accepted = value(samples, "specdecode_accepted_tokens_total", upstream=f"{good}/metrics")
            assert accepted is not None and 0 < accepted <= FINAL["accepted"]
            assert exporter.process.poll() is None


def test_duplicate_series_in_a_payload_keep_the_sidecar_up_and_right():
    doubled = [re.sub(r"^(vllm:spec_decode_\w+_total\{.*)$", r"\1\n\1", text, flags=re.M) for text in payloads()]
    assert doubled[-1].count("vllm:spec_decode_num_drafts_total{") == 2
    sequence = MetricsSequence(doubled)
    with http_server(sequence) as base, running_exporter("--target", f"{base}/metrics", "--scrape-interval", "0.1") as exporter:
        samples = exporter.wait_for(
            lambda s: sequence.exhausted and value(s, "specdecode_accepted_tokens_total", upstream=f"{base}/metrics") == FINAL["accepted"],
            "the doubled payloads to be scraped",
        )
        assert value(samples, "specdecode_source_up", upstream=f"{base}/metrics") == 1
        assert value(samples, "specdecode_drafts_total", upstream=f"{base}/metrics") == FINAL["drafts"]


class DrainedStats:
    """trtllm-serve's `GET /metrics`: the iteration stats queued since the last read, taken by the read."""

    def __init__(self, body: str) -> None:
        self.queue = [body]
        self.reads = 0
        self.lock = threading.Lock()

    def __call__(self, handler) -> None:  # type: ignore[no-untyped-def]
        from servers import send

        with self.lock:
            self.reads += 1
            body = self.queue.pop() if self.queue else "[]"
        send(handler, 200, body.encode(), "application/json")


def test_a_drained_endpoint_is_read_once_reported_down_and_never_read_again():
    from conftest import GOLDEN

    drained = DrainedStats((GOLDEN / "exposition" / "trtllm-iteration-stats.json").read_text())
    good = MetricsSequence(payloads())
    with http_server(drained) as trt, http_server(good) as vllm, running_exporter(
        "--target", f"{trt}/metrics", "--target", f"{vllm}/metrics", "--scrape-interval", "0.1"
    ) as exporter:
        exporter.wait_for(lambda s: good.exhausted, "the good target to be scraped a dozen times")
        status_doc = exporter.get_json("/api/v1/status")
        (source,) = [s for s in status_doc["sources"] if s["upstream"] == f"{trt}/metrics"]
        assert source["up"] is False and source["last_error"].startswith("drained_endpoint: TensorRT-LLM's JSON /metrics")
        assert drained.reads == 1  # every further read would have taken iterations from its own counters
        assert not [s for s in status_doc["series"] if s["upstream"] == f"{trt}/metrics"]
