"""The answer page in a real headless browser (Debian chromium + chromium-driver, selenium): type a question with
the keyboard, submit, and the highlighted text is the API's span; an unanswerable question shows the abstention.
Chromium may resolve only 127.0.0.1, so the page cannot use external assets."""

from __future__ import annotations

import shutil

import pytest

from tests.serving.conftest import ANSWERABLE, UNANSWERABLE, http

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run does it)")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-extensions", "--no-first-run", "--disable-background-networking",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _ask(browser, question: str, expect_answered: int):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question, Keys.ENTER)  # keyboard only: Enter submits the form
    WebDriverWait(browser, 120).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-answered") == str(expect_answered))


def test_page_highlights_the_span_and_shows_the_abstention(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    label = browser.find_element(By.CSS_SELECTOR, "label[for=question]")
    assert label.text == "Question"
    box = browser.find_element(By.ID, "question")
    assert browser.switch_to.active_element != box
    label.click()  # the label is tied to the box: clicking it focuses the box
    assert browser.switch_to.active_element == box

    _ask(browser, ANSWERABLE, 1)
    status, api, _ = http("POST", f"{server.url}/extractive/run", {"query": ANSWERABLE})
    assert status == 200 and api["answer"]
    span = api["spans"][0]
    assert browser.find_element(By.ID, "error").is_displayed() is False
    assert browser.find_element(By.ID, "answer").text == api["answer"]
    assert browser.find_element(By.ID, "verdict").text.startswith("SUPPORTED")
    # the same route (a repeat is answered from the answer cache, which adds a first "cache:answer" stage)
    shown = browser.find_element(By.ID, "route").text.split(" → ")
    assert [r for r in shown if r != "cache:answer"] == [r for r in api["route"] if r != "cache:answer"]
    mark = browser.find_element(By.CSS_SELECTOR, "#passage mark")
    assert mark.get_attribute("textContent") == span["text"]
    passage = browser.find_element(By.ID, "passage").get_attribute("textContent")
    assert len(passage) > len(span["text"]) and span["text"] in passage  # highlighted inside its passage
    assert span["doc_id"] in browser.find_element(By.ID, "passage-source").text
    sources = [li.find_element(By.CLASS_NAME, "doc").text.split(" · ")[0]
               for li in browser.find_elements(By.CSS_SELECTOR, "#sources li")]
    assert sources == [d["doc_id"] for d in api["documents"]]
    # the answer takes focus so a screen reader or keyboard user lands on it
    assert browser.switch_to.active_element == browser.find_element(By.ID, "answer")

    # keyboard only: type, Tab to the Ask button, press Space on it
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    box.clear()
    box.send_keys(UNANSWERABLE, Keys.TAB)
    assert browser.switch_to.active_element == browser.find_element(By.ID, "submit")
    browser.switch_to.active_element.send_keys(Keys.SPACE)
    WebDriverWait(browser, 120).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-answered") == "2")
    assert browser.find_element(By.ID, "answer").text == "not found in the source"
    assert browser.find_element(By.ID, "verdict").text.startswith("NOT_FOUND")
    assert not browser.find_element(By.ID, "passage-box").is_displayed()

    # every resource the page loaded came from the server itself
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(r.startswith(server.url + "/") for r in resources), resources


def test_page_shows_a_refusal_in_one_line(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    browser.execute_script("document.getElementById('question').removeAttribute('maxlength')")
    _ask(browser, "x" * 2500, 1)
    error = browser.find_element(By.ID, "error")
    assert error.is_displayed() and "over the limit of 2000" in error.text
    assert not browser.find_element(By.ID, "result").is_displayed()


def test_a_pdf_answer_shows_its_rendered_page_with_the_highlight(server, browser):
    """The page as the person would see it: the PDF page rendered by the server, the span highlighted, captioned
    with "page 3 of security-whitepaper.pdf"; an answer from a Markdown file shows no page image."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server.url + "/")
    _ask(browser, "How much does the Glimmerline bug bounty pay for a critical vulnerability?", 1)
    assert browser.find_element(By.ID, "answer").text == "2,500 euros"
    cite = "page 3 of security-whitepaper.pdf (Reporting a vulnerability)"
    assert cite in browser.find_element(By.ID, "passage-source").text
    assert browser.find_element(By.CSS_SELECTOR, "#passage mark").get_attribute("textContent") == "2,500 euros"
    image = browser.find_element(By.ID, "page-image")
    WebDriverWait(browser, 30).until(lambda d: image.is_displayed() and d.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth", image))
    assert browser.execute_script("return arguments[0].naturalWidth", image) == 893  # A4 at 1.5× (595 pt)
    assert image.get_attribute("src").startswith("blob:")
    assert browser.find_element(By.ID, "page-caption").text == cite
    # the highlight is in the picture: some pixels are the answer's yellow
    yellow = browser.execute_script("""
        const img = arguments[0], c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0);
        const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] > 240 && d[i + 1] > 200 && d[i + 1] < 245 && d[i + 2] < 190) n++;
        return n;""", image)
    assert yellow > 200

    _ask(browser, ANSWERABLE, 2)
    assert not browser.find_element(By.ID, "page-box").is_displayed()


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory):
    """The extractive pipeline with a bar no demo answer reaches (0.99): what it finds is held back."""
    from tests.serving.conftest import serving

    with serving("pipelines/extractive.yaml", tmp_path_factory.mktemp("strict") / "server.log",
                 "--min-confidence", "0.99") as srv:
        yield srv


def _pixels(png: bytes):
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return image, set(image.getdata())


def _near(colours, rgb, tol=40) -> int:
    return sum(all(abs(a - b) <= tol for a, b in zip(c, rgb)) for c in colours)


def test_a_held_back_answer_is_said_and_looks_unlike_an_answer(strict_server, server, browser):
    from selenium.webdriver.common.by import By

    from components.core.verification.confidence import against_bar

    question = "What does ERR-4012 mean?"
    status, api, _ = http("POST", strict_server.url + "/extractive/run", {"query": question})
    held = api["held_back"]
    assert status == 200 and api["answer"] is None and held and held["min_confidence"] == 0.99
    browser.get(strict_server.url + "/")
    _ask(browser, question, 1)
    box = browser.find_element(By.ID, "held-back")
    assert box.is_displayed()
    said, bar_said = against_bar(held["confidence"], held["min_confidence"])
    assert box.text == (f"Held back: found '{held['answer']}' in {held['doc_id']}, confidence "
                        f"{said} — below the {bar_said} bar, so it is not shown as an answer. Check "
                        f"the source before relying on it.")
    assert browser.find_element(By.ID, "answer").text == "not found in the source"
    _, held_colours = _pixels(box.screenshot_as_png)
    # the sources read as text: a heading in bold, no Markdown symbols
    snippets = browser.find_elements(By.CSS_SELECTOR, "#sources .snippet")
    assert snippets and not any(s.text.lstrip().startswith("#") or "**" in s.text for s in snippets)
    assert browser.find_elements(By.CSS_SELECTOR, "#sources .snippet strong.md-heading")

    browser.get(server.url + "/")  # the same question where the bar lets the answer through
    _ask(browser, question, 1)
    answer = browser.find_element(By.ID, "answer")
    assert not browser.find_element(By.ID, "held-back").is_displayed() and answer.text == api["held_back"]["answer"]
    _, answer_colours = _pixels(answer.screenshot_as_png)
    # by pixels: the held-back note is drawn in its amber frame on a cream ground; an answer has neither
    assert _near(held_colours, (0xB2, 0x6B, 0x00)) > 0 and _near(held_colours, (0xFF, 0xF8, 0xEC), 6) > 0
    assert _near(answer_colours, (0xB2, 0x6B, 0x00)) == 0 and _near(answer_colours, (0xFF, 0xF8, 0xEC), 6) == 0
