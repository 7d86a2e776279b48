"""specdecode-exporter: is speculative decoding paying off? Metrics, verdicts and advice from vLLM.

The data path, one package a stage (docs/architecture.md):
sources → parse → intervals → state → judge → expose | report, wired together by cli.

The names below are the library's public face. They load on first use, so importing one stage
(the vLLM plugin inside vLLM's API server, say) does not import every other.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "Derived": "exporter.judge.derive",
    "derive": "exporter.judge.derive",
    "LogInterpreter": "exporter.intervals.from_log",
    "parse_envelope": "exporter.parse.envelope",
    "SpecLineError": "exporter.parse.vllm_log",
    "parse_config_message": "exporter.parse.vllm_log",
    "parse_engine_marker": "exporter.parse.vllm_log",
    "parse_spec_message": "exporter.parse.vllm_log",
    "Reconstruction": "exporter.intervals.reconstruct",
    "reconstruct": "exporter.intervals.reconstruct",
    "EngineMarker": "exporter.records",
    "Interval": "exporter.records",
    "LogEnvelope": "exporter.records",
    "ParsedSpecLine": "exporter.records",
    "RawLine": "exporter.records",
    "SeriesKey": "exporter.records",
    "SpecConfig": "exporter.records",
    "HealthThresholds": "exporter.config",
    "judge": "exporter.judge.verdict",
    "Verdict": "exporter.judge.verdict",
    "RollingWindow": "exporter.state.window",
    "Totals": "exporter.state.window",
}

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'exporter' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
