"""Build the course as a static site, offline: ``make site`` (``python notebooks/course_site.py``).

Writes ``build/site/`` (git-ignored):

- ``index.html``: the reading order, each lesson of ``feeslab.course.LESSONS`` with its number,
  title, time and goals (read from the lesson's first cell), then the appendices (``APPENDICES``);
- one page per lesson and appendix, ``<notebook>.html`` (nbconvert's lab template without
  require.js, MathJax, mermaid or the widgets' loader, which come from CDNs), with links to the
  previous and next page and to the indexes;
- each figure as an image file the page references, ``<notebook>/figure-NN.png``, and its
  thumbnail ``<notebook>/thumb-NN.png``;
- ``figures.html``: every figure of every page (its lesson, number and title), a thumbnail
  linking to the figure in its page.

The pages show the outputs saved in the notebooks (what nbval checks); ``--execute``
(``SITE_FLAGS=--execute``) runs each notebook first, in its folder, with the figure audit of
``make test`` (:mod:`feeslab.plots.audit`), and stops at a notebook whose run shows an error.
The exercises appear as the lessons pose them; ``notebooks/solutions/`` is never read. Nothing
is fetched from the network, when building or when reading the pages.

``notebooks/render.py`` (``make render``) shares the HTML export and the figures' extraction.
"""

from __future__ import annotations

import argparse
import ast
import base64
import copy
import html
import io
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import mistune
import nbformat
from jinja2 import DictLoader
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from nbformat import NotebookNode

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "build" / "site"
SOLUTIONS = "solutions"
"""The folder of the solutions, beside the lessons: never part of the site."""
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
"""A widget's output, which needs the widgets' JavaScript from a CDN: its fallback is shown."""
FIGURE = re.compile(r"Figure (\d+)\. +(.*)", re.S)
"""A figure's title in a cell's source: ``"Figure N. <title>"``."""

# nbconvert's lab template, offline: no script or style from a CDN (require.js, MathJax, mermaid,
# the widgets' HTML manager); a page's navigation above and below; a figure is an image file
# with an anchor and its title as alternative text
TEMPLATE = r"""{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<link rel="icon" href="data:,">
<style type="text/css">{{ resources.feeslab_css }}</style>
{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
{{ resources.feeslab_nav }}
{%- endblock body_header -%}
{%- block body_footer -%}
{{ resources.feeslab_nav }}
{{ super() }}
{%- endblock body_footer -%}
{%- block data_png scoped -%}
{%- set figure = output.metadata.get('feeslab_figure', {}) -%}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}"
{%- if figure %} id="{{ figure.anchor }}"{% endif %}>
{%- if 'image/png' in output.metadata.get('filenames', {}) %}
<img src="{{ output.metadata.filenames['image/png'] | posix_path | escape_html }}"
{%- else %}
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
{%- endif %} alt="{{ figure.get('alt', 'a figure') | escape_html }}">
</div>
{%- endblock data_png -%}
"""
CSS = """
nav.feeslab-nav { display: flex; gap: 1.5em; flex-wrap: wrap; align-items: baseline;
  max-width: 1100px; margin: 0 auto; padding: 0.6em 1em; font: 14px sans-serif;
  border-bottom: 1px solid #ddd; }
nav.feeslab-nav:last-child { border-bottom: none; border-top: 1px solid #ddd; }
nav.feeslab-nav .feeslab-next { margin-left: auto; }
body.feeslab-index { font: 16px/1.5 sans-serif; max-width: 960px; margin: 0 auto; padding: 1em; }
.feeslab-index ol.feeslab-lessons { list-style: none; padding-left: 0; }
.feeslab-index ol.feeslab-lessons > li { margin-bottom: 1.2em; }
.feeslab-index .feeslab-time { color: #555; font-style: italic; }
.feeslab-figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr));
  gap: 1em; list-style: none; padding: 0; }
.feeslab-figures li { border: 1px solid #ddd; padding: 0.5em; font-size: 14px; }
.feeslab-figures img { max-width: 100%; display: block; margin-bottom: 0.4em; }
"""


class Entry(Protocol):
    """A page of the course: a lesson (``number``, ``notebook``, ``title``) or an appendix."""

    @property
    def notebook(self) -> str: ...

    @property
    def title(self) -> str: ...


@dataclass
class Figure:
    """One figure of a page: an ``image/png`` output of its notebook, in order."""

    index: int
    """Its place among the page's figures, from 1 (``figure-NN.png``)."""
    number: str | None
    """The number its title gives (``"Figure N. "``), None when the source does not say."""
    title: str | None
    """Its title after ``"Figure N. "`` (f-string fields shown as "…"), None when unknown."""
    png: bytes = field(repr=False)

    @property
    def anchor(self) -> str:
        return f"figure-{self.index}"

    @property
    def label(self) -> str:
        """``"Figure N. title"``, or what is known of it."""
        if self.number is None:
            return f"Figure (output {self.index}, untitled)"
        return f"Figure {self.number}. {self.title}"


@dataclass
class Page:
    """A lesson or an appendix: where its notebook is and what the site shows of it."""

    notebook: str
    title: str
    path: Path
    number: int | None = None
    """The lesson's number; None for an appendix."""
    figures: list[Figure] = field(default_factory=list)
    intro: dict[str, str] = field(default_factory=dict)

    @property
    def heading(self) -> str:
        return f"Lesson {self.number} · {self.title}" if self.number is not None else self.title

    @property
    def href(self) -> str:
        return f"{self.notebook}.html"


# --- the notebooks -----------------------------------------------------------------------------


def course_pages(lessons: Iterable[Any], appendices: Iterable[Entry], folder: Path) -> list[Page]:
    """The pages in reading order: ``lessons`` (each with a ``number``), then ``appendices``."""
    pages = [Page(x.notebook, x.title, folder / f"{x.notebook}.ipynb", x.number) for x in lessons]
    pages += [Page(a.notebook, a.title, folder / f"{a.notebook}.ipynb") for a in appendices]
    for page in pages:
        if SOLUTIONS in page.path.relative_to(folder).parts:
            raise SystemExit(f"site: {page.notebook} is a solution: the site never shows them")
    return pages


def audit_env(directory: Path) -> dict[str, str]:
    """The environment of a kernel that checks every figure it displays (``make test``'s)."""
    from feeslab.plots.audit import write_profile

    write_profile(directory)
    return {**os.environ, "IPYTHONDIR": str(directory.resolve())}


def execute(notebook: NotebookNode, path: Path, *, env: dict[str, str] | None = None) -> None:
    """Run ``notebook`` in a fresh kernel started in its folder, as nbval does; without the
    widgets' state, so a page shows what a static page can (a live watch's still)."""
    client = NotebookClient(
        notebook,
        timeout=600,
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,
    )
    client.execute(**({"env": env} if env is not None else {}))


def errors(notebook: NotebookNode) -> list[str]:
    """The error outputs of ``notebook`` (a figure the audit refused shows one)."""
    return [
        f"cell {index}: {output.get('ename')}: {output.get('evalue')}"
        for index, cell in enumerate(notebook.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]


def figure_titles(source: str) -> list[tuple[str, str]]:
    """Each ``"Figure N. title"`` string literal of a cell's ``source``, in order, as
    ``(N, title)``: an f-string's fields are shown as "…", lines joined by spaces."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ImportError):
        found = re.findall(r"""[rbfu]*["']{1,3}Figure (\d+)\. ([^"'\n]*)""", source)
        return [(number, " ".join(title.split())) for number, title in found]
    inner = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    strings: list[tuple[tuple[int, int], str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "…"
                for v in node.values
            )
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner
        ):
            text = node.value
        else:
            continue
        strings.append(((node.lineno, node.col_offset), text))
    titles = []
    for _, text in sorted(strings):
        if match := FIGURE.match(text):
            titles.append((match[1], " ".join(match[2].split())))
    return titles


def figures(notebook: NotebookNode) -> list[tuple[NotebookNode, Figure]]:
    """Each ``image/png`` output of ``notebook`` in order, with its figure: a cell's images take
    its ``"Figure N. "`` titles in order (one title for all when it has one)."""
    found: list[tuple[NotebookNode, Figure]] = []
    for cell in notebook.cells:
        outputs = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if not outputs:
            continue
        titles = figure_titles(cell.source) if cell.cell_type == "code" else []
        if len(titles) == 1:
            titles = titles * len(outputs)
        for k, output in enumerate(outputs):
            number, title = titles[k] if k < len(titles) else (None, None)
            png = base64.b64decode(output["data"]["image/png"])
            found.append((output, Figure(len(found) + 1, number, title, png)))
    return found


def intro(notebook: NotebookNode) -> dict[str, str]:
    """What the index says of a page, from its first (markdown) cell, as HTML: ``summary`` (its
    first paragraph), ``time`` (``"About 45 minutes"``) and ``goals`` (the list under
    ``### Goals``); a part the cell lacks is left out."""
    cells = [cell for cell in notebook.cells if cell.cell_type == "markdown"]
    if not cells or notebook.cells[0] is not cells[0]:
        return {}
    text = cells[0].source
    found: dict[str, str] = {}
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    summary = next((p for p in paragraphs if not p.startswith(("#", "*", "-"))), None)
    if summary:
        found["summary"] = _markdown(summary)
    if time := re.search(r"^\*(About [^*]*?)\.?\*\s*$", text, re.M):
        found["time"] = html.escape(time[1])
    if goals := re.search(r"^#+ *Goals *\n(.*?)(?=^#|\Z)", text, re.M | re.S):
        items = "\n".join(line for line in goals[1].splitlines() if line.lstrip().startswith("-"))
        if items:
            found["goals"] = _markdown(items)
    return found


def _markdown(text: str) -> str:
    rendered = mistune.html(text)
    assert isinstance(rendered, str)
    return rendered.strip()


# --- the HTML ----------------------------------------------------------------------------------


def exporter() -> HTMLExporter:
    """nbconvert's lab HTML exporter with the offline template (:data:`TEMPLATE`)."""
    return HTMLExporter(
        extra_loaders=[DictLoader({"feeslab_site.html.j2": TEMPLATE})],
        template_file="feeslab_site.html.j2",
    )


EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//"""
)
"""A tag that would load something from another host."""


def export(
    notebook: NotebookNode,
    *,
    name: str,
    html_exporter: HTMLExporter | None = None,
    nav: str = "",
    files: dict[int, str] | None = None,
) -> str:
    """``notebook`` as one HTML page, loading nothing from the network: figures embedded, or
    the image files ``files`` names (by figure index), each with its anchor (``figure-K``) and
    title; ``nav`` above and below."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata.pop("widgets", None)  # no widget runs offline: its still or text shows
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
        if "outputs" in cell:  # a display emptied (a finished progress bar) shows nothing
            cell.outputs = [o for o in cell.outputs if o.get("data", True)]
    for output, figure in figures(notebook):
        output.metadata["feeslab_figure"] = {"anchor": figure.anchor, "alt": figure.label}
        if files and figure.index in files:
            output.metadata["filenames"] = {"image/png": files[figure.index]}
    resources = {"metadata": {"name": name}, "feeslab_nav": nav, "feeslab_css": CSS}
    page, _ = (html_exporter or exporter()).from_notebook_node(notebook, resources=resources)
    if leak := EXTERNAL.search(page):
        raise RuntimeError(f"{name}: the page would load from the network: {leak[0]!r}")
    return page


def _nav(pages: Sequence[Page], at: int | None) -> str:
    links = ['<a href="index.html">Course index</a>', '<a href="figures.html">Figures</a>']
    if at is not None:
        if at > 0:
            before = pages[at - 1]
            links.append(f'<a class="feeslab-prev" rel="prev" href="{before.href}">'
                         f"← {html.escape(before.heading)}</a>")  # fmt: skip
        if at + 1 < len(pages):
            after = pages[at + 1]
            links.append(f'<a class="feeslab-next" rel="next" href="{after.href}">'
                         f"{html.escape(after.heading)} →</a>")  # fmt: skip
    return f'<nav class="feeslab-nav">{" ".join(links)}</nav>'


def _links(page: str, pages: Sequence[Page]) -> str:
    """Links between notebooks made links between pages; a link to a solution is cut."""
    stems = {p.notebook for p in pages}

    def relink(match: re.Match[str]) -> str:
        target, anchor = match[2], match[3] or ""
        path = Path(target)
        if SOLUTIONS in path.parts:
            return f"{match[1]}#"  # the site has no solutions
        if path.stem in stems:
            return f"{match[1]}{path.stem}.html{anchor}"
        return match[0]

    return re.sub(r"""(<a\s[^>]*href=["'])([^"'#]+?\.ipynb)(#[^"']*)?""", relink, page)


def _shell(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
        f'<link rel="icon" href="data:,">\n<title>{html.escape(title)}</title>\n'
        f'<style>{CSS}</style>\n</head>\n<body class="feeslab-index">\n{body}\n</body>\n</html>\n'
    )


def index_page(pages: Sequence[Page]) -> str:
    lessons = [p for p in pages if p.number is not None]
    appendices = [p for p in pages if p.number is None]
    items = []
    for page in lessons:
        parts = [f'<h2><a href="{page.href}">{html.escape(page.heading)}</a></h2>']
        if "time" in page.intro:
            parts.append(f'<p class="feeslab-time">{page.intro["time"]}</p>')
        if "summary" in page.intro:
            parts.append(f'<div class="feeslab-summary">{page.intro["summary"]}</div>')
        if "goals" in page.intro:
            parts.append(f'<div class="feeslab-goals"><p>After this lesson you can:</p>'
                         f'{page.intro["goals"]}</div>')  # fmt: skip
        items.append(f'<li id="lesson-{page.number}">{"".join(parts)}</li>')
    body = [
        _nav(pages, None),
        "<h1>feeslab: Ethereum fee markets, a course</h1>",
        "<p>The lessons in reading order, one class session each; then the appendices. "
        'Every figure is listed in the <a href="figures.html">index of figures</a>.</p>',
        f'<ol class="feeslab-lessons">{"".join(items)}</ol>',
    ]
    if appendices:
        body.append("<h2>Appendices</h2>")
        items = []
        for page in appendices:
            summary = page.intro.get("summary")
            items.append(
                f'<li><a href="{page.href}">{html.escape(page.heading)}</a>'
                + (f'<div class="feeslab-summary">{summary}</div>' if summary else "")
                + "</li>"
            )
        body.append(f'<ul class="feeslab-appendices">{"".join(items)}</ul>')
    return _shell("feeslab: the course", "\n".join(body))


def figures_page(pages: Sequence[Page]) -> str:
    body = [_nav(pages, None), "<h1>Figures</h1>"]
    for page in pages:
        if not page.figures:
            continue
        body.append(f'<h2><a href="{page.href}">{html.escape(page.heading)}</a></h2>')
        cards = []
        for figure in page.figures:
            target = f"{page.href}#{figure.anchor}"
            cards.append(
                f'<li class="feeslab-figure"><a href="{target}">'
                f'<img src="{page.notebook}/thumb-{figure.index:02d}.png" '
                f'alt="{html.escape(figure.label)}"></a>'
                f'<a href="{target}">{html.escape(figure.label)}</a></li>'
            )
        body.append(f'<ul class="feeslab-figures">{"".join(cards)}</ul>')
    return _shell("feeslab: the course's figures", "\n".join(body))


def thumbnail(png: bytes, width: int = 360) -> bytes:
    """``png`` scaled down to ``width`` pixels (never up), in 128 colours: a small file."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        image.thumbnail((width, width * 4))
        out = io.BytesIO()
        image.convert("RGB").quantize(128).save(out, format="PNG")
    return out.getvalue()


# --- the build ---------------------------------------------------------------------------------


def build(
    out: Path = OUT,
    *,
    lessons: Iterable[Any] | None = None,
    appendices: Iterable[Entry] | None = None,
    folder: Path = HERE,
    run: bool = False,
    log: Any = print,
) -> list[Page]:
    """Write the site into ``out`` (emptied first) and return its pages.

    Parameters
    ----------
    out : pathlib.Path
        The site's folder.
    lessons, appendices : iterable, optional
        The course (default: ``feeslab.course.LESSONS`` and ``APPENDICES``): each with
        ``notebook`` and ``title``, a lesson with its ``number``.
    folder : pathlib.Path
        Where the notebooks are (``notebooks/``).
    run : bool
        Run each notebook first, with the figure audit (``--execute``).
    """
    from feeslab import course

    pages = course_pages(
        course.LESSONS if lessons is None else lessons,
        course.APPENDICES if appendices is None else appendices,
        folder,
    )
    missing = [str(p.path) for p in pages if not p.path.is_file()]
    if missing:
        raise SystemExit(f"site: no such notebook: {', '.join(missing)}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    html_exporter = exporter()
    notebooks = []
    with tempfile.TemporaryDirectory() as ipython_dir:
        env = audit_env(Path(ipython_dir)) if run else None
        for page in pages:
            notebook = nbformat.read(page.path, as_version=4)
            if run:
                log(f"{page.path.name}: running")
                execute(notebook, page.path, env=env)
                if failed := errors(notebook):
                    raise SystemExit(f"site: {page.path.name} failed:\n" + "\n".join(failed))
            page.intro = intro(notebook)
            page.figures = [figure for _, figure in figures(notebook)]
            notebooks.append(notebook)
    for at, (page, notebook) in enumerate(zip(pages, notebooks, strict=True)):
        files = {}
        (out / page.notebook).mkdir()
        for figure in page.figures:
            name = f"{page.notebook}/figure-{figure.index:02d}.png"
            (out / name).write_bytes(figure.png)
            thumb = out / page.notebook / f"thumb-{figure.index:02d}.png"
            thumb.write_bytes(thumbnail(figure.png))
            files[figure.index] = name
        text = export(notebook, name=page.heading, html_exporter=html_exporter,
                      nav=_nav(pages, at), files=files)  # fmt: skip
        (out / page.href).write_text(_links(text, pages), encoding="utf-8")
        log(f"{page.href}: {len(page.figures)} figures")
    (out / "index.html").write_text(index_page(pages), encoding="utf-8")
    (out / "figures.html").write_text(figures_page(pages), encoding="utf-8")
    count = sum(len(p.figures) for p in pages)
    log(f"site: {len(pages)} pages, {count} figures -> {out / 'index.html'}")
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true",
                        help="run each notebook first, with the figure audit")  # fmt: skip
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT}")
    args = parser.parse_args(argv)
    build(args.out, run=args.execute)
    return 0


if __name__ == "__main__":
    sys.exit(main())
