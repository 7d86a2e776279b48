"""One identity per file across the followed paths: who reads each file, and how far it was read.

A glob such as `dir/*` also matches the rotated files, so one file shows up under several names
over its life (vllm.log → vllm.log.1 → vllm.log.2), and copytruncate makes a copy that starts with
what was already read. Every follower of one log source asks this ledger before it opens a file:
a file another follower holds is left to it; a file let go is continued where it was left; a file
whose first bytes are exactly what another file was read up to (a copy) is continued from there.
So each byte is read once, under the name it was first read under.

After a restart, the saved positions come first: each saved position's file (found where it was,
or where a rotation moved it while the sidecar was down) is reserved for the follower of the path
it was saved for during the first pass, so that no other name of it — a glob's match of the
rotated file, a log replaced by a symlink to another followed log — reads it from its start
again. After the first pass a reservation not taken up becomes an ordinary "read up to here".

A claim looks at the readers whose path could name the file's original only (an index by path and
stem): following 2,000 files costs 2,000 lookups, not 2,000 × 2,000 comparisons.
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
    first bytes, and the path it was read under (a copy is looked for among that path's siblings).
    `known`: the file was recognised already (a saved position matched it): its bytes are not read again."""

    offset: int
    crc: int
    head: bytes
    path: str
    known: bool = False


class Reader(Protocol):
    @property
    def path(self) -> str: ...

    def read_to(self) -> ReadTo | None: ...


def _stem(path: str) -> str:
    return path.rsplit(".", 1)[0]


class _PathIndex:
    """Identities by the path they were read under, and by its stem: which could be the original of a path."""

    def __init__(self) -> None:
        self._by_key: dict[str, set[Identity]] = {}

    def add(self, path: str, identity: Identity) -> None:
        for key in {path, _stem(path)}:
            self._by_key.setdefault(key, set()).add(identity)

    def remove(self, path: str, identity: Identity) -> None:
        for key in {path, _stem(path)}:
            found = self._by_key.get(key)
            if found is not None:
                found.discard(identity)
                if not found:
                    del self._by_key[key]

    def originals_of(self, path: str) -> set[Identity]:
        """Identities read under a path `path` starts with, or whose stem it starts with (ledger._sibling)."""
        found: set[Identity] = set()
        for end in range(1, len(path) + 1):
            known = self._by_key.get(path[:end])
            if known:
                found |= known
        return found


class Ledger:
    """The files of one log source, by identity; shared by its followers (one thread)."""

    def __init__(self) -> None:
        self._held: dict[Identity, tuple[Reader, str]] = {}  # and the path it was opened under
        # and who let it go (weakly: a retired follower and its buffers are not kept alive by this)
        self._released: OrderedDict[Identity, tuple[ReadTo, weakref.ref[Reader] | None]] = OrderedDict()
        self._reserved: dict[Identity, tuple[str, ReadTo]] = {}  # saved positions' files: (the path's follower, how far)
        self._held_index, self._released_index = _PathIndex(), _PathIndex()

    def reserve(self, identity: Identity, owner: str, read: ReadTo) -> None:
        """A saved position of `owner` reads this file: left to its follower during the first pass.
        The first position saved for a file keeps it (the path it was written under, which also reads
        the files rotated after it; a glob's later name for it was saved after)."""
        self._reserved.setdefault(identity, (owner, read))

    def settle(self) -> None:
        """The first pass is over: reservations not taken up are files read up to their saved offset."""
        for identity, (_, read) in self._reserved.items():
            if identity not in self._held and identity not in self._released:
                self._remember(identity, read, None)
        self._reserved.clear()

    def claim(self, identity: Identity, fd: int, path: str, reader: Reader) -> tuple[int, int] | None:
        """Take the open file `fd` for `reader`: (offset, crc32 of the bytes before it) where reading
        continues — (0, 0) for a file never read — or None if it is another reader's to read.

        Another reader's: a file it holds, one reserved for it (a saved position), or a copy of one
        (its reader finds the copy's rest when the file is truncated). Continued: a file let go (if
        its bytes before the offset are still those: an inode reused by a new file is not), or a copy
        of one that another reader let go, after what was read of it. Only a sibling of the file's
        path (vllm.log → vllm.log.1, vllm.log-20261201) is taken for its copy: two servers' logs that
        start alike are not; nor are a reader's own files: the file it follows next may well repeat
        the last one byte for byte (access lines carry no time)."""
        held = self._held.get(identity)
        if held is not None and held[0] is not reader:
            return None
        reserved = self._reserved.get(identity)
        if reserved is not None and reserved[0] != reader.path:
            return None
        try:
            size = os.fstat(fd).st_size
            head = os.pread(fd, 256, 0)
        except OSError:
            return None
        resume = (0, 0)
        own = self._released.get(identity)
        if reserved is not None:
            del self._reserved[identity]
            if _holds(fd, reserved[1], size, head):
                resume = (reserved[1].offset, reserved[1].crc)
        elif own is not None and _holds(fd, own[0], size, head):
            resume = (own[0].offset, own[0].crc)
        else:
            candidates = self._held_index.originals_of(path) - {identity}
            others = [read for other in candidates if (holder := self._held[other][0]) is not reader
                      and (read := holder.read_to()) and read.offset]
            if any(_sibling(read.path, path) and _holds(fd, read, size, head) for read in others):
                return None
            copied = [read for other in self._released_index.originals_of(path) - {identity}
                      for read, by in (self._released[other],)
                      if (by is None or by() is not reader) and read.offset and _sibling(read.path, path) and _holds(fd, read, size, head)]
            if copied:
                best = max(copied, key=lambda read: read.offset)
                resume = (best.offset, best.crc)
        if held is None:
            self._held[identity] = (reader, path)
            self._held_index.add(path, identity)
        return resume

    def held_by_other(self, identity: Identity, reader: Reader) -> bool:
        holder = self._held.get(identity)
        return holder is not None and holder[0] is not reader

    def release(self, identity: Identity, reader: Reader, read: ReadTo | None) -> None:
        held = self._held.get(identity)
        if held is not None and held[0] is reader:
            del self._held[identity]
            self._held_index.remove(held[1], identity)
        if read is not None:
            self.note(identity, read, reader)

    def note(self, identity: Identity, read: ReadTo, reader: Reader) -> None:
        """Remember that `reader` read `identity` to `read` (let go, or a copy whose rest it read)."""
        self._remember(identity, read, weakref.ref(reader))

    def _remember(self, identity: Identity, read: ReadTo, by: weakref.ref[Reader] | None) -> None:
        known = self._released.pop(identity, None)
        if known is not None:
            self._released_index.remove(known[0].path, identity)
        self._released[identity] = (read, by)
        self._released_index.add(read.path, identity)
        while len(self._released) > REMEMBERED:
            gone, (old, _) = self._released.popitem(last=False)
            self._released_index.remove(old.path, gone)


def _sibling(original: str, path: str) -> bool:
    """Could `path` be a rotated copy of `original` (named as logrotate and kubelet name them)?"""
    return path != original and path.startswith((original, _stem(original)))


def _holds(fd: int, read: ReadTo, size: int, head: bytes) -> bool:
    """Does the open file start with exactly the bytes `read` covers? (A file recognised already by
    its saved position is not read again: `known`.)"""
    if size < read.offset or head[: len(read.head)] != read.head:
        return False
    return read.known or prefix_crc(fd, read.offset) == read.crc
