"""Render an analyze report as a human table or as CSV (JSON is the report itself)."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

CSV_COLUMNS = (
    "upstream", "model_name", "engine", "format", "lines", "drafts", "draft_tokens", "accepted_tokens",
    "mean_acceptance_length", "draft_acceptance_ratio", "num_speculative_tokens",
    "recommended_speculative_tokens", "health", "health_since", "position", "accepted", "position_acceptance",
    "conditional_acceptance",
)


def _num(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _at(values: list[Any] | None, index: int) -> Any:
    return values[index] if values is not None and index < len(values) else None


def _utc(at: float | None) -> str:
    return "?" if at is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _memory_lines(s: dict[str, Any]) -> list[str]:
    """Since when the verdict holds, the reference it is judged against, and the unhealthy spans."""
    lines = []
    end = s["end"]
    if s.get("health_since") is not None:
        held = f" ({_hours(end - s['health_since'])} before the log's end)" if end is not None else ""
        lines.append(f"  {s['health']} since {_utc(s['health_since'])}{held}")
    reference = s.get("reference")
    if reference and reference["drafts"]:
        state = "judging" if reference["ready"] else f"learning, {reference['drafts']} of {reference['min_drafts']} drafts"
        state += " (the best day within the hold)" if reference.get("best_day") else ""
        lines.append(
            f"  reference L = {_num(reference['mean_acceptance_length'])} (position 0 {_num(_at(reference['position_acceptance'], 0))}) "
            f"from {reference['drafts']} healthy drafts, {_utc(reference['start'])} – {_utc(reference['end'])}; {state}"
        )
    lines.extend(
        f"  earlier reference (method {old['method'] or '?'}, k = {old['num_speculative_tokens'] or '?'}): "
        f"L = {_num(old['mean_acceptance_length'])}, retired ({old['retired'].replace('_', ' ')}) {_utc(old['retired_at'])}"
        for old in s.get("previous_references", [])
    )
    for span in s.get("unhealthy_spans", []):
        stop = span["end"] if span["end"] is not None else end
        until = "the log's end" if span["ongoing"] else _utc(span["end"])
        length = f" ({_hours(stop - span['start'])})" if stop is not None else ""
        lines.append(f"  {span['worst']}: {_utc(span['start'])} → {until}{length}")
    return lines


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
        out.extend(_memory_lines(s))
        out.append(f"  speed-up model: {s['cost_model']}")
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
    if not report["series"]:
        out.append("no speculative-decoding lines found")
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
        head = [s[name] for name in CSV_COLUMNS[:14]]
        positions = s["position_acceptance"] or [None]
        for i, rate in enumerate(positions):
            tail = [i, _at(s["accepted_per_position"], i), rate, _at(s["conditional_acceptance"], i)] if rate is not None else ["", "", "", ""]
            writer.writerow(["" if v is None else v for v in head + tail])
    return buffer.getvalue()
