#!/usr/bin/env bash
# On the lent GPU host, after ../shared/gpu-vllm's install_offline.sh and build_models.py: run vLLM
# 0.24.0 with n-gram speculative decoding under load, with our stat-logger plugin writing records and
# the sidecar reading the plugin records, the log and /metrics at once. Everything lands in $OUT.
# Usage: OUT=<dir> bash scripts/gpu-plugin-capture.sh [RUN ...]   (RUN: ngram, draft_noisy, draft_random)
set -uo pipefail
OUT=${OUT:?set OUT}
K=/tmp/stage/kit
export PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site
export CAPTURE_WORK=/tmp/capture-work CAPTURE_OUT=$OUT
export SIDECAR_CMD="bash $(cd "$(dirname "$0")" && pwd)/gpu-sidecar.sh"
for RUN in "${@:-ngram}"; do
  export SPECDECODE_PLUGIN_DIR=$CAPTURE_WORK/$RUN/plugin
  bash "$K/run_capture.sh" "$RUN"
done
ls -la "$OUT"
