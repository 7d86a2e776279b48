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
first bytes, bytes before the offset and crc32 of every byte before it, wherever it is now (.1,
.2, …) — then reads every file rotated after it, oldest first by modification time, then the
current file; for a copytruncate while stopped, in the copy holding exactly the bytes read (the
first one made after the position was saved); if that file was deleted meanwhile, every file
rotated after its last write known. Lines are returned only when complete; a partial last line
waits for its newline, and a saved position is always at a line boundary (inside an over-long
line too: it is skipped again after a restart, never read from its middle). Not recoverable: the
rest of a file deleted while we were down, files compressed while we were down.

The followers of one log source share a Ledger (sources/ledger.py): a file is read by one of them
only, whatever names it has (a glob that matches the rotated files too), and the copy of a file
continues where that file was read to.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from exporter.sources.ledger import Ledger, ReadTo
from exporter.sources.linebuffer import DEFAULT_MAX_LINE_BYTES, LineBuffer
from exporter.sources.position import FINGERPRINT_BYTES, FilePosition, before_offset, matches, prefix_crc, sample_of
from exporter.sources.regular import open_regular
from exporter.sources.resume import COMPRESSED, copied_while_stopped
from exporter.sources.siblings import siblings

log = logging.getLogger(__name__)

READ_CHUNK = 1 << 20
TAIL_CHECK_BYTES = 64  # how many bytes before the offset must still match to rule out a rewrite


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
        self, path: str, *, start_at_end: bool, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, resume: FilePosition | None = None,
        ledger: Ledger | None = None, let_go_when_gone: bool = False,
    ) -> None:
        self.path = path
        self.ledger = ledger if ledger is not None else Ledger()
        # a glob-matched path whose file is deleted is let go at once (closed: its disk space is freed),
        # not held open for ever; a renamed one is drained on, as for a plain path
        self.let_go_when_gone = let_go_when_gone
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
        self._crc = 0  # crc32 of the bytes [0, _offset)
        self._committed = 0  # just after the last newline read: where a saved position stands
        self._committed_crc = 0  # crc32 of the bytes [0, _committed)
        self._final: FilePosition | None = None  # where reading stood when the file was last closed
        self.error: str | None = None  # why the path exists but cannot be read (said once in the log)
        self._tail = b""  # the last bytes read, ending at _offset
        # ((file, committed), its before_offset, its sample): position()'s reads, kept while reading stands still
        self._marks: tuple[tuple[tuple[int, int], int], str, str] | None = None
        self._head = b""  # the file's first bytes as read, to recognise a copy of it (copytruncate)
        self._start_at_end = start_at_end  # only for the file that exists when we start
        self.exists = False

    @property
    def up(self) -> bool:
        """The path exists and can be read (source_up)."""
        return self.exists and self.error is None

    def close(self) -> None:
        """Close the file; its position stays known (a clean stop saves it after every file is closed)."""
        if self._file is not None and self._identity is not None:
            self._final = self.position()
            self.ledger.release(self._identity, self, self.read_to())
            self._file.close()
            self._file, self._fd = None, -1

    def read_to(self) -> ReadTo | None:
        """How far the open file was read, at a line boundary (the Ledger's question)."""
        if self._file is None:
            return None
        return ReadTo(self._committed, self._committed_crc, self._head[: min(self._committed, FINGERPRINT_BYTES)], self._file.name)

    def position(self) -> FilePosition | None:
        """Where reading stands, at the last complete line (None before a file was opened)."""
        if self._file is None or self._identity is None:
            return self._resume or self._final
        committed = self._committed
        length = min(committed, FINGERPRINT_BYTES)
        counters = self.counters
        fingerprint = hashlib.sha256(self._head[:length]).hexdigest()
        try:
            modified = os.fstat(self._fd).st_mtime_ns
        except OSError:
            modified = None
        if self._marks is None or self._marks[0] != (self._identity, committed):  # a save a second: read only where reading moved on
            self._marks = ((self._identity, committed), before_offset(self._file, committed), sample_of(self._fd, committed))
        return FilePosition(self.path, fingerprint, length, committed, counters.rotations, counters.truncations, self._identity[1],
                            modified, self._marks[1], self._committed_crc, self._marks[2])

    def poll(self) -> Iterator[bytes | _FileReplaced]:
        """Yield the new complete lines as blocks (lines joined by b"\\n"), and FILE_REPLACED at a rotation."""
        if self._resume is not None:
            yield from self._resume_reading()
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self.exists, self.error = False, None
            self._start_at_end = False  # it did not exist when we started: read it whole once it appears
            if self._file is not None:
                yield from self._drain()
                if self.let_go_when_gone and self._deleted():
                    yield from self._let_go()
            return
        except OSError as error:
            self.exists = True
            self._error(error)
            return
        self.exists = True
        if self._file is not None:
            self._readable()
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

    def _deleted(self) -> bool:
        """Has the open file no name left? (A renamed one is still written, maybe: it stays open.)"""
        try:
            return os.fstat(self._fd).st_nlink == 0
        except OSError:
            return True

    def _let_go(self) -> Iterator[bytes]:
        """The path is gone and its file deleted: finish it (its unfinished last line counts) and close
        it, so its disk space is freed; a renamed file is drained on, as for a plain path."""
        yield from self._flush()
        self.close()

    def _resume_reading(self) -> Iterator[bytes | _FileReplaced]:
        """First poll after a restart: continue where the saved position says, wherever that file is now."""
        position, self._resume = self._resume, None
        assert position is not None
        found = None
        if matches(self.path, position):
            found = copied_while_stopped(self.path, position)
            if found is None:
                if self._open_at(self.path, position.offset, position.prefix_crc):
                    log.info("resuming log path=%s offset=%d", self.path, position.offset)
                return
            log.info("log copied and truncated while stopped, grown back past the saved offset path=%s copy=%s", self.path, found)
        # rotated while we were down: finish the old file (now a sibling such as .2) from the saved
        # offset, then every file rotated after it (.1), oldest first, then the current one
        others = siblings(self.path)
        found = found or next((candidate for candidate in others if matches(candidate, position)), None)
        if found is None and position.inode is not None and getattr(_stat(self.path), "st_ino", None) == position.inode:
            # copied and truncated while we were down: the file stayed (emptied); our rest is in the
            # copy that holds exactly what we read — the first one made after our position was saved
            # (a later copy matches only if the log repeated itself byte for byte)
            copies = [(os.stat(c).st_mtime_ns, c) for c in others if matches(c, position, any_inode=True)]
            after = [copy for copy in copies if position.modified_ns is None or copy[0] >= position.modified_ns]
            found = min(after, default=max(copies, default=(0, None)))[1]
        if found is not None and self._open_at(found, position.offset, position.prefix_crc):
            log.info("finishing a file rotated while stopped rotated=%s offset=%d", found, position.offset)
            opened = os.fstat(self._fd)
            yield from self._finish_rotated(others, opened.st_ino, opened.st_mtime_ns)
            return
        later = self._rotated_after(others, None, position.modified_ns, _stat(self.path)) if position.modified_ns is not None else []
        if later and self._open_at(later[0], 0):
            # the saved file itself was rotated and deleted while we were down (rotate 1, or a slow
            # restart): its rest is lost, but every file rotated after it is read, oldest first
            log.warning("the file of the saved log position is gone; its unread rest is lost, reading the %d file(s) rotated after it "
                        "path=%s", len(later), self.path)
            self.counters.rotations += 1
            opened = os.fstat(self._fd)
            yield from self._finish_rotated(others, opened.st_ino, opened.st_mtime_ns)
            return
        if os.path.exists(self.path):
            log.warning("saved log position matches no file; reading the current one from its start path=%s", self.path)
            self.counters.rotations += 1

    def _finish_rotated(self, candidates: list[str], first_inode: int, first_modified_ns: int) -> Iterator[bytes | _FileReplaced]:
        """Read the open rotated file to its end, then every file rotated after it, then follow the current one."""
        try:  # the current file, held from now: a rotation during this catch-up cannot skip it
            current: BinaryIO | None = open_regular(self.path)
        except OSError:
            current = None
        later = self._rotated_after(candidates, first_inode, first_modified_ns, os.fstat(current.fileno()) if current is not None else None)
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

    def _rotated_after(self, candidates: list[str], first_inode: int | None, first_modified_ns: int, last: os.stat_result | None) -> list[str]:
        """The files rotated after the first one (an open file, or a gone one last known modified at
        `first_modified_ns`) and before the current one (`last`), oldest first.

        A rotated file is no longer written, so modification times order them whatever the naming
        (.1 .2, dates, kubelet's symlink targets); compressed copies cannot be read and are skipped."""
        skip = ({first_inode} if first_inode is not None else set()) | ({last.st_ino} if last is not None else set())
        found = []
        for candidate in candidates:
            stat = _stat(candidate)
            if stat is None or stat.st_ino in skip or candidate.endswith(COMPRESSED) or not candidate.startswith(self.path):
                continue
            if first_modified_ns <= stat.st_mtime_ns <= (last.st_mtime_ns if last is not None else stat.st_mtime_ns):
                skip.add(stat.st_ino)  # a file twice among the siblings (a link) is read once
                found.append((stat.st_mtime_ns, candidate))
        return [candidate for _, candidate in sorted(found)]

    def _finish_copy(self) -> Iterator[bytes]:
        """copytruncate: what was written after our last read is in the copy; read it from our offset.

        The copy is the one holding exactly the bytes we read (crc32 of all of them), the newest if
        several do: date-named copies of a log whose lines repeat can share first bytes and last line."""
        if not self._offset or not self._head:
            return
        copies = []
        for candidate in siblings(self.path):
            try:
                with open_regular(candidate) as copy:
                    stat = os.fstat(copy.fileno())
                    if stat.st_size < self._offset or copy.read(len(self._head)) != self._head:
                        continue
                    if self._tail and os.pread(copy.fileno(), len(self._tail), self._offset - len(self._tail)) != self._tail:
                        continue
                    if self.ledger.held_by_other((stat.st_dev, stat.st_ino), self):
                        continue  # another follower reads it (a glob matching the copies)
                    if prefix_crc(copy.fileno(), self._offset) == self._crc:
                        copies.append((stat.st_mtime_ns, candidate))
            except OSError:
                continue
        if not copies:
            return
        candidate = max(copies)[1]
        try:
            with open_regular(candidate) as copy:
                stat, crc, offset = os.fstat(copy.fileno()), self._crc, self._offset
                while chunk := os.pread(copy.fileno(), READ_CHUNK, offset):
                    crc, offset = zlib.crc32(chunk, crc), offset + len(chunk)
                    block = self.buffer.feed(chunk)
                    if block is not None:
                        yield block
                # a follower of the copy's own name (a glob) continues after what was read here
                self.ledger.note((stat.st_dev, stat.st_ino), ReadTo(offset, crc, self._head[: min(offset, FINGERPRINT_BYTES)], candidate), self)
        except OSError:
            return
        log.info("log file copied and truncated; read the rest from the copy copy=%s", candidate)

    def _open_at(self, path: str, offset: int, crc: int | None = None) -> bool:
        """Follow `path` from `offset` (`crc`: of the bytes before it, as saved: they are not read again)."""
        try:
            handle = open_regular(path)  # kept open across polls on purpose
        except OSError:
            return False
        return self._adopt(handle, offset, crc)

    def _adopt(self, handle: BinaryIO, offset: int, crc: int | None = None) -> bool:
        """Follow the open `handle` from `offset`, or further if the ledger knows it was read further
        (under another name, or as the file it is a copy of); False (and closed) if it is another
        follower's to read."""
        opened = os.fstat(handle.fileno())
        identity = (opened.st_dev, opened.st_ino)
        resume = self.ledger.claim(identity, handle.fileno(), handle.name, self)
        if resume is None:
            handle.close()
            return False
        self._file, self._fd, self._identity = handle, handle.fileno(), identity
        if resume[0] > offset:
            self._seek(*resume)
        else:
            self._seek(offset, crc if offset else None)
        return True

    def _open(self, identity: tuple[int, int], size: int) -> bool:
        try:
            handle = open_regular(self.path)  # kept open across polls on purpose
        except FileNotFoundError:
            return False
        except OSError as error:
            self._error(error)
            return False
        if not self._adopt(handle, os.fstat(handle.fileno()).st_size if self._start_at_end else 0):
            return False
        self._readable()
        self._start_at_end = False  # files that appear or replace it later are read whole
        return True

    def _seek(self, offset: int, crc: int | None = None) -> None:
        """Read on from `offset` (every read is a pread at our own offset: the handle's position is unused)."""
        assert self._file is not None
        self._offset = self._committed = offset
        self._tail = b""
        self._head = self._read_at(0, min(offset, FINGERPRINT_BYTES)) if offset else b""
        if crc is None:
            crc = (prefix_crc(self._fd, offset) or 0) if offset else 0
        self._crc = self._committed_crc = crc
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
        last = chunk.rfind(b"\n")
        if last >= 0:  # a line boundary: what a saved position may point at (even inside an over-long line's file)
            view = memoryview(chunk)
            self._committed_crc = zlib.crc32(view[: last + 1], self._crc)
            self._crc = zlib.crc32(view[last + 1 :], self._committed_crc)
            self._committed = self._offset + last + 1
        else:
            self._crc = zlib.crc32(chunk, self._crc)
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
        self._committed, self._committed_crc = self._offset, self._crc  # the unfinished last line counts: all of it was read
        if block is not None:
            yield block

    def _error(self, error: OSError) -> None:
        """Say why the path cannot be read — once, not at every pass (the sidecar's own log may sit
        in the watched directory: each warning would wake the next pass)."""
        if error.errno == errno.ENOENT:
            log.debug("cannot read log file path=%s error=%s", self.path, error)
            return
        reason = error.strerror or type(error).__name__
        if reason != self.error:
            log.warning("cannot read log file path=%s error=%s", self.path, error)
        self.error = reason

    def _readable(self) -> None:
        if self.error is not None:
            log.info("log file readable again path=%s", self.path)
            self.error = None
