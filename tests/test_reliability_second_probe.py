"""Acceptance of the second black-box probe (issue 33): nothing a prompt, a proxy or a hostile input
can forge, stall or exhaust. Each test reproduces one finding against the real sidecar process on
loopback — real files, real signals, real servers — and fails on b51dba2. Findings that need no
process are held by pure tests named in the README's "Security and limits" section.

Run them with `pytest -m reliability` (with tests/test_reliability.py, the first probe's).
"""

from __future__ import annotations

import os
import signal

import pytest
from helpers import running_exporter, running_process, value
from test_reliability import Tally, assert_exact, counted_at, saved_once_more, serve, settle
from waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.reliability]


# --- kill -9 at a rotation ----------------------------------------------------------------------


def test_a_kill_in_a_rotations_gap_loses_nothing(tmp_path):
    """Killed, restarted and killed again while the log is renamed and its new file not yet made:
    the restarted sidecar's save kept where the renamed file was read to (tests/test_kill_at_rotation.py
    kills at every step of a rotation, in-process)."""
    logs, state, tally = tmp_path / "logs", tmp_path / "state", Tally()
    logs.mkdir()
    log = logs / "vllm.log"
    tally.append(log, 300)
    args = ("--log", str(logs / "*.log"), "--from-start", "--state-dir", str(state))
    command, ready = serve(*args)
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 300, "300 lines counted")
        saved_once_more(state)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    tally.append(log, 200)  # never read by the first sidecar
    os.replace(log, logs / "vllm.log.1")  # the rotation's first step; the writer makes the new file later
    command, ready = serve(*args)
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 500, "the renamed file finished")
        saved_once_more(state)  # a save made in the gap
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    tally.append(log, 100)  # the new file
    with running_exporter(*args) as exporter:
        assert_exact(settle(exporter, [log], tally), tally)  # was: the 200 lines of the renamed file lost


# --- metrics forged from a prompt ---------------------------------------------------------------


def test_a_prompt_holding_a_spec_line_and_a_startup_line_changes_no_count_and_no_name(tmp_path):
    """With request logging on, a user's prompt (and the model's output) quoting a spec line and an
    engine-config line: read only where vLLM's logger writes them (tests/test_anchoring.py: both paths)."""
    from test_anchoring import FORGED_SPEC, FORGED_START, STARTUP, _requests
    from workload import SPEC_LINES

    log = tmp_path / "vllm.log"
    log.write_text("\n".join([STARTUP, *SPEC_LINES[:4]]) + "\n")
    with running_exporter("--log", str(log), "--from-start") as exporter:
        honest = exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == 4, "the honest lines")
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("\n".join([*_requests(FORGED_SPEC + ", note: "), *_requests(FORGED_START), SPEC_LINES[4]]) + "\n")
        samples = exporter.wait_for(lambda s: value(s, "specdecode_log_lines_total") == 12, "the prompts read")
    forged = value(samples, "specdecode_drafts_total") - value(honest, "specdecode_drafts_total")
    assert 0 < forged < 2_000  # one honest line's drafts; was 100,000 more, and a series named "evil"
    assert {dict(labels)["model_name"] for (name, labels) in samples if name == "specdecode_drafts_total"} == {"target"}


# --- memory under a burst -----------------------------------------------------------------------


def test_a_burst_of_spec_lines_written_at_once_keeps_memory_bounded(tmp_path):
    """120,000 spec lines (48 MB) land in the log at once: the windows hold them folded (state/fold.py).
    A million peaked at 98 MiB here (316 MB and the OOM killer under a 256 Mi limit on b51dba2)."""
    from test_reliability import rss_peak_mib
    from workload import SPEC_LINES

    log = tmp_path / "vllm.log"
    log.touch()
    count = 120_000
    with running_exporter("--log", str(log)) as exporter:
        before = rss_peak_mib(exporter.process.pid)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("\n".join(SPEC_LINES[index % len(SPEC_LINES)] for index in range(count)) + "\n")
        exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == count, "every line counted", deadline=90)
        grown = rss_peak_mib(exporter.process.pid) - before
    assert grown < 60  # was 105 MiB for these lines, growing with every one


# --- the state-dir lock -------------------------------------------------------------------------


@pytest.mark.parametrize("lock", ["a symlink", "a directory", "a FIFO"])
def test_a_lock_that_cannot_be_held_stops_the_sidecar_and_is_never_followed(tmp_path, lock):
    import subprocess

    log, state, target = tmp_path / "vllm.log", tmp_path / "state", tmp_path / "precious.txt"
    Tally().append(log, 5)
    state.mkdir()
    target.write_text("keep me\n")
    if lock == "a symlink":
        (state / "lock").symlink_to(target)  # was: the sidecar wrote its pid into precious.txt
    elif lock == "a directory":
        (state / "lock").mkdir()  # was: a warning, and the sidecar ran unlocked
    else:
        os.mkfifo(state / "lock")
    command, _ = serve("--log", str(log), "--state-dir", str(state))
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and f"{state / 'lock'}" in refused.stderr
    assert target.read_text() == "keep me\n"


# --- special files --------------------------------------------------------------------------------


def test_a_fifo_matched_by_a_glob_and_a_device_given_as_a_log_are_refused_and_stop_nothing(tmp_path):
    """open() of a FIFO waits for a writer: the follower's one thread, and every log with it, stopped
    there; /dev/zero was a core at 100% and /dev/urandom 4.6 million garbage lines (sources/regular.py)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    os.mkfifo(logs / "a-pipe.log")  # sorted first: followed before the real log
    log, tally = logs / "vllm.log", Tally()
    tally.append(log, 50)
    with running_exporter("--log", str(logs / "*.log"), "--log", "/dev/zero", "--from-start") as exporter:
        samples = exporter.wait_for(lambda s: value(s, "specdecode_log_lines_total", upstream=str(log)) == 50, "the real log read")
        tally.append(log, 25)
        samples = exporter.wait_for(lambda s: value(s, "specdecode_log_lines_total", upstream=str(log)) == 75, "and followed on")
    assert value(samples, "specdecode_source_up", upstream=str(logs / "a-pipe.log")) == 0
    assert value(samples, "specdecode_source_up", upstream="/dev/zero") == 0
    assert (value(samples, "specdecode_log_lines_total", upstream="/dev/zero") or 0) == 0
