"""vLLM prints `MM-DD HH:MM:SS` in local time with no year: pick the year from a reference time.

The reference is the file's modification time offline, or now when following live. A timestamp
is placed in the reference's year unless that puts it more than a day after the reference, in
which case it belongs to the year before — this handles a log that crosses New Year with no
state (December lines resolve to the old year, January lines to the new one).
"""

from __future__ import annotations

import re
import time
from datetime import datetime

SLACK_SECONDS = 86_400.0
_FRACTION = re.compile(r"(\.\d{1,6})\d*")


def parse_rfc3339(stamp: str) -> float | None:
    """RFC 3339 with up to nanoseconds (Python keeps microseconds) → unix time; None if invalid."""
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", stamp, count=1).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def parse_local(stamp: str) -> float | None:
    """`YYYY-MM-DD HH:MM:SS` in local time (a stamp that has its year) → unix time; None if invalid."""
    try:
        return datetime.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S").timestamp()
    except ValueError:
        return None


def resolve_log_time(month_day_time: str, reference: float) -> float | None:
    """Unix time of a `MM-DD HH:MM:SS` stamp at or before `reference` (+1 day); None if invalid."""
    try:
        month, day = int(month_day_time[0:2]), int(month_day_time[3:5])
        hour, minute, second = (int(part) for part in month_day_time[6:14].split(":"))
    except ValueError:
        return None
    year = time.localtime(reference).tm_year
    for candidate_year in (year, year - 1, year - 2, year - 3, year - 4):
        try:
            stamp = datetime(candidate_year, month, day, hour, minute, second).timestamp()
        except ValueError:  # Feb 29 in a non-leap year, or a bad field: try an earlier year
            continue
        if stamp <= reference + SLACK_SECONDS:
            return stamp
    return None
