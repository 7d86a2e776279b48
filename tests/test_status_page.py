"""The status page in headless Chromium (Debian's, driven by Playwright; never a browser download).

A real `demo` runs — the simulator and the sidecar reading its log and /metrics — with a drop-off
after 15 s and a 10 s health window, so the page must show `ok` and then `degraded`. The bars must
show the values the status API reports. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers import cli, free_port, running_process
from playwright.sync_api import Browser, Page, sync_playwright

pytestmark = pytest.mark.slow  # headless Chromium against a running demo

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert shutil.which(CHROMIUM), "Debian's chromium is missing: scripts/test installs it"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def demo() -> Iterator[str]:
    port = free_port()
    command = cli(
        "demo", "--listen", f"127.0.0.1:{port}", "--drop-after", "15",
        "--log-interval", "1", "--window", "10s,2m", "--health-window", "10s", "--seed", "3",
    )
    with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "demo"):
        yield f"http://127.0.0.1:{port}"


def log_card(page: Page):  # type: ignore[no-untyped-def]
    return page.locator('.card[data-source="log"]')


def test_curve_values_and_the_drop_off_verdict(browser, demo):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 420, "height": 900})  # a phone-sized viewport
    page.goto(demo + "/")
    page.wait_for_selector('.card[data-source="log"] .verdict.ok', timeout=45_000)
    card = log_card(page)
    bars = card.locator("rect.bar-rate")
    assert bars.count() == 4  # k = 4
    status = httpx.get(demo + "/api/v1/status").json()
    page.wait_for_timeout(100)
    shown = [float(v) for v in bars.evaluate_all("(els) => els.map((e) => e.dataset.value)")]
    entry = next(s for s in status["series"] if s["source"] == "log" and s["window"] == "10s")
    assert len(shown) == len(entry["position_acceptance"])
    assert all(abs(a - b) < 0.05 for a, b in zip(shown, entry["position_acceptance"], strict=True))  # the page may be one refresh behind
    assert 0.7 < shown[0] < 0.9
    assert card.locator(".k-marker").get_attribute("data-k") == str(entry["recommended_speculative_tokens"])
    page.screenshot(path=str(ARTIFACTS / "status-page-ok.png"), full_page=True)

    page.wait_for_selector('.card[data-source="log"] .verdict.degraded', timeout=60_000)
    assert "fell from" in card.locator(".reason").inner_text()
    page.screenshot(path=str(ARTIFACTS / "status-page-degraded.png"), full_page=True)
    page.close()


def test_empty_state_and_dark_mode(browser, tmp_path):
    port = free_port()
    log = tmp_path / "vllm.log"
    log.write_text("")
    command = cli("serve", "--log", str(log), "--listen", f"127.0.0.1:{port}")
    with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "sidecar"):
        page = browser.new_page(color_scheme="dark")
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("#empty:not([hidden])", timeout=20_000)
        assert "No spec-decode data yet" in page.inner_text("#empty")
        assert str(log) in page.inner_text("#empty-sources")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(15, 17, 21)"  # the dark palette
        page.screenshot(path=str(ARTIFACTS / "status-page-empty-dark.png"))
        page.close()


def test_page_assets_are_served_locally_and_small():
    root = Path(__file__).parent.parent / "exporter" / "expose" / "web"
    html = (root / "index.html").read_text()
    assert "http://" not in html and "https://" not in html  # no CDN: works offline
    assert sum(p.stat().st_size for p in root.iterdir()) < 32_000


if os.environ.get("CI") and not shutil.which(CHROMIUM):  # fail loudly in CI rather than skip
    raise RuntimeError("chromium missing in CI")
