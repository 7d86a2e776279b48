"""A writer that appends real-format vLLM lines to a log and rotates it, keeping exact tallies."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from conftest import CAPTURE

_LINES = (CAPTURE / "server.log").read_bytes().decode().split("\n")
SPEC_LINES = [line for line in _LINES if "SpecDecoding metrics:" in line]
FILLER = '(APIServer pid=1954) INFO:     127.0.0.1:45698 - "POST /v1/completions HTTP/1.1" 200 OK'


def accepted_in(line: str) -> int:
    return int(line.split("Accepted: ")[1].split(" ")[0])


class LogWriter(threading.Thread):
    """Appends batches of lines (one spec line in every `spec_every`) and rotates every `rotate_every` s."""

    def __init__(self, path: Path, *, lines_per_second: float, rotate_every: float | None, how: str = "rename",
                 spec_every: int = 40, keep: int = 3) -> None:
        super().__init__(daemon=True)
        self.path, self.rate, self.rotate_every, self.how = path, lines_per_second, rotate_every, how
        self.spec_every, self.keep = spec_every, keep
        self.lines = self.spec_lines = self.accepted = 0
        self.rotations = 0
        self._halt = threading.Event()
        self.lock = threading.Lock()

    def run_for(self, seconds: float) -> None:
        """Let the writer write for `seconds` (the length of a run, or the time until a crash)."""
        self._halt.wait(seconds)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def _batch(self, count: int) -> str:
        out = []
        for _ in range(count):
            if self.lines % self.spec_every == 0:
                line = SPEC_LINES[self.spec_lines % len(SPEC_LINES)]
                self.spec_lines += 1
                self.accepted += accepted_in(line)
            else:
                line = FILLER
            out.append(line + "\n")
            self.lines += 1
        return "".join(out)

    def _rotate(self) -> None:
        if self.how == "rename":
            rotate_by_rename(self.path, self.keep)
        elif self.how == "copytruncate":
            shutil.copyfile(self.path, self.path.with_name(f"{self.path.name}.1"))
            with open(self.path, "r+") as handle:
                handle.truncate(0)
        elif self.how == "delete":
            self.path.unlink()
            self.path.touch()
        elif self.how == "symlink":  # the kubelet's way: the path is a link, swapped atomically
            target = self.path.with_name(f"{self.path.name}.{self.rotations + 1}.data")
            target.touch()
            link = self.path.with_name(f"{self.path.name}.tmp-link")
            link.symlink_to(target.name)
            os.replace(link, self.path)
        self.rotations += 1

    def run(self) -> None:
        step, started, last_rotation = 0.01, time.monotonic(), time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - started) * self.rate) - self.lines
            if due > 0:
                with self.lock, open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(self._batch(due))
            if self.rotate_every is not None and time.monotonic() - last_rotation >= self.rotate_every:
                with self.lock:
                    self._rotate()
                last_rotation = time.monotonic()
            self._halt.wait(step)  # the writer's pace, not a synchronisation


def rotate_by_rename(path: Path, keep: int = 3) -> None:
    """logrotate's default: .2 → .3, .1 → .2, the log → .1, a new empty log."""
    for index in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{index}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{index + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))
    path.touch()
