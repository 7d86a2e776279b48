"""Following real files: appends, partial lines, every rotation style, truncation, late files.

Each test drives the follower by calling poll() itself — the same pass a wake-up runs — so no
test depends on timing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from workload import rotate_by_rename as rotate

from exporter.intervals.pipeline import pipelines_into
from exporter.sources.linebuffer import LineBuffer, split_lines
from exporter.sources.logfile import FILE_REPLACED, FollowedFile
from exporter.sources.logsource import LogSource
from exporter.sources.position import FilePosition, matches
from exporter.state.store import Store


def write(path: Path, text: str, mode: str = "a") -> None:
    with open(path, mode, encoding="utf-8") as handle:
        handle.write(text)


def poll(followed: FollowedFile) -> list[object]:
    """The new lines one pass yields, blocks split back into lines."""
    items: list[object] = []
    for item in followed.poll():
        items.extend([item] if item is FILE_REPLACED else split_lines(item)[0])  # type: ignore[arg-type]
    return items


def read_and_stop(log: Path) -> tuple[list[object], FilePosition]:
    """A sidecar that reads `log` to its end and stops: the lines it read, the position it saved."""
    first = FollowedFile(str(log), start_at_end=False)
    lines = poll(first)
    saved = first.position()
    first.close()
    assert saved is not None
    return lines, saved


@pytest.fixture
def follow():
    """FollowedFile factory that closes every follower after the test."""
    made: list[FollowedFile] = []

    def make(path: Path, *, start_at_end: bool, resume: FilePosition | None = None) -> FollowedFile:
        made.append(FollowedFile(str(path), start_at_end=start_at_end, resume=resume))
        return made[-1]

    yield make
    for followed in made:
        followed.close()


def test_existing_content_is_skipped_when_starting_at_the_end(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "old 1\nold 2\n")
    followed = follow(log, start_at_end=True)
    assert poll(followed) == []
    write(log, "new 1\n")
    assert poll(followed) == ["new 1"]


def test_partial_last_line_waits_for_its_newline(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "")
    followed = follow(log, start_at_end=False)
    write(log, "complete\nparti")
    assert poll(followed) == ["complete"]
    write(log, "al\r\n")
    assert poll(followed) == ["partial"]


def test_rename_and_create_rotation_finishes_the_old_file_first(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "a\n")
    followed = follow(log, start_at_end=False)
    assert poll(followed) == ["a"]
    write(log, "b\nunfinished")
    os.rename(log, tmp_path / "vllm.log.1")
    write(log, "c\n")
    assert poll(followed) == ["b", "unfinished", FILE_REPLACED, "c"]
    assert followed.counters.rotations == 1


def test_writes_to_the_renamed_file_before_the_new_one_appears_are_read(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "a\n")
    followed = follow(log, start_at_end=False)
    poll(followed)
    os.rename(log, tmp_path / "vllm.log.1")
    write(tmp_path / "vllm.log.1", "late\n")  # writer has not reopened yet
    assert poll(followed) == ["late"]
    assert not followed.exists
    write(log, "new\n")
    assert poll(followed) == [FILE_REPLACED, "new"]


def test_copytruncate_reads_again_from_the_start(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "a\nb\n")
    followed = follow(log, start_at_end=False)
    assert poll(followed) == ["a", "b"]
    write(log, "half")
    poll(followed)
    write(log, "", mode="w")  # logrotate copytruncate
    write(log, "c\n")
    assert poll(followed) == ["c"]
    assert followed.counters.truncations == 1
    assert followed.buffer.pending == 0  # the unfinished "half" was dropped with the truncation, never joined to "c"


def test_copytruncate_lines_written_before_the_copy_are_read_from_the_copy(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "a\nb\n")
    followed = follow(log, start_at_end=False)
    assert poll(followed) == ["a", "b"]
    write(log, "c\nhal")  # written after our last read …
    (tmp_path / "vllm.log.1").write_bytes(log.read_bytes())  # … then copied and truncated by logrotate
    write(log, "", mode="w")
    write(log, "d\n")
    assert poll(followed) == ["c", "d"]  # the copy gives c; only the unfinished "hal" is dropped
    assert followed.counters.truncations == 1 and followed.buffer.pending == 0


def test_copytruncate_is_seen_even_when_the_file_regrew_past_our_offset(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "line 1\nline 2\n")
    followed = follow(log, start_at_end=False)
    assert poll(followed) == ["line 1", "line 2"]
    write(log, "", mode="w")
    write(log, "after 1\nafter 2\nafter 3\n")  # longer than before: size alone cannot tell
    assert poll(followed) == ["after 1", "after 2", "after 3"]
    assert followed.counters.truncations == 1


def test_delete_and_recreate(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "a\n")
    followed = follow(log, start_at_end=False)
    poll(followed)
    log.unlink()
    assert poll(followed) == []
    assert not followed.exists
    write(log, "b\n")
    assert poll(followed) == [FILE_REPLACED, "b"]


def test_symlink_swap_kubernetes_style(tmp_path, follow):
    first, second = tmp_path / "0.log", tmp_path / "1.log"
    write(first, "a\n")
    link = tmp_path / "current.log"
    link.symlink_to(first)
    followed = follow(link, start_at_end=False)
    assert poll(followed) == ["a"]
    write(second, "b\n")
    tmp_link = tmp_path / "tmp-link"
    tmp_link.symlink_to(second)
    os.replace(tmp_link, link)  # atomic swap, as the kubelet does
    assert poll(followed) == [FILE_REPLACED, "b"]


def test_a_file_that_appears_later_is_read_from_its_start(tmp_path, follow):
    log = tmp_path / "later.log"
    followed = follow(log, start_at_end=True)
    assert poll(followed) == [] and not followed.exists
    write(log, "first\n")
    assert poll(followed) == ["first"]


def test_over_long_lines_are_counted_and_skipped_with_bounded_memory():
    buffer = LineBuffer(max_line_bytes=10)
    assert buffer.feed(b"short\n" + b"x" * 8) == b"short"
    assert buffer.feed(b"y" * 50) is None
    assert buffer.pending == 0
    assert buffer.feed(b"zz\nok\n") == b"ok"
    assert buffer.too_long == 1


SPEC = (
    "(APIServer pid=1) INFO 12-02 08:19:44 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 4.67, "
    "Accepted throughput: 1120.57 tokens/s, Drafted throughput: 2445.96 tokens/s, Accepted: 2243 tokens, Drafted: 4896 tokens, "
    "Per-position acceptance rate: 0.681, 0.515, 0.475, 0.441, 0.413, 0.397, 0.379, 0.363, Avg Draft acceptance rate: 45.8%\n"
)
STARTUP = (
    "(APIServer pid=1) INFO 12-02 08:19:13 [api_utils.py:273] non-default args: {'model': '/m/target', "
    "'served_model_name': ['target'], 'speculative_config': {'method': 'draft_model', 'model': '/m/d', 'num_speculative_tokens': 8}}\n"
)


def test_log_source_expands_globs_primes_config_and_counts(tmp_path):
    running = tmp_path / "a.log"
    write(running, STARTUP + SPEC)  # joined mid-run: the spec line is history, the config is not
    store = Store({"5m": 300})
    source = LogSource([str(tmp_path / "*.log")], store, pipelines_into(store))
    source.poll_once()
    write(running, SPEC)
    write(tmp_path / "b.log", SPEC)  # appears later: read from its start
    source.poll_once()
    source.stop()
    snapshot = store.snapshot()
    by_upstream = {s.key.upstream: s for s in snapshot.series}
    assert by_upstream[str(running)].lifetime.accepted_tokens == 2243
    assert by_upstream[str(running)].key.model_name == "target"
    assert by_upstream[str(running)].config.num_speculative_tokens == 8
    assert by_upstream[str(tmp_path / "b.log")].lifetime.accepted_tokens == 2243
    assert {s.upstream: s.up for s in snapshot.sources} == {str(running): True, str(tmp_path / "b.log"): True}


def test_a_missing_file_shows_as_down_never_as_zero_acceptance(tmp_path):
    store = Store({"5m": 300})
    source = LogSource([str(tmp_path / "missing.log")], store, pipelines_into(store))
    source.poll_once()
    source.stop()
    snapshot = store.snapshot()
    assert [(s.upstream, s.up) for s in snapshot.sources] == [(str(tmp_path / "missing.log"), False)]
    assert snapshot.series == ()


def test_resume_at_a_saved_position_in_the_same_file(tmp_path):
    log = tmp_path / "vllm.log"
    write(log, "a\nb\n")
    first = FollowedFile(str(log), start_at_end=False)
    assert poll(first) == ["a", "b"]
    write(log, "par")
    assert poll(first) == []
    saved = first.position()
    first.close()
    assert saved.offset == 4  # the unfinished line is not part of the saved position
    write(log, "tial\nc\n")
    second = FollowedFile(str(log), start_at_end=True, resume=saved)
    assert poll(second) == ["partial", "c"]
    second.close()


def test_resume_finishes_a_file_rotated_while_stopped(tmp_path):
    log = tmp_path / "vllm.log"
    write(log, "a\n" * 200)
    lines, saved = read_and_stop(log)
    assert len(lines) == 200
    write(log, "written before the rotation\n")
    os.rename(log, tmp_path / "vllm.log.1")
    write(log, "new file\n")
    second = FollowedFile(str(log), start_at_end=False, resume=saved)
    assert poll(second) == ["written before the rotation", FILE_REPLACED, "new file"]
    assert second.counters.rotations == 1
    second.close()


def test_resume_after_a_truncation_while_stopped_reads_the_copy_then_the_file(tmp_path):
    log = tmp_path / "vllm.log"
    write(log, "a\n" * 200)
    _, saved = read_and_stop(log)
    write(log, "late\n")
    (tmp_path / "vllm.log.1").write_bytes(log.read_bytes())  # logrotate copytruncate
    write(log, "", mode="w")
    write(log, "fresh\n")
    second = FollowedFile(str(log), start_at_end=False, resume=saved)
    assert poll(second) == ["late", FILE_REPLACED, "fresh"]
    second.close()


def test_a_position_saved_by_an_older_version_still_resumes(tmp_path, follow):
    log = tmp_path / "vllm.log"
    write(log, "a\nb\n")
    followed = follow(log, start_at_end=False)
    poll(followed)
    saved = followed.position().to_json()
    assert "device" not in saved and saved["inode"] == log.stat().st_ino
    del saved["inode"]  # what 0.2 wrote: first bytes only
    legacy = {**saved, "device": 2049}  # and a key of the versions before the stage folders
    write(log, "c\n")
    resumed = follow(log, start_at_end=False, resume=FilePosition.from_json(legacy))
    assert poll(resumed) == ["c"]


def test_deferred_lines_are_handed_over_before_the_store_is_read(tmp_path):
    """serve batches interpretation: a pass queues what it read, and every read of the store completes the queue first."""
    log = tmp_path / "vllm.log"
    write(log, STARTUP)
    store = Store({"5m": 300})
    source = LogSource([str(log)], store, pipelines_into(store), from_start=True, defer=3600)
    source.poll_once()
    write(log, SPEC)
    source.poll_once()
    assert store.snapshot().series == ()  # read, queued, not yet interpreted (no reader hook yet)
    store.before_read(source.complete)
    (series,) = store.snapshot().series
    assert series.lifetime.accepted_tokens == 2243 and series.config.num_speculative_tokens == 8
    write(log, SPEC)
    source.poll_once()
    log.unlink()  # its last line was read but not yet interpreted: the health must still end "down"
    source.poll_once()
    snapshot = store.snapshot()
    assert snapshot.series[0].lifetime.accepted_tokens == 2 * 2243
    assert [(s.upstream, s.up, s.spec_lines) for s in snapshot.sources] == [(str(log), False, 2)]
    source.stop()



@pytest.mark.parametrize("rotations", [1, 2, 3])
def test_resume_after_rotations_of_files_that_start_alike_reads_each_line_once(tmp_path, rotations):
    """Log files often start with the same bytes; a position must resume in its own file, then read
    every file rotated after it, then the current one (the kill -9 test under load lost these)."""
    log = tmp_path / "vllm.log"
    same_start = "the same first line of every file\n" * 10  # longer than the fingerprint
    write(log, same_start + "old 1\n")
    lines, saved = read_and_stop(log)
    assert lines[-1] == "old 1"
    write(log, "after the save\n")
    for number in range(1, rotations + 1):
        rotate(log)
        write(log, same_start + f"file {number}\n")  # each as long as the saved offset, or longer
    second = FollowedFile(str(log), start_at_end=False, resume=saved)
    read = [line for line in poll(second) if line != "the same first line of every file"]
    expected: list[object] = ["after the save"]
    for number in range(1, rotations + 1):
        expected += [FILE_REPLACED, f"file {number}"]
    assert read == expected
    assert second.counters.rotations == rotations
    write(log, "later\n")
    assert poll(second) == ["later"]
    second.close()


def test_resume_after_the_saved_file_was_deleted_reads_every_file_rotated_after_it(tmp_path):
    """`rotate 1` and a sidecar down for two rotations: the file of the saved position is gone, and
    its rest with it; the file rotated after it and the current one are still read whole."""
    log = tmp_path / "vllm.log"
    same_start = "the same first line of every file\n" * 10
    write(log, same_start + "old 1\n")
    (tmp_path / "vllm.log.old").write_text("rotated before the save\n")  # older than the position: not read
    os.utime(tmp_path / "vllm.log.old", ns=(1, 1))
    lines, saved = read_and_stop(log)
    assert lines[-1] == "old 1"
    assert saved.modified_ns is not None
    write(log, "after the save, lost with its file\n")
    for number in (1, 2):
        rotate(log, keep=1)
        write(log, same_start + f"file {number}\n")
    assert not any(path.read_text().endswith("after the save, lost with its file\n") for path in tmp_path.iterdir())  # replaced: gone
    os.utime(log.with_name("vllm.log.1"), ns=(saved.modified_ns + 10, saved.modified_ns + 10))  # coarse clocks: written after the save
    second = FollowedFile(str(log), start_at_end=False, resume=saved)
    read = [line for line in poll(second) if line != "the same first line of every file"]
    assert read == ["file 1", FILE_REPLACED, "file 2"]
    write(log, "later\n")
    assert poll(second) == ["later"]
    second.close()


def test_a_file_with_the_same_inode_and_first_bytes_is_not_ours_if_it_differs_before_the_offset(tmp_path):
    """An inode reused by a new file that starts alike (what tmpfs does after a delete): rewritten in
    place here, so the inode is the same for certain; the bytes before the saved offset tell."""
    log = tmp_path / "vllm.log"
    head = "the same first line of every file\n" * 10
    write(log, head + "ours\n")
    _, saved = read_and_stop(log)
    assert matches(str(log), saved)
    inode = log.stat().st_ino
    write(log, head + "new!\nand more\n", mode="w")
    assert log.stat().st_ino == inode
    assert not matches(str(log), saved)


def test_resume_after_two_copytruncates_reads_the_first_copy_then_the_second(tmp_path):
    log = tmp_path / "vllm.log"
    write(log, "a\n" * 200)
    _, saved = read_and_stop(log)
    write(log, "late\n")
    for number in (1, 2):
        for index in (2, 1):
            if (tmp_path / f"vllm.log.{index}").exists():
                os.replace(tmp_path / f"vllm.log.{index}", tmp_path / f"vllm.log.{index + 1}")
        (tmp_path / "vllm.log.1").write_bytes(log.read_bytes())  # logrotate copytruncate
        write(log, "", mode="w")
        write(log, f"after copy {number}\n")
    second = FollowedFile(str(log), start_at_end=False, resume=saved)
    assert poll(second) == ["late", FILE_REPLACED, "after copy 1", FILE_REPLACED, "after copy 2"]
    second.close()


# --- one identity per file (sources/ledger.py): issue 26 -----------------------------------------


def _lines_read(store: Store) -> int:
    return sum(source.lines for source in store.snapshot().sources)


def test_a_glob_over_rotated_files_reads_each_line_once(tmp_path):
    log = tmp_path / "vllm.log"
    store = Store({"5m": 300})
    source = LogSource([str(tmp_path / "vllm.log*")], store, pipelines_into(store), from_start=True)
    written = 0
    for _ in range(4):  # .1 → .2 → .3: every name a rotated file takes is matched by the glob
        write(log, "line\n" * 10)
        written += 10
        source.poll_once()
        rotate(log, keep=3)
        source.poll_once()
    write(log, "line\n" * 5)
    source.poll_once()
    source.poll_once()
    source.stop()
    assert _lines_read(store) == written + 5  # was: each rename read again from its start


def test_a_copy_under_a_glob_continues_after_what_was_read(tmp_path):
    log = tmp_path / "vllm.log"
    store = Store({"5m": 300})
    source = LogSource([str(tmp_path / "vllm.log*")], store, pipelines_into(store), from_start=True)
    write(log, "".join(f"line {index}\n" for index in range(10)))
    source.poll_once()
    write(log, "".join(f"late {index}\n" for index in range(3)))  # written, then copied and truncated before a poll
    (tmp_path / "vllm.log.1").write_bytes(log.read_bytes())
    write(log, "", mode="w")
    source.poll_once()
    source.poll_once()
    source.stop()
    assert _lines_read(store) == 13  # the 10 not read again from the copy, the 3 read once


def test_a_closed_file_keeps_its_position(tmp_path):
    log = tmp_path / "vllm.log"
    write(log, "a\nb\npartial")
    followed = FollowedFile(str(log), start_at_end=False)
    assert poll(followed) == ["a", "b"]
    followed.close()  # a clean stop closes every file before the state is saved
    saved = followed.position()
    assert saved is not None and saved.offset == len("a\nb\n") and saved.prefix_crc is not None


def test_a_position_inside_an_over_long_line_stays_at_its_start(tmp_path):
    log = tmp_path / "vllm.log"
    write(log, "short\n" + "x" * 5000)
    followed = FollowedFile(str(log), start_at_end=False, max_line_bytes=1024)
    assert poll(followed) == ["short"]
    saved = followed.position()
    followed.close()
    assert saved is not None and saved.offset == len("short\n")  # was mid-line: its tail became a line after a restart


def test_a_file_renamed_out_of_the_glob_is_still_drained(tmp_path):
    log = tmp_path / "a.log"
    store = Store({"5m": 300})
    source = LogSource([str(tmp_path / "*.log")], store, pipelines_into(store), from_start=True)
    write(log, "line\n" * 10)
    source.poll_once()
    log.rename(tmp_path / "a.log.1")  # out of the glob's reach, and still written by the server
    source.poll_once()  # the path is gone for a pass: the renamed file must stay open
    write(tmp_path / "a.log.1", "late\n" * 5)
    source.poll_once()
    write(log, "new\n" * 3)
    source.poll_once()
    source.poll_once()
    source.stop()
    assert _lines_read(store) == 18


def test_two_logs_that_start_alike_are_both_read(tmp_path):
    store = Store({"5m": 300})
    source = LogSource([str(tmp_path / "*.log")], store, pipelines_into(store), from_start=True)
    write(tmp_path / "a.log", "the same first line\n")
    source.poll_once()
    write(tmp_path / "b.log", "the same first line\nand more\n")  # not a copy of a.log: another server's log
    source.poll_once()
    source.stop()
    assert {s.upstream: s.lines for s in store.snapshot().sources} == {str(tmp_path / "a.log"): 1, str(tmp_path / "b.log"): 2}
