"""The stat logger vLLM loads: `vllm.stat_logger_plugins` entry point `specdecode_exporter`.

vLLM (≥ 0.24) creates one per engine in the API-server process (`AsyncLLM`) and calls
`record()` after every scheduler step — also with `--disable-log-stats`, where `log()` is never
called, so nothing here depends on `log()`. `record()` only adds the step's counts under a lock
(O(k), no I/O, no allocation on the common path); the process's RecordWriter thread writes.

Enabled by SPECDECODE_PLUGIN_DIR (the directory for the records); without it the plugin says so
once and does nothing. SPECDECODE_PLUGIN_INTERVAL (seconds, default 1) and
SPECDECODE_PLUGIN_MAX_BYTES (default 16 MiB) tune it.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from vllm.v1.metrics.loggers import StatLoggerBase

from exporter.plugin.writer import (
    DEFAULT_INTERVAL,
    DEFAULT_MAX_BYTES,
    DIR_ENV,
    INTERVAL_ENV,
    MAX_BYTES_ENV,
    EngineSlot,
    RecordWriter,
)

log = logging.getLogger("specdecode_exporter.plugin")

_writer: RecordWriter | None = None
_writer_lock = threading.Lock()


def _setting(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
        return value if value > 0 else default
    except ValueError:
        log.warning("specdecode-exporter plugin: %s=%r is not a number, using %s", name, os.environ.get(name), default)
        return default


def _attr(obj: Any, *names: str) -> Any:
    for name in names:
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def describe(vllm_config: Any) -> dict[str, Any]:
    """The config record's fields, read defensively: VllmConfig is not a stable interface."""
    import vllm

    spec = _attr(vllm_config, "speculative_config")
    served = _attr(vllm_config, "model_config", "served_model_name")
    if isinstance(served, (list, tuple)):
        served = served[0] if served else None
    draft = _attr(spec, "model")
    return {
        "vllm_version": getattr(vllm, "__version__", None),
        "model_name": served if isinstance(served, str) else None,
        "model": _text(_attr(vllm_config, "model_config", "model")),
        "method": _text(_attr(spec, "method")),
        "num_speculative_tokens": _int(_attr(spec, "num_speculative_tokens")),
        "draft_model": _text(draft),
        "draft_tensor_parallel_size": _int(_attr(spec, "draft_tensor_parallel_size")),
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _shared_writer(config: dict[str, Any]) -> RecordWriter | None:
    """The process's writer, started (with its config record) by the first engine's logger."""
    global _writer
    directory = os.environ.get(DIR_ENV)
    if not directory:
        return None
    with _writer_lock:
        if _writer is None:
            writer = RecordWriter(directory, _setting(INTERVAL_ENV, DEFAULT_INTERVAL), int(_setting(MAX_BYTES_ENV, DEFAULT_MAX_BYTES)))
            writer.start(config)
            log.info("specdecode-exporter plugin: writing spec-decode records to %s every %ss", writer.path, writer.interval)
            _writer = writer
        return _writer


class SpecDecodeStatLogger(StatLoggerBase):  # type: ignore[misc]  # vLLM (and its types) exist only inside vLLM
    """Per-engine: accumulates each step's exact spec-decode counts for the record writer."""

    def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
        self.writer: RecordWriter | None = None
        self.slot: EngineSlot | None = None
        try:
            config = describe(vllm_config)  # read once: the writer's config record and this engine's model name
            self.writer = _shared_writer(config)
            if self.writer is None:
                log.info("specdecode-exporter plugin: %s is not set; not recording (engine %d)", DIR_ENV, engine_index)
                return
            self.slot = EngineSlot(engine_index, config.get("model_name") or "")
            self.writer.register(self.slot)
        except Exception as error:
            self.slot = None
            if self.writer is not None:
                self.writer.failed(error)
            else:
                log.warning("specdecode-exporter plugin disabled: %s: %s", type(error).__name__, error)

    def record(self, scheduler_stats: Any, iteration_stats: Any, mm_cache_stats: Any = None, engine_idx: int = 0) -> None:
        slot = self.slot
        if slot is None or scheduler_stats is None:
            return
        stats = scheduler_stats.spec_decoding_stats
        if stats is None:  # a step without drafts
            return
        try:
            with slot.lock:
                slot.accumulator.add(
                    stats.num_drafts, stats.num_draft_tokens, stats.num_accepted_tokens,
                    stats.num_accepted_tokens_per_pos, stats.num_draft_tokens_per_pos,
                )
        except Exception as error:  # an attribute renamed in a newer vLLM: count it, never raise
            assert self.writer is not None
            self.writer.failed(error)

    def log_engine_initialized(self) -> None:
        pass
