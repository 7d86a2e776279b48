"""`specdecode-exporter analyze` as a user runs it: a subprocess, real files, every output format."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys

import pytest
from conftest import CAPTURE
from helpers import without_read_times

pytestmark = pytest.mark.slow  # the CLI as a process

# The capture README's ground truth (from the run's final /metrics counters).
GROUND_TRUTH_L = 4.122
GROUND_TRUTH_POSITIONS = [0.615, 0.453, 0.405, 0.372, 0.346, 0.328, 0.310, 0.293]
GROUND_TRUTH_CONDITIONAL = [0.615, 0.738, 0.893, 0.919, 0.932, 0.945, 0.946, 0.944]


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        input=stdin.decode() if stdin is not None else None, capture_output=True, text=True, timeout=120,
    )


def analyze_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = run_cli("analyze", "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_json_reproduces_the_capture_ground_truth():
    report = analyze_json(str(CAPTURE / "server.log"))
    (series,) = report["series"]
    assert series["model_name"] == "target" and series["engine"] == "0" and series["format"] == "V1-e"
    assert series["mean_acceptance_length"] == pytest.approx(GROUND_TRUTH_L, abs=0.005)
    assert series["position_acceptance"] == pytest.approx(GROUND_TRUTH_POSITIONS, abs=0.005)
    assert series["conditional_acceptance"] == pytest.approx(GROUND_TRUTH_CONDITIONAL, abs=0.005)
    assert (series["drafts"], series["draft_tokens"], series["accepted_tokens"]) == (25132, 201056, 78455)
    assert series["draft_acceptance_ratio"] == pytest.approx(0.390, abs=0.0005)
    assert series["lines"] == 31 and series["num_speculative_tokens"] == 8
    assert series["recommended_speculative_tokens"] == 8 and series["health"] == "ok"
    assert report["parse_errors"] == {} and report["lines_read"] == 1013


def test_json_carries_every_documented_key():
    report = analyze_json(str(CAPTURE / "server.log"))
    required = {
        "model_name", "engine", "format", "lines", "drafts", "draft_tokens", "accepted_tokens", "accepted_per_position",
        "mean_acceptance_length", "position_acceptance", "conditional_acceptance", "draft_acceptance_ratio",
        "num_speculative_tokens", "recommended_speculative_tokens", "health",
    }
    assert required <= set(report["series"][0])
    assert {"series", "parse_errors", "lines_read"} <= set(report)


def test_unknowable_values_are_null_not_invented(tmp_path):
    log = tmp_path / "v1b.log"
    log.write_text(
        "INFO 04-10 08:31:22 [metrics.py:52] SpecDecoding metrics: Draft acceptance rate: 67.3%, Accepted: 1346 tokens, Drafted: 2000 tokens\n"
    )
    (series,) = analyze_json(str(log))["series"]
    assert series["drafts"] is None and series["mean_acceptance_length"] is None and series["position_acceptance"] is None
    assert series["draft_acceptance_ratio"] == pytest.approx(0.673) and series["health"] == "no_data"


def test_gzip_and_docker_framing_give_the_same_numbers(tmp_path):
    raw = (CAPTURE / "server.log").read_bytes()
    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(raw))
    docker = tmp_path / "container.log"
    with docker.open("w") as handle:
        for line in raw.decode().split("\n")[:-1]:
            handle.write(json.dumps({"log": line + "\n", "stream": "stdout", "time": "2026-12-02T08:19:42.000000000Z"}) + "\n")
    plain = analyze_json(str(CAPTURE / "server.log"))["series"][0]
    for path in (gz, docker):
        other = analyze_json(str(path))["series"][0]
        assert other["accepted_per_position"] == plain["accepted_per_position"]
        assert other["drafts"] == plain["drafts"]


def test_files_read_in_parallel_give_the_report_of_one_process(tmp_path):
    """Each file its own process (--jobs 3): the same series, sources and verdicts, in the same order."""
    sample = CAPTURE / "server.log"
    paths = []
    for name in ("b-node.log", "a-node.log", "c-node.log.gz"):  # out of order, one gzip: order and framing must not matter
        path = tmp_path / name
        path.write_bytes(gzip.compress(sample.read_bytes()) if name.endswith(".gz") else sample.read_bytes())
        paths.append(str(path))

    alone, parallel = (without_read_times(analyze_json("--jobs", jobs, *paths)) for jobs in ("1", "3"))
    assert [s["upstream"] for s in parallel["series"]] == sorted(paths)
    assert parallel == alone
    assert parallel["lines_read"] == 3 * 1013


def test_stdin_is_read_with_a_dash():
    report = json.loads(run_cli("analyze", "--format", "json", "-", stdin=(CAPTURE / "server.log").read_bytes()).stdout)
    assert report["series"][0]["accepted_tokens"] == 78455


def test_table_and_csv():
    table = run_cli("analyze", str(CAPTURE / "server.log"))
    assert table.returncode == 0
    assert "mean acceptance length L = 4.122" in table.stdout and "verdict: ok" in table.stdout
    rows = list(csv.DictReader(io.StringIO(run_cli("analyze", "--format", "csv", str(CAPTURE / "server.log")).stdout)))
    assert [row["position"] for row in rows] == [str(i) for i in range(8)]
    assert float(rows[0]["position_acceptance"]) == pytest.approx(0.615, abs=0.0005)


def test_without_paths_the_built_in_sample_is_analysed():
    result = run_cli("analyze", "--format", "json")
    assert result.returncode == 0 and "built-in sample" in result.stderr
    assert json.loads(result.stdout)["series"][0]["accepted_tokens"] == 78455


def test_parse_errors_are_counted_not_fatal(tmp_path):
    log = tmp_path / "mixed.log"
    good = (CAPTURE / "server.log").read_bytes().decode().split("\n")
    log.write_text("\n".join([*good, "(APIServer pid=1) INFO 12-02 08:20:50 [metrics.py:120] SpecDecoding metrics: Accepted: x tokens"]) + "\n")
    report = analyze_json(str(log))
    assert report["parse_errors"] == {"bad_value": 1}
    assert report["series"][0]["accepted_tokens"] == 78455


@pytest.mark.parametrize(
    "args, message",
    [
        (("analyze", "/nonexistent/vllm.log"), "cannot read '/nonexistent/vllm.log'"),
        (("analyze", "--format", "xml"), "Invalid value for '--format'"),
        (("serve", "--log", "x.log", "--listen", "nonsense"), "--listen: expected host:port"),
        (("serve", "--log", "x.log", "--window", "5x"), "not a duration: '5x'"),
        (("serve", "--log", "x.log", "--health-window", "2m"), "'2m' is not one of the windows"),
    ],
)
def test_bad_input_gets_a_clear_error_and_exit_2(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr


def test_config_file_errors_name_the_key(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[health]\nmin_drafts = 'many'\n")
    result = run_cli("analyze", "--config", str(config), str(CAPTURE / "server.log"))
    assert result.returncode == 2 and "[health] min_drafts" in result.stderr


def test_config_file_changes_the_verdict(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[health]\ndegraded_min_mean_acceptance_length = 5.0\n")
    (series,) = analyze_json("--config", str(config), str(CAPTURE / "server.log"))["series"]
    assert series["health"] == "degraded"


def test_env_vars_set_flags():
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "analyze", str(CAPTURE / "server.log")],
        capture_output=True, text=True, env={**__import__("os").environ, "SPECDECODE_FORMAT": "json"}, timeout=60,
    )
    assert json.loads(result.stdout)["series"][0]["health"] == "ok"


def test_plot_writes_a_png(tmp_path):
    target = tmp_path / "curve.png"
    result = run_cli("analyze", "--plot", str(target), str(CAPTURE / "server.log"))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in result.stderr and "(1 series)" in result.stderr


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "matplotlib.py").write_text("raise ImportError('matplotlib is not installed here')\n")
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "analyze", "--plot", str(tmp_path / "x.png"), str(CAPTURE / "server.log")],
        capture_output=True, text=True, timeout=60,
        env={**__import__("os").environ, "PYTHONPATH": str(blocker)},
    )
    assert result.returncode == 1
    assert "pip install 'specdecode-exporter[plot]'" in result.stderr


# serve's libraries: the HTTP client (acknowledge, scrapes), the web server, YAML (targets files, web
# config), file watching, the exposition helpers. analyze is timed against `grep -c` (benchmarks/),
# so its start-up must not pay for any of them.
SERVE_ONLY = {"httpx", "fastapi", "uvicorn", "starlette", "anyio", "pydantic", "yaml", "watchdog", "prometheus_client", "rich"}
_LOADED_BY_ANALYZE = """
import sys
from exporter.cli.main import main
try:
    main(["analyze", "--format", "json", "--no-progress", sys.argv[1]])
except SystemExit as done:
    assert not done.code, done.code
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})), file=sys.stderr)
"""


def test_analyze_loads_none_of_serves_libraries():
    result = subprocess.run([sys.executable, "-c", _LOADED_BY_ANALYZE, str(CAPTURE / "server.log")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stderr.split())
    assert json.loads(result.stdout)["series"] and {"click", "numpy", "exporter"} <= loaded  # it ran, batch path and all
    assert loaded & SERVE_ONLY == set()
