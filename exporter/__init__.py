"""specdecode-exporter: is speculative decoding paying off? Metrics, verdicts and advice from vLLM.

The data path (DESIGN.md): sources → parse → Interval records → windows → derive → export.
"""

from __future__ import annotations

from exporter.derive import Derived, derive
from exporter.log_intervals import LogInterpreter
from exporter.parse.envelope import parse_envelope
from exporter.parse.vllm_log import SpecLineError, parse_config_message, parse_engine_marker, parse_spec_message
from exporter.reconstruct import Reconstruction, reconstruct
from exporter.records import EngineMarker, Interval, LogEnvelope, ParsedSpecLine, RawLine, SeriesKey, SpecConfig
from exporter.verdict import HealthThresholds, verdict
from exporter.window import RollingWindow, Totals

__version__ = "0.1.0"

__all__ = [
    "Derived",
    "EngineMarker",
    "HealthThresholds",
    "Interval",
    "LogEnvelope",
    "LogInterpreter",
    "ParsedSpecLine",
    "RawLine",
    "Reconstruction",
    "RollingWindow",
    "SeriesKey",
    "SpecConfig",
    "SpecLineError",
    "Totals",
    "__version__",
    "derive",
    "parse_config_message",
    "parse_engine_marker",
    "parse_envelope",
    "parse_spec_message",
    "reconstruct",
    "verdict",
]
