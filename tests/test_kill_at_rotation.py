"""kill -9 next to a rotation, at every step of it, deterministically (issue 33, the second probe).

The sidecar is run in-process, pass by pass (LogSource + StateKeeper + Store, as `serve` wires them),
and "killed" by dropping it without a save — all a kill -9 leaves is the state dir, which the next
one starts from. A rotation is three steps that a kill can fall between: the log is renamed (the
path is gone), the writer creates the new file, and the follower reads it. Each test kills at one
of them: just before the rename, at the rotation itself (in the gap, where a restarted sidecar runs
a pass and saves before the new file exists, then is killed again), and just after the new file was
read and saved; the writer's tallies must equal what the last sidecar counts, for a plain path, a
glob that misses the rotated names and a glob that matches them (`dir/*`), from the start or not.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from workload import FILLER, SPEC_LINES, accepted_in

from exporter.intervals.pipeline import pipelines_into
from exporter.sources.logsource import LogSource
from exporter.state.persist import StateKeeper
from exporter.state.store import Store


class Sidecar:
    """One run of the sidecar, one pass at a time; `kill()` leaves only what it saved."""

    def __init__(self, state: Path, pattern: str, from_start: bool) -> None:
        self.store = Store({"5m": 300})
        self.source = LogSource([pattern], self.store, pipelines_into(self.store), from_start=from_start, file_events=False)
        self.store.before_read(self.source.complete)
        self.keeper = StateKeeper(self.store, str(state), logs=self.source)
        self.source.on_pass(lambda: None)  # saves only where the test says: a kill falls after a chosen save

    def pass_and_save(self) -> None:
        self.source.poll_once()
        self.keeper.save()

    def kill(self) -> None:
        """What the kernel does at a kill -9: the flock released, every file closed; nothing saved."""
        os.close(self.keeper._lock_fd)
        for followed, _ in self.source._files.values():
            if followed._file is not None:
                followed._file.close()

    def stop(self) -> None:
        self.source.stop()
        self.keeper.stop()

    def accepted(self) -> int:
        return sum(series.lifetime.accepted_tokens for series in self.store.snapshot().series)


class Writer:
    def __init__(self, log: Path) -> None:
        self.log, self.lines, self.accepted = log, 0, 0

    def write(self, count: int) -> None:
        with open(self.log, "a", encoding="utf-8") as handle:
            for _ in range(count):
                line = SPEC_LINES[self.lines % len(SPEC_LINES)] if self.lines % 3 == 0 else FILLER
                self.accepted += accepted_in(line) if line is not FILLER else 0
                handle.write(line + "\n")
                self.lines += 1

    def rename(self) -> None:
        """logrotate's first step: the older files move up, the log becomes .1 (no new file yet)."""
        for index in range(9, 0, -1):
            older = self.log.with_name(f"{self.log.name}.{index}")
            if older.exists():
                os.replace(older, self.log.with_name(f"{self.log.name}.{index + 1}"))
        os.replace(self.log, self.log.with_name(f"{self.log.name}.1"))


PATTERNS = {"plain path": "{dir}/vllm.log", "glob of the live names": "{dir}/*.log", "glob of every name": "{dir}/*"}


@pytest.mark.parametrize("pattern", PATTERNS.values(), ids=PATTERNS.keys())
@pytest.mark.parametrize("from_start", [True, False], ids=["--from-start", "from the end"])
@pytest.mark.parametrize("kill_at", ["before the rename", "in the rotation's gap", "after the new file was read"])
def test_a_kill_next_to_a_rotation_loses_nothing_and_counts_nothing_twice(tmp_path, pattern, from_start, kill_at):
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    log, writer = logs / "vllm.log", Writer(logs / "vllm.log")
    log.touch()
    glob = pattern.format(dir=logs)
    sidecar = Sidecar(state, glob, from_start)
    sidecar.pass_and_save()
    writer.write(100)
    sidecar.pass_and_save()
    writer.write(50)  # read by no one yet
    if kill_at == "before the rename":
        sidecar.kill()
        writer.rename()
        writer.write(70)  # the writer creates the new file
        sidecar = Sidecar(state, glob, from_start)
    else:
        writer.rename()
        if kill_at == "in the rotation's gap":
            sidecar.kill()
            sidecar = Sidecar(state, glob, from_start)  # restarted while the path is gone
            sidecar.pass_and_save()
            sidecar.kill()  # and killed again before the new file exists
            writer.write(70)
            sidecar = Sidecar(state, glob, from_start)
        else:
            writer.write(70)
            sidecar.pass_and_save()  # the new file read and its position saved
            sidecar.kill()
            sidecar = Sidecar(state, glob, from_start)
    writer.write(30)
    sidecar.pass_and_save()
    sidecar.pass_and_save()
    counted = sidecar.accepted()
    sidecar.stop()
    assert counted == writer.accepted  # was: the rotated file read again from its start, or lost


def test_a_log_replaced_while_stopped_by_a_symlink_to_another_followed_log_is_counted_once(tmp_path):
    """Two logs followed; while the sidecar is down one is replaced by a symlink to the other. The
    other's file keeps its saved position; the link's name does not read it from its start again."""
    first, second, state = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "state"
    writers = [Writer(first), Writer(second)]
    for writer in writers:
        writer.write(60)
    sidecar = Sidecar(state, str(tmp_path / "*.log"), True)
    sidecar.pass_and_save()
    sidecar.kill()
    first.unlink()
    first.symlink_to(second.name)
    writers[1].write(40)
    sidecar = Sidecar(state, str(tmp_path / "*.log"), True)
    sidecar.pass_and_save()
    sidecar.pass_and_save()
    counted = sidecar.accepted()
    sidecar.stop()
    assert counted == writers[0].accepted + writers[1].accepted  # was: b.log's 100 lines counted twice
