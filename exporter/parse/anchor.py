"""Where a vLLM record may begin: after the logger's prefix, never inside another record's message.

vLLM's logger writes `{VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s`
(vllm/logger.py:22-25 in 0.24.0, the same through 0.34), and the spec line is its own record whose
message begins with `SpecDecoding metrics: ` (vllm/v1/spec_decode/metrics.py:120-128, logged by
vllm/v1/metrics/loggers.py:223,278). A user's text reaches the log only inside another record's
message: with `--enable-log-requests` the request logger writes the prompt and, with
`--enable-log-outputs`, the output as Python reprs (`prompt: %r`, `output: %r`:
vllm/entrypoints/serve/utils/request_logger.py:53-61 and 92-100 in 0.24.0) — in quotes, with their
own quote character escaped, so a quoted string cannot end early. So:

  * a second record inside a physical line (two records collapsed by a shipper) starts only
    outside every quoted string of the text before it (`unquoted`): a spec line pasted into a prompt
    is part of the prompt, not a record;
  * a message's own newlines are written as `\\r\\n` followed by the record's whole prefix again
    (NewLineFormatter, vllm/logging_utils/formatter.py:71-75 in 0.24.0): a physical line that follows a
    line ending in `\\r` and repeats its prefix continues that record (`continues`) — never a spec,
    engine or config record of its own. vLLM's own multi-line record of this kind is the startup
    logo, whose `version` line is still read (vllm/entrypoints/serve/utils/api_utils.py:317-336).
"""

from __future__ import annotations

import re

_QUOTE_OR_ESCAPE = re.compile(r"[\\'\"]")
_OPENS_AFTER = frozenset(" \t([{=,:")  # where a repr's quoted string can begin (not an apostrophe in a word)
# the prefix a continuation line repeats: process prefix, free VLLM_LOGGING_PREFIX text, level, stamp, [file:line]
_PREFIX = re.compile(r"^.*?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? +\[?[^\s\[\]]+?:\d+\] ")


def unquoted(text: str, positions: list[int]) -> list[int]:
    """The positions that lie outside every quoted string of `text`, read as Python reprs are written:
    a quote opens a string where a value starts (after a space, `(`, `[`, `{`, `=`, `,` or `:`), a
    backslash escapes the next character, and only the same quote closes it."""
    if not positions:
        return []
    inside: list[tuple[int, int]] = []  # the quoted spans [start, end)
    quote, start, escaped_at = "", 0, -1
    for match in _QUOTE_OR_ESCAPE.finditer(text):
        at, char = match.start(), match[0]
        if quote:
            if at == escaped_at:
                continue
            if char == "\\":
                escaped_at = at + 1
            elif char == quote:
                inside.append((start, at + 1))
                quote = ""
        elif char != "\\" and (at == 0 or text[at - 1] in _OPENS_AFTER):
            quote, start = char, at
    if quote:
        inside.append((start, len(text)))  # a string that never closes runs to the end of the line
    return [position for position in positions if not any(low < position < high for low, high in inside)]


def continues(previous: str, line: str) -> bool:
    """Does `line` continue the record of `previous` (a message's newline, NewLineFormatter)? The caller
    saw `previous` end with `\\r` (its first bytes suffice here); `line` starts with its prefix, the
    process prefix included (both without colour)."""
    prefix = _PREFIX.match(previous)
    return prefix is not None and line.startswith(prefix[0])
