"""The one owner of a log line's time: its own time, the log's zone and year, and the time an interval takes.

A line may carry three times: a container's RFC 3339 stamp (docker, CRI: exact), vLLM's own
`MM-DD HH:MM:SS` (local time of the server, no year, no zone) or a plugin record's unix time
(exact), and always its arrival (`read_at`). Every rule that sets `Interval.end` asks this module.

The one rule (docs/architecture.md "Time"): an interval's time is its line's own time while the
source is catching up — the line arrived more than CATCH_UP_SECONDS after it was written
(`serve --from-start`, the backlog after a restart or downtime) — and its arrival at the live edge.
`analyze` (mode "log") always takes the line's own time. Both put a backlog on the log's clock, so
windows, the judged window, the reference's buckets, unhealthy spans, `health_since` and the hold
see the hours of a backlog as hours, not as one second of arrival; at the live edge nothing
changes. A local stamp needs the log's zone: forced (`--log-timezone`), or learned from the wall
clock — the file's modification time against its last line, else a live line against its arrival —
rounded to 15 minutes. Until a zone is known, `serve` takes arrival (it cannot know how old a line
is); `analyze` assumes the zone it runs in. A stamp that cannot be resolved is counted
(`unresolved_time`), never silently replaced by the read time in `analyze`.
Each rule that a block of lines needs at once has its column form beside it (`resolve_local_many`,
`place_many`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

CONFIRM_SECONDS = 1.0  # reads this far apart that place a line in the same zone: live lines, not a backlog's
CATCH_UP_SECONDS = 60.0  # a line read this long after its own time is backlog (live lines lag a poll and a defer: ~2 s)
ZONE_STEP_SECONDS = 900.0  # zones are whole quarter hours (UTC+5:45, +8:45 are the finest)
# a line written when the file was last modified (or read as it arrived) is seconds from a whole
# quarter hour; a line minutes off is an older one (an idle server's last stats, then unstamped
# access lines; a backlog on stdin): it teaches no zone
ZONE_SLACK_SECONDS = 120.0
EAST_LIMIT, WEST_LIMIT = 14 * 3600.0, -12 * 3600.0  # offsets outside these are no zone: a backlog, not a clock
YEAR_SLACK_SECONDS = 86_400.0  # a stamp up to a day after its reference is still in the reference's year
YEAR_WINDOW_SECONDS = 31 * 86_400.0  # a log's last stamp this close before its mtime dates the year
UNRESOLVED = "unresolved_time"  # the problem reason of a stamp that cannot be placed
# a stamp later than its line can have been written (its arrival; analyze: the file's last change) by
# more than this is a skewed clock, taken at that moment: in the future it would stay in every window
FUTURE_SLACK_SECONDS = 300.0

ClockMode = Literal["log", "live"]  # analyze: the line's own time; serve: the one rule above
ZoneHow = Literal["flag", "file", "arrival", "assumed"]
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d\d))?$")


@dataclass(frozen=True, slots=True)
class LogZone:
    """How a log's local stamps map to unix time, and where that was learned."""

    tz: tzinfo | None  # None: the zone the sidecar runs in (its DST rules included)
    how: ZoneHow

    def offset_at(self, at: float) -> float:
        """Seconds east of UTC at unix time `at`."""
        moment = datetime.fromtimestamp(at, self.tz) if self.tz is not None else datetime.fromtimestamp(at).astimezone()
        offset = moment.utcoffset()
        return offset.total_seconds() if offset is not None else 0.0

    def describe(self) -> str:
        """`local`, `UTC`, `UTC+09:00` or the zone's name."""
        return "local" if self.tz is None else str(self.tz)


def parse_zone(text: str) -> LogZone:
    """`--log-timezone`: `UTC`, an offset (`+09:00`, `-0500`, `UTC+5:45`), an IANA name (`Asia/Tokyo`) or `local`."""
    value = text.strip()
    if value.lower() == "local":
        return LogZone(None, "flag")
    if value.upper() in ("UTC", "Z", "GMT"):
        return LogZone(UTC, "flag")
    match = _OFFSET.match(value)
    if match is not None:
        seconds = (int(match[2]) * 60 + int(match[3] or 0)) * 60 * (1 if match[1] == "+" else -1)
        if not WEST_LIMIT <= seconds <= EAST_LIMIT:
            raise ValueError(f"log timezone {text!r}: an offset between -12:00 and +14:00")
        return LogZone(timezone(timedelta(seconds=seconds)), "flag")
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only for a named zone

    try:
        return LogZone(ZoneInfo(value), "flag")
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"log timezone {text!r}: not UTC, an offset such as +09:00, or a zone name such as Asia/Tokyo") from error


def zone_from(naive: float, written_at: float, how: ZoneHow) -> LogZone | None:
    """The zone a stamp read as UTC (`naive`) was written in, if it was written at `written_at`:
    their difference rounded to 15 minutes; the sidecar's own zone where that is its offset then
    (keeping its DST rules); None outside any zone or minutes off a quarter hour (the line is old,
    not the clock)."""
    offset = round((naive - written_at) / ZONE_STEP_SECONDS) * ZONE_STEP_SECONDS
    if not WEST_LIMIT <= offset <= EAST_LIMIT or abs(naive - written_at - offset) > ZONE_SLACK_SECONDS:
        return None
    local = LogZone(None, how)
    if local.offset_at(written_at) == offset:
        return local
    return LogZone(timezone(timedelta(seconds=offset)) if offset else UTC, how)


COPY_SLACK_SECONDS = 2.0  # whole-second stamps, and a file made a moment before its first line


def copied_because(first_naive: float | None, last_naive: float, modified: float, born: float | None) -> str | None:
    """Why a file's modification time may not be when its server wrote its last line — the file is a
    copy, or nothing tells — or None where the file itself is the evidence: born (sources/written.py)
    at least as long before its last change as its stamped lines span (`*_naive`: the first and last
    stamp read as UTC, so their difference is the span). A copy is made in one go (cp, scp, a
    download, a checkout: born as it was modified) or keeps the original's time (cp -p, tar: born
    after it); learning the zone from it would shift every line by the copy's age (issue #32)."""
    if born is None:
        return "the file system keeps no birth time, so the file may be a copy and its modification time the copy's"
    if born > modified + COPY_SLACK_SECONDS:
        return "the file was made after its modification time: a copy that kept the original's time (cp -p, tar, rsync -a)"
    span = 0.0 if first_naive is None else last_naive - first_naive
    if span < COPY_SLACK_SECONDS:
        return "its stamped lines span too little time to tell the server's file from a copy"
    if modified - born < span - COPY_SLACK_SECONDS:
        return (f"the file was made {_duration(modified - born)} before its last change while its lines span {_duration(span)}: "
                "a copy (cp, scp, a download, a checkout), whose modification time is the copy's")
    return None


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def zone_at_most(naive: float, written_by: float) -> LogZone | None:
    """The zone that puts a stamp read as UTC (`naive`) latest, yet not after `written_by` (give or
    take ZONE_SLACK_SECONDS of clock): the next quarter hour at or above their difference. Exact when
    the stamp was written within the quarter hour before; otherwise the stamps land that much late."""
    offset = math.ceil((naive - written_by - ZONE_SLACK_SECONDS) / ZONE_STEP_SECONDS) * ZONE_STEP_SECONDS
    if not WEST_LIMIT <= offset <= EAST_LIMIT:
        return None
    local = LogZone(None, "file")
    if local.offset_at(written_by) == offset:
        return local
    return LogZone(timezone(timedelta(seconds=offset)) if offset else UTC, "file")


def resolve_local(month_day_time: str, reference: float, tz: tzinfo | None = None) -> float | None:
    """Unix time of a `MM-DD HH:MM:SS` stamp in zone `tz` (None: the sidecar's) at or before
    `reference` (+1 day); None if invalid. The year is the reference's unless that puts the stamp
    more than a day after it, then the year before: a log crossing New Year needs no state
    (December lines resolve to the old year, January lines to the new one). The one year rule."""
    try:
        month, day = int(month_day_time[0:2]), int(month_day_time[3:5])
        hour, minute, second = (int(part) for part in month_day_time[6:14].split(":"))
    except ValueError:
        return None
    year = (datetime.fromtimestamp(reference, tz) if tz is not None else datetime.fromtimestamp(reference)).year
    for candidate_year in (year, year - 1, year - 2, year - 3, year - 4):
        try:
            stamp = datetime(candidate_year, month, day, hour, minute, second, tzinfo=tz).timestamp()
        except ValueError:  # Feb 29 in a non-leap year, or a bad field: try an earlier year
            continue
        if stamp <= reference + YEAR_SLACK_SECONDS:
            return stamp
    return None


def _resolved(stamp: str, reference: float, tz: tzinfo | None) -> float:
    value = resolve_local(stamp, reference, tz)
    return math.nan if value is None else value


def resolve_local_many(stamps: list[str], reference: float, tz: tzinfo | None) -> np.ndarray:
    """resolve_local for a column of `MM-DD HH:MM:SS` stamps (nan where it cannot be resolved): one
    call per distinct hour, not per line. Within one local hour a stamp is its hour's time plus
    minutes and seconds, so each distinct hour is resolved once and the rest is integer arithmetic.
    Where that could differ from resolving the line itself — the year rule's edge (a stamp past
    reference + 1 day), a zone whose offset changes inside the hour, an invalid field — the lines of
    that hour are resolved one by one (tests/test_twins.py names the pair)."""
    import numpy as np  # only where blocks are batched

    if not len(stamps):
        return np.zeros(0)
    digits = np.frombuffer("".join(stamps).encode("ascii"), np.uint8).reshape(-1, 14).astype(np.int64) - 48
    month, day, hour = digits[:, 0] * 10 + digits[:, 1], digits[:, 3] * 10 + digits[:, 4], digits[:, 6] * 10 + digits[:, 7]
    minute, second = digits[:, 9] * 10 + digits[:, 10], digits[:, 12] * 10 + digits[:, 13]
    hours, inverse = np.unique((month * 100 + day) * 100 + hour, return_inverse=True)
    inverse = inverse.reshape(-1)
    offsets = minute * 60 + second
    bases = np.array([_resolved(f"{h // 10000:02d}-{h // 100 % 100:02d} {h % 100:02d}:00:00", reference, tz) for h in hours.tolist()])
    times = bases[inverse] + offsets
    # the latest stamp of each hour, resolved on its own, must agree (else the offset moved in that hour)
    order = np.lexsort((offsets, inverse))
    last_row = order[np.searchsorted(inverse[order], np.arange(len(hours)), side="right") - 1]
    latest = offsets[last_row]
    check = np.array([_resolved(stamps[row], reference, tz) for row in last_row.tolist()])
    hour_ok = (check == bases + latest)
    exact = hour_ok[inverse] & (minute <= 59) & (second <= 59) & (times <= reference + YEAR_SLACK_SECONDS)
    for row in np.flatnonzero(~exact).tolist():
        times[row] = _resolved(stamps[row], reference, tz)
    return times


def year_unknown_reason(last_stamp: float, reference: float, what: str) -> str | None:
    """Why the year of year-less stamps cannot be known from `reference` (`what` names it), or None:
    the modification time dates a log only when it is its last write; a file copied, downloaded or
    pasted later has a newer one (a July 2024 log read in December 2026 would say July 2026)."""
    gap = reference - last_stamp
    if gap <= YEAR_WINDOW_SECONDS:
        return None
    return (
        f"the log's stamps carry no year and the last is {gap / 86_400:.0f} days before {what} "
        f"({datetime.fromtimestamp(reference).strftime('%Y-%m-%d')}): the file was copied or touched later, so the year "
        "is not known; dates are shown without it"
    )


def resolve_dated(date_time: str, tz: tzinfo | None = None) -> float | None:
    """Unix time of a dated stamp (`YYYY-MM-DD HH:MM:SS`: SGLang, JSON asctime, a log store's prefix):
    in its own zone where it prints one, else in zone `tz`; None if invalid."""
    try:
        parsed = datetime.fromisoformat(date_time)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=tz)).timestamp()


@dataclass
class LogClock:
    """One upstream's clock: the mode, the log's zone and year reference; see the module's rule."""

    mode: ClockMode = "live"
    zone: LogZone | None = None  # None: not known yet (serve: arrival; analyze: the sidecar's zone)
    year_reference: float | None = None  # analyze: the file's modification time (else each line's arrival)
    _tried_at: float | None = None  # the arrival last learned from: one try per read, not per line
    _said_at: tuple[float, float] | None = None  # (offset, arrival) a read's line said first, until a later read confirms it

    def learn_live(self, month_day_time: str, read_at: float) -> None:
        """serve with no zone yet: a line against its arrival (the first of each read). A line of a
        backlog (a copy read from its start, a catch-up) arrives hours after it was written and would
        teach its age as a zone: a zone is taken only when two reads at least CONFIRM_SECONDS apart
        say the same — live lines do, a backlog's blocks (read milliseconds apart) never do."""
        if self.zone is not None or self.mode != "live" or read_at == self._tried_at:
            return
        self._tried_at = read_at
        naive = resolve_local(month_day_time, read_at, UTC)
        candidate = zone_from(naive, read_at, "arrival") if naive is not None else None
        if candidate is None:
            return
        offset = candidate.offset_at(read_at)
        said = self._said_at
        if said is not None and said[0] == offset and read_at - said[1] >= CONFIRM_SECONDS:
            self.zone = candidate
            return
        if said is None or said[0] != offset:
            self._said_at = (offset, read_at)

    @property
    def tz(self) -> tzinfo | None:
        return self.zone.tz if self.zone is not None else None

    @property
    def local_known(self) -> bool:
        """Whether a local stamp can be placed: analyze always can (in its own zone, if nothing better)."""
        return self.zone is not None or self.mode == "log"

    def learn(self, month_day_time: str, written_at: float, how: ZoneHow) -> None:
        """Learn the zone from a stamp written at `written_at` (a forced or learned zone stays; an assumed one yields)."""
        if self.zone is not None and self.zone.how != "assumed":
            return
        naive = resolve_local(month_day_time, written_at, UTC)  # at most 14 h after: within the year rule's day
        learned = zone_from(naive, written_at, how) if naive is not None else None
        if learned is not None:
            self.zone = learned

    def learn_file(self, first: str | None, last: str, modified: float, born: float | None, opened: float | None = None) -> str | None:
        """The file's last stamp against its modification time: the year of its stamps, and its zone
        where the file is the server's own (`copied_because`); why the zone was not learned, if not.
        Where the file does not tell, serve (`opened`: when it opened the file) still takes its own
        zone when the last line, read in it, was written moments before: a file being written now,
        here. Else a copy's backlog is read as where no file told the zone: serve on arrival,
        analyze in its own zone."""
        self.year_reference = modified
        if self.zone is not None:
            return None
        why = self._file_zone(first, last, modified, born)
        if why is not None and opened is not None and self.mode == "live":
            naive = resolve_local(last, opened, UTC)
            now = zone_from(naive, opened, "arrival") if naive is not None else None
            if now is not None and now.tz is None:  # the sidecar's own zone (zone_from keeps it as None)
                self.zone = now
                return None
        return why

    def _file_zone(self, first: str | None, last: str, modified: float, born: float | None) -> str | None:
        naive = resolve_local(last, modified, UTC)
        if naive is None:
            return "its last stamp is no date"
        why = copied_because(None if first is None else resolve_local(first, modified, UTC), naive, modified, born)
        if why is not None:
            return why
        self.learn(last, modified, "file")
        if self.zone is None and self.mode == "live":
            # a server idle since its last stamped line (its log ends with health-probe lines, which carry no
            # time): the zone that puts that line as late as it can have been written, at or before the file's
            # last change (zone_at_most) — a restart's backlog lands on its own hours, at most the idle time late
            self.zone = zone_at_most(naive, modified)
        if self.zone is None or self.zone.how != "file":
            return "its last stamped line was written minutes before the file's last change (an idle server's), which tells no zone"
        return None

    def local(self, month_day_time: str, read_at: float) -> float | None:
        """A local stamp's unix time (None: cannot be resolved, or serve does not know the zone)."""
        if not self.local_known:
            return None
        return self.not_future(resolve_local(month_day_time, self.year_reference_for(read_at), self.tz), read_at)

    def local_many(self, stamps: list[str], read_at: float) -> np.ndarray:
        """`local` for a column of stamps (nan: cannot be resolved, or serve does not know the zone)."""
        import numpy as np  # only where blocks are batched

        if not self.local_known:
            return np.full(len(stamps), np.nan)
        reference = self.year_reference_for(read_at)
        times = resolve_local_many(stamps, reference, self.tz)
        return np.where(times > reference + FUTURE_SLACK_SECONDS, reference, times)  # not_future, on a column

    def not_future(self, stamp: float | None, read_at: float) -> float | None:
        """A line's own time, or the latest it can have been written when it says later (FUTURE_SLACK_SECONDS)."""
        reference = self.year_reference_for(read_at)
        return reference if stamp is not None and stamp > reference + FUTURE_SLACK_SECONDS else stamp

    def year_reference_for(self, read_at: float) -> float:
        """analyze: the file's modification time; serve: the arrival (a sidecar running over New Year
        must place January's lines in the new year, whenever it opened the file)."""
        return self.year_reference if self.mode == "log" and self.year_reference is not None else read_at

    def dated(self, date_time: str) -> float | None:
        return resolve_dated(date_time, self.tz) if self.local_known else None

    def place(self, own: float | None, read_at: float) -> float | None:
        """The interval's time from its line's own time and arrival (None: analyze cannot place it)."""
        if self.mode == "log":
            return own
        if own is not None and read_at - own > CATCH_UP_SECONDS:
            return own  # catching up: the backlog keeps its hours
        return read_at

    def place_many(self, own: np.ndarray, read_at: float) -> np.ndarray:
        """`place` for a column of own times (nan: none)."""
        import numpy as np  # only where blocks are batched

        if self.mode == "log":
            return own
        return np.where(~np.isnan(own) & (read_at - own > CATCH_UP_SECONDS), own, read_at)

    def status(self, at: float | None) -> tuple[str, float | None, str]:
        """(zone, its offset at `at` in seconds east of UTC — None: not known or no time given —, how it
        was known) for the source's status."""
        zone = self.zone or (LogZone(None, "assumed") if self.mode == "log" else None)
        if zone is None:
            return "unknown", None, "not yet learned"
        return zone.describe(), None if at is None else zone.offset_at(at), zone.how
