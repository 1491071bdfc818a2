"""``make site`` in a real browser: the course's static site (``notebooks/course_site.py``), built
from the notebooks' saved outputs into a temporary folder, served over loopback HTTP and opened
page by page in headless Chromium (Debian's ``chromium``, driven by Playwright through
``executable_path``).

Two sites: a small course made here (three lessons, an appendix and a solution beside them, so
titles, goals, links and the solutions' absence are known exactly), and the real course from
``feeslab.course`` over the notebooks that exist (``tests/course/test_course.py`` requires
every lesson's). On both: every page answers 200 with no console error and loads nothing from
another host, the index lists every lesson in order and links every page, every image loads,
each page shows as many figures as its notebook has image outputs, the figures index lists
every figure and links each to its anchor, the pages link to the previous and next, and no
solution appears. The real lessons also number their figures 1, 2, ... in order.

Without ``/usr/bin/chromium`` (``make test`` installs Debian's package) or the ``playwright``
package of the dev extra the test fails, saying which is missing: a browser test that skips
would look green.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import io
import json
import re
import shutil
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from feeslab.course import APPENDICES, LESSONS, Appendix, Lesson

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
VERDICT = re.compile(r"Exercise \d+\.\d+: right\.")
"""What a solution's check prints; never on the site."""


def _course_site():
    """``notebooks/course_site.py``, the builder ``make site`` runs."""
    path = NOTEBOOKS / "course_site.py"
    spec = importlib.util.spec_from_file_location("course_site", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["course_site"] = module
    spec.loader.exec_module(module)
    return module


def _png(color: str) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (120, 80), color).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _image(color: str) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": _png(color), "text/plain": ["<Figure size 120x80>"]}}  # fmt: skip


def _stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": [text]}


def _write(path: Path, cells: list[tuple[str, str, list[dict]]], **metadata) -> None:
    notebook = {
        "cells": [
            {"cell_type": kind, "id": f"cell-{k}", "metadata": {}, "source": source,
             **({"outputs": outputs, "execution_count": 1} if kind == "code" else {})}
            for k, (kind, source, outputs) in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}, **metadata},
        "nbformat": 4, "nbformat_minor": 5,
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook), encoding="utf-8")


def _opening(number: int, title: str, goals: list[str]) -> str:
    listed = "\n".join(f"- {goal}" for goal in goals)
    return (f"# Lesson {number} · {title}\n\nWhat lesson {number} asks, and why it matters.\n\n"
            f"*About 45 minutes.*\n\n### Goals\nAfter this lesson you can:\n{listed}\n\n"
            "### Prerequisites\n- pandas: selecting columns")  # fmt: skip


SMALL_LESSONS = (
    Lesson(0, "00_first", "First steps", "first"),
    Lesson(1, "01_second", "The second lesson", "second"),
    Lesson(2, "02_third", "A third, without figures", "third"),
)
SMALL_APPENDICES = (Appendix("90_tour", "Tour: an appendix"),)
SMALL_TITLES = {
    "00_first": ["Figure 1. A first figure"],
    "01_second": ["Figure 1. Fees over … blocks", "Figure 2. Tips, in gwei",
                  "Figure 3. After a magic"],
    "02_third": [],
    "90_tour": ["Figure (output 1, untitled)", "Figure (output 2, untitled)"],
}  # fmt: skip


def _small_course(folder: Path) -> None:
    """Three lessons, an appendix, and a solution beside them whose verdict must not show."""
    no_answer = "Exercise 1.1: no answer yet. Replace ... with your answer and run the cell.\n"
    _write(folder / "00_first.ipynb", [
        ("markdown", _opening(0, "First steps", ["read a **frame**;", "draw `it`."]), []),
        ("code", 'fig, ax = plt.subplots()\nax.set_title("Figure 1. A first figure")',
         [_image("red")]),
        ("markdown", "Next: [the second lesson](01_second.ipynb#top); "
                     "[its solutions](solutions/01_second.ipynb).", []),
    ])  # fmt: skip
    _write(folder / "01_second.ipynb", [
        ("markdown", _opening(1, "The second lesson", ["compare two figures."]), []),
        ("code", 'fig.suptitle(f"Figure 1. Fees over {n:,} blocks")\n'
                 'other.suptitle("Figure 2. Tips, "\n                "in gwei")',
         [_stream("two figures\n"), _image("green"), _image("blue")]),
        ("code", '%matplotlib inline\nax.set_title(f"Figure 3. After a magic")', [_image("grey")]),
        ("markdown", "## Exercises", []),
        ("markdown", "**Exercise 1.1** (predict, then run). How many?", []),
        ("code", 'answer = ...  # [blocks]\n\nexercise("1.1").check(answer)',
         [_stream(no_answer)]),
    ])  # fmt: skip
    _write(folder / "02_third.ipynb", [
        ("markdown", _opening(2, "A third, without figures", ["read a table."]), []),
        ("code", "1 + 1", [{"output_type": "execute_result", "execution_count": 1,
                            "metadata": {}, "data": {"text/plain": ["2"]}}]),
    ])  # fmt: skip
    # a live widget with a still of its figure, and the widget's state saved: the still shows
    view = {"model_id": "a1", "version_major": 2, "version_minor": 0}
    live = _image("white")
    live["data"]["application/vnd.jupyter.widget-view+json"] = view
    state = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {
                "a1": {
                    "model_name": "ImageModel",
                    "model_module": "@jupyter-widgets/controls",
                    "model_module_version": "2.0.0",
                    "state": {},
                }
            },
            "version_major": 2,
            "version_minor": 0,
        }
    }
    _write(folder / "90_tour.ipynb", [
        ("markdown", "# Tour: an appendix\n\nA tour beside the lessons.", []),
        ("code", "plt.plot([1, 2])", [_image("black")]),
        ("code", "w = watch(lab)\nw", [live]),
    ], widgets=state)  # fmt: skip
    _write(folder / "solutions" / "01_second.ipynb", [
        ("markdown", "# Solutions · Lesson 1 · The second lesson", []),
        ("code", 'exercise("1.1").check(3)', [_stream("Exercise 1.1: right. Three.\n")]),
    ])  # fmt: skip


def _image_outputs(path: Path) -> int:
    """How many image outputs a notebook has, read from its file."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in output.get("data", {})
               for cell in cells for output in cell.get("outputs", []))  # fmt: skip


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def _serve(folder: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=folder))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _visit(page, url: str, problems: list[str]) -> dict:
    """Open ``url``; what the checks need of it (problems found on the way are appended)."""
    response = page.goto(url, wait_until="load")
    if response is None or response.status != 200:
        problems.append(f"{url}: status {response and response.status}")
    page.wait_for_function("Array.from(document.images).every(i => i.complete)")
    return page.evaluate(
        """() => ({
            text: document.body.innerText,
            images: Array.from(document.images).map(i => ({
                src: i.getAttribute('src'), complete: i.complete, width: i.naturalWidth,
                output: !!i.closest('.jp-OutputArea-output')})),
            links: Array.from(document.querySelectorAll('a[href]')).map(
                a => a.getAttribute('href')),
            ids: Array.from(document.querySelectorAll('[id^="figure-"]')).map(e => e.id),
            lessons: Array.from(document.querySelectorAll('ol.feeslab-lessons > li h2 a')).map(
                a => [a.innerText, a.getAttribute('href')]),
            appendices: Array.from(document.querySelectorAll('ul.feeslab-appendices > li > a')).map(
                a => [a.innerText, a.getAttribute('href')]),
            goals: Array.from(document.querySelectorAll('ol.feeslab-lessons > li')).map(
                li => Array.from(li.querySelectorAll('.feeslab-goals li')).map(g => g.innerText)),
            times: Array.from(document.querySelectorAll('.feeslab-time')).map(t => t.innerText),
            figures: Array.from(document.querySelectorAll('li.feeslab-figure')).map(li => ({
                href: li.querySelector('a').getAttribute('href'), text: li.innerText.trim()})),
            prev: document.querySelector('a[rel=prev]')?.getAttribute('href') ?? null,
            next: document.querySelector('a[rel=next]')?.getAttribute('href') ?? null,
        })"""
    )


def _check_site(browser, site: Path, lessons, appendices, folder: Path) -> dict[str, dict]:
    """Open every page of the site in ``site``; fail on any problem; the pages' contents."""
    server, base = _serve(site)
    problems: list[str] = []
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status}: {r.url}"))

    def only_loopback(route):
        if route.request.url.startswith(base):
            route.continue_()
        else:
            problems.append(f"a request off the site: {route.request.url}")
            route.abort()

    page.route("**/*", only_loopback)
    try:
        seen = {"index.html": _visit(page, f"{base}/index.html", problems)}
        order = [f"{x.notebook}.html" for x in (*lessons, *appendices)]
        for name in ["figures.html", *order]:
            seen[name] = _visit(page, f"{base}/{name}", problems)
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    assert not problems, problems

    index = seen["index.html"]
    assert index["lessons"] == [[f"Lesson {x.number} · {x.title}", f"{x.notebook}.html"]
                                for x in lessons]  # fmt: skip
    assert index["appendices"] == [[x.title, f"{x.notebook}.html"] for x in appendices]
    assert len(index["times"]) == len(lessons)
    assert all(re.fullmatch(r"About \d+ minutes", time) for time in index["times"]), index["times"]
    assert all(index["goals"]), "a lesson without goals on the index"
    assert set(order) <= set(index["links"])
    everything = 0
    for at, name in enumerate(order):
        shown = seen[name]
        stem = name.removesuffix(".html")
        assert all(i["complete"] and i["width"] > 0 for i in shown["images"]), (name, shown)
        figures = [i for i in shown["images"] if i["output"]]
        assert len(figures) == _image_outputs(folder / f"{stem}.ipynb"), name
        assert all(i["src"].startswith(f"{stem}/figure-") for i in figures), figures
        assert shown["ids"] == [f"figure-{k}" for k in range(1, len(figures) + 1)]
        everything += len(figures)
        assert shown["prev"] == (order[at - 1] if at else None)
        assert shown["next"] == (order[at + 1] if at + 1 < len(order) else None)
    listed = seen["figures.html"]["figures"]
    assert len(listed) == everything
    for figure in listed:  # each links to a figure's anchor on its page
        target, _, anchor = figure["href"].partition("#")
        assert anchor in seen[target]["ids"], figure
    assert all(i["complete"] and i["width"] > 0 for i in seen["figures.html"]["images"])
    for name, shown in seen.items():
        assert not VERDICT.search(shown["text"]), f"{name} shows a solution's verdict"
        assert not [link for link in shown["links"] if "solutions" in link], name
    assert not [p for p in site.rglob("*") if "solutions" in p.name or p.suffix == ".ipynb"]
    return seen


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.fail("no chromium on PATH: apt-get install -y chromium (make test does it)")
    try:
        from playwright import sync_api  # the dev extra's
    except ImportError:
        pytest.fail("no playwright: pip install -e '.[dev]' (the dev extra has it)")
    with sync_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                          args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        try:
            yield launched
        finally:
            launched.close()


@pytest.mark.slow
def test_a_small_course_becomes_a_site_with_every_page_figure_and_link(browser, tmp_path):
    folder, site = tmp_path / "notebooks", tmp_path / "site"
    _small_course(folder)
    builder = _course_site()
    builder.build(site, lessons=SMALL_LESSONS, appendices=SMALL_APPENDICES, folder=folder,
                  log=lambda _: None)  # fmt: skip
    seen = _check_site(browser, site, SMALL_LESSONS, SMALL_APPENDICES, folder)

    assert seen["index.html"]["goals"] == [["read a frame;", "draw it."], ["compare two figures."],
                                           ["read a table."]]  # fmt: skip
    labels = [figure["text"] for figure in seen["figures.html"]["figures"]]
    assert labels == [title for titles in SMALL_TITLES.values() for title in titles]
    first = seen["00_first.html"]
    assert "01_second.html#top" in first["links"]  # a link between notebooks, between pages
    assert "What lesson 0 asks" in first["text"]
    assert "no answer yet" in seen["01_second.html"]["text"]  # the exercises, unanswered


@pytest.mark.slow
def test_the_course_site_opens_page_by_page(browser, tmp_path):
    lessons = [x for x in LESSONS if (NOTEBOOKS / f"{x.notebook}.ipynb").is_file()]
    appendices = [x for x in APPENDICES if (NOTEBOOKS / f"{x.notebook}.ipynb").is_file()]
    assert lessons or appendices, "no notebook of the course"
    builder = _course_site()
    pages = builder.build(tmp_path / "site", lessons=lessons, appendices=appendices,
                          folder=NOTEBOOKS, log=lambda _: None)  # fmt: skip
    assert [p.notebook for p in pages] == [x.notebook for x in (*lessons, *appendices)]
    for page in pages[: len(lessons)]:  # a lesson's figures' title literals count 1, 2, ...
        numbers = [figure.number for figure in page.figures]
        assert numbers == [str(k) for k in range(1, len(numbers) + 1)], (
            f"{page.notebook}: its figures' titles number them {numbers} (each cell showing a "
            "figure holds its 'Figure N. ' literal, N counting 1, 2, ... in order)"
        )
    _check_site(browser, tmp_path / "site", lessons, appendices, NOTEBOOKS)
