#!/usr/bin/env bash
# The load ladder (issue #31): a real vLLM on the GPU host, plain decoding and speculation at several
# k, each under a closed-loop concurrency ladder 1 … 256 — the ground truth of the pay-off estimate —
# with the sidecar, Prometheus and Alertmanager watching the speculative runs, so the pay-off alert
# reaches Alertmanager's webhook live. Runs after install_offline.sh (vLLM + our wheel); builds the
# models itself unless they are there (build_models.py). Start it detached, it outlives its caller:
#   WORK=/tmp/ladder PKG=<folder with prometheus_*.deb, prometheus-alertmanager_*.deb> REPO=<checkout> \
#   setsid bash ladder.sh > /tmp/ladder.out 2>&1 &
# progress goes to $WORK/progress.log; $WORK/DONE when it is over.
#
# Runs (RUNS, default "plain k2 k4 k8"): `plain` has no --speculative-config; `kN` drafts N tokens
# with the 2-layer draft model (method draft_model). Each: launch, /health, the ladder
# (ladder_load.py: LEVELS, LEVEL_SECONDS each, GAP between), a drained /metrics snapshot, SIGINT.
# After `plain`: `specdecode-exporter calibrate plain/server.log --out calibration.json`, then the
# stack starts (as scripts/gpu-incident/incident.sh runs it): webhook.py, Debian's Alertmanager with
# deploy/alertmanager/alertmanager.yml, Debian's Prometheus scraping vLLM and the sidecar every 5 s
# with the production rules and the alerts generated from the mixin, SpecDecodeSlowerThanPlain's
# `for:` 15m → SLOWER_FOR and the judged window 5m → 1m (the sidecar's --health-window), and the
# sidecar on $WORK/k*/server.log and vLLM's /metrics with --calibration. The last speculative run
# (HOLD_RUN) ends with a hold at HOLD_HIGH_C requests for HOLD_HIGH_S s and HOLD_LOW_C for HOLD_LOW_S
# (hold.jsonl, not part of the ladder) so the alert has the time to fire and to resolve.
# CALIBRATION=<calibration.json of an earlier plain ladder> with RUNS of speculative runs only: the
# stack starts first, with that calibration (a lease lost after `plain` and `k2` is finished so).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/ladder}; PKG=${PKG:?folder of the Debian packages}; REPO=${REPO:?repository checkout}
KIT=${KIT:-/tmp/stage/kit}; MODELS=${MODELS:-/tmp/models}; SITE=${SITE_DIR:-/tmp/site}
RUNS=${RUNS:-plain k2 k4 k8}; LEVELS=${LEVELS:-1,2,4,8,16,32,64,128,256}
LEVEL_SECONDS=${LEVEL_SECONDS:-10}; GAP=${GAP:-2.5}; STATS_INTERVAL=${STATS_INTERVAL:-2}; MAX_TOKENS=${MAX_TOKENS:-128}
HOLD_RUN=${HOLD_RUN:-k8}; HOLD_HIGH_C=${HOLD_HIGH_C:-256}; HOLD_HIGH_S=${HOLD_HIGH_S:-75}; HOLD_LOW_C=${HOLD_LOW_C:-2}; HOLD_LOW_S=${HOLD_LOW_S:-25}
SLOWER_FOR=${SLOWER_FOR:-20s}; JUDGED=${JUDGED:-1m}; HEALTH_MAX_S=${HEALTH_MAX_S:-420}
GPU_UTIL=${GPU_UTIL:-0.85}; MAX_NUM_SEQS=${MAX_NUM_SEQS:-256}; MAX_MODEL_LEN=${MAX_MODEL_LEN:-2048}
export PATH=$SITE/bin:$PATH PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export VLLM_USE_FLASHINFER_SAMPLER=0   # else the sampler probes flashinfer, which the stage lacks
export VLLM_LOG_STATS_INTERVAL=$STATS_INTERVAL
URL=http://127.0.0.1:8000
mkdir -p "$WORK"/{pkg,config,prometheus-data,alertmanager-data,sidecar-state}
cd "$WORK" || exit 1
say() { echo "[$(date -u +%T)] $*" | tee -a "$WORK/progress.log"; }
event() { echo "{\"event\": \"$1\", \"run\": \"${2:-}\", \"epoch\": $(date +%s.%N)}" >> "$WORK/events.jsonl"; }
up() { python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "$1" 2>/dev/null; }
wait_up() { local i; for i in $(seq 1 "$2"); do up "$1" && return 0; sleep 1; done; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv > gpu.txt 2>&1

# --- the models ------------------------------------------------------------------------------
for i in $(seq 1 600); do [ -f "$MODELS/ladder-build.json" ] && break; [ -f "$MODELS/BUILDING" ] || break; sleep 1; done
if [ ! -f "$MODELS/ladder-build.json" ]; then
  say "building the models"
  TOKENIZER=$KIT/tokenizer python3 "$HERE/build_models.py" --out "$MODELS" >> build_models.out 2>&1 || { say "build_models failed"; tail -5 build_models.out; touch DONE; exit 2; }
fi
cp "$MODELS/ladder-build.json" .
say "models: $(python3 -c "import json; b=json.load(open('ladder-build.json')); print(b['target_parameters'], 'and', b['draft_parameters'], 'parameters; chosen', b['chosen'])")"

# --- the stack (started after the plain run's calibration) ----------------------------------
source "$HERE/../gpu-incident/host.sh"
start_stack() {
  for deb in "$PKG"/prometheus_*.deb "$PKG"/prometheus-alertmanager_*.deb; do undeb "$deb" "$WORK/pkg"; done
  local prom=$WORK/pkg/usr/bin/prometheus am=$WORK/pkg/usr/bin/prometheus-alertmanager
  install_am_templates "$WORK/pkg"
  cp "$REPO/deploy/prometheus/specdecode.rules.yml" "$REPO/deploy/alertmanager/alertmanager.yml" config/
  cp "$REPO/deploy/prometheus/specdecode.alerts.yml" config/specdecode.alerts.production.yml
  python3 - "$SLOWER_FOR" "$JUDGED" config/specdecode.alerts.yml <<'PY'
# the production alerts, SpecDecodeSlowerThanPlain's `for:` and the sidecar's judged window scaled to the ladder's minutes
import sys
from dataclasses import replace
import yaml
from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import DEFAULT
slower = replace(DEFAULT.alert("SpecDecodeSlowerThanPlain"), for_=sys.argv[1])
config = replace(DEFAULT, sidecar_judged_window=sys.argv[2], alerts={**DEFAULT.alerts, "SpecDecodeSlowerThanPlain": slower})
with open(sys.argv[3], "w") as out:
    out.write(f"# Generated from exporter/mixin/ for the load ladder: the production alerts, SpecDecodeSlowerThanPlain for: {sys.argv[1]} "
              f"(production: {DEFAULT.alert('SpecDecodeSlowerThanPlain').for_}), judged window {sys.argv[2]} (production: {DEFAULT.sidecar_judged_window}).\n")
    out.write(yaml.safe_dump({"groups": alert_groups(config)}, sort_keys=False, width=200, allow_unicode=True))
PY
  diff config/specdecode.alerts.production.yml config/specdecode.alerts.yml > config/alerts-scaled.diff
  cat > config/prometheus.yml <<YML
# The load ladder's Prometheus: vLLM and the sidecar over loopback, every 5 s (production: 15 s, rules every 30 s).
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: [specdecode.rules.yml, specdecode.alerts.yml]
alerting: {alertmanagers: [{static_configs: [{targets: ["127.0.0.1:9093"]}]}]}
# both with the labels a Kubernetes scrape gives: the tenant's namespace the rules read, the pod vLLM and its sidecar share
scrape_configs:
  - {job_name: vllm, static_configs: [{targets: ["127.0.0.1:8000"], labels: {namespace: inference, pod: vllm}}]}
  - {job_name: specdecode, static_configs: [{targets: ["127.0.0.1:9847"], labels: {namespace: inference, pod: vllm}}]}
YML
  STACK_PIDS=()
  setsid python3 "$REPO/scripts/gpu-incident/webhook.py" --listen 127.0.0.1:9099 --out "$WORK/alertmanager-notifications.jsonl" \
    --receipts "$WORK/webhook-receipts.jsonl" > webhook.out 2>&1 &
  STACK_PIDS+=($!)
  setsid "$am" --config.file=config/alertmanager.yml --storage.path=alertmanager-data --web.listen-address=127.0.0.1:9093 \
    --cluster.listen-address= > alertmanager.log 2>&1 &
  STACK_PIDS+=($!)
  setsid "$prom" --config.file=config/prometheus.yml --storage.tsdb.path=prometheus-data --web.listen-address=127.0.0.1:9090 > prometheus.log 2>&1 &
  STACK_PIDS+=($!)
  local sidecar=(specdecode-exporter --log-level info serve --log "$WORK/k*/server.log" --target "$URL/metrics" --listen 127.0.0.1:9847
                 --calibration "$WORK/calibration.json" --health-window "$JUDGED" --window "1m,5m,1h" --state-dir "$WORK/sidecar-state")
  printf '%q ' "${sidecar[@]}" > sidecar-command.txt; echo >> sidecar-command.txt
  setsid "${sidecar[@]}" > sidecar.log 2>&1 &
  STACK_PIDS+=($!)
  wait_up http://127.0.0.1:9093/-/ready 30 && wait_up http://127.0.0.1:9090/-/ready 30 && wait_up http://127.0.0.1:9847/metrics 60 \
    || { say "the stack did not come up"; tail -n 8 alertmanager.log prometheus.log sidecar.log webhook.out 2>&1 | tee -a progress.log; return 1; }
  setsid python3 "$REPO/scripts/gpu-incident/watch.py" --out "$WORK" --every 5 > watch.out 2>&1 &
  STACK_PIDS+=($!)
  say "stack up: alertmanager, prometheus, sidecar (--calibration), webhook"
}

# --- one run ---------------------------------------------------------------------------------
gpu_free() {  # every process on the GPU ended, by pid (never pkill -f: a pattern can match the command that started us)
  local p i
  for p in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  for i in $(seq 1 30); do up "$URL/health" || return 0; sleep 1; done
  say "something still answers on $URL"
}
run_one() {  # plain | kN
  local name=$1 dir=$WORK/$1 k spec pid kids ok=0 i
  mkdir -p "$dir/metrics"
  local cmd=(vllm serve "$MODELS/ladder-target" --served-model-name target --host 127.0.0.1 --port 8000 --max-model-len "$MAX_MODEL_LEN"
             --gpu-memory-utilization "$GPU_UTIL" --max-num-seqs "$MAX_NUM_SEQS" --seed 0 ${EXTRA_SERVE_ARGS:-} ${EAGER:+--enforce-eager})
  if [ "$name" = plain ]; then k=none; else
    k=${name#k}; spec='{"method": "draft_model", "model": "'$MODELS/ladder-draft'", "num_speculative_tokens": '$k'}'
    cmd+=(--speculative-config "$spec")
  fi
  printf '%q ' "${cmd[@]}" > "$dir/command.txt"; echo >> "$dir/command.txt"
  env | grep -E '^(VLLM|HF_|TRANSFORMERS|PYTHONPATH|DO_NOT)' | sort > "$dir/env.txt"
  date +%s.%N > "$dir/t0_epoch.txt"
  gpu_free  # a server left from an earlier try would answer /health for this one
  event launch "$name"
  "${cmd[@]}" > "$dir/server.log" 2>&1 &
  pid=$!
  say "$name: vllm launched (pid $pid)"
  HEALTHY_AFTER=
  wait_healthy $pid "$name" "$HEALTH_MAX_S" && ok=1 || tail -n 3 "$dir/server.log" | tee -a progress.log
  event healthy "$name"
  say "$name: healthy=$ok after ${HEALTHY_AFTER:-?} s"
  if [ $ok = 1 ]; then
    python3 "$KIT/scraper.py" --url "$URL" --out "$dir" --t0 "$(cat "$dir/t0_epoch.txt")" --info 1 > "$dir/info.out" 2>&1
    event ladder_start "$name"
    python3 "$HERE/ladder_load.py" --url "$URL" --out "$dir" --k "$k" --levels "$LEVELS" --seconds "$LEVEL_SECONDS" --gap "$GAP" \
      --max-tokens "$MAX_TOKENS" > "$dir/ladder.out" 2>&1
    event ladder_end "$name"
    if [ "$name" = "$HOLD_RUN" ]; then
      event hold_start "$name"
      python3 "$HERE/ladder_load.py" --url "$URL" --out "$dir" --k "$k" --levels "$HOLD_HIGH_C" --seconds "$HOLD_HIGH_S" --gap 0 --file hold.jsonl >> "$dir/ladder.out" 2>&1
      python3 "$HERE/ladder_load.py" --url "$URL" --out "$dir" --k "$k" --levels "$HOLD_LOW_C" --seconds "$HOLD_LOW_S" --gap 0 --file hold.jsonl >> "$dir/ladder.out" 2>&1
      event hold_end "$name"
    fi
    sleep "$STATS_INTERVAL"; sleep 2  # the stats logger reports the drained state (the interval may be a fraction: no $((…)))
    python3 -c "import sys, urllib.request; open(sys.argv[2], 'wb').write(urllib.request.urlopen(sys.argv[1], timeout=10).read())" \
      "$URL/metrics" "$dir/metrics/final.prom" || say "$name: no final snapshot"
    say "$name: $(tail -1 "$dir/ladder.out")"
  fi
  kids=$(pgrep -P $pid)
  event sigint "$name"
  kill -INT $pid 2>/dev/null
  for i in $(seq 1 60); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
  kill -9 $pid $kids 2>/dev/null; wait $pid 2>/dev/null; echo "$name exit=$?" >> server_exit.txt
  gpu_free  # nothing of this run may hold the GPU for the next
  event exit "$name"
  say "$name: stopped ($(tail -1 server_exit.txt))"
  [ $ok = 1 ]
}

STACK_PIDS=()
T_START=$(date +%s)
if [ -n "${CALIBRATION:-}" ]; then
  # a lease that runs only speculative k (the plain ladder measured in an earlier lease of the same
  # machine kind, stage and models): its calibration, and the stack before the first run
  cp "$CALIBRATION" calibration.json && say "calibration from $CALIBRATION" && start_stack
fi
for RUN in $RUNS; do
  if ! run_one "$RUN" && [ -z "${EAGER:-}" ]; then
    # CUDA graphs (or torch.compile) failed on this host: this run and every later one without them, said in the run's folder
    EAGER=1; say "$RUN: again with --enforce-eager (and every run after it)"; mv "$WORK/$RUN" "$WORK/$RUN-failed-with-graphs"
    run_one "$RUN"; echo "run with --enforce-eager: CUDA graphs failed (see ../$RUN-failed-with-graphs/server.log)" > "$WORK/$RUN/eager.txt"
  fi
  if [ "$RUN" = plain ]; then
    specdecode-exporter calibrate plain/server.log --out calibration.json > calibrate.out 2>&1 && say "$(tail -1 calibrate.out)" \
      || { say "calibrate failed: $(tail -1 calibrate.out)"; }
    [ -f calibration.json ] && start_stack
  fi
done

# --- collect ---------------------------------------------------------------------------------
sleep "${SETTLE_S:-20}"  # the last scrapes and evaluations after the last run
event collected ""
python3 - "$T_START" <<'PY' || true
# Prometheus's view of the pay-off from its own TSDB, at the scrape interval
import json, sys, time, urllib.parse, urllib.request
queries = {"ALERTS": "ALERTS", "payoff_speedup": "specdecode_payoff_speedup", "payoff_running": "specdecode_payoff_running_requests",
           "break_even": "specdecode_break_even_running_requests", "payoff_best_k": "specdecode_payoff_recommended_speculative_tokens",
           "speculated_steps": "specdecode_speculated_steps_ratio", "vllm_running": "vllm:num_requests_running", "up": "up"}
out = {}
for name, query in queries.items():
    params = urllib.parse.urlencode({"query": query, "start": sys.argv[1], "end": time.time(), "step": "5s"})
    try:
        out[name] = json.loads(urllib.request.urlopen("http://127.0.0.1:9090/api/v1/query_range?" + params, timeout=30).read())
    except Exception as error:
        out[name] = {"error": repr(error)[:300]}
json.dump(out, open("prometheus-query-range.json", "w"), separators=(",", ":"))
for name, url in (("prometheus-rules.json", "http://127.0.0.1:9090/api/v1/rules"), ("alertmanager-alerts-final.json", "http://127.0.0.1:9093/api/v2/alerts")):
    try:
        json.dump(json.loads(urllib.request.urlopen(url, timeout=30).read()), open(name, "w"), indent=1)
    except Exception as error:
        json.dump({"error": repr(error)[:300]}, open(name, "w"))
PY
python3 -c "import urllib.request; open('sidecar-metrics.prom','wb').write(urllib.request.urlopen('http://127.0.0.1:9847/metrics', timeout=10).read())" 2>/dev/null
python3 -c "import urllib.request; open('sidecar-status.json','wb').write(urllib.request.urlopen('http://127.0.0.1:9847/api/v1/status', timeout=10).read())" 2>/dev/null
say "notifications: $(grep -c . alertmanager-notifications.jsonl 2>/dev/null || echo 0) ($(grep -o '"SpecDecode[A-Za-z]*", "[a-z]*"' webhook-receipts.jsonl 2>/dev/null | sort | uniq -c | tr '\n' ';'))"
for p in "${STACK_PIDS[@]}"; do kill "$p" 2>/dev/null; done
touch DONE
say "done"
