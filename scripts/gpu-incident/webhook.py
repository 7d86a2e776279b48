"""Alertmanager's webhook receiver for the seed-incident run: appends every notification body it
receives, one JSON document a line, to NOTIFICATIONS, and when it came to RECEIPTS. Stdlib only.
  python3 webhook.py --listen 127.0.0.1:9099 --out alertmanager-notifications.jsonl --receipts webhook-receipts.jsonl"""
import argparse
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:9099")
    ap.add_argument("--out", required=True)
    ap.add_argument("--receipts", required=True)
    a = ap.parse_args()
    host, port = a.listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            line = body.strip().replace(b"\n", b" ")  # Go's encoder ends the body with one newline
            with open(a.out, "ab") as out:
                out.write(line + b"\n")
            try:
                doc = json.loads(body)
                note = {"status": doc.get("status"), "alerts": [(x["labels"].get("alertname"), x.get("status")) for x in doc.get("alerts", [])]}
            except ValueError:
                note = {"error": "not JSON"}
            with open(a.receipts, "a") as out:
                out.write(json.dumps({"received": round(time.time(), 3), "path": self.path, "bytes": len(body), **note}) + "\n")
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    ThreadingHTTPServer((host, int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main()
