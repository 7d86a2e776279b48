"""Run inside a virtual environment that holds the real vllm package: load our plugin the way vLLM
does and feed it vLLM's own stats objects. Prints one JSON document for tests/test_plugin_in_vllm.py."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import vllm
from vllm.config import ModelConfig, SpeculativeConfig, VllmConfig
from vllm.v1.metrics.loggers import (
    AggregateStatLoggerBase,
    PerEngineStatLoggerAdapter,
    StatLoggerBase,
    load_stat_logger_plugin_factories,
)
from vllm.v1.metrics.stats import SchedulerStats
from vllm.v1.spec_decode.metrics import SpecDecodingStats

directory = Path(sys.argv[1])
os.environ["SPECDECODE_PLUGIN_DIR"] = str(directory)
os.environ["SPECDECODE_PLUGIN_INTERVAL"] = "3600"  # intervals are closed below, not by the clock

factories = load_stat_logger_plugin_factories()  # vLLM's own loader: entry point group vllm.stat_logger_plugins
(factory,) = [f for f in factories if f.__module__ == "exporter.plugin.stat_logger"]
assert issubclass(factory, StatLoggerBase)

# A VllmConfig needs a model directory it can inspect; the plugin reads four attributes, so a
# stand-in with those names is used — after checking that the real classes have them.
fields = {cls: {f.name for f in dataclasses.fields(cls)} for cls in (VllmConfig, ModelConfig, SpeculativeConfig)}
assert {"model_config", "speculative_config"} <= fields[VllmConfig]
assert {"served_model_name", "model"} <= fields[ModelConfig]
assert {"method", "num_speculative_tokens", "model", "draft_tensor_parallel_size"} <= fields[SpeculativeConfig]
config = SimpleNamespace(
    model_config=SimpleNamespace(served_model_name="tiny", model="/models/tiny"),
    speculative_config=SimpleNamespace(method="ngram", num_speculative_tokens=3, model="ngram", draft_tensor_parallel_size=None),
)

# what vLLM does with a per-engine plugin class: one instance per engine, behind its adapter
adapter = PerEngineStatLoggerAdapter(vllm_config=config, engine_indexes=[0, 1], per_engine_stat_logger_factory=factory)
steps = [  # (engine, [(draft tokens, accepted) per draft]) of scheduler steps
    (0, [(3, 2), (3, 0), (2, 2)]),
    (1, [(3, 3)]),
    (0, []),  # a step without drafts: spec_decoding_stats is None
    (0, [(1, 1), (3, 1)]),
]
for engine, drafts in steps:
    stats = None
    if drafts:
        stats = SpecDecodingStats.new(3)
        for draft_tokens, accepted in drafts:
            stats.observe_draft(num_draft_tokens=draft_tokens, num_accepted_tokens=accepted)
    adapter.record(SchedulerStats(spec_decoding_stats=stats), None, engine_idx=engine)
adapter.record(None, None, engine_idx=1)  # vLLM also calls with no scheduler stats
# vLLM ≥ 0.32 calls this on every stat logger when it turns a request away (loggers.py:108)
admission = hasattr(AggregateStatLoggerBase, "record_admission_rejection")
if admission:
    adapter.record_admission_rejection("max_num_queued_reqs")
adapter.log()
adapter.log_engine_initialized()

from exporter.plugin import stat_logger  # noqa: E402

assert stat_logger._writer is not None
stat_logger._writer.close()  # what atexit does when vLLM shuts down
records = [json.loads(line) for path in sorted(directory.glob("*.jsonl")) for line in path.read_text().splitlines()]
import torch  # noqa: E402

print(json.dumps({
    "vllm": vllm.__version__, "torch": torch.__version__, "admission_rejection": admission,
    "factories": [f"{f.__module__}:{f.__qualname__}" for f in factories], "records": records,
}))
