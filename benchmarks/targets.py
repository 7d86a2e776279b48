"""Many simulated vLLM /metrics targets from one process, for the scale benchmark.

`python -m benchmarks.targets --count 1000 --port 20000` listens on ports 20000…20999 of
127.0.0.1 and answers every GET with a vLLM 0.24.0 spec-decode payload (the simulator's layout,
k = 15) whose counters grow with each request, so each scrape yields a fresh interval. It prints
`ready` once every port listens. A bare asyncio HTTP/1.1 responder keeps one process cheap enough
to serve a thousand targets on a small machine.
"""

from __future__ import annotations

import argparse
import asyncio

from exporter.simulate import vllm_format
from exporter.simulate.scenarios import SCENARIOS
from exporter.simulate.server import SimulatedServer


def _template() -> tuple[str, list[tuple[str, int]]]:
    """The payload with its counter values as placeholders: (format string, [(name, per-request step)])."""
    server = SimulatedServer(SCENARIOS["healthy"], seed=3, start_time=1_796_198_400.0)
    server.advance(10.0)
    text = vllm_format.exposition(server)
    engine = server.engines[0].total
    steps = {"num_drafts": engine.drafts, "num_draft_tokens": engine.draft_tokens, "num_accepted_tokens": engine.accepted}
    lines, fields = [], []
    for line in text.replace("{", "{{").replace("}", "}}").splitlines():
        name, _, _value = line.rpartition(" ")
        counter = next((key for key in steps if f"spec_decode_{key}_total{{{{" in name), None)
        if counter is None and "_per_pos_total{{" in name:
            position = int(name.split('position="')[1].split('"')[0])
            fields.append((f"p{position}", engine.per_position[position]))
            lines.append(f"{name} {{p{position}}}.0")
        elif counter is not None:
            fields.append((counter, steps[counter]))
            lines.append(f"{name} {{{counter}}}.0")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n", fields


async def _serve(count: int, base_port: int) -> None:
    template, fields = _template()
    served = [0] * count

    def payload(target: int) -> bytes:
        served[target] += 1
        body = template.format(**{name: step * served[target] for name, step in fields}).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

    def handler(target: int):  # type: ignore[no-untyped-def]
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:  # keep-alive: one request after another on the connection
                    request = await reader.readuntil(b"\r\n\r\n")
                    if not request:
                        break
                    writer.write(payload(target))
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        return handle

    servers = [await asyncio.start_server(handler(i), "127.0.0.1", base_port + i) for i in range(count)]
    print("ready", flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--port", type=int, default=20000, help="first port; targets use port … port+count-1")
    args = parser.parse_args()
    asyncio.run(_serve(args.count, args.port))


if __name__ == "__main__":
    main()
