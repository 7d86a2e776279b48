"""Every EVERY seconds, one line per source of what the alerting path says now, with the time:
Prometheus's /api/v1/alerts (pending and firing), Alertmanager's /api/v2/alerts (active, inhibited)
and the sidecar's /api/v1/status. Stdlib only; runs until SIGTERM.
  python3 watch.py --out DIR [--every 10]"""
import argparse
import json
import os
import signal
import time
import urllib.request

SOURCES = {
    "prometheus-alerts.jsonl": "http://127.0.0.1:9090/api/v1/alerts",
    "alertmanager-alerts.jsonl": "http://127.0.0.1:9093/api/v2/alerts",
    "sidecar-status.jsonl": "http://127.0.0.1:9847/api/v1/status",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--every", type=float, default=10)
    a = ap.parse_args()
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    nxt = time.time()
    while not stop[0]:
        for name, url in SOURCES.items():
            rec = {"t": round(time.time(), 3)}
            try:
                rec["body"] = json.loads(urllib.request.urlopen(url, timeout=5).read())
            except Exception as e:  # a source that is down is a fact of the timeline too
                rec["error"] = repr(e)[:200]
            with open(os.path.join(a.out, name), "a") as out:
                out.write(json.dumps(rec, separators=(",", ":")) + "\n")
        nxt += a.every
        while not stop[0] and time.time() < nxt:
            time.sleep(min(0.2, max(0.0, nxt - time.time())))


if __name__ == "__main__":
    main()
