"""report.html in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``) through
selenium, pointed at ``/usr/bin/chromedriver`` so that nothing is downloaded.

The page of a tiny comparison loads without a script error (the browser's SEVERE log and a ``window.onerror``
hook installed before the page's own script), runs none of the ``<script>`` a context holds, lists every
question, shades the BIO head's word probabilities, and answers its filters. A screenshot is saved for a
person to look at. Without Chromium the tests skip and say why; with ``BIO_MRC_REQUIRE_BROWSER=1`` (CI sets
it) a missing browser fails them instead.
"""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from bio_mrc.harness.groups import question_word

from .conftest import BROWSER_PARAGRAPHS, HOSTILE_TEXT

pytestmark = pytest.mark.slow  # a real browser

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
REQUIRED = os.environ.get("BIO_MRC_REQUIRE_BROWSER") == "1"

# Before any script of the page: record errors and any alert() a context might smuggle in.
WATCH = ("window.__errors = []; window.__alerts = [];"
         "window.addEventListener('error', (e) => window.__errors.push(String(e.message)));"
         "window.alert = (m) => window.__alerts.push(String(m));")


def missing_browser() -> str | None:
    """Why no browser can run here, or None."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[dev]')"
    absent = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    return f"{' and '.join(absent)} missing (apt-get install -y chromium chromium-driver)" if absent else None


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    reason = missing_browser()
    if reason:
        if REQUIRED:
            pytest.fail(f"BIO_MRC_REQUIRE_BROWSER=1 but no browser: {reason}")
        pytest.skip(f"no headless browser: {reason}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager downloads nothing
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves its single-instance socket folder in TMPDIR: the test's own temporary folder, not /tmp
    service = Service(str(CHROMEDRIVER), env={**os.environ, "TMPDIR": str(tmp_path_factory.mktemp("chromium"))})
    chrome = webdriver.Chrome(service=service, options=options)
    chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
    yield chrome
    chrome.quit()


def open_page(driver, path: Path, tab: str = "questions") -> None:
    driver.get(path.resolve().as_uri() + "#" + tab)
    driver.get_log("browser")  # drop what an earlier page left
    driver.refresh()


def problems(driver) -> list[str]:
    severe = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    return severe + driver.execute_script("return window.__errors") + [f"alert({m})" for m in driver.execute_script("return window.__alerts")]


def listed(driver) -> list[int]:
    return [int(q) for q in driver.execute_script(
        "return Array.from(document.querySelectorAll('#list tbody tr')).map((row) => row.dataset.question)")]


def choose(driver, css: str, option_text: str) -> None:
    """Pick the option of a select whose text starts with ``option_text``, as a person would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    select = Select(driver.find_element(By.CSS_SELECTOR, css))
    select.select_by_visible_text(next(o.text for o in select.options if o.text.startswith(option_text)))


def test_the_report_loads_without_errors_and_lists_every_question(driver, browser_comparison, tmp_path):
    out, results, _ = browser_comparison
    open_page(driver, out / "report.html")
    assert problems(driver) == []
    assert listed(driver) == list(range(len(results.eval_examples)))
    titles = driver.execute_script("return Array.from(document.querySelectorAll('#list tbody tr')).map((row) => row.title)")
    assert titles == [ex.id for ex in results.eval_examples]
    assert driver.execute_script("return window.bioMrcBrowser.questions") == 5
    screenshot = tmp_path / "report_html_questions.png"
    assert driver.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 10_000
    print(f"\nscreenshot of report.html's question browser: {screenshot}")


def test_a_filter_changes_what_is_listed(driver, browser_comparison):
    out, results, _ = browser_comparison
    open_page(driver, out / "report.html")
    choose(driver, 'select[name="question word"]', "what")
    expected = [q for q, ex in enumerate(results.eval_examples) if question_word(ex.question) == "what"]
    assert listed(driver) == expected == [0, 3]
    assert driver.execute_script("return document.getElementById('status').textContent").startswith("questions 1–2 of 2 shown (5 in all)")
    choose(driver, 'select[name="question word"]', "all")
    choose(driver, "#sort", "F1 A − B, highest first")
    f1 = {(c.run, c.decoding): np.asarray(c.f1) for c in results.cells}
    a, b = (driver.execute_script(f"return document.getElementById('{s}').selectedOptions[0].text") for s in ("cell-a", "cell-b"))
    difference = f1[tuple(a.split(" ·")[0].split("/"))] - f1[tuple(b.split(" ·")[0].split("/"))]
    assert np.all(np.diff(difference[listed(driver)]) <= 1e-4)  # by A − B, highest first
    assert problems(driver) == []


def test_a_hostile_context_is_shown_as_text_and_shaded_by_the_bio_head(driver, browser_comparison):
    out, _, _ = browser_comparison
    open_page(driver, out / "report.html")
    driver.execute_script("document.querySelector('#list tbody tr[data-question=\"3\"]').click()")
    context = driver.execute_script("return document.querySelector('#detail .context').textContent")
    assert context == BROWSER_PARAGRAPHS[1][0]
    gold = driver.execute_script("return Array.from(document.querySelectorAll('#detail .context .gold')).map((s) => s.textContent).join('')")
    assert gold == HOSTILE_TEXT
    cached = np.load(next(out.glob("cells/joint-*.browser.npz")))
    first = int(cached["word_counts"][:3].sum())  # question 4's first word
    p_b, p_i = cached["tag_bytes"][first] / 255
    title = driver.execute_script("return document.querySelector('#detail .context span[data-word=\"0\"]').title")
    assert title == f"P(B) {p_b:.2f} · P(I) {p_i:.2f}"
    assert problems(driver) == []


def test_the_extract_page_opens_with_its_one_question(driver, browser_comparison, tmp_path):
    from bio_mrc.cli import main

    out, _, _ = browser_comparison
    page = tmp_path / "extract.html"
    main(["extract", "--model", str(next(out.glob("models/joint-*"))), "--question", "Who ruled?",
          "--context", BROWSER_PARAGRAPHS[0][0], "--html", str(page)])
    open_page(driver, page)
    assert listed(driver) == [0] and problems(driver) == []
    cells = driver.execute_script("return document.querySelectorAll('#detail table tr').length")
    assert cells == 4  # a header and the span, bio and joint decodings


@pytest.mark.parametrize("tab", ["report", "questions"])
def test_on_a_phone_only_tables_scroll_sideways_never_the_page(driver, browser_comparison, tmp_path, tab):
    out, _, _ = browser_comparison
    driver.set_window_size(390, 844)
    try:
        open_page(driver, out / "report.html", tab)
        if tab == "questions":
            driver.execute_script("document.querySelector('#list tbody tr').click()")  # the opened question too
        page = driver.execute_script("const s = document.scrollingElement; return [s.scrollWidth, s.clientWidth]")
        wide = driver.execute_script(
            "return Array.from(document.querySelectorAll('body *')).filter((e) => e.getBoundingClientRect().right > "
            "document.scrollingElement.clientWidth + 1 && !e.closest('.table-scroll')).slice(0, 5)"
            ".map((e) => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))")
        assert page[0] <= page[1], f"the page scrolls sideways at 390 px: {page}; too wide: {wide}"
        narrowest = driver.execute_script(
            "return Math.min(...Array.from(document.querySelectorAll('#list tbody td:nth-child(2)')).map((c) => c.clientWidth))")
        assert tab == "report" or narrowest > 100  # the question column keeps its words
        screenshot = tmp_path / f"report_html_{tab}_390px.png"
        assert driver.save_screenshot(str(screenshot))
        print(f"\nscreenshot at 390 px: {screenshot}")
        assert problems(driver) == []
    finally:
        driver.set_window_size(1400, 1000)
