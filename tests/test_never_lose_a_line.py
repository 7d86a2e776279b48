"""Never lose a line, never count one twice: rotation torture and kill -9 crash loops.

A writer appends real-format lines (one spec line in 40) and rotates the file; the sidecar's
counts of lines, spec lines and accepted tokens must end equal to the writer's tallies.
SPECDECODE_TORTURE_SECONDS and SPECDECODE_CRASHES make the runs longer (CI runs them short).
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest
from helpers import cli, free_port, running_exporter, running_process, value
from waiting import wait_until
from workload import LogWriter

pytestmark = pytest.mark.slow  # rotation torture and kill -9 against a running sidecar

SECONDS = float(os.environ.get("SPECDECODE_TORTURE_SECONDS", "3"))
CRASHES = int(os.environ.get("SPECDECODE_CRASHES", "5"))


def tallies_match(exporter, path: Path, writer: LogWriter, *, exact: bool = True):  # type: ignore[no-untyped-def]
    upstream = {"upstream": str(path)}

    def done(samples) -> bool:  # type: ignore[no-untyped-def]
        lines = value(samples, "specdecode_log_lines_total", **upstream)
        return lines is not None and (lines == writer.lines if exact else lines >= writer.lines * 0.95)

    samples = exporter.wait_for(done, f"{writer.lines} lines to be counted", deadline=60)
    print(f"\n{path.name}: written {writer.lines} lines ({writer.spec_lines} spec, {writer.accepted} accepted tokens), "
          f"{writer.rotations} rotations; counted {value(samples, 'specdecode_log_lines_total', **upstream):.0f} lines")
    return samples


@pytest.mark.parametrize("how", ["rename", "symlink", "delete"])
def test_rotation_torture_at_10000_lines_per_second(tmp_path, how):
    path = tmp_path / "vllm.log"
    if how == "symlink":
        (tmp_path / "vllm.log.0.data").touch()
        path.symlink_to("vllm.log.0.data")
    else:
        path.touch()
    writer = LogWriter(path, lines_per_second=10_000, rotate_every=0.2, how=how, keep=1000)
    with running_exporter("--log", str(path), "--from-start", "--poll-interval", "0.05") as exporter:
        writer.start()
        writer.run_for(SECONDS)
        writer.stop()
        samples = tallies_match(exporter, path, writer)
        assert writer.rotations >= SECONDS / 0.2 * 0.6  # the writer rotates less often when the machine is busy
        assert value(samples, "specdecode_log_spec_lines_total", upstream=str(path)) == writer.spec_lines
        assert value(samples, "specdecode_accepted_tokens_total", upstream=str(path)) == writer.accepted
        assert value(samples, "specdecode_log_rotations_total", upstream=str(path)) >= writer.rotations - 1
        assert writer.lines >= 10_000 * SECONDS * 0.8


def test_copytruncate_torture_loses_at_most_the_race_window(tmp_path):
    """Lines written between logrotate's copy and its truncate exist only in the copy: a documented race."""
    path = tmp_path / "vllm.log"
    path.touch()
    writer = LogWriter(path, lines_per_second=10_000, rotate_every=0.2, how="copytruncate")
    with running_exporter("--log", str(path), "--from-start", "--poll-interval", "0.05") as exporter:
        writer.start()
        writer.run_for(SECONDS)
        writer.stop()
        samples = tallies_match(exporter, path, writer, exact=False)
        counted = value(samples, "specdecode_log_lines_total", upstream=str(path))
        assert counted <= writer.lines  # never counted twice
        assert value(samples, "specdecode_log_truncations_total", upstream=str(path)) >= writer.rotations * 0.8


def test_kill_9_at_random_moments_loses_nothing_and_counts_nothing_twice(tmp_path):
    path, state = tmp_path / "vllm.log", tmp_path / "state"
    path.touch()
    # every rotated file is kept: on a loaded machine a restart can take longer than three
    # rotations, and lines in a file deleted before the sidecar is back are gone from the disk
    writer = LogWriter(path, lines_per_second=2_000, rotate_every=2.5, how="rename", keep=1000)
    chaos = random.Random(7)
    try:
        for crash in range(CRASHES):
            port = free_port()
            command = cli("serve", "--log", str(path), "--from-start", "--state-dir", str(state), "--listen", f"127.0.0.1:{port}")
            with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "sidecar") as process:
                if crash == 0:  # a first start reads only the current file: write once it has (a pass saves the state)
                    wait_until(lambda: (state / "state.json").exists(), "the first pass")
                    writer.start()
                writer.run_for(chaos.uniform(0.3, 1.5))  # a random while …
                process.send_signal(signal.SIGKILL)  # … then no shutdown, no final save
                process.wait(timeout=10)
    finally:
        if writer.ident is not None:  # started
            writer.stop()
    with running_exporter("--log", str(path), "--from-start", "--state-dir", str(state)) as exporter:
        samples = tallies_match(exporter, path, writer)
        assert value(samples, "specdecode_log_spec_lines_total", upstream=str(path)) == writer.spec_lines
        assert value(samples, "specdecode_accepted_tokens_total", upstream=str(path)) == writer.accepted
    assert writer.rotations >= 1


def test_state_file_survives_being_killed_mid_write(tmp_path):
    """The state file is replaced atomically: whatever moment the kill lands, it parses."""
    import json

    path, state = tmp_path / "vllm.log", tmp_path / "state"
    path.touch()
    writer = LogWriter(path, lines_per_second=5_000, rotate_every=None)
    writer.start()
    try:
        for delay in (0.4, 0.9, 1.3):
            port = free_port()
            command = cli("serve", "--log", str(path), "--state-dir", str(state), "--listen", f"127.0.0.1:{port}")
            with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "sidecar") as process:
                writer.run_for(delay)
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=10)
            data = json.loads((state / "state.json").read_text())
            assert data["version"] == 1 and data["files"]
    finally:
        writer.stop()
