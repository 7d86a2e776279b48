"""What following and resuming files costs, and files that are no logs (issue 33): the ledger is
linear in the number of files, a resume reads no more than its fingerprint, a copytruncate while
stopped is found even when the new content repeats the old, and a FIFO or a device is refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from helpers import counting

from exporter.intervals.pipeline import pipelines_into
from exporter.sources.logfile import FILE_REPLACED, FollowedFile
from exporter.sources.logsource import LogSource
from exporter.sources.position import FINGERPRINT_BYTES, SAMPLE_BLOCKS, SAMPLE_BYTES
from exporter.state.store import Store


def _lines(followed: FollowedFile) -> list[str]:
    return [line for item in followed.poll() if item is not FILE_REPLACED for line in item.decode().split("\n")]  # type: ignore[union-attr]


def test_following_many_glob_files_asks_the_ledger_per_file_not_per_pair(tmp_path, monkeypatch):
    """The catch-up of 2,000 glob files took 30.8 s: every claim asked every other held file how far it was read."""
    asked = counting(monkeypatch, FollowedFile, "read_to")
    for count in (250, 1000):
        directory = tmp_path / f"{count}"
        directory.mkdir()
        for index in range(count):
            (directory / f"server-{index:05d}.log").write_text(f"line of server {index}\n")
        asked.count = 0
        store = Store()
        source = LogSource([str(directory / "*.log")], store, pipelines_into(store), from_start=True, file_events=False)
        source.poll_once()
        assert len(source._files) == count
        source.stop()
        assert asked.count <= 2 * count  # was count × (count − 1) / 2: 499,500 for 1,000 files


def test_a_resume_reads_no_more_than_its_fingerprint(tmp_path, monkeypatch):
    log = tmp_path / "vllm.log"
    log.write_bytes(b"".join(b"line %08d of a long log\n" % index for index in range(800_000)))  # 20 MB
    first = FollowedFile(str(log), start_at_end=False)
    for _ in first.poll():
        pass
    saved = first.position()
    first.close()
    with open(log, "ab") as handle:
        handle.write(b"written while stopped\n")
    read = {"bytes": 0}
    real = os.pread

    def counted(fd: int, size: int, offset: int) -> bytes:
        data = real(fd, size, offset)
        read["bytes"] += len(data)
        return data

    monkeypatch.setattr(os, "pread", counted)
    resumed = FollowedFile(str(log), start_at_end=False, resume=saved)
    assert _lines(resumed) == ["written while stopped"]
    resumed.close()
    fingerprint = FINGERPRINT_BYTES + 2 * 64 + SAMPLE_BLOCKS * SAMPLE_BYTES  # first bytes, before the offset (twice), the sample
    assert read["bytes"] <= 3 * fingerprint + 2 * len(b"written while stopped\n")  # was 40 MB: the prefix read twice


def test_a_copytruncate_while_stopped_whose_new_content_repeats_the_old_prefix_loses_nothing(tmp_path):
    log = tmp_path / "vllm.log"
    old = [f"line {index}" for index in range(1000)]
    log.write_text("\n".join(old) + "\n")
    first = FollowedFile(str(log), start_at_end=False)
    assert len(_lines(first)) == 1000
    saved = first.position()
    first.close()
    with open(log, "a") as handle:  # while stopped: 300 more lines, then logrotate's copytruncate
        handle.write("\n".join(f"line {index}" for index in range(1000, 1300)) + "\n")
    (tmp_path / "vllm.log.1").write_bytes(log.read_bytes())
    log.write_text("\n".join([*old, *(f"again {index}" for index in range(100))]) + "\n")  # the same first 1,000 lines, then new ones
    resumed = FollowedFile(str(log), start_at_end=False, resume=saved)
    lines = _lines(resumed)
    resumed.close()
    assert lines == [f"line {index}" for index in range(1000, 1300)] + old + [f"again {index}" for index in range(100)]  # was the last 100 only


def test_a_fifo_and_a_device_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    results: dict[str, FollowedFile] = {}

    def follow(path: Path) -> None:
        followed = FollowedFile(str(path), start_at_end=False)
        assert _lines(followed) == []
        results[str(path)] = followed

    for path in (fifo, Path("/dev/zero")):
        reader = threading.Thread(target=follow, args=(path,), daemon=True)
        reader.start()
        reader.join(10)  # was: the FIFO's open() waited for a writer for ever; /dev/zero read without end
        assert str(path) in results and not results[str(path)].up
        assert "not a regular file" in (results[str(path)].error or "")
