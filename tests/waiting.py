"""The one way a test waits: poll a condition until it holds, or fail saying what never happened.

The poll interval is never a synchronisation point by itself: a condition that holds returns at
once, and a slow machine only makes the wait longer, up to the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

DEADLINE_SECONDS = 30.0
POLL_SECONDS = 0.05

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T | None],
    what: str,
    *,
    timeout: float = DEADLINE_SECONDS,
    every: float = POLL_SECONDS,
    detail: Callable[[], str] | None = None,
) -> T:
    """Call `condition` until it returns something truthy and return that; AssertionError after `timeout`.

    `detail` is asked once, on failure, for what the last state was (a scrape, a target list).
    """
    end = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= end:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}" + (f"\n{detail()}" if detail else ""))
        time.sleep(every)
