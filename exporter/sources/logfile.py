"""Follow one log path across rotation, truncation, deletion and late creation.

The path is the identity a user gave us; the *file* behind it changes. On every poll (a wake-up
from file events or the polling timer — events are hints, never truth) we re-derive the state:

  * path missing           → keep draining the open file (a renamed file may still be written);
                             the new file is picked up when it appears;
  * path names another file (device+inode differ) → rename-and-create or delete-and-recreate
                             (symlink swaps too, since we stat through links): finish the old
                             file to its end, flush its unfinished last line, then read the new
                             file from its start;
  * same file, size < our offset, or the bytes just before our offset are no longer the ones
                             we read → copytruncate (or `> file`): read again from the start; an
                             unfinished line from before is dropped and counted. The byte check
                             catches a truncated file that regrew past our offset between polls,
                             which a size check alone would miss (and lose lines for);
  * otherwise              → read from our offset to the size just seen (what is written after
                             the stat raises the next wake-up); the byte check and the read are
                             one pread that starts at the remembered bytes.

After a restart, reading resumes at the saved position in the file it was taken in — same inode,
first bytes and bytes before the offset, wherever it is now (.1, .2, …) — then reads every file
rotated after it, oldest first by modification time, then the current file; for a copytruncate
while stopped, in the oldest copy that starts like it; if that file was deleted meanwhile, every
file rotated after its last write known. Lines are returned only when complete; a partial last
line waits for its newline. Not recoverable: the rest of a file deleted while we were down, files
compressed while we were down; lines written between logrotate's copy and its truncate (they
exist only in the copy).
"""

from __future__ import annotations

import errno
import glob
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from exporter.sources.linebuffer import DEFAULT_MAX_LINE_BYTES, LineBuffer
from exporter.sources.position import FilePosition, before_offset, fingerprint_of, matches

log = logging.getLogger(__name__)

READ_CHUNK = 1 << 20
TAIL_CHECK_BYTES = 64  # how many bytes before the offset must still match to rule out a rewrite
FINGERPRINT_BYTES = 256  # a file is recognised by its inode and first bytes (inodes get reused)
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")  # rotated copies we cannot read as text


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


class _FileReplaced:
    """Yielded between the last line of a replaced file and the first line of its successor."""

    def __repr__(self) -> str:
        return "FILE_REPLACED"


FILE_REPLACED = _FileReplaced()


@dataclass
class FileCounters:
    """What happened to one followed path; exported as self-metrics."""

    rotations: int = 0
    truncations: int = 0


class FollowedFile:
    """One path, followed: call `poll()` on every wake-up and consume the lines it yields."""

    def __init__(
        self, path: str, *, start_at_end: bool, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, resume: FilePosition | None = None
    ) -> None:
        self.path = path
        self.counters = FileCounters()
        self._resume = resume
        if resume is not None:
            self.counters.rotations, self.counters.truncations = resume.rotations, resume.truncations
            start_at_end = False
        self.buffer = LineBuffer(max_line_bytes)
        self._file: BinaryIO | None = None
        self._fd = -1  # the open file's descriptor, read with pread
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self._tail = b""  # the last bytes read, ending at _offset
        self._head = b""  # the file's first bytes as read, to recognise a copy of it (copytruncate)
        self._start_at_end = start_at_end  # only for the file that exists when we start
        self.exists = False

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file, self._fd = None, -1

    def position(self) -> FilePosition | None:
        """Where reading stands, at the last complete line (None before the file was opened)."""
        if self._file is None or self._identity is None:
            return self._resume
        committed = self._offset - self.buffer.pending
        length = min(committed, FINGERPRINT_BYTES)
        counters = self.counters
        fingerprint = fingerprint_of(self._file, length)
        return FilePosition(self.path, fingerprint, length, committed, counters.rotations, counters.truncations, self._identity[1],
                            os.fstat(self._fd).st_mtime_ns, before_offset(self._file, committed))

    def poll(self) -> Iterator[bytes | _FileReplaced]:
        """Yield the new complete lines as blocks (lines joined by b"\\n"), and FILE_REPLACED at a rotation."""
        if self._resume is not None:
            yield from self._resume_reading()
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self.exists = False
            self._start_at_end = False  # it did not exist when we started: read it whole once it appears
            if self._file is not None:
                yield from self._drain()
            return
        except OSError as error:
            self._error(error)
            return
        self.exists = True
        identity = (stat.st_dev, stat.st_ino)
        if self._file is not None and identity != self._identity:
            yield from self._drain()
            yield from self._flush()
            self.close()
            self.counters.rotations += 1
            yield FILE_REPLACED
            log.info("log file replaced, reading the new one from its start path=%s", self.path)
        if self._file is None:
            if not self._open(identity, stat.st_size):
                return
            yield from self._drain()
            return
        fresh = self._read_new(stat.st_size)
        if fresh is None:
            self.counters.truncations += 1
            yield from self._finish_copy()
            self.buffer.discard()  # the unfinished line was cut off by the truncation: it never ends
            self._seek(0)
            log.info("log file truncated, reading again from its start path=%s", self.path)
            yield from self._drain()
        elif fresh:
            block = self._take(fresh)
            if block is not None:
                yield block
            if len(fresh) == READ_CHUNK:  # catching up: read on, chunk by chunk
                yield from self._drain()

    def _resume_reading(self) -> Iterator[bytes | _FileReplaced]:
        """First poll after a restart: continue where the saved position says, wherever that file is now."""
        position, self._resume = self._resume, None
        assert position is not None
        if matches(self.path, position):
            if self._open_at(self.path, position.offset):
                log.info("resuming log path=%s offset=%d", self.path, position.offset)
            return
        # rotated while we were down: finish the old file (now a sibling such as .2) from the saved
        # offset, then every file rotated after it (.1), oldest first, then the current one
        siblings = self._siblings(self.path)
        found = next((candidate for candidate in siblings if matches(candidate, position)), None)
        if found is None and position.inode is not None and getattr(_stat(self.path), "st_ino", None) == position.inode:
            # copied and truncated while we were down: the file stayed (emptied); our rest is in the
            # oldest copy that still starts like it
            copies = [(os.stat(c).st_mtime_ns, c) for c in siblings if matches(c, position, any_inode=True)]
            found = min(copies, default=(0, None))[1]
        if found is not None and self._open_at(found, position.offset):
            log.info("finishing a file rotated while stopped rotated=%s offset=%d", found, position.offset)
            opened = os.fstat(self._fd)
            yield from self._finish_rotated(siblings, opened.st_ino, opened.st_mtime_ns)
            return
        later = self._rotated_after(siblings, None, position.modified_ns, _stat(self.path)) if position.modified_ns is not None else []
        if later and self._open_at(later[0], 0):
            # the saved file itself was rotated and deleted while we were down (rotate 1, or a slow
            # restart): its rest is lost, but every file rotated after it is read, oldest first
            log.warning("the file of the saved log position is gone; its unread rest is lost, reading the %d file(s) rotated after it "
                        "path=%s", len(later), self.path)
            self.counters.rotations += 1
            opened = os.fstat(self._fd)
            yield from self._finish_rotated(siblings, opened.st_ino, opened.st_mtime_ns)
            return
        if os.path.exists(self.path):
            log.warning("saved log position matches no file; reading the current one from its start path=%s", self.path)
            self.counters.rotations += 1

    def _finish_rotated(self, siblings: list[str], first_inode: int, first_modified_ns: int) -> Iterator[bytes | _FileReplaced]:
        """Read the open rotated file to its end, then every file rotated after it, then follow the current one."""
        try:  # the current file, held from now: a rotation during this catch-up cannot skip it
            current: BinaryIO | None = open(self.path, "rb")  # noqa: SIM115 - becomes the followed file
        except OSError:
            current = None
        later = self._rotated_after(siblings, first_inode, first_modified_ns, os.fstat(current.fileno()) if current is not None else None)
        for rotated in [None, *later]:  # None: the file open now
            if rotated is not None and not self._open_at(rotated, 0):
                continue
            yield from self._drain()
            yield from self._flush()
            self.close()
            self.counters.rotations += 1
            yield FILE_REPLACED
        if current is not None:
            self._adopt(current, 0)  # poll() reads it next, or finishes it if rotated meanwhile

    def _rotated_after(self, siblings: list[str], first_inode: int | None, first_modified_ns: int, last: os.stat_result | None) -> list[str]:
        """The files rotated after the first one (an open file, or a gone one last known modified at
        `first_modified_ns`) and before the current one (`last`), oldest first.

        A rotated file is no longer written, so modification times order them whatever the naming
        (.1 .2, dates, kubelet's symlink targets); compressed copies cannot be read and are skipped."""
        skip = ({first_inode} if first_inode is not None else set()) | ({last.st_ino} if last is not None else set())
        found = []
        for candidate in siblings:
            stat = _stat(candidate)
            if stat is None or stat.st_ino in skip or candidate.endswith(_COMPRESSED) or not candidate.startswith(self.path):
                continue
            if first_modified_ns <= stat.st_mtime_ns <= (last.st_mtime_ns if last is not None else stat.st_mtime_ns):
                skip.add(stat.st_ino)  # a file twice among the siblings (a link) is read once
                found.append((stat.st_mtime_ns, candidate))
        return [candidate for _, candidate in sorted(found)]

    def _siblings(self, path: str) -> list[str]:
        """Files a rotation may have moved `path` to (path.1, path-2026…, path.gz is skipped by content)."""
        found = sorted(glob.glob(glob.escape(path) + "*")) + sorted(glob.glob(glob.escape(path.rsplit(".", 1)[0]) + "*"))
        return [candidate for candidate in dict.fromkeys(found) if candidate != path]

    def _finish_copy(self) -> Iterator[bytes]:
        """copytruncate: what was written after our last read is in the copy; read it from our offset."""
        if not self._offset or not self._head:
            return
        for candidate in self._siblings(self.path):
            try:
                with open(candidate, "rb") as copy:
                    if os.fstat(copy.fileno()).st_size < self._offset or copy.read(len(self._head)) != self._head:
                        continue
                    if self._tail and os.pread(copy.fileno(), len(self._tail), self._offset - len(self._tail)) != self._tail:
                        continue
                    copy.seek(self._offset)
                    while chunk := copy.read(READ_CHUNK):
                        block = self.buffer.feed(chunk)
                        if block is not None:
                            yield block
            except OSError:
                continue
            log.info("log file copied and truncated; read the rest from the copy copy=%s", candidate)
            return

    def _open_at(self, path: str, offset: int) -> bool:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - kept open across polls on purpose
        except OSError:
            return False
        self._adopt(handle, offset)
        return True

    def _adopt(self, handle: BinaryIO, offset: int) -> None:
        opened = os.fstat(handle.fileno())
        self._file, self._fd, self._identity = handle, handle.fileno(), (opened.st_dev, opened.st_ino)
        self._seek(offset)

    def _open(self, identity: tuple[int, int], size: int) -> bool:
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - kept open across polls on purpose
        except FileNotFoundError:
            return False
        except OSError as error:
            self._error(error)
            return False
        opened = os.fstat(handle.fileno())
        self._file, self._fd, self._identity = handle, handle.fileno(), (opened.st_dev, opened.st_ino)
        self._seek(0)  # forget the previous file's head and tail too
        if self._start_at_end:
            self._seek(opened.st_size)
        self._start_at_end = False  # files that appear or replace it later are read whole
        return True

    def _seek(self, offset: int) -> None:
        """Read on from `offset` (every read is a pread at our own offset: the handle's position is unused)."""
        assert self._file is not None
        self._offset = offset
        self._tail = b""
        self._head = self._read_at(0, min(offset, FINGERPRINT_BYTES)) if offset else b""
        if offset:
            self._tail = self._read_at(max(0, offset - TAIL_CHECK_BYTES), min(offset, TAIL_CHECK_BYTES))

    def _read_at(self, offset: int, size: int) -> bytes:
        assert self._file is not None
        try:
            return os.pread(self._fd, size, offset)
        except OSError:
            return b""

    def _read_new(self, size: int) -> bytes | None:
        """What was appended after our offset (at most one chunk, up to `size` as just stat'ed); None
        if the file was truncated or rewritten: shorter than our offset, or the bytes just before it
        are no longer the ones we read. One pread does both: it starts at the remembered tail (a busy
        file is read once per pass, so this is what following one costs in system calls)."""
        if size < self._offset:
            return None
        tail = self._tail
        data = self._read_at(self._offset - len(tail), len(tail) + min(size - self._offset, READ_CHUNK))
        if not data.startswith(tail):
            return None
        return data[len(tail) :] if tail else data

    def _take(self, chunk: bytes) -> bytes | None:
        """Account for `chunk`, read at our offset; the complete lines it finishes (None: none yet)."""
        if len(self._head) < FINGERPRINT_BYTES and self._offset == len(self._head):
            self._head += chunk[: FINGERPRINT_BYTES - len(self._head)]
        self._offset += len(chunk)
        self._tail = chunk[-TAIL_CHECK_BYTES:] if len(chunk) >= TAIL_CHECK_BYTES else (self._tail + chunk)[-TAIL_CHECK_BYTES:]
        return self.buffer.feed(chunk)

    def _drain(self) -> Iterator[bytes]:
        """Read to the end of the open file (after a rotation, or to catch up)."""
        assert self._file is not None
        while True:
            try:
                chunk = os.pread(self._fd, READ_CHUNK, self._offset)
            except OSError as error:
                self._error(error)
                return
            if not chunk:
                return
            block = self._take(chunk)
            if block is not None:
                yield block

    def _flush(self) -> Iterator[bytes]:
        block = self.buffer.flush()
        if block is not None:
            yield block

    def _error(self, error: OSError) -> None:
        level = logging.DEBUG if error.errno == errno.ENOENT else logging.WARNING
        log.log(level, "cannot read log file path=%s error=%s", self.path, error)
