"""Closed-loop concurrency ladder against one vLLM server (issue #31's ground truth). Stdlib only.

  python3 ladder_load.py --url http://127.0.0.1:8000 --out RUN_DIR --k 4 \
      [--levels 1,2,4,8,16,32,64,128,256] [--seconds 10] [--gap 2.5] [--max-tokens 128] [--file load.jsonl]

For each level c in turn: a /metrics snapshot (RUN_DIR/metrics/cNNN-start.prom), then c clients
each sending greedy /v1/completions requests (max_tokens, ignore_eos, the prompts of prompts.py in
turn) one after the other until SECONDS have passed since the level began (a request under way
then is finished and kept), then a snapshot (cNNN-end.prom) and a pause of GAP seconds with
nothing running, so that vLLM's stats lines (VLLM_LOG_STATS_INTERVAL) separate the levels.
One line per request in RUN_DIR/FILE: k (null: no speculation), concurrency, start and end
(epoch seconds), completion_tokens, prompt_tokens, status, prompt, client. One line per level in
RUN_DIR/levels.jsonl."""
import argparse
import json
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prompts import PROMPTS


def snapshot(url, path):
    try:
        body = urllib.request.urlopen(url + "/metrics", timeout=10).read()
        with open(path, "wb") as f:
            f.write(body)
    except Exception as error:  # a snapshot missed is said, the ladder goes on
        print("snapshot failed", path, repr(error), flush=True)


def level(a, c, out, lock):
    stop_at = time.time() + a.seconds
    sent = [0]

    def client(w):
        while time.time() < stop_at:
            with lock:
                i = sent[0]
                sent[0] += 1
            name, prompt = PROMPTS[(i + w) % len(PROMPTS)]
            body = json.dumps({"model": a.model, "prompt": prompt, "max_tokens": a.max_tokens, "temperature": 0,
                               "ignore_eos": True}).encode()
            request = urllib.request.Request(a.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
            record = {"k": a.k, "concurrency": c, "start": round(time.time(), 4)}
            try:
                reply = json.loads(urllib.request.urlopen(request, timeout=600).read())
                record.update(completion_tokens=reply["usage"]["completion_tokens"], prompt_tokens=reply["usage"]["prompt_tokens"], status=200)
            except Exception as error:
                record.update(completion_tokens=0, status="error", error=repr(error)[:300])
            record["end"] = round(time.time(), 4)
            record.update(prompt=name, client=w)
            with lock:
                out.write(json.dumps(record) + "\n")

    threads = [threading.Thread(target=client, args=(w,)) for w in range(c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sent[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--model", default="target")
    ap.add_argument("--out", required=True)
    ap.add_argument("--k", default="none", help="the run's num_speculative_tokens, or none")
    ap.add_argument("--levels", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--gap", type=float, default=2.5)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--file", default="load.jsonl")
    a = ap.parse_args()
    a.k = None if a.k in ("none", "null", "") else int(a.k)
    os.makedirs(os.path.join(a.out, "metrics"), exist_ok=True)
    lock = threading.Lock()
    with open(os.path.join(a.out, a.file), "a") as out, open(os.path.join(a.out, "levels.jsonl"), "a") as levels:
        for c in [int(x) for x in a.levels.split(",")]:
            tag = f"c{c:03d}" + ("" if a.file == "load.jsonl" else "-" + a.file.split(".")[0])
            snapshot(a.url, os.path.join(a.out, "metrics", tag + "-start.prom"))
            began = time.time()
            n = level(a, c, out, lock)
            ended = time.time()
            out.flush()
            snapshot(a.url, os.path.join(a.out, "metrics", tag + "-end.prom"))
            levels.write(json.dumps({"k": a.k, "concurrency": c, "began": round(began, 3), "ended": round(ended, 3), "requests": n, "file": a.file}) + "\n")
            levels.flush()
            print(f"k={a.k} c={c}: {n} requests in {ended - began:.1f} s", flush=True)
            time.sleep(a.gap)


if __name__ == "__main__":
    main()
