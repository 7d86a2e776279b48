"""The /metrics body kept between requests: joined once per change, gzipped piece by piece.

The renderer hands over the exposition as *owners* (a series, a source, the rest), each a dict of
family name → `Piece` (that owner's sample lines of the family). An owner whose inputs did not
change is handed over as the same dict object, so "nothing changed" is a check of identities and
a request between two changes returns the bytes built for the last one (`generation` counts the
changes).

Gzip without compressing the whole body on each change: every piece is compressed on its own
into raw deflate blocks ending in a sync flush (byte-aligned, not final), so compressed pieces
can be concatenated in any order into one deflate stream (pigz joins its blocks the same way),
closed by an empty final block and framed by the gzip header and trailer (RFC 1952). A piece is
compressed with the text just before it in the body as its preset dictionary — the previous
owner's lines of the same family, which differ from its own only in a label or a value — so it
compresses like running text; it is valid only while that predecessor is unchanged, which is
checked, and it is recompressed when not. Only changed pieces and their successors are
compressed again; the CRC-32 of the text is recomputed over the pieces in order.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

_LEVEL = 1  # fastest: the dictionary of the predecessor gives most of the ratio already
_WINDOW = 32768  # deflate's window: a dictionary longer than this cannot be referenced
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, no mtime, unknown OS
_FINAL_BLOCK = b"\x03\x00"  # an empty final block with fixed codes: ends the deflate stream


class Piece:
    """One owner's sample lines of one family, and (once gzip was asked for) their compressed form."""

    __slots__ = ("after", "packed", "text")

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.packed: bytes | None = None
        self.after: bytes | None = None  # the text the piece was compressed behind (its dictionary)

    def packed_after(self, previous: bytes) -> bytes:
        """The compressed piece, valid right behind `previous` in the stream."""
        if self.packed is None or (self.after is not previous and self.after != previous):
            self.packed = deflate_piece(self.text, previous)
            self.after = previous
        return self.packed


Owner = dict[str, Piece]


def deflate_piece(text: bytes, previous: bytes = b"") -> bytes:
    """Raw deflate blocks of `text`, sync-flushed, that may refer back into `previous`."""
    if previous:
        compressor = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, previous[-_WINDOW:])
    else:
        compressor = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
    return compressor.compress(text) + compressor.flush(zlib.Z_SYNC_FLUSH)


def gzip_frame(deflated: Sequence[bytes], crc: int, size: int) -> bytes:
    """A one-member gzip file around concatenated sync-flushed deflate blocks of a text of `size` bytes."""
    return b"".join([_GZIP_HEADER, *deflated, _FINAL_BLOCK, struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)])


class Body:
    """The body of the latest owners, as text and as gzip, each built at most once per generation."""

    def __init__(self, families: Sequence[str], headers: dict[str, bytes]) -> None:
        self.families = tuple(families)  # the order of the families in the body
        self.headers = headers  # family → its `# HELP`/`# TYPE` lines
        self._packed_headers = {name: deflate_piece(text) for name, text in headers.items()}
        self.generation = 0
        self._owners: list[Owner] = []
        self._text: tuple[int, bytes] | None = None
        self._gzip: tuple[int, bytes] | None = None

    def update(self, owners: list[Owner]) -> None:
        """Take the owners of this request; a new generation unless each is the same object as before."""
        old = self._owners
        if len(old) == len(owners) and all(a is b for a, b in zip(old, owners, strict=True)):
            return
        self._owners = owners
        self.generation += 1

    def _by_family(self) -> dict[str, list[Piece]]:
        lists: dict[str, list[Piece]] = {name: [] for name in self.families}
        for owner in self._owners:
            for name, piece in owner.items():
                lists[name].append(piece)
        return lists

    def text(self) -> bytes:
        if self._text is None or self._text[0] != self.generation:
            out: list[bytes] = []
            for name, pieces in self._by_family().items():
                out.append(self.headers[name])
                out.extend([piece.text for piece in pieces])
            self._text = (self.generation, b"".join(out))
        return self._text[1]

    def gzip(self) -> bytes:
        if self._gzip is None or self._gzip[0] != self.generation:
            deflated: list[bytes] = []
            crc = size = 0
            for name, pieces in self._by_family().items():
                header = self.headers[name]
                texts = [header, *(piece.text for piece in pieces)]
                joined = b"".join(texts)
                crc = zlib.crc32(joined, crc)
                size += len(joined)
                deflated.append(self._packed_headers[name])
                # inlined Piece.packed_after: this loop runs once per piece of the body
                for piece, previous in zip(pieces, texts, strict=False):
                    packed = piece.packed
                    if packed is None or (piece.after is not previous and piece.after != previous):
                        packed = piece.packed_after(previous)
                    deflated.append(packed)
            self._gzip = (self.generation, gzip_frame(deflated, crc, size))
        return self._gzip[1]
