"""Render an analyze report as a human table or as CSV (JSON is the report itself)."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

CSV_COLUMNS = (
    "upstream", "model_name", "engine", "format", "lines", "drafts", "draft_tokens", "accepted_tokens",
    "mean_acceptance_length", "draft_acceptance_ratio", "num_speculative_tokens",
    "recommended_speculative_tokens", "health", "health_since", "acceptance_length_histogram", "position", "accepted",
    "position_acceptance", "conditional_acceptance",
)
SERIES_COLUMNS = CSV_COLUMNS.index("position")  # the columns before it are the series', repeated on each row


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
        lines.append(
            f"  reference L = {_num(reference['mean_acceptance_length'])} (position 0 {_num(_at(reference['position_acceptance'], 0))}) "
            f"from {reference['drafts']} healthy drafts, {_utc(reference['start'], undated)} – {_utc(reference['end'], undated)}; {state}"
        )
    lines.extend(
        f"  earlier reference (method {old['method'] or '?'}, k = {old['num_speculative_tokens'] or '?'}): "
        f"L = {_num(old['mean_acceptance_length'])}, retired ({old['retired'].replace('_', ' ')}) {_utc(old['retired_at'], undated)}"
        for old in s.get("previous_references", [])
    )
    for span in s.get("unhealthy_spans", []):
        stop = span["end"] if span["end"] is not None else end
        until = "the log's end" if span["ongoing"] else _utc(span["end"], undated)
        length = f" ({_hours(stop - span['start'])})" if stop is not None else ""
        lines.append(f"  {span['worst']}: {_utc(span['start'], undated)} → {until}{length}")
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


def render_table(report: dict[str, Any]) -> str:
    """A per-series, per-position table for a terminal."""
    out: list[str] = []
    for s in report["series"]:
        out.append(f"{s['model_name']} · engine {s['engine']} · {s['upstream']}  ({s['format'] or '?'}, {s['lines']} spec lines)")
        config = [f"method {s['method'] or '?'}", f"k = {s['num_speculative_tokens'] or '?'}"]
        if s["draft_model"]:
            config.append(f"draft model {s['draft_model']}")
        if s["server_version"]:
            config.append(f"vLLM {s['server_version']}")
        out.append("  " + ", ".join(config))
        bounds = s["drafts_bounds"]
        exact = "" if bounds is None else " (exact)" if bounds[0] == bounds[1] else f" (true value in {bounds[0]}…{bounds[1]})"
        out.append(
            f"  drafts {_num(s['drafts'], 'd')}{exact}   draft tokens {s['draft_tokens']}   "
            f"accepted {s['accepted_tokens']}   wasted {s['wasted_draft_tokens']}"
        )
        ratio = s["draft_acceptance_ratio"]
        out.append(
            f"  mean acceptance length L = {_num(s['mean_acceptance_length'])}   "
            f"draft acceptance α = {'—' if ratio is None else f'{100 * ratio:.1f}%'}   "
            f"mean draft length {_num(s['mean_draft_length'], '.2f')}"
        )
        out.append(f"  recommended k = {_num(s['recommended_speculative_tokens'], 'd')}   verdict: {s['health']} — {s['reason']}")
        out.extend(f"  note: {note}" for note in s["notes"])
        out.extend(_run_lines(s))
        out.extend(_memory_lines(s))
        out.append(f"  speed-up model: {s['cost_model']}")
        histogram = s["acceptance_length_histogram"]
        if histogram is not None:
            out.append("  accepted exactly j of the drafted tokens: " + "  ".join(f"{j}: {100 * h:.1f}%" for j, h in enumerate(histogram)))
        if s["position_acceptance"]:
            out.append("")
            out.append("    pos  accepted   rate  conditional   E(k'=pos+1)  speed-up(k'=pos+1)")
            for i, rate in enumerate(s["position_acceptance"]):
                out.append(
                    f"  {i:>5}  {_at(s['accepted_per_position'], i) or 0:>8}  {rate:.3f}"
                    f"        {_num(_at(s['conditional_acceptance'], i))}        {_num(_at(s['expected_tokens_per_step'], i + 1))}"
                    f"              {_num(_at(s['speedup_estimate'], i + 1))}"
                )
        out.append("")
    out.extend(_sampled_lines(report))
    if not report["series"] and not report["sampled"]:
        # never "none found" above a count of spec lines: say what became of the ones read
        out.append("no speculative-decoding lines found" if not report["spec_lines"] else
                   f"{report['spec_lines']} speculative-decoding lines read, none with counts to report (see the parse errors)")
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
        head = [s[name] for name in CSV_COLUMNS[:SERIES_COLUMNS]]
        histogram = s["acceptance_length_histogram"]  # h_0..h_k in one cell: k + 1 values against k position rows
        head[CSV_COLUMNS.index("acceptance_length_histogram")] = None if histogram is None else ";".join(f"{h:.6f}" for h in histogram)
        positions = s["position_acceptance"] or [None]
        for i, rate in enumerate(positions):
            tail = [i, _at(s["accepted_per_position"], i), rate, _at(s["conditional_acceptance"], i)] if rate is not None else ["", "", "", ""]
            writer.writerow(["" if v is None else v for v in head + tail])
    return buffer.getvalue()
