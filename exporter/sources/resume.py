"""After a restart: where each saved position's file is now, and what happened to it while stopped.

Two questions sources/logfile.py and sources/logsource.py ask before the first pass reads anything:

  * which file is a saved position's — at its path, or at the sibling a rotation moved it to — so
    that the ledger keeps it for the follower of that path (`reserve`): no other name of it (a
    glob's match of the rotated file, a log replaced by a symlink to another followed log) reads
    it from its start a second time;
  * whether a file that still matches its position at its own path was copied and truncated while
    the sidecar was down and grew back past the saved offset with the same first bytes
    (`copied_while_stopped`): its inode and its bytes before the offset are as saved, yet they
    are new lines, and the rest of the old content is in the copy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from exporter.sources.ledger import Ledger, ReadTo
from exporter.sources.position import FilePosition, matches
from exporter.sources.regular import open_regular
from exporter.sources.siblings import siblings

COMPARE_CHUNK = 1 << 20
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")  # rotated copies that cannot be read as text


def where(position: FilePosition) -> tuple[str, os.stat_result] | None:
    """The path the position's file has now (its own, or a sibling it was rotated to) and its stat."""
    if matches(position.path, position):
        try:
            return position.path, os.stat(position.path)
        except OSError:
            return None
    if position.inode is None:
        return None
    for candidate in siblings(position.path):
        try:
            stat = os.stat(candidate)
        except OSError:
            continue
        if stat.st_ino == position.inode and matches(candidate, position):  # the inode first: no read for the others
            return candidate, stat
    return None


def reserve(ledger: Ledger, positions: Iterable[FilePosition]) -> None:
    """Keep each saved position's file for its path's follower during the first pass (Ledger.reserve)."""
    for position in positions:
        found = where(position)
        if found is None or position.prefix_crc is None:
            continue
        path, stat = found
        try:
            with open_regular(path) as handle:
                head = os.pread(handle.fileno(), position.fingerprint_length, 0)
        except OSError:
            continue
        read = ReadTo(position.offset, position.prefix_crc, head, path, known=True)
        ledger.reserve((stat.st_dev, stat.st_ino), position.path, read)


def copied_while_stopped(path: str, position: FilePosition) -> str | None:
    """The copy (a sibling made after the position was saved, holding the bytes it read) that shows
    `path` was copied and truncated while stopped and regrew past the offset — it is longer than the
    file, or the two differ after the offset, which a copy of the file as it still is cannot; None if
    there is none. A file of byte-identical lines regrown exactly as before cannot be told from a plain
    copy of it: that one is resumed in place."""
    if position.modified_ns is None:
        return None
    try:
        current = os.stat(path)
    except OSError:
        return None
    copies = []
    for candidate in siblings(path):
        try:
            stat = os.stat(candidate)
        except OSError:
            continue
        if candidate.endswith(COMPRESSED) or stat.st_ino == current.st_ino or stat.st_mtime_ns < position.modified_ns:
            continue
        if stat.st_size >= position.offset and matches(candidate, position, any_inode=True):
            copies.append((stat.st_mtime_ns, candidate, stat.st_size))
    for _, candidate, size in sorted(copies):  # the first copy made after the save holds what was read next
        if current.st_size < size or _differ(path, candidate, position.offset, size):
            return candidate
    return None


def _differ(path: str, copy: str, start: int, stop: int) -> bool:
    """Do the two files differ anywhere in [start, stop)?"""
    try:
        with open_regular(path) as first, open_regular(copy) as second:
            while start < stop:
                size = min(COMPARE_CHUNK, stop - start)
                if os.pread(first.fileno(), size, start) != os.pread(second.fileno(), size, start):
                    return True
                start += size
    except OSError:
        return False
    return False
