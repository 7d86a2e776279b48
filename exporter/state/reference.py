"""A series' memory of what normal looks like: a reference learned only while it is healthy.

The `degraded` verdict compares the judged window against this reference: the best day of healthy
traffic within the hold (7 days), the same definition as the shipped raw-counter rule
(mixin/reference.py). Counts are pooled (D, A and A_i summed over hourly buckets of healthy
traffic, so L = 1 + ΣA/ΣD and r_i = ΣA_i/ΣD) over the last day; each time a bucket closes, that
day's pool is a candidate, and the reference is the best candidate of the lookback or the pool
of now, whichever has the higher L. A maximum may rise freely but cannot be walked down: a decay
in steps too small for the threshold still leaves the best day in place, so it is caught once
L − 1 is 30 % below that day (docs/runbook.md: a decay slower than 30 % of L − 1 in 7 days is
followed instead). Learning stops as soon as the series is judged degraded or broken: a drop that
lasts days is judged against the level before the drop, not against itself. A new normal is taken only when
the speculative config changes (each config keeps its own reference; the retired ones stay
visible), on an explicit acknowledgement, or after the series has been unhealthy longer than the
hold. Everything here is a pure function of (time, counts, judged state) on the intervals' own
clock (intervals/clock.py: a backlog on the log's time, the live edge on arrival; `analyze` on the
log's time throughout), so `serve` and `analyze` say the same of the same log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from exporter.records import Interval, SpecConfig
from exporter.state.periods import Period, closed, health_class, period_from_json, period_json
from exporter.state.window import Totals

HEALTHY = frozenset({"ok", "wasteful"})  # acceptance is as it should be (wasteful is about k, not the drafter)
UNHEALTHY = frozenset({"degraded", "broken"})  # the reference freezes; no_data neither learns nor freezes
MAX_RETIRED = 4  # earlier configs' references kept beside the current one
MAX_SPANS = 32  # unhealthy spans remembered (for analyze's report and plot)


@dataclass(frozen=True, slots=True)
class Collapse:
    """The broken signature of one interval on its own (the verdict's thresholds, judge/verdict.py).

    Such an interval never teaches the reference, whatever the judged window says: after a restart
    into a broken drafter the window still holds minutes of the healthy traffic before it and is
    judged ok, and the broken intervals would be pooled as normal (the seed-incident run on vLLM
    0.26.0: the reference fell from L 4.10 to 2.15 before the verdict turned). A working drafter's
    interval of this many drafts never looks like this, so no healthy traffic is left out."""

    max_mean_acceptance_length: float
    max_position0_acceptance: float
    min_drafts: int
    # … nor does an interval whose own L − 1 is this fraction below the reference's (the verdict's
    # degraded rule): a drop's first minutes, while the judged window still holds the traffic before
    # it, would otherwise be pooled as normal (the demo: a reference of L 3.37 taught down to 2.98)
    relative_drop: float = 0.0  # 0: off

    def shows(self, drafts: int, accepted: int, accepted_position0: int | None) -> bool:
        if drafts < self.min_drafts or accepted_position0 is None:
            return False
        return 1.0 + accepted / drafts <= self.max_mean_acceptance_length and accepted_position0 / drafts <= self.max_position0_acceptance

    def shown_by(self, interval: Interval) -> bool:
        first = interval.accepted_per_position[0] if interval.accepted_per_position else None
        return interval.drafts is not None and self.shows(interval.drafts, interval.accepted_tokens, first)


@dataclass(frozen=True, slots=True)
class ReferenceRule:
    """How references are learned and replaced (`--reference-*` flags)."""

    window_seconds: float = 86400.0  # the healthy traffic pooled into the reference (a day: the whole daily mix)
    bucket_seconds: float = 3600.0  # the pooling grain: older buckets leave the window whole
    min_drafts: int = 1000  # fewer drafts: the reference is still learning and judges nothing
    hold_seconds: float = 7 * 86400.0  # unhealthy for longer than this becomes the new normal; 0: never
    lookback_seconds: float = 7 * 86400.0  # the best day within this is normal (the rule's reference_hold)
    # healthy verdicts must last this long before an unhealthy series counts as recovered: a drop
    # near the threshold must not flicker back to ok (and teach the reference) on one lucky window
    recovery_seconds: float = 900.0
    collapse: Collapse | None = None  # intervals that never teach the reference; None: every healthy-judged one does

    @classmethod
    def of(cls, hold: float, window: float, min_drafts: int, recovery: float = 900.0, collapse: Collapse | None = None) -> ReferenceRule:
        """A rule from the flags: buckets of an hour, finer for a window under a day (24 of them); the
        best day is looked for within the hold (a week when the hold is off), as the rule does."""
        bucket = min(3600.0, window / 24)
        return cls(window_seconds=window, bucket_seconds=bucket, min_drafts=min_drafts, hold_seconds=hold,
                   lookback_seconds=hold if hold > 0 else 7 * 86400.0, recovery_seconds=recovery, collapse=collapse)

    def teaches(self, interval: Interval) -> bool:
        """Whether a healthy-judged interval may be pooled into the reference, whatever the reference."""
        return self.collapse is None or not self.collapse.shown_by(interval)

    def drops(self, interval: Interval, reference: Profile) -> bool:
        """Whether a healthy-judged interval is unhealthy on its own — the collapse, or its own L this
        far below the reference judged against now —: it teaches nothing, and its traffic waits
        (SeriesMemory.suspect) for the verdict to say which period it belongs to."""
        collapse = self.collapse
        if collapse is None:
            return False
        if collapse.shown_by(interval):
            return True
        if not collapse.relative_drop or interval.drafts is None or interval.drafts < max(1, collapse.min_drafts):
            return False
        judged = reference.judged(self)
        length = judged.mean_acceptance_length if judged is not None else None
        if length is None:
            return False
        own = interval.emitted_tokens / interval.drafts if interval.emitted_tokens is not None else 1.0 + interval.accepted_tokens / interval.drafts
        return own - 1.0 < (1.0 - collapse.relative_drop) * (length - 1.0)


@dataclass(frozen=True, slots=True)
class Bucket:
    start: float
    end: float
    drafts: int
    accepted: int
    accepted_per_position: tuple[int, ...]
    emitted: int | None = None  # Σ E where every pooled interval printed it (V0, whose L is E/D), else None


def _plus(left: int | None, right: int | None) -> int | None:
    return None if left is None or right is None else left + right


def add_counts(left: tuple[int, ...], right: tuple[int, ...]) -> tuple[int, ...]:
    width = max(len(left), len(right))
    return tuple(a + b for a, b in zip(left + (0,) * (width - len(left)), right + (0,) * (width - len(right)), strict=True))


def higher(left: Bucket, right: Bucket) -> bool:
    """L of `left` above L of `right`, compared exactly (as integers: the batch path agrees): by E/D
    where both pooled E (V0 counts, whose A is not a prefix count), else by A/D."""
    if left.emitted is not None and right.emitted is not None:
        return left.emitted * right.drafts > right.emitted * left.drafts
    return left.accepted * right.drafts > right.accepted * left.drafts


@dataclass(frozen=True, slots=True)
class Profile:
    """Pooled counts of a span of traffic, in time buckets, and the best days it has pooled."""

    buckets: tuple[Bucket, ...] = ()  # the last window of traffic
    # candidate days within the lookback, oldest first, each pooled as a bucket closed; only those
    # no later one matched, so L falls along them and the first is the best
    days: tuple[Bucket, ...] = ()
    began: float | None = None  # the start of the first traffic pooled (a pool younger than its window is no candidate)

    @property
    def drafts(self) -> int:
        return sum(b.drafts for b in self.buckets)

    @property
    def accepted(self) -> int:
        return sum(b.accepted for b in self.buckets)

    @property
    def accepted_per_position(self) -> tuple[int, ...]:
        total: tuple[int, ...] = ()
        for bucket in self.buckets:
            total = add_counts(total, bucket.accepted_per_position)
        return total

    @property
    def start(self) -> float | None:
        return self.buckets[0].start if self.buckets else None

    @property
    def end(self) -> float | None:
        return self.buckets[-1].end if self.buckets else None

    @property
    def emitted(self) -> int | None:
        """Σ E where every bucket pooled it (V0 counts), else None."""
        total: int | None = 0
        for bucket in self.buckets:
            total = _plus(total, bucket.emitted)
        return total if self.buckets else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """1 + ΣA/ΣD; on V0 counts, whose A is not a prefix count, ΣE/ΣD (as derive.py)."""
        drafts, emitted = self.drafts, self.emitted
        if not drafts:
            return None
        return emitted / drafts if emitted is not None else 1.0 + self.accepted / drafts

    @property
    def position_acceptance(self) -> tuple[float, ...]:
        drafts = self.drafts
        return tuple(a / drafts for a in self.accepted_per_position) if drafts else ()

    def pooled(self) -> Bucket | None:
        """The window's traffic as one bucket."""
        if not self.buckets:
            return None
        return Bucket(self.buckets[0].start, self.buckets[-1].end, self.drafts, self.accepted, self.accepted_per_position, self.emitted)

    def judged(self, rule: ReferenceRule) -> Profile | None:
        """What the verdict judges against: the best candidate day or the pool of now, whichever has
        the higher L (the pool only with `min_drafts`); None while neither is there (learning)."""
        live = self.drafts > 0 and self.drafts >= rule.min_drafts
        best = self.days[0] if self.days else None
        if best is not None and (not live or higher(best, Bucket(0.0, 0.0, self.drafts, self.accepted, (), self.emitted))):
            return Profile((best,))
        return self if live else None

    def learn(self, interval: Interval, rule: ReferenceRule) -> Profile:
        """This profile with `interval` pooled in, the closed window a candidate day, and buckets
        older than the window and days older than the lookback dropped."""
        if not interval.drafts:
            return self
        start = interval.start if interval.start is not None else interval.end
        buckets = list(self.buckets)
        days, began = self.days, self.began if self.began is not None else start
        last = buckets[-1] if buckets else None
        if last is not None and interval.end < last.start + rule.bucket_seconds:
            buckets[-1] = Bucket(last.start, max(last.end, interval.end), last.drafts + interval.drafts,
                                 last.accepted + interval.accepted_tokens, add_counts(last.accepted_per_position, interval.accepted_per_position),
                                 _plus(last.emitted, interval.emitted_tokens))
        else:
            if last is not None:
                days = with_day(days, self.pooled(), began, rule)
            buckets.append(Bucket(start, interval.end, interval.drafts, interval.accepted_tokens, interval.accepted_per_position,
                                  interval.emitted_tokens))
        horizon, lookback = interval.end - rule.window_seconds, interval.end - rule.lookback_seconds
        return Profile(tuple(b for b in buckets if b.end > horizon), tuple(d for d in days if d.end > lookback), began)

    @classmethod
    def of_totals(cls, totals: Totals) -> Profile:
        if not totals.drafts or totals.drafts_unknown or totals.end is None:
            return cls()
        start = totals.start if totals.start is not None else totals.end
        return cls((Bucket(start, totals.end, totals.drafts, totals.accepted_tokens, totals.accepted_per_position, totals.known_emitted),),
                   began=start)


def with_day(days: tuple[Bucket, ...], day: Bucket | None, began: float | None, rule: ReferenceRule) -> tuple[Bucket, ...]:
    """The candidates after `day` (a window's pool as its last bucket closed) joins them: a pool
    of a whole window (a day: one easy first hour must not stand as the best day for a week) with
    enough drafts; the earlier ones it matches can never be the best again."""
    if day is None or began is None or day.end - began < rule.window_seconds - rule.bucket_seconds or day.drafts < max(1, rule.min_drafts):
        return days
    return (*(d for d in days if higher(d, day)), day)


_EMPTY = Profile()


@dataclass(frozen=True, slots=True)
class SpecIdentity:
    """The speculative config a reference belongs to: drafter method, k and draft model (None: not known)."""

    method: str | None = None
    k: int | None = None
    draft_model: str | None = None

    @classmethod
    def of(cls, config: SpecConfig, k: int | None = None) -> SpecIdentity:
        return cls(config.method, config.num_speculative_tokens or k, config.draft_model)

    def conflicts(self, other: SpecIdentity) -> bool:
        """A field both know differs: another config (an unknown field is not a change, only news)."""
        return any(a is not None and b is not None and a != b for a, b in zip(self.fields(), other.fields(), strict=True))

    def filled(self, other: SpecIdentity) -> SpecIdentity:
        return SpecIdentity(*(a if a is not None else b for a, b in zip(self.fields(), other.fields(), strict=True)))

    def fields(self) -> tuple[Any, ...]:
        return (self.method, self.k, self.draft_model)

    def describe(self) -> str:
        return f"method {self.method or '?'}, k = {self.k or '?'}, draft model {self.draft_model or '?'}"


@dataclass(frozen=True, slots=True)
class Retired:
    """A reference no longer judged against: another config's, or one a new normal replaced."""

    identity: SpecIdentity
    profile: Profile
    reason: str  # "config_change" | "acknowledged" | "hold"
    at: float


@dataclass(frozen=True, slots=True)
class SeriesMemory:
    identity: SpecIdentity = SpecIdentity()
    reference: Profile = Profile()
    pending: Profile = Profile()  # traffic since the series went unhealthy: what a new normal would be
    retired: tuple[Retired, ...] = ()
    state: str = ""  # the last verdict that was not no_data
    since: float | None = None  # when `state` began
    quiet_since: float | None = None  # the last verdicts were no_data since this time
    unhealthy_since: float | None = None  # start of the current degraded/broken run (the hold counts from it)
    recovering_since: float | None = None  # healthy verdicts since then, not yet for recovery_seconds
    spans: tuple[tuple[float, float | None, str], ...] = ()  # (start, end or None while open, worst state)
    adopted: tuple[str, float] | None = None  # the last new normal: (how, when)
    last_at: float | None = None
    period: Period = field(default_factory=Period)  # the traffic since the last config change, restart or health change (periods.py)
    held_back: Period = field(default_factory=Period)  # a recovery's traffic while it is not yet proven
    # the latest intervals unhealthy on their own while the verdict still says healthy (ReferenceRule.drops):
    # the next period's if the verdict turns, this one's if healthy traffic follows
    suspect: Period = field(default_factory=Period)
    periods: tuple[Period, ...] = ()  # the earlier ones, oldest first

    def current_period(self) -> Period:
        """The traffic since the last config change, restart or health change, a recovery's included."""
        return self.period.joined(self.held_back).joined(self.suspect)

    def ready(self, rule: ReferenceRule) -> Profile | None:
        """The reference judged against (the best day, or the pool of now) when it holds enough
        evidence to judge by, else None."""
        return self.reference.judged(rule)


def switch_config(memory: SeriesMemory, identity: SpecIdentity, at: float) -> tuple[SeriesMemory, bool]:
    """Follow a change of speculative config: the current reference retires, the new config's own
    (if it was seen before) comes back, else a new one starts learning. True when it switched."""
    if not memory.identity.conflicts(identity):
        filled = identity.filled(memory.identity)
        return (memory if filled == memory.identity else replace(memory, identity=filled)), False
    retired = [r for r in memory.retired if r.identity != identity]
    comeback = next((r.profile for r in memory.retired if r.identity == identity), Profile())
    if memory.reference.buckets:
        retired.insert(0, Retired(memory.identity, memory.reference, "config_change", at))
    return replace(
        memory, identity=identity, reference=comeback, pending=Profile(), retired=tuple(retired[:MAX_RETIRED]),
        unhealthy_since=None, recovering_since=None, adopted=("config_change", at), spans=_closed(memory.spans, at), state="", since=at,
        **_new_period(memory, "config_change"),
    ), True


def _new_period(memory: SeriesMemory, began_by: str, health: str = "") -> dict[str, Any]:
    """The memory's period fields after closing its current period (periods.py)."""
    current = memory.current_period()
    return {"periods": closed(memory.periods, current, memory.identity.fields(), health_class(memory.state)),
            "period": Period(began_by=began_by, health=health), "held_back": Period(), "suspect": Period()}


def restarted(memory: SeriesMemory) -> SeriesMemory:
    """The server restarted: a new period. Its health is the memory's while that is healthy; while
    unhealthy it is decided by the next verdict (a restart is how a drafter gets fixed)."""
    if not memory.period.intervals and not memory.held_back.intervals and not memory.suspect.intervals:
        return memory
    return replace(memory, **_new_period(memory, "restart", "healthy" if health_class(memory.state) == "healthy" else ""))


def observe(memory: SeriesMemory, interval: Interval, state: str, rule: ReferenceRule) -> SeriesMemory:
    """The memory after `interval`, judged `state` over the judged window that ends with it."""
    after = _observed(memory, interval, state, rule)
    return _counted(memory, after, interval, _learning(memory, after, state) and rule.drops(interval, memory.reference))


def _learning(before: SeriesMemory, after: SeriesMemory, state: str) -> bool:
    """Whether `observe` took the interval on the reference's side: judged healthy, and healthy
    after it (a recovery being proven, or one completed by it, learns otherwise)."""
    return state in HEALTHY and after.state in HEALTHY and after.recovering_since is None and before.recovering_since is None


def _counted(before: SeriesMemory, after: SeriesMemory, interval: Interval, dropped: bool = False) -> SeriesMemory:
    """`after` with `interval` counted into its period, cut where `observe` changed the health class
    or took a new normal (periods.py). An interval unhealthy on its own while the verdict says
    healthy (`dropped`) waits as suspect: the new period's if the verdict turns, else this one's."""
    current, held, suspect = before.period, before.held_back, before.suspect
    was, now = health_class(before.state), health_class(after.state)
    if after.adopted != before.adopted and after.adopted is not None:  # the hold, with this interval
        ended = replace(before, period=current.joined(held).joined(suspect).plus(interval), held_back=Period(), suspect=Period())
        return replace(after, **_new_period(ended, after.adopted[0]))
    if was and now and was != now:
        if not current.health:  # the first verdict of a period a restart began: the restart's outcome
            return replace(after, period=replace(current.joined(held).joined(suspect).plus(interval), health=now), held_back=Period(),
                           suspect=Period())
        if now == "healthy":  # a recovery's traffic is the new period's
            old, new = current, held
        else:  # the drop began where its intervals turned unhealthy on their own
            old, new = current.joined(held), suspect
        began_by = "health" if old.intervals else current.began_by  # nothing before the drop: the period it began is this one
        return replace(after, periods=closed(before.periods, old, before.identity.fields(), was),
                       period=Period(began_by=began_by, health=now).joined(new).plus(interval), held_back=Period(), suspect=Period())
    if after.recovering_since is not None:
        return replace(after, period=current, held_back=held.plus(interval))
    if dropped:
        return replace(after, period=current.joined(held), held_back=Period(), suspect=suspect.plus(interval))
    current = current.joined(held).joined(suspect).plus(interval)
    if not current.health and now and after.since is not None and current.start is not None and after.since >= current.start:
        current = replace(current, health=now)  # first judged within this period
    return replace(after, period=current, held_back=Period(), suspect=Period())


def _observed(memory: SeriesMemory, interval: Interval, state: str, rule: ReferenceRule) -> SeriesMemory:
    at = interval.end
    if state not in HEALTHY and state not in UNHEALTHY:  # no_data: too little to learn from or to judge by
        return replace(memory, last_at=at, quiet_since=at if memory.quiet_since is None else memory.quiet_since)
    current, since = memory.state, memory.since
    if state in HEALTHY and current in UNHEALTHY:
        began = memory.recovering_since if memory.recovering_since is not None else at
        if at - began < rule.recovery_seconds:
            return replace(memory, last_at=at, recovering_since=began, quiet_since=None)
        current, since = state, began
    if state != current:
        current, since = state, at
    if state in HEALTHY:
        return replace(
            memory, last_at=at, state=current, since=since, quiet_since=None, recovering_since=None,
            reference=memory.reference if rule.drops(interval, memory.reference) else memory.reference.learn(interval, rule), pending=_EMPTY,
            unhealthy_since=None,
            spans=_closed(memory.spans, since if since is not None else at),
        )
    start = memory.unhealthy_since if memory.unhealthy_since is not None else at
    spans = memory.spans
    if not spans or spans[-1][1] is not None:
        spans = (*spans, (at, None, state))[-MAX_SPANS:]
    elif state == "broken" and spans[-1][2] != "broken":
        spans = (*spans[:-1], (spans[-1][0], None, "broken"))
    memory = replace(
        memory, last_at=at, state=current, since=since, quiet_since=None, recovering_since=None,
        pending=memory.pending.learn(interval, rule), unhealthy_since=start, spans=spans,
    )
    if rule.hold_seconds > 0 and at - start >= rule.hold_seconds:
        return adopt(memory, "hold", at, rule)
    return memory


@dataclass(frozen=True, slots=True)
class Repeat:
    """What `observe` does with one more interval judged the same as the last, while its end is
    before `origin + seconds`: `last_at` moves and `learns` ("reference", "pending" or None) pools
    the interval in. From the first end at or past that point (a recovery that completes, a hold
    that ends) an interval changes more and must be observed on its own."""

    learns: str | None
    origin: float = 0.0
    seconds: float = float("inf")


def repeat_of(memory: SeriesMemory, state: str, rule: ReferenceRule) -> Repeat | None:
    """How further intervals judged `state` change a memory that `observe` just left after one
    judged so (the batch path applies them at once: exporter/state/remember.py); None when the
    memory is in no such shape. tests/test_remember.py checks each answer against `observe`."""
    if state not in HEALTHY and state not in UNHEALTHY:
        return Repeat(None) if memory.quiet_since is not None else None
    if memory.quiet_since is not None:
        return None
    if state in HEALTHY and memory.state in UNHEALTHY:  # recovering: nothing is learned until it holds
        return Repeat(None, memory.recovering_since, rule.recovery_seconds) if memory.recovering_since is not None else None
    if state != memory.state or memory.recovering_since is not None:
        return None
    if state in HEALTHY:
        settled = memory.unhealthy_since is None and not memory.pending.buckets and (not memory.spans or memory.spans[-1][1] is not None)
        return Repeat("reference") if settled else None
    if memory.unhealthy_since is None or not memory.spans or memory.spans[-1][1] is not None or (state == "broken" and memory.spans[-1][2] != "broken"):
        return None
    return Repeat("pending", memory.unhealthy_since, rule.hold_seconds) if rule.hold_seconds > 0 else Repeat("pending")


def adopt(memory: SeriesMemory, how: str, at: float, rule: ReferenceRule, recent: Totals | None = None) -> SeriesMemory:
    """Take what the series does now as its new normal (after the hold, or acknowledged): the
    traffic since it went unhealthy when that is enough evidence, else the judged window's."""
    new = memory.pending
    if new.drafts < rule.min_drafts and recent is not None:
        new = Profile.of_totals(recent)
    retired = [Retired(memory.identity, memory.reference, how, at), *memory.retired] if memory.reference.buckets else list(memory.retired)
    return replace(memory, reference=new, pending=Profile(), retired=tuple(retired[:MAX_RETIRED]), unhealthy_since=None,
                   recovering_since=None, adopted=(how, at), spans=_closed(memory.spans, at), state="", since=at, **_new_period(memory, how))


def _closed(spans: tuple[tuple[float, float | None, str], ...], at: float) -> tuple[tuple[float, float | None, str], ...]:
    if spans and spans[-1][1] is None:
        return (*spans[:-1], (spans[-1][0], at, spans[-1][2]))
    return spans


# --- the state dir ---------------------------------------------------------------------------


def _buckets_json(buckets: tuple[Bucket, ...]) -> list[list[Any]]:
    return [[b.start, b.end, b.drafts, b.accepted, list(b.accepted_per_position), b.emitted] for b in buckets]


def _bucket(row: list[Any]) -> Bucket:
    s, e, d, a, p, *rest = row  # a sixth item, E, since V0 references pool it; older state files have five
    emitted = rest[0] if rest else None
    return Bucket(float(s), float(e), int(d), int(a), tuple(int(x) for x in p), None if emitted is None else int(emitted))


def _buckets(data: Any) -> tuple[Bucket, ...]:
    return tuple(_bucket(row) for row in data or ())


def _profile_json(profile: Profile) -> dict[str, Any]:
    return {"buckets": _buckets_json(profile.buckets), "days": _buckets_json(profile.days), "began": profile.began}


def _profile(data: Any) -> Profile:
    if not isinstance(data, Mapping):  # a state dir from before the best day: its buckets alone
        buckets = _buckets(data)
        return Profile(buckets, began=buckets[0].start if buckets else None)
    began = data.get("began")
    return Profile(_buckets(data.get("buckets")), _buckets(data.get("days")), None if began is None else float(began))


def _identity(data: Mapping[str, Any]) -> SpecIdentity:
    return SpecIdentity(data.get("method"), data.get("k"), data.get("draft_model"))


def memory_json(memory: SeriesMemory) -> dict[str, Any]:
    return {
        "identity": {"method": memory.identity.method, "k": memory.identity.k, "draft_model": memory.identity.draft_model},
        "reference": _profile_json(memory.reference),
        "pending": _profile_json(memory.pending),
        "retired": [{"identity": {"method": r.identity.method, "k": r.identity.k, "draft_model": r.identity.draft_model},
                     "profile": _profile_json(r.profile), "reason": r.reason, "at": r.at} for r in memory.retired],
        "state": memory.state, "since": memory.since, "quiet_since": memory.quiet_since,
        "unhealthy_since": memory.unhealthy_since, "recovering_since": memory.recovering_since, "spans": [list(span) for span in memory.spans],
        "adopted": list(memory.adopted) if memory.adopted else None, "last_at": memory.last_at,
        "period": period_json(memory.period), "held_back": period_json(memory.held_back), "suspect": period_json(memory.suspect),
        "periods": [period_json(p) for p in memory.periods],
    }


def memory_from_json(data: Mapping[str, Any]) -> SeriesMemory:
    """A saved memory; raises KeyError/TypeError/ValueError on a file that is not one (the caller skips it)."""
    adopted = data.get("adopted")
    return SeriesMemory(
        identity=_identity(data.get("identity") or {}),
        reference=_profile(data.get("reference")),
        pending=_profile(data.get("pending")),
        retired=tuple(Retired(_identity(r["identity"]), _profile(r["profile"]), str(r["reason"]), float(r["at"])) for r in data.get("retired") or ()),
        state=str(data.get("state") or ""),
        since=data.get("since"),
        quiet_since=data.get("quiet_since"),
        unhealthy_since=data.get("unhealthy_since"),
        recovering_since=data.get("recovering_since"),
        spans=tuple((float(s), None if e is None else float(e), str(w)) for s, e, w in data.get("spans") or ()),
        adopted=(str(adopted[0]), float(adopted[1])) if adopted else None,
        last_at=data.get("last_at"),
        period=period_from_json(data.get("period")),
        held_back=period_from_json(data.get("held_back")),
        suspect=period_from_json(data.get("suspect")),
        periods=tuple(period_from_json(p) for p in data.get("periods") or ()),
    )
