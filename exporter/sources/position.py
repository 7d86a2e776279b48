"""Where reading a log file stopped, and how a file is recognised again after a restart.

A file is recognised by its inode, its first bytes, the bytes just before the offset and a
sample of blocks spread over the bytes before it (inodes get reused; logs often start alike, and
copies of a copytruncated log can share their first bytes and their last line). Recognising a file
reads these bytes only — at most FINGERPRINT_BYTES + BEFORE_OFFSET_BYTES + SAMPLE_BLOCKS ×
SAMPLE_BYTES (4.4 KiB), never the whole prefix of a long log. The crc32 of every byte before the
offset is kept too: reading continues it, so a copy can be told from another while following
(copytruncate), and a resumed file need not be read again to know it. sources/logfile.py uses this to resume.

A saved position is checked when it is read back: a hand-edited `fingerprint_length` of −1 must not
read a whole log into memory, nor a negative offset seek before the file's start.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import BinaryIO, TypeGuard, TypeVar

from exporter.sources.regular import open_regular

T = TypeVar("T")
FINGERPRINT_BYTES = 256  # a file is recognised by its inode and first bytes (inodes get reused)
SAMPLE_BLOCKS, SAMPLE_BYTES = 16, 256


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
    # sha256 of SAMPLE_BLOCKS blocks spread over the bytes before `offset` (sample_of): what resuming
    # checks instead of reading the whole prefix again; None in older positions
    sample: str | None = None

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, entry: Mapping[str, object]) -> FilePosition:
        """Read a saved position; keys this version does not know (an older version's `device`) are
        passed over, so an upgrade resumes where the old version stopped. TypeError if a field is
        missing or of the wrong type."""
        inode, modified, before = entry.get("inode"), entry.get("modified_ns"), entry.get("before_offset")
        crc, sample = entry.get("prefix_crc"), entry.get("sample")
        return cls(
            path=_typed(entry, "path", str), fingerprint=_typed(entry, "fingerprint", str),
            fingerprint_length=_count(entry, "fingerprint_length", FINGERPRINT_BYTES), offset=_count(entry, "offset"),
            rotations=_count(entry, "rotations", default=0), truncations=_count(entry, "truncations", default=0),
            inode=inode if _whole(inode) else None, modified_ns=modified if _whole(modified) else None,
            before_offset=before if isinstance(before, str) else None, prefix_crc=crc if _whole(crc) else None,
            sample=sample if isinstance(sample, str) else None,
        )


def _typed(entry: Mapping[str, object], name: str, kind: type[T], default: T | None = None) -> T:
    value = entry.get(name, default)
    if not isinstance(value, kind):
        raise TypeError(f"saved position: {name} is {value!r}, not {kind.__name__}")
    return value


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(entry: Mapping[str, object], name: str, most: int | None = None, default: int | None = None) -> int:
    """A whole number ≥ 0 (and ≤ `most`); TypeError (the entry is refused) for anything else."""
    value = entry.get(name, default)
    if not _whole(value) or (most is not None and value > most):
        bound = f"0 … {most}" if most is not None else "≥ 0"
        raise TypeError(f"saved position: {name} is {value!r}, not a whole number {bound}")
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


def sample_of(fd: int, offset: int) -> str:
    """sha256 of SAMPLE_BLOCKS blocks of SAMPLE_BYTES spread evenly over the bytes before `offset`
    (all of them when there are fewer): a file rewritten in its middle differs here."""
    digest = hashlib.sha256()
    if offset <= SAMPLE_BLOCKS * SAMPLE_BYTES:
        digest.update(os.pread(fd, offset, 0))
    else:
        step = (offset - SAMPLE_BYTES) // (SAMPLE_BLOCKS - 1)
        for index in range(SAMPLE_BLOCKS):
            digest.update(os.pread(fd, SAMPLE_BYTES, index * step))
    return digest.hexdigest()


def matches(path: str, position: FilePosition, *, any_inode: bool = False) -> bool:
    """Is the file at `path` the one `position` was taken in (same inode unless `any_inode`, first
    bytes, bytes before the offset and the sample of the bytes before it equal)? `any_inode`
    recognises a copy of it (copytruncate). Reads at most the fingerprint's bytes (the module's doc)."""
    try:
        with open_regular(path) as handle:
            data = os.pread(handle.fileno(), position.fingerprint_length, 0)
            stat = os.fstat(handle.fileno())
            same_file = any_inode or position.inode in (None, stat.st_ino)
            fingerprint = len(data) == position.fingerprint_length and hashlib.sha256(data).hexdigest() == position.fingerprint
            if not (same_file and fingerprint and stat.st_size >= position.offset):
                return False
            if position.before_offset is not None and before_offset(handle, position.offset) != position.before_offset:
                return False
            return position.sample is None or sample_of(handle.fileno(), position.offset) == position.sample
    except OSError:
        return False
