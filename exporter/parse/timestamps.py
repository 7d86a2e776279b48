"""The RFC 3339 stamps of container framing (docker json-file, CRI): exact times, zone included.

vLLM's own `MM-DD HH:MM:SS` (no year, no zone) is placed by exporter/intervals/clock.py, which
owns the year rule and the log's zone.
"""

from __future__ import annotations

import re
from datetime import datetime

_FRACTION = re.compile(r"(\.\d{1,6})\d*")


def parse_rfc3339(stamp: str) -> float | None:
    """RFC 3339 with up to nanoseconds (Python keeps microseconds) → unix time; None if invalid."""
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", stamp, count=1).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
