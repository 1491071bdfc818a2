"""Render every notebook as a reader sees it: HTML, each figure as PNG and a full-page screenshot.

Usage: ``python notebooks/render.py [--execute] [--no-screenshot] [NOTEBOOK ...]``
(``make render``).
Writes ``build/render/<notebook>/`` (git-ignored): ``<notebook>.html`` (the page ``make site``
makes, figures embedded, nothing loaded from the network), ``figure-NN.png`` (one per figure, in
order) and ``page.png`` (headless Chromium's screenshot of the whole page, however long, through
Playwright).
Without ``--execute`` it renders the outputs saved in the notebook (what nbval checks); with it, it
restarts and runs every cell first, one notebook at a time. Look at every figure before committing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course_site import execute, export, exporter, figures

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "build" / "render"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH = 1100
"""The screenshots' width [CSS px]; their height is the page's."""


def browser() -> str | None:
    """Debian's headless Chromium, installed with apt-get when missing and we are root."""
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(
            "no chromium and not root: skipping page screenshots (apt-get install chromium)",
            file=sys.stderr,
        )
        return None
    print("installing chromium with apt-get ...", file=sys.stderr)
    quiet = {
        "stdout": subprocess.DEVNULL,
        "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    }
    subprocess.run(["apt-get", "update"], check=False, **quiet)
    subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", "chromium"], check=False, **quiet
    )
    return shutil.which("chromium")


@contextmanager
def camera(chrome: str | None) -> Iterator[Any]:
    """A Playwright page in headless ``chrome`` (None when there is no browser or Playwright)."""
    if chrome is None:
        yield None
        return
    try:
        from playwright.sync_api import sync_playwright  # the dev extra's (no browser download)
    except ImportError:
        print("no playwright (pip install -e '.[dev]'): skipping page screenshots", file=sys.stderr)
        yield None
        return
    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=chrome, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched.new_page(viewport={"width": WIDTH, "height": 900})
        finally:
            launched.close()


def render(path: Path, *, run: bool, page: Any = None, out: Path = OUT) -> Path:
    """Write ``path``'s HTML, figures and (with a ``page``) whole-page screenshot under
    ``out/<notebook>/``; ``run`` executes the notebook first."""
    notebook = nbformat.read(path, as_version=4)
    if run:  # a fresh kernel in the notebook's folder, as nbval runs it
        execute(notebook, path)
    target = out / path.stem
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    found = [figure for _, figure in figures(notebook)]
    for figure in found:
        (target / f"figure-{figure.index:02d}.png").write_bytes(figure.png)
    html = target / f"{path.stem}.html"
    html.write_text(export(notebook, name=path.stem, html_exporter=exporter()), encoding="utf-8")
    if page is not None:
        page.goto(html.as_uri(), wait_until="load")
        page.screenshot(path=str(target / "page.png"), full_page=True)
    print(f"{path.name}: {len(found)} figures -> {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/[0-9]*.ipynb")
    parser.add_argument(
        "--execute", action="store_true", help="restart and run each notebook first"
    )
    parser.add_argument(
        "--no-screenshot", action="store_true", help="skip Chromium's page screenshots"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(HERE.glob("[0-9]*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.exit(2, f"render: no such notebook: {', '.join(missing)}\n")
    with camera(None if args.no_screenshot else browser()) as page:
        for path in paths:
            render(path.resolve(), run=args.execute, page=page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
