"""Where reading a log file stopped, and how a file is recognised again after a restart.

A file is recognised by its inode, its first bytes, the bytes just before the offset and a
checksum of every byte before the offset (inodes get reused; logs often start alike, and copies
of a copytruncated log can share their first bytes and their last line). Only a copy holding
exactly what was read up to the offset is taken for the file. sources/logfile.py uses this to resume.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import BinaryIO, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class FilePosition:
    """Where reading a file stopped: enough to resume it after a restart, even if it was rotated."""

    path: str
    fingerprint: str  # sha256 of the first `fingerprint_length` bytes
    fingerprint_length: int
    offset: int  # at a line boundary: an unfinished last line is read again
    rotations: int = 0
    truncations: int = 0
    # the file's inode: first bytes alone are ambiguous (logs often start alike), and a rotation by
    # rename keeps the inode; None in positions saved before 0.3 (matched by their first bytes only)
    inode: int | None = None
    # the file's modification time (ns) then: if the file is gone after a restart, files rotated later
    # than this hold the lines written since; None in positions saved before it was kept
    modified_ns: int | None = None
    # sha256 of the bytes just before `offset`: an inode reused by a new file that starts alike
    # (tmpfs hands a deleted file's inode to the next one) still differs there; None in older positions
    before_offset: str | None = None
    # crc32 of every byte before `offset`: copies of a copytruncated log whose first bytes and last
    # line repeat (access lines carry no time) still differ somewhere before it; None in older positions
    prefix_crc: int | None = None

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, entry: Mapping[str, object]) -> FilePosition:
        """Read a saved position; keys this version does not know (an older version's `device`) are
        passed over, so an upgrade resumes where the old version stopped. TypeError if a field is
        missing or of the wrong type."""
        inode, modified, before = entry.get("inode"), entry.get("modified_ns"), entry.get("before_offset")
        crc = entry.get("prefix_crc")
        return cls(
            path=_typed(entry, "path", str), fingerprint=_typed(entry, "fingerprint", str),
            fingerprint_length=_typed(entry, "fingerprint_length", int), offset=_typed(entry, "offset", int),
            rotations=_typed(entry, "rotations", int, 0), truncations=_typed(entry, "truncations", int, 0),
            inode=inode if isinstance(inode, int) else None, modified_ns=modified if isinstance(modified, int) else None,
            before_offset=before if isinstance(before, str) else None, prefix_crc=crc if isinstance(crc, int) else None,
        )


def _typed(entry: Mapping[str, object], name: str, kind: type[T], default: T | None = None) -> T:
    value = entry.get(name, default)
    if not isinstance(value, kind):
        raise TypeError(f"saved position: {name} is {value!r}, not {kind.__name__}")
    return value


BEFORE_OFFSET_BYTES = 64


def before_offset(handle: BinaryIO, offset: int) -> str:
    """The fingerprint of the bytes just before `offset` (FilePosition.before_offset)."""
    start = max(0, offset - BEFORE_OFFSET_BYTES)
    return hashlib.sha256(os.pread(handle.fileno(), offset - start, start)).hexdigest()


CRC_CHUNK = 1 << 20


def prefix_crc(fd: int, length: int, start: int = 0, crc: int = 0) -> int | None:
    """crc32 of the file's bytes [start, length), continuing `crc` (that of [0, start)); None if the file is shorter."""
    while start < length:
        try:
            chunk = os.pread(fd, min(CRC_CHUNK, length - start), start)
        except OSError:
            return None
        if not chunk:
            return None
        crc, start = zlib.crc32(chunk, crc), start + len(chunk)
    return crc


def matches(path: str, position: FilePosition, *, any_inode: bool = False) -> bool:
    """Is the file at `path` the one `position` was taken in (same inode unless `any_inode`, first
    bytes, bytes before the offset and every byte before it equal)? `any_inode` recognises a copy of it (copytruncate)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(position.fingerprint_length)
            stat = os.fstat(handle.fileno())
            same_file = any_inode or position.inode in (None, stat.st_ino)
            fingerprint = len(data) == position.fingerprint_length and hashlib.sha256(data).hexdigest() == position.fingerprint
            if not (same_file and fingerprint and stat.st_size >= position.offset):
                return False
            if position.before_offset is not None and before_offset(handle, position.offset) != position.before_offset:
                return False
            # last, as it reads the whole prefix: only files that pass every cheap check get here
            return position.prefix_crc is None or prefix_crc(handle.fileno(), position.offset) == position.prefix_crc
    except OSError:
        return False
