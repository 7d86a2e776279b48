"""One identity per file across the followed paths: who reads each file, and how far it was read.

A glob such as `dir/*` also matches the rotated files, so one file shows up under several names
over its life (vllm.log → vllm.log.1 → vllm.log.2), and copytruncate makes a copy that starts with
what was already read. Every follower of one log source asks this ledger before it opens a file:
a file another follower holds is left to it; a file let go is continued where it was left; a file
whose first bytes are exactly what another file was read up to (a copy) is continued from there.
So each byte is read once, under the name it was first read under.
"""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from exporter.sources.position import prefix_crc

Identity = tuple[int, int]  # (st_dev, st_ino)
REMEMBERED = 10_000  # files let go that are remembered (oldest forgotten first): a rotation chain, many times over


@dataclass(frozen=True)
class ReadTo:
    """How far a file was read: `offset` at a line boundary, the crc32 of every byte before it, its
    first bytes, and the path it was read under (a copy is looked for among that path's siblings)."""

    offset: int
    crc: int
    head: bytes
    path: str


class Reader(Protocol):
    def read_to(self) -> ReadTo | None: ...


class Ledger:
    """The files of one log source, by identity; shared by its followers (one thread)."""

    def __init__(self) -> None:
        self._held: dict[Identity, Reader] = {}
        # and who let it go (weakly: a retired follower and its buffers are not kept alive by this)
        self._released: OrderedDict[Identity, tuple[ReadTo, weakref.ref[Reader]]] = OrderedDict()

    def claim(self, identity: Identity, fd: int, path: str, reader: Reader) -> tuple[int, int] | None:
        """Take the open file `fd` for `reader`: (offset, crc32 of the bytes before it) where reading
        continues — (0, 0) for a file never read — or None if it is another reader's to read.

        Another reader's: a file it holds, or a copy of one (its reader finds the copy's rest when
        the file is truncated). Continued: a file let go (if its bytes before the offset are still
        those: an inode reused by a new file is not), or a copy of one that another reader let go,
        after what was read of it. Only a sibling of the file's path (vllm.log → vllm.log.1,
        vllm.log-20261201) is taken for its copy: two servers' logs that start alike are not; nor
        are a reader's own files: the file it follows next may well repeat the last one byte for
        byte (access lines carry no time)."""
        holder = self._held.get(identity)
        if holder is not None and holder is not reader:
            return None
        try:
            size = os.fstat(fd).st_size
            head = os.pread(fd, 256, 0)
        except OSError:
            return None
        resume = (0, 0)
        own = self._released.get(identity)
        if own is not None and _holds(fd, own[0], size, head):
            resume = (own[0].offset, own[0].crc)
        else:
            others = [read for other in self._held.values() if other is not reader and (read := other.read_to()) and read.offset]
            if any(_sibling(read.path, path) and _holds(fd, read, size, head) for read in others):
                return None
            copied = [read for read, by in self._released.values()
                      if by() is not reader and read.offset and _sibling(read.path, path) and _holds(fd, read, size, head)]
            if copied:
                best = max(copied, key=lambda read: read.offset)
                resume = (best.offset, best.crc)
        self._held[identity] = reader
        return resume

    def held_by_other(self, identity: Identity, reader: Reader) -> bool:
        holder = self._held.get(identity)
        return holder is not None and holder is not reader

    def release(self, identity: Identity, reader: Reader, read: ReadTo | None) -> None:
        if self._held.get(identity) is reader:
            del self._held[identity]
        if read is not None:
            self.note(identity, read, reader)

    def note(self, identity: Identity, read: ReadTo, reader: Reader) -> None:
        """Remember that `reader` read `identity` to `read` (let go, or a copy whose rest it read)."""
        self._released[identity] = (read, weakref.ref(reader))
        self._released.move_to_end(identity)
        while len(self._released) > REMEMBERED:
            self._released.popitem(last=False)


def _sibling(original: str, path: str) -> bool:
    """Could `path` be a rotated copy of `original` (named as logrotate and kubelet name them)?"""
    return path != original and path.startswith((original, original.rsplit(".", 1)[0]))


def _holds(fd: int, read: ReadTo, size: int, head: bytes) -> bool:
    """Does the open file start with exactly the bytes `read` covers?"""
    if size < read.offset or head[: len(read.head)] != read.head:
        return False
    return prefix_crc(fd, read.offset) == read.crc
