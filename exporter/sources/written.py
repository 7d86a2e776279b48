"""When a file was made: the evidence that its modification time is its writer's last write.

A log's zone is learned from its last stamped line against the file's modification time
(intervals/clock.py), which is right only where the file is the one the server wrote. A copy —
`cp`, `scp`, a download, a `git clone`, `kubectl logs > file` — is made in one go, so it is born
when it was last modified, however long its lines span; a copy that kept the original's time
(`cp -p`, `tar`, `rsync -a`) is born after it. The server's own file was born before its first
line. The file system keeps the birth time (statx's `stx_btime` on Linux: ext4, xfs, btrfs, tmpfs;
`st_birthtime` on macOS and the BSDs); where it keeps none, there is no evidence, and the zone is not
learned from the file.
"""

from __future__ import annotations

import ctypes
import os
import sys
from functools import cache
from typing import Any

_AT_EMPTY_PATH = 0x1000  # statx on the descriptor itself
_STATX_BTIME = 0x800
_BTIME_OFFSET = 80  # struct statx: the mask (u32) first; stx_btime's seconds (s64) and nanoseconds (u32) at byte 80


@cache
def _statx() -> Any:
    """glibc's statx (2.28+), or None where there is none (musl before 1.2.5, not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function


def born_at(fd: int) -> float | None:
    """When the open file `fd` was made (unix time), or None where the file system does not keep it."""
    birth = getattr(os.fstat(fd), "st_birthtime", None)  # macOS, the BSDs (and Windows)
    if birth is not None:
        return float(birth)
    statx = _statx()
    if statx is None:
        return None
    buffer = ctypes.create_string_buffer(256)
    if statx(fd, b"", _AT_EMPTY_PATH, _STATX_BTIME, buffer) != 0:
        return None
    mask = int.from_bytes(buffer.raw[0:4], sys.byteorder)
    if not mask & _STATX_BTIME:
        return None
    seconds = int.from_bytes(buffer.raw[_BTIME_OFFSET : _BTIME_OFFSET + 8], sys.byteorder, signed=True)
    nanoseconds = int.from_bytes(buffer.raw[_BTIME_OFFSET + 8 : _BTIME_OFFSET + 12], sys.byteorder)
    return seconds + nanoseconds / 1e9
