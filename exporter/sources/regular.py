"""Open a log only if it is a regular file: never block on a FIFO, never read a device as text.

`open()` of a FIFO waits until some writer opens it — the follower's one thread, and every other
log with it, would stop there — and a character device (`/dev/zero`, `/dev/urandom`) never ends:
read as a log it is a core at 100% and millions of garbage "lines". So every file the sources open
(a followed path, a glob match, a rotated sibling, a copy, a head or tail read at start) is opened
non-blocking and refused unless it is a regular file. A pipe is read with `--log -`.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory: not a log file."""

    def __init__(self, path: str, mode: int) -> None:
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "a socket" if stat.S_ISSOCK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        super().__init__(errno.EINVAL, f"{kind}, not a regular file (read a pipe with --log -)", path)


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def open_regular(path: str) -> BinaryIO:
    """`open(path, "rb")` for a regular file; NotRegularFile (an OSError) for anything else, without
    waiting for a FIFO's writer (O_NONBLOCK, which a regular file ignores)."""
    handle = open(path, "rb", opener=_nonblocking)  # noqa: SIM115 - returned open; the callers own it
    try:
        mode = os.fstat(handle.fileno()).st_mode
    except OSError:
        handle.close()
        raise
    if not stat.S_ISREG(mode):
        handle.close()
        raise NotRegularFile(path, mode)
    return handle
