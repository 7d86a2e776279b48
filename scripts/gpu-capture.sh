#!/usr/bin/env bash
# On the lent GPU host, after install_offline.sh (with the specdecode-exporter wheel as an extra
# wheel) and build_models.py: run `vllm serve` with speculative decoding under load, with our
# stat-logger plugin writing records, vLLM's per-step `Iteration(N)` log lines switched on where the
# version has them, and the sidecar (gpu-sidecar.sh) reading the plugin records, the log and
# /metrics of the same server at once. Generalises gpu-plugin-capture.sh (vLLM 0.24.0) to any
# staged version; gpu-stage-vllm.sh puts it into the last piece's kit/, beside run_capture.sh.
# Usage: OUT=<dir> bash gpu-capture.sh [RUN ...]   (RUN: ngram, draft_noisy, draft_random; default
#        draft_noisy ngram). Environment: DURATION (60 s of load per run), MAX_START_S (300: a run
#        that would start later is skipped, so the command ends inside the host's 10-minute limit),
#        ITERATION_DETAILS (1: pass --enable-logging-iteration-details when `vllm serve` knows it).
# Writes into $OUT: RUN.tar.gz per run (run_capture.sh's folder: server.log, metrics/, plugin/,
# load.jsonl, sidecar-*, ...), run_capture.log, versions.txt (vLLM, torch, our wheel, the GPU).
set -uo pipefail
OUT=${OUT:?set OUT}
KIT=$(cd "$(dirname "$0")" && pwd)
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
export CAPTURE_WORK=/tmp/capture-work CAPTURE_OUT=$OUT
export SIDECAR_CMD="bash $KIT/gpu-sidecar.sh"
export DURATION=${DURATION:-60} MAX_START_S=${MAX_START_S:-300} T_BEGIN=${T_BEGIN:-$(date +%s)}
mkdir -p "$OUT"
{
  echo "date: $(date -u +%FT%TZ)"
  python3 - <<'PY'
import importlib.metadata as md, platform, sys
print("python:", sys.version.split()[0], platform.platform())
for dist in ("vllm", "torch", "transformers", "tokenizers", "xgrammar", "apache-tvm-ffi", "pydantic",
             "fastapi", "uvicorn", "prometheus_client", "specdecode-exporter"):
    try:
        print(f"{dist}: {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"{dist}: not installed")
import torch
print("torch.version.cuda:", torch.version.cuda, "cuda available:", torch.cuda.is_available())
eps = md.entry_points(group="vllm.stat_logger_plugins")
print("vllm.stat_logger_plugins:", ", ".join(f"{e.name} -> {e.value}" for e in eps) or "none")
PY
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
  nvidia-smi 2>&1 | sed -n '1,12p'
} > "$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"
EXTRA=
if [ "${ITERATION_DETAILS:-1}" = 1 ]; then
  if grep -rqs enable_logging_iteration_details /tmp/site/vllm/engine/arg_utils.py; then  # faster than importing vllm
    EXTRA=--enable-logging-iteration-details
  else
    echo "this vllm has no --enable-logging-iteration-details" | tee -a "$OUT/versions.txt"
  fi
fi
export EXTRA_SERVE_ARGS="${EXTRA_SERVE_ARGS:-} $EXTRA"
[ $# -gt 0 ] || set -- draft_noisy ngram
for RUN in "$@"; do
  export SPECDECODE_PLUGIN_DIR=$CAPTURE_WORK/$RUN/plugin
  bash "$KIT/run_capture.sh" "$RUN"
done
ls -la "$OUT"
