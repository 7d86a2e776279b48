"""At the end of the run: Prometheus's view of the whole incident, from its own TSDB (query_range
at the evaluation interval), its loaded rules, and Alertmanager's status. Stdlib only.
  python3 collect.py --out DIR --start EPOCH --end EPOCH"""
import argparse
import json
import os
import urllib.parse
import urllib.request

QUERIES = {
    "ALERTS": "ALERTS",
    "ALERTS_FOR_STATE": "ALERTS_FOR_STATE",
    "position0": 'instance_model_engine_position:vllm_spec_decode_position_acceptance:ratio_rate5m{position="0"}',
    "mean_acceptance_length": "instance_model_engine:vllm_spec_decode_mean_acceptance_length:ratio_rate5m",
    "drafts_rate": "instance_model_engine:vllm_spec_decode_drafts:rate5m",
    "sidecar_health": "specdecode_health == 1",
    "sidecar_mean_acceptance_length_5m": 'specdecode_mean_acceptance_length{window="5m"}',
    "sidecar_reference": "specdecode_reference_mean_acceptance_length",
    "up": "up",
}


def get(url):
    return json.loads(urllib.request.urlopen(url, timeout=30).read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--end", type=float, required=True)
    a = ap.parse_args()
    result = {}
    for name, query in QUERIES.items():
        params = urllib.parse.urlencode({"query": query, "start": a.start, "end": a.end, "step": "15s"})
        try:
            result[name] = get("http://127.0.0.1:9090/api/v1/query_range?" + params)
        except Exception as e:
            result[name] = {"error": repr(e)[:300]}
    with open(os.path.join(a.out, "prometheus-query-range.json"), "w") as out:
        json.dump(result, out, separators=(",", ":"))
    for name, url in (("prometheus-rules.json", "http://127.0.0.1:9090/api/v1/rules"),
                      ("prometheus-targets.json", "http://127.0.0.1:9090/api/v1/targets"),
                      ("alertmanager-status.json", "http://127.0.0.1:9093/api/v2/status")):
        try:
            doc = get(url)
        except Exception as e:
            doc = {"error": repr(e)[:300]}
        with open(os.path.join(a.out, name), "w") as out:
            json.dump(doc, out, indent=1)


if __name__ == "__main__":
    main()
