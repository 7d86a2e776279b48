"""The status page in headless Chromium (Debian's, driven by Playwright; never a browser download).

A real `demo` runs — the simulator and the sidecar reading its log and /metrics — with a drop-off
after 20 s and a 10 s health window, so the page must show `ok` and then `degraded`, and stay
degraded against the frozen reference for many windows (a short --reference-hold then makes the
drop the new normal, so the test does not wait days). The bars must show the values the status API
reports; at 1280 px no label may wrap. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import cli, free_port, running_process
from playwright.sync_api import Browser, Page, sync_playwright
from waiting import wait_until

pytestmark = pytest.mark.slow  # headless Chromium against a running demo

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"
HOLD = 50.0  # seconds degraded before the drop becomes the new normal
WRAPPED = """() => [...document.querySelectorAll('.numbers span, .badge, .verdict, .since, .legend span, .card h2')]
  .filter((e) => { const rects = e.getClientRects(), style = getComputedStyle(e);
    const line = parseFloat(style.lineHeight) || 1.45 * parseFloat(style.fontSize);
    return e.matches('.card h2') ? e.getBoundingClientRect().height > 2 * line : rects.length > 1 || e.getBoundingClientRect().height > 1.6 * line; })
  .map((e) => e.className + ': ' + e.textContent)"""


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
        "demo", "--listen", f"127.0.0.1:{port}", "--drop-after", "20",
        "--log-interval", "1", "--window", "10s,2m", "--health-window", "10s", "--seed", "3",
        "--reference-min-drafts", "400", "--reference-hold", f"{HOLD:g}s",
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

    def bars_show_the_status() -> tuple[list[float], dict[str, Any]] | None:
        status = httpx.get(demo + "/api/v1/status").json()
        entry = next(s for s in status["series"] if s["source"] == "log" and s["window"] == "10s")
        shown = [float(v) for v in bars.evaluate_all("(els) => els.map((e) => e.dataset.value)")]
        rates = entry["position_acceptance"]
        # the page may be one refresh behind the API: close, not equal
        together = len(shown) == len(rates) and all(abs(a - b) < 0.05 for a, b in zip(shown, rates, strict=True))
        return (shown, entry) if together else None

    shown, entry = wait_until(bars_show_the_status, "the bars to show the status API's per-position rates")
    assert 0.7 < shown[0] < 0.9
    # the recommendation is the current period's, from the derivation its reason (shown) comes from
    assert card.locator(".k-marker").get_attribute("data-k") == str(entry["current_period"]["recommended_speculative_tokens"])
    page.screenshot(path=str(ARTIFACTS / "status-page-ok.png"), full_page=True)

    page.wait_for_selector('.card[data-source="log"] .verdict.degraded', timeout=60_000)
    assert "fell from" in card.locator(".reason").inner_text()
    assert re.fullmatch(r"since (\d\d-\d\d )?\d\d:\d\d UTC \(\d+ min\)", card.locator(".since").inner_text())
    assert float(card.locator(".ref-l").inner_text()) > float(card.locator(".mal").inner_text()) + 0.3
    assert card.locator("line.ref-tick").count() == 4
    # what is true now: the drop's own period, the advice to fix the drafter, the healthy time before it
    assert re.match(r"now, since .* \(a change of health\): L \d\.\d\d", card.locator(".now").inner_text())
    assert "check-config" in card.locator(".advice").inner_text()
    assert "healthy" in card.locator(".earlier").first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "status-page-degraded.png"), full_page=True)

    # full width at 1280 px, and no label wraps
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_function("() => document.querySelector('.card').getBoundingClientRect().width > 1000", timeout=10_000)  # laid out again
    widths = page.evaluate("() => [document.querySelector('.card').getBoundingClientRect().width, document.documentElement.clientWidth]")
    assert widths[0] > widths[1] - 60  # the card spans the page (less the padding)
    assert page.evaluate(WRAPPED) == []
    page.screenshot(path=str(ARTIFACTS / "status-page-degraded-1280.png"), full_page=True)

    # many health windows later it is still degraded, since the same moment: the reference is frozen
    def log_entry() -> dict:  # type: ignore[type-arg]
        return next(s for s in httpx.get(demo + "/api/v1/status").json()["series"] if s["source"] == "log" and s["window"] == "10s")

    first = log_entry()
    assert first["health"] == "degraded"
    def three_windows_later() -> dict | None:  # type: ignore[type-arg]
        entry = log_entry()
        return entry if entry["health"] != "degraded" or time.time() - first["health_since"] >= 3 * 10 else None

    later = wait_until(three_windows_later, "three health windows after the drop was found")
    assert later["health"] == "degraded" and later["health_since"] == first["health_since"]
    assert later["reference"]["mean_acceptance_length"] == first["reference"]["mean_acceptance_length"]  # frozen

    # after the hold the drop is the new normal, and the old reference is shown beside it
    page.wait_for_selector('.card[data-source="log"] .verdict.ok', timeout=int((HOLD + 30) * 1000))
    assert "hold" in card.locator(".previous").first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "status-page-after-hold.png"), full_page=True)
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
        assert "stamps: zone not yet learned" in page.inner_text("#empty-sources")  # an empty file tells no zone
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
