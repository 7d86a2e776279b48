#!/usr/bin/env bash
# The seed incident on a real vLLM, caught by the shipped stack (issue #24). Runs on the GPU host
# after install_offline.sh (vLLM + our wheel) and build_models.py, started with setsid so that it
# outlives the command that started it; progress goes to $WORK/progress.log.
#   WORK=/tmp/incident PKG=<folder with prometheus_*.deb, prometheus-alertmanager_*.deb> \
#   REPO=<repository checkout> setsid bash incident.sh > /tmp/incident/orchestrator.out 2>&1 &
# Stack, as deployed except where the lease is too short (named below):
#   webhook.py (Alertmanager's receiver, 127.0.0.1:9099/alerts, the production placeholder URL)
#   Alertmanager 0.25 (Debian) with deploy/alertmanager/alertmanager.yml unchanged
#   Prometheus 2.42 (Debian) with deploy/prometheus/prometheus.yml (hosts → 127.0.0.1), the production
#     specdecode.rules.yml, and the alerts generated from the mixin with `for:` 10m → 1m (SCALED_FOR)
#   the sidecar (serve) on server.log, /metrics and the plugin records, with --state-dir and
#     --reference-recovery 1m (production: 15m)
#   vLLM with our stat-logger plugin; three lives appended to one server.log:
#     healthy (drafter's own config.json), stale (config.json replaced), fixed (the right one back)
# Phases (env): DUR_HEALTHY (120 s of load), DUR_STALE (420), DUR_FIXED (240), CONC (16).
# Alerts (env): SCALED_FOR (1m: the acceptance alerts' for:, production 10m), KEEP_FIRING (2m: every
#   keep_firing_for, production 25m; at 25m the second run's resolution came after its end).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/incident}; PKG=${PKG:?folder of the Debian packages}; REPO=${REPO:?repository checkout}
KIT=${KIT:-/tmp/stage/kit}; MODELS=${MODELS:-/tmp/models}; SITE=${SITE_DIR:-/tmp/site}
DUR_HEALTHY=${DUR_HEALTHY:-120}; DUR_STALE=${DUR_STALE:-420}; DUR_FIXED=${DUR_FIXED:-240}; CONC=${CONC:-16}
SCALED_FOR=${SCALED_FOR:-1m}; KEEP_FIRING=${KEEP_FIRING:-2m}; RECOVERY=${RECOVERY:-1m}
VLLM=${VLLM:-vllm}; HEALTH_MAX_S=${HEALTH_MAX_S:-200}
export PATH=$SITE/bin:$PATH PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export VLLM_USE_FLASHINFER_SAMPLER=0   # else the sampler probes flashinfer, which the stage lacks
export SPECDECODE_PLUGIN_DIR=$WORK/plugin
URL=http://127.0.0.1:8000
DRAFT=$MODELS/draft_noisy
mkdir -p "$WORK"/{metrics,plugin,sidecar-state,pkg,config,prometheus-data,alertmanager-data,drafter-fixed,drafter-stale,target}
cd "$WORK" || exit 1
say() { echo "[$(date -u +%T)] $*" | tee -a "$WORK/progress.log"; }
event() { echo "{\"event\": \"$1\", \"phase\": \"${2:-}\", \"epoch\": $(date +%s.%N)}" >> "$WORK/events.jsonl"; }
up() { python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "$1" 2>/dev/null; }
wait_up() {  # url, seconds
  local i; for i in $(seq 1 "$2"); do up "$1" && return 0; sleep 1; done; return 1
}

# --- the stack -------------------------------------------------------------------------------
source "$HERE/host.sh"
for deb in "$PKG"/prometheus_*.deb "$PKG"/prometheus-alertmanager_*.deb; do undeb "$deb" "$WORK/pkg"; done
PROM=$WORK/pkg/usr/bin/prometheus; AM=$WORK/pkg/usr/bin/prometheus-alertmanager
install_am_templates "$WORK/pkg"
"$PROM" --version 2>&1 | head -1 | tee -a "$WORK/progress.log"; "$AM" --version 2>&1 | head -1 | tee -a "$WORK/progress.log"
cp "$REPO/deploy/prometheus/specdecode.rules.yml" "$REPO/deploy/alertmanager/alertmanager.yml" config/
cp "$REPO/deploy/prometheus/specdecode.alerts.yml" config/specdecode.alerts.production.yml
# loopback addresses; this run's sidecar has no web config, so its scrape needs no (compose-generated) password
sed -e 's/"vllm:8000"/"127.0.0.1:8000"/; s/"sidecar:9847"/"127.0.0.1:9847"/; s/"alertmanager:9093"/"127.0.0.1:9093"/' -e '/basic_auth/d' \
    "$REPO/deploy/prometheus/prometheus.yml" > config/prometheus.yml
python3 - "$SCALED_FOR" config/specdecode.alerts.yml "$KEEP_FIRING" <<'PY' || { say "the scaled alerts could not be generated"; exit 3; }
# the production alerts with only the acceptance alerts' 10m `for:` scaled: generated from the mixin
import sys
from dataclasses import replace
import yaml
from exporter.mixin.alerts import alert_groups
from exporter.mixin.config import DEFAULT
acceptance = {"SpecDecodeAcceptanceLengthLow", "SpecDecodeAcceptanceDropped", "SpecDecodeAcceptanceBelowReference", "SpecDecodePositionZeroCollapse"}
scaled = {name: replace(s, for_=sys.argv[1]) if name in acceptance else s for name, s in DEFAULT.alerts.items()}
with open(sys.argv[2], "w") as out:
    out.write("# Generated from exporter/mixin/ for the seed-incident run: the production alerts, the acceptance alerts' `for: 10m` -> %s, "
              "keep_firing_for %s -> %s.\n" % (sys.argv[1], DEFAULT.keep_firing_for, sys.argv[3]))
    out.write(yaml.safe_dump({"groups": alert_groups(replace(DEFAULT, alerts=scaled, keep_firing_for=sys.argv[3]))}, sort_keys=False, width=200, allow_unicode=True))
PY
diff config/specdecode.alerts.production.yml config/specdecode.alerts.yml > config/alerts-scaled.diff
: > server.log
setsid python3 "$HERE/webhook.py" --listen 127.0.0.1:9099 --out "$WORK/alertmanager-notifications.jsonl" --receipts "$WORK/webhook-receipts.jsonl" > webhook.out 2>&1 &
setsid "$AM" --config.file=config/alertmanager.yml --storage.path=alertmanager-data --web.listen-address=127.0.0.1:9093 \
  --cluster.listen-address= > alertmanager.log 2>&1 &
setsid "$PROM" --config.file=config/prometheus.yml --storage.tsdb.path=prometheus-data --web.listen-address=127.0.0.1:9090 > prometheus.log 2>&1 &
SIDECAR_CMD=(specdecode-exporter --log-level info serve --log "$WORK/server.log" --target "$URL/metrics" --vllm-plugin-dir "$WORK/plugin"
             --listen 127.0.0.1:9847 --state-dir "$WORK/sidecar-state" --reference-recovery "$RECOVERY")
printf '%q ' "${SIDECAR_CMD[@]}" > sidecar-command.txt; echo >> sidecar-command.txt
setsid "${SIDECAR_CMD[@]}" > sidecar.log 2>&1 &
wait_up http://127.0.0.1:9093/-/ready 30 && wait_up http://127.0.0.1:9090/-/ready 30 && wait_up http://127.0.0.1:9847/metrics 60 \
  || { say "the stack did not come up"; tail -n 5 alertmanager.log prometheus.log sidecar.log | tee -a progress.log; exit 3; }
say "stack up: alertmanager, prometheus, sidecar, webhook"
python3 - <<'PY' | tee -a "$WORK/progress.log"
import json, urllib.request
rules = json.load(urllib.request.urlopen("http://127.0.0.1:9090/api/v1/rules"))["data"]["groups"]
print("prometheus loaded", sum(len(g["rules"]) for g in rules), "rules in", len(rules), "groups;",
      "unhealthy:", [r["name"] for g in rules for r in g["rules"] if r.get("health") not in ("ok", "unknown")])
PY
setsid python3 "$HERE/watch.py" --out "$WORK" --every 10 > watch.out 2>&1 &
WATCH=$!

# --- vLLM, three lives -----------------------------------------------------------------------
cp "$MODELS/target/config.json" target/config.json
cp "$DRAFT/config.json" drafter-fixed/config.json
python3 "$HERE/stale.py" write --fixed drafter-fixed/config.json --choice "${CHOICE:-$WORK/stale-choice.json}" --out drafter-stale/config.json | tee -a progress.log
SPEC='{"method": "draft_model", "model": "'$DRAFT'", "num_speculative_tokens": 8}'
CMD=("$VLLM" serve "$MODELS/target" --served-model-name target --host 127.0.0.1 --port 8000 --max-model-len 1024
     --gpu-memory-utilization 0.3 --enforce-eager --seed 0 --speculative-config "$SPEC")
printf '%q ' "${CMD[@]}" > command.txt; echo >> command.txt
env | grep -E '^(VLLM|HF_|TRANSFORMERS|SPECDECODE|PYTHONPATH|DO_NOT)' | sort > env.txt
T0=$(date +%s.%N); echo "$T0" > t0_epoch.txt
setsid python3 "$KIT/scraper.py" --url "$URL" --out "$WORK" --t0 "$T0" --every 5 > scraper.out 2>&1 &
SCRAPER=$!
LIFE=0
for PHASE in healthy stale fixed; do
  LIFE=$((LIFE + 1))
  case $PHASE in healthy|fixed) SRC=drafter-fixed;; stale) SRC=drafter-stale;; esac
  cp "$SRC/config.json" "$DRAFT/config.json"
  event launch "$PHASE"
  "${CMD[@]}" >> server.log 2>&1 &
  PID=$!
  say "$PHASE: vllm launched (pid $PID), drafter config.json from $SRC ($(sha256sum "$DRAFT/config.json" | cut -c1-12))"
  ok=0
  wait_healthy $PID "$PHASE" "$HEALTH_MAX_S" && ok=1
  event healthy "$PHASE"
  say "$PHASE: healthy=$ok"
  if [ $ok = 1 ]; then
    python3 "$KIT/scraper.py" --url "$URL" --out "$WORK" --t0 "$T0" --info "$LIFE" > "info_life$LIFE.out" 2>&1
    DUR_VAR=DUR_${PHASE^^}
    event load_start "$PHASE"
    python3 "$KIT/loadgen.py" --url "$URL" --out "$WORK" --t0 "$T0" --duration "${!DUR_VAR}" --concurrency "$CONC" \
      --max-tokens 128 --no-scrape --final-tag "_${PHASE}_final" --append --life "$LIFE" > "loadgen_$PHASE.out" 2>&1
    event load_end "$PHASE"
    say "$PHASE: $(tail -1 "loadgen_$PHASE.out"); $(python3 "$KIT/acceptance.py" "$(ls metrics/*_"${PHASE}"_final.prom | tail -1)" 2>&1 | tr '\n' ' ')"
  fi
  KIDS=$(pgrep -P $PID)
  event sigint "$PHASE"
  kill -INT $PID 2>/dev/null
  for i in $(seq 1 40); do kill -0 $PID 2>/dev/null || break; sleep 0.5; done
  kill -9 $PID $KIDS 2>/dev/null; wait $PID 2>/dev/null; echo "$PHASE exit=$?" >> server_exit.txt
  event exit "$PHASE"
  say "$PHASE: vllm stopped ($(tail -1 server_exit.txt))"
done
cp "$DRAFT/config.json" drafter-live-at-end.json

# --- until Alertmanager says resolved (bounded), then collect -------------------------------
for i in $(seq 1 ${RESOLVE_MAX_S:-420}); do  # keep_firing_for past the condition's end, then a group_interval (5m)
  grep -q '"SpecDecodePositionZeroCollapse", "resolved"' webhook-receipts.jsonl 2>/dev/null && break
  sleep 1
done
event collected ""
say "collapse notifications: $(grep -c PositionZeroCollapse webhook-receipts.jsonl 2>/dev/null) ($(grep PositionZeroCollapse webhook-receipts.jsonl | python3 -c 'import json,sys; print([json.loads(l)["status"] for l in sys.stdin])'))"
python3 "$HERE/collect.py" --out "$WORK" --start "${T0%.*}" --end "$(date +%s)"
curl -s http://127.0.0.1:9847/metrics > sidecar-metrics.prom 2>/dev/null || python3 -c "import urllib.request; open('sidecar-metrics.prom','wb').write(urllib.request.urlopen('http://127.0.0.1:9847/metrics').read())"
kill $WATCH $SCRAPER 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv > gpu.txt 2>&1
touch DONE
say "done"
