"""vLLM prints `MM-DD HH:MM:SS` in local time with no year: pick the year from a reference time.

The reference is the file's modification time offline, or now when following live. A timestamp
is placed in the reference's year unless that puts it more than a day after the reference, in
which case it belongs to the year before — this handles a log that crosses New Year with no
state (December lines resolve to the old year, January lines to the new one).

The modification time dates a log only when it is the time of the log's last write: a file
copied, downloaded or pasted later has a newer one, and then no stamp tells the year (a July 2024
log read in December 2026 would say July 2026). year_unknown_reason says so when the log's last
stamp lies further before the reference than a quiet server leaves between writes.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

SLACK_SECONDS = 86_400.0
YEAR_WINDOW_SECONDS = 31 * 86_400.0  # a log's last stamp this close before its mtime dates the year
_FRACTION = re.compile(r"(\.\d{1,6})\d*")


def parse_rfc3339(stamp: str) -> float | None:
    """RFC 3339 with up to nanoseconds (Python keeps microseconds) → unix time; None if invalid.
    Without a zone the stamp is local time, as vLLM's own stamps are."""
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", stamp, count=1).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def year_unknown_reason(last_stamp: float, reference: float, what: str) -> str | None:
    """Why the year of year-less stamps cannot be known from `reference` (`what` names it), or None."""
    gap = reference - last_stamp
    if gap <= YEAR_WINDOW_SECONDS:
        return None
    return (
        f"the log's stamps carry no year and the last is {gap / 86_400:.0f} days before {what} "
        f"({time.strftime('%Y-%m-%d', time.localtime(reference))}): the file was copied or touched later, so the year "
        "is not known; dates are shown without it"
    )


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
