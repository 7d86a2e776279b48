"""What a scraped /metrics body means: counter deltas, sampled values and config, per target.

The scrape source fetches and reports transport failures; it hands each body it got to a
ScrapeInterpreter, which parses it, turns its counters into Interval records (ScrapeDeltas) and
tells the source what to post as the target's health. vLLM's `/version` is asked by the source
(it owns the connection), once per server start, when the interpreter says so.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from exporter.intervals.from_scrape import ScrapeDeltas
from exporter.parse.exposition import DRAINED_COUNTERS_DETAIL, DRAINED_DETAIL, ExpositionError, ExpositionSnapshot, looks_drained, parse_exposition
from exporter.records import ReadCounts, RecordSink, SampledValues, SeriesKey, SpecConfig
from exporter.sources.scrape import SOURCE_KIND

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ScrapeResult:
    """One body's outcome for the source: a failure reason (the target is down), or what to do next
    (what the body counted is posted to the sink here: `count_read`)."""

    failure: tuple[str, str] | None = None  # (reason, detail): unparsable, no_spec_families
    resets: int = 0  # counter resets seen so far (as posted with its counts)
    wants_version: bool = False  # a vLLM that (re)started: ask its /version, then call set_version
    stop: bool = False  # never fetch this target again: reading it does harm (a drained endpoint)


@dataclass
class _Target:
    deltas: ScrapeDeltas
    version: str | None = None
    version_for_reset: int = -1  # /version is asked again after each restart
    snapshot: ExpositionSnapshot | None = field(default=None, repr=False)


class ScrapeInterpreter:
    """Per-target delta state; `accept` one body, `forget` a target that left."""

    def __init__(self, sink: RecordSink, engine: str | None = None) -> None:
        self.sink = sink
        self.engine = engine  # force the /metrics engine instead of detecting it
        self._targets: dict[str, _Target] = {}
        self._saved: dict[str, list[Any]] = {}  # baselines restored from the state dir, taken at a target's first scrape
        # held while a body turns into intervals, and while the state is saved: the baselines and the
        # counters they produced are saved as one snapshot (a restart neither loses nor doubles a delta)
        self.lock = threading.RLock()

    def baselines(self) -> dict[str, list[dict[str, Any]]]:
        """Every target's baselines, as JSON (call with `lock` held, with the store's counters)."""
        saved = {url: list(entries) for url, entries in self._saved.items()}
        saved.update({url: target.deltas.baselines() for url, target in self._targets.items()})
        return saved

    def restore(self, saved: Any) -> None:
        """Baselines saved by an earlier run (a mapping of target URL to entries; anything else is ignored)."""
        if saved is not None and not isinstance(saved, dict):
            log.warning("saved scrape baselines unusable, every target starts a new baseline saved=%.200r", saved)
        if isinstance(saved, dict):
            for url, entries in saved.items():
                if not isinstance(entries, list):
                    log.warning("saved scrape baselines of a target unusable, it starts a new baseline target=%s saved=%.200r", url, entries)
            self._saved = {str(url): entries for url, entries in saved.items() if isinstance(entries, list)}

    def accept(self, url: str, text: str, now: float) -> ScrapeResult:
        if looks_drained(text):  # each read takes the stats from everyone else: once is already too many
            return ScrapeResult(failure=("drained_endpoint", DRAINED_DETAIL), stop=True)
        with self.lock:
            return self._accept(url, text, now)

    def _accept(self, url: str, text: str, now: float) -> ScrapeResult:
        try:
            snapshot = parse_exposition(text, self.engine)
        except ExpositionError as error:
            return ScrapeResult(failure=("unparsable", str(error)))
        if snapshot.empty:
            return ScrapeResult(failure=("no_spec_families", "no_spec_families"))
        target = self._targets.get(url)
        if target is None:
            target = self._targets[url] = _Target(ScrapeDeltas(url))
            target.deltas.restore(self._saved.pop(url, []))
        deltas = target.deltas
        deltas.variant = snapshot.engine_kind or "unknown"
        invalid_before = deltas.invalid
        for interval in deltas.update(snapshot.counters, now, snapshot.started):
            self.sink.record_interval(interval)
        if deltas.drained:
            return ScrapeResult(failure=("drained_endpoint", DRAINED_COUNTERS_DETAIL), stop=True)
        for (model, engine), values in snapshot.sampled.items():
            key = SeriesKey(upstream=url, model_name=model, engine=engine, source=SOURCE_KIND)
            self.sink.record_sample(SampledValues(key, now, tuple(sorted(values.items())), snapshot.engine_kind or ""))
        target.snapshot = snapshot
        wants_version = snapshot.engine_kind == "vllm" and target.version_for_reset != deltas.resets
        if wants_version:
            target.version_for_reset = deltas.resets
        else:
            self.sink.record_config(url, _config(snapshot, target.version))
        invalid = deltas.invalid - invalid_before  # values in this body that could not be counts
        counts = ReadCounts(problems={"invalid_values": invalid} if invalid else {}, variants={snapshot.engine_kind or "unknown": 1},
                            read_at=now, restarts=deltas.resets)  # restarts: counter resets seen so far
        self.sink.count_read(url, counts, kind=SOURCE_KIND)
        return ScrapeResult(resets=deltas.resets, wants_version=wants_version)

    def set_version(self, url: str, version: str | None) -> None:
        """The answer of the target's `/version` (None: no answer); completes the body just accepted."""
        target = self._targets[url]
        target.version = version
        if target.snapshot is not None:
            self.sink.record_config(url, _config(target.snapshot, version))

    def forget(self, url: str) -> None:
        with self.lock:
            self._targets.pop(url, None)
            self._saved.pop(url, None)


def _config(snapshot: ExpositionSnapshot, version: str | None) -> SpecConfig:
    """What /metrics tells of the speculative config: k = number of position series."""
    positions = max((len(c.accepted_per_position) for c in snapshot.counters.values()), default=0)
    labels = snapshot.config
    method = next((labels[k] for k in ("method", "decoding_type", "spec_dec_mode", "speculative_decoding_mode") if k in labels), None)
    k_text = next((labels[k] for k in ("num_speculative_tokens", "max_draft_len", "max_draft_tokens") if k in labels), None)
    draft = next((labels[k] for k in ("draft_model", "speculative_model", "speculative_model_dir") if k in labels), None)
    k = int(k_text) if k_text and k_text.isdigit() else (positions or None)
    return SpecConfig(method=method, num_speculative_tokens=k, draft_model=draft, server_version=version)
