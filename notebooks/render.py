"""Render every notebook as a reader sees it: HTML, each figure as PNG and a page screenshot.

Usage: ``python notebooks/render.py [--execute] [--no-screenshot] [NOTEBOOK ...]``
(``make render``).
Writes ``build/render/<notebook>/`` (git-ignored): ``<notebook>.html``, ``figure-NN.png`` (one per
figure, in order) and ``page.png`` (headless Chromium's screenshot of the HTML).
Without ``--execute`` it renders the outputs saved in the notebook (what nbval checks); with it, it
restarts and runs every cell first, one notebook at a time. Look at every figure before committing.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "build" / "render"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


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


def render(path: Path, *, execute: bool, chrome: str | None) -> Path:
    notebook = nbformat.read(path, as_version=4)
    if execute:  # a fresh kernel in the notebook's folder, as nbval runs it
        # without the widgets' state a page shows what a static page can: a live watch's
        # still (image/png) instead of a widget it has no kernel to run (docs/watch.md)
        NotebookClient(
            notebook,
            timeout=600,
            resources={"metadata": {"path": str(path.parent)}},
            store_widget_state=False,
        ).execute()
    target = OUT / path.stem
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    figures = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                figures += 1
                (target / f"figure-{figures:02d}.png").write_bytes(base64.b64decode(png))
    html, _ = HTMLExporter().from_notebook_node(notebook)
    page = target / f"{path.stem}.html"
    page.write_text(html, encoding="utf-8")
    if chrome:
        subprocess.run(
            [
                chrome,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1100,12000",
                f"--screenshot={target / 'page.png'}",
                page.as_uri(),
            ],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
    print(f"{path.name}: {figures} figures -> {target}")
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
    chrome = None if args.no_screenshot else browser()
    for path in paths:
        render(path.resolve(), execute=args.execute, chrome=chrome)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
