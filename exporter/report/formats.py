"""Render an analyze report as a human table or as CSV (JSON is the report itself)."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

from exporter.report.payoff_table import payoff_lines

# one row per series and position; the numbers are the current period's (the headline), the
# lifetime ones are labelled so, and the positions are the current period's
CSV_COLUMNS = (
    "upstream", "model_name", "engine", "format", "lines", "period_start", "period_began_by", "drafts", "draft_tokens", "accepted_tokens",
    "mean_acceptance_length", "draft_acceptance_ratio", "num_speculative_tokens", "recommended_speculative_tokens", "recommendation_from",
    "health", "health_since", "live_health", "lifetime_drafts", "lifetime_mean_acceptance_length", "lifetime_draft_acceptance_ratio",
    "acceptance_length_histogram", "position", "accepted", "position_acceptance", "conditional_acceptance",
)
SERIES_COLUMNS = CSV_COLUMNS.index("position")  # the columns before it are the series', repeated on each row
_PERIOD = {"period_start": "start", "period_began_by": "began_by", "drafts": "drafts", "draft_tokens": "draft_tokens",
           "accepted_tokens": "accepted_tokens", "mean_acceptance_length": "mean_acceptance_length",
           "draft_acceptance_ratio": "draft_acceptance_ratio", "recommended_speculative_tokens": "recommended_speculative_tokens",
           "recommendation_from": "recommendation_from", "acceptance_length_histogram": "acceptance_length_histogram"}
_LIFETIME = {"lifetime_drafts": "drafts", "lifetime_mean_acceptance_length": "mean_acceptance_length",
             "lifetime_draft_acceptance_ratio": "draft_acceptance_ratio"}
# the health is hindsight's (each period by its own numbers); live_health is what the live verdict said at the log's end


def _num(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _percent(ratio: float | None) -> str:
    return "—" if ratio is None else f"{100 * ratio:.1f}%"


def _at(values: list[Any] | None, index: int) -> Any:
    return values[index] if values is not None and index < len(values) else None


def _utc(at: float | None, undated: bool = False) -> str:
    """A date in UTC; without its year (on the log's own clock) where the log cannot tell the year."""
    if at is None:
        return "?"
    return time.strftime("%m-%d %H:%M (year unknown)", time.localtime(at)) if undated else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _memory_lines(s: dict[str, Any]) -> list[str]:
    """Since when the verdict holds, the reference it is judged against, and the unhealthy spans."""
    lines = []
    end = s["end"]
    undated = s.get("year_known") is False
    if s.get("dates_unknown"):
        lines.append(f"  dates: {s['dates_unknown']}")
    if s.get("health_since") is not None:
        held = f" ({_hours(end - s['health_since'])} before the log's end)" if end is not None else ""
        lines.append(f"  {s['health']} since {_utc(s['health_since'], undated)}{held}")
    reference = s.get("reference")
    if reference and reference["drafts"]:
        state = "judging" if reference["ready"] else f"learning, {reference['drafts']} of {reference['min_drafts']} drafts"
        state += " (the best day within the hold)" if reference.get("best_day") else ""
        lines.append(
            f"  reference L = {_num(reference['mean_acceptance_length'])} (position 0 {_num(_at(reference['position_acceptance'], 0))}) "
            f"from {reference['drafts']} healthy drafts, {_utc(reference['start'], undated)} – {_utc(reference['end'], undated)}; {state}"
        )
    lines.extend(
        f"  earlier reference (method {old['method'] or '?'}, k = {old['num_speculative_tokens'] or '?'}): "
        f"L = {_num(old['mean_acceptance_length'])}, retired ({old['retired'].replace('_', ' ')}) {_utc(old['retired_at'], undated)}"
        for old in s.get("previous_references", [])
    )
    lines.extend(_span_lines(s.get("unhealthy_spans", []), end, undated, "  "))
    live = s.get("live")
    if live and (live["health"] != s["health"] or live["unhealthy_spans"] != s.get("unhealthy_spans")):
        since = f" since {_utc(live['health_since'], undated)}" if live.get("health_since") is not None else ""
        lines.append(f"  the live verdict at the log's end (serve's, judging the window that ends at each line): {live['health']}{since}")
        lines.extend(_span_lines(live["unhealthy_spans"], end, undated, "    live "))
    return lines


def _span_lines(spans: list[dict[str, Any]], end: float | None, undated: bool, indent: str) -> list[str]:
    lines = []
    for span in spans:
        stop = span["end"] if span["end"] is not None else end
        until = "the log's end" if span["ongoing"] else _utc(span["end"], undated)
        length = f" ({_hours(stop - span['start'])})" if stop is not None else ""
        lines.append(f"{indent}{span['worst']}: {_utc(span['start'], undated)} → {until}{length}")
    return lines


def _run_lines(s: dict[str, Any]) -> list[str]:
    """Each run where the speculative config changed, with its own numbers (the lifetime pools them)."""
    undated = s.get("year_known") is False
    return [
        f"  run {n} (method {run['method'] or '?'}, k = {run['num_speculative_tokens'] or '?'}), {_utc(run['start'], undated)} – {_utc(run['end'], undated)}: "
        f"drafts {_num(run['drafts'], 'd')}, L = {_num(run['mean_acceptance_length'])}, "
        f"α = {_percent(run['draft_acceptance_ratio'])}, "
        f"mean draft length {_num(run['mean_draft_length'], '.2f')}"
        for n, run in enumerate(s.get("runs", []), 1)
    ]


def _sampled_lines(report: dict[str, Any]) -> list[str]:
    """Servers that print only snapshots (SGLang's `Decode batch` lines): their last values, said to be snapshots."""
    out = []
    for sample in report["sampled"]:
        values = ", ".join(f"{name.replace('_', ' ')} {value:.3f}" for name, value in sample["values"].items())
        out.append(f"{sample['model_name']} · engine {sample['engine']} · {sample['upstream']}  ({sample['format'] or '?'}, sampled)")
        out.append(f"  last values at {_utc(sample['at'], sample.get('year_known') is False)}: {values}")
        out.append("  the server prints snapshots of its last batch window, not counts: no D, no per-position rates, no verdict")
        out.append("")
    return out


def _numbers(s: dict[str, Any], indent: str) -> list[str]:
    """Drafts, L, α and draft length of one span (a series entry or its current period)."""
    ratio = s["draft_acceptance_ratio"]
    return [
        f"{indent}drafts {_num(s['drafts'], 'd')}   draft tokens {s['draft_tokens']}   accepted {s['accepted_tokens']}   wasted {s['wasted_draft_tokens']}",
        f"{indent}mean acceptance length L = {_num(s['mean_acceptance_length'])}   "
        f"draft acceptance α = {'—' if ratio is None else f'{100 * ratio:.1f}%'}   mean draft length {_num(s['mean_draft_length'], '.2f')}",
    ]


def _period_lines(s: dict[str, Any]) -> list[str]:
    """The headline: what is true now, since the last config change, restart or health change."""
    now = s.get("current_period")
    if not now:
        return [f"  recommended k = {_num(s['recommended_speculative_tokens'], 'd')}   verdict: {s['health']} — {s['reason']}"]
    began = {"first_traffic": "the first traffic read", "config_change": "a config change", "health": "a change of health"}.get(
        now["began_by"], now["began_by"].replace("_", " "))
    length = f", {_hours(now['end'] - now['start'])}" if now["start"] is not None and now["end"] is not None else ""
    source = {"reference": " (from the reference's curve, not the failing one)", "current_period": ""}.get(
        now["recommendation_from"] or "", " (no healthy reference to take it from)" if now["advice"] else "")
    undated = s.get("year_known") is False
    lines = [f"  NOW — since {_utc(now['start'], undated)} ({began}{length}):", *_numbers(now, "    "),
             f"    verdict: {s['health']} — {s['reason']}", f"    recommended k = {_num(now['recommended_speculative_tokens'], 'd')}{source}"]
    if now["advice"]:
        lines.append(f"    advice: {now['advice']}")
    return lines


def _positions_table(s: dict[str, Any]) -> list[str]:
    """The current period's per-position table (else the span's), the reference's rate beside it."""
    span = s.get("current_period") or s
    if not span["position_acceptance"]:
        return []
    reference = s.get("reference") or {}
    beside = reference.get("position_acceptance") if reference.get("ready") else None
    lines = ["", "    pos  accepted   rate  conditional   E(k'=pos+1)  speed-up(k'=pos+1)" + ("  reference" if beside else "")]
    for i, rate in enumerate(span["position_acceptance"]):
        lines.append(
            f"  {i:>5}  {_at(span['accepted_per_position'], i) or 0:>8}  {rate:.3f}"
            f"        {_num(_at(span['conditional_acceptance'], i))}        {_num(_at(span['expected_tokens_per_step'], i + 1))}"
            f"              {_num(_at(span['speedup_estimate'], i + 1))}" + (f"      {_num(_at(beside, i))}" if beside else "")
        )
    return lines


def _earlier_lines(s: dict[str, Any]) -> list[str]:
    periods, undated = s.get("earlier_periods") or [], s.get("year_known") is False
    lines = ["  earlier periods (newest first):"] if periods else []
    for p in periods:
        config = f"{p['method'] or '?'}, k = {p['num_speculative_tokens'] or '?'}"
        lines.append(
            f"    {_utc(p['start'], undated)} → {_utc(p['end'], undated)}  {p['health'] or '?':<8}  began by {p['began_by'].replace('_', ' ')}  {config}  "
            f"drafts {_num(p['drafts'], 'd')}  L = {_num(p['mean_acceptance_length'])}  position 0 {_num(p['position0_acceptance'])}"
        )
    return lines


def _zone_line(report: dict[str, Any], s: dict[str, Any]) -> list[str]:
    """The zone the log's stamps were read in, and where it comes from (times below are UTC)."""
    zone = next((source.get("log_zone") for source in report.get("sources", ()) if source["upstream"] == s["upstream"]), None)
    if not zone or not zone.get("why"):
        return []
    offset = zone["utc_offset_seconds"]
    if offset is None:
        named = zone["zone"]
    else:
        minutes = int(abs(offset)) // 60
        named = f"{zone['zone']}, UTC{'+' if offset >= 0 else '-'}{minutes // 60:02d}:{minutes % 60:02d}"
    return [f"  the log's stamps read in {named}: {zone['why']}"]


NO_SPEC_LINES = (
    "vLLM prints `SpecDecoding metrics:` with its stats every 10 s, and only while it drafts: speculative decoding configured "
    "(--speculative-config), traffic flowing, stats logging on (not --disable-log-stats; vLLM turns it off with "
    "--api-server-count > 1); SGLang prints `accept len` in its `Decode batch` lines"
)


def nothing_to_report(report: dict[str, Any]) -> str | None:
    """Why a report holds no series and no sampled values, in words (None where it holds some)."""
    if report["series"] or report["sampled"]:
        return None
    if not report["lines_read"]:
        empty = [source["upstream"] for source in report.get("sources", ()) if not source["lines_read"]]
        return f"nothing to report: {', '.join(empty) or 'the input'} {'is' if len(empty) <= 1 else 'are'} empty (no line was read)"
    if not report["spec_lines"]:
        return f"nothing to report: {report['lines_read']} lines read, none a speculative-decoding line. {NO_SPEC_LINES}"
    # never "none found" above a count of spec lines: say what became of the ones read
    return f"{report['spec_lines']} speculative-decoding lines read, none with counts to report (see the parse errors)"


def render_table(report: dict[str, Any]) -> str:
    """A per-series, per-position table for a terminal: what is true now first, then the past."""
    out: list[str] = []
    for s in report["series"]:
        out.append(f"{s['model_name']} · engine {s['engine']} · {s['upstream']}  ({s['format'] or '?'}, {s['lines']} spec lines)")
        config = [f"method {s['method'] or '?'}", f"k = {s['num_speculative_tokens'] or '?'}"]
        if s["draft_model"]:
            config.append(f"draft model {s['draft_model']}")
        if s["server_version"]:
            config.append(f"vLLM {s['server_version']}")
        out.append("  " + ", ".join(config))
        out.extend(_zone_line(report, s))
        out.extend(_period_lines(s))
        out.extend(_memory_lines(s))
        out.extend(_earlier_lines(s))
        bounds = s["drafts_bounds"]
        exact = "" if bounds is None else " (exact)" if bounds[0] == bounds[1] else f" (true value in {bounds[0]}…{bounds[1]})"
        out.append(f"  {s['window']} (everything read, pooled){exact}:" if s.get("current_period") else f"  {s['window']}{exact}:")
        out.extend(_numbers(s, "    "))
        if s.get("current_period"):
            out.append(f"    recommended k over the {s['window']} = {_num(s['recommended_speculative_tokens'], 'd')}")
        out.extend(f"  note: {note}" for note in s["notes"])
        out.extend(_run_lines(s))
        out.append(f"  speed-up model: {s['cost_model']}")
        out.extend(payoff_lines(s))
        histogram = (s.get("current_period") or s)["acceptance_length_histogram"]
        if histogram is not None:
            out.append("  accepted exactly j of the drafted tokens: " + "  ".join(f"{j}: {100 * h:.1f}%" for j, h in enumerate(histogram)))
        out.extend(_positions_table(s))
        out.append("")
    out.extend(_sampled_lines(report))
    if not report["series"] and not report["sampled"]:
        out.append(nothing_to_report(report) or "nothing to report")
    errors = report["parse_errors"]
    listed = ", ".join(f"{reason} {count}" for reason, count in errors.items()) or "none"
    out.append(f"lines read {report['lines_read']}   spec lines {report['spec_lines']}   parse errors: {listed}")
    return "\n".join(out) + "\n"


def render_csv(report: dict[str, Any]) -> str:
    """One row per series and position (series columns repeated), for spreadsheets."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in report["series"]:
        now = s.get("current_period") or {**s, "start": None, "began_by": None, "recommendation_from": None}
        live = s.get("live") or s
        head = [now[_PERIOD[name]] if name in _PERIOD else live["health"] if name == "live_health" else s[_LIFETIME.get(name, name)]
                for name in CSV_COLUMNS[:SERIES_COLUMNS]]
        histogram = head[CSV_COLUMNS.index("acceptance_length_histogram")]  # h_0..h_k in one cell: k + 1 values against k position rows
        head[CSV_COLUMNS.index("acceptance_length_histogram")] = None if histogram is None else ";".join(f"{h:.6f}" for h in histogram)
        positions = now["position_acceptance"] or [None]
        for i, rate in enumerate(positions):
            tail = [i, _at(now["accepted_per_position"], i), rate, _at(now["conditional_acceptance"], i)] if rate is not None else ["", "", "", ""]
            writer.writerow(["" if v is None else v for v in head + tail])
    return buffer.getvalue()
