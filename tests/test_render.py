"""``make render``'s page images are the whole page, however long: a notebook far taller than the
12,000 px the old fixed window cut at is screenshot down to its last line (headless Chromium
through Playwright, as ``notebooks/render.py`` drives it). Fails, never skips, without Chromium or
Playwright: a browser test that skips would look green."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _png_size(path: Path) -> tuple[int, int]:
    """A PNG's (width, height) from its IHDR chunk [px]."""
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_a_page_longer_than_12000_px_is_screenshot_whole(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "the render test needs Debian's chromium (make test installs it)"
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import render
    finally:
        sys.path.remove(str(NOTEBOOKS))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(f"## Section {n}\n\n" + "A line of text. " * 40)
                      for n in range(300)]  # fmt: skip
    notebook.cells.append(nbformat.v4.new_markdown_cell("The last line of the page."))
    source = tmp_path / "tall.ipynb"
    nbformat.write(notebook, source)
    with render.camera(chromium) as page:
        assert page is not None, "no Playwright: pip install -e '.[dev]'"
        target = render.render(source, run=False, page=page, out=tmp_path / "out")
        height = page.evaluate("document.documentElement.scrollHeight")
        last = page.evaluate(
            "[...document.querySelectorAll('p')].pop().getBoundingClientRect().bottom"
            " + window.scrollY"
        )
    width, shot = _png_size(target / "page.png")
    assert height > 12_000 and last > 12_000
    assert width == render.WIDTH and shot == height  # the whole page, to its last line
    assert (target / "tall.html").read_text(encoding="utf-8").count("Section 299") == 1
