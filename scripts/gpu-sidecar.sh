#!/usr/bin/env bash
# The sidecar beside one vLLM server on the GPU host (run by run_capture.sh as SIDECAR_CMD, which sets
# RUN_DIR, SERVER_LOG and VLLM_URL): the plugin records, the log and /metrics of the same server at once;
# its status and /metrics are saved into $RUN_DIR every 2 s, so the last save survives the SIGTERM.
specdecode-exporter --log-level info serve --listen 127.0.0.1:9847 --log "$SERVER_LOG" --target "$VLLM_URL/metrics" \
  --vllm-plugin-dir "$RUN_DIR/plugin" --from-start --scrape-interval 2 --window 1m,5m,1h --health-window 1m &
SIDECAR=$!
trap 'kill $SIDECAR; wait $SIDECAR; exit 0' TERM
save() {
  python3 - "$1" "$2" <<'PY'
import os, sys, urllib.request
body = urllib.request.urlopen(sys.argv[1], timeout=5).read()
with open(sys.argv[2] + ".tmp", "wb") as out:
    out.write(body)
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
PY
}
while kill -0 $SIDECAR 2>/dev/null; do
  sleep 2
  save http://127.0.0.1:9847/api/v1/status "$RUN_DIR/sidecar-status.json" 2>/dev/null
  save http://127.0.0.1:9847/metrics "$RUN_DIR/sidecar-metrics.prom" 2>/dev/null
done
