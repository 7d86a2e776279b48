"""Label values that come from input (paths, model names) are capped and cleaned before export.

prometheus_client escapes backslashes, quotes and newlines; what it cannot bound is length, and a
label value from a log line must never blow up a series' size.
"""

from __future__ import annotations

MAX_LABEL_LENGTH = 200


def clean(value: str, limit: int = MAX_LABEL_LENGTH) -> str:
    """Drop control characters and cap the length (marking the cut with …)."""
    if not value.isprintable():
        value = "".join(ch if ch.isprintable() else "?" for ch in value)
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return value
