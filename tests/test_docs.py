"""The README stays short, and the README and docs/ point only at what exists.

Links and anchors are checked against the files and headings, paths against the checkout, and
every ``feeslab.<name>`` the pages mention against the package, so a page cannot keep naming a
module or a function that was removed (as the README once kept ``fetch.errors``).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from feeslab.datasets import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.M)
PATH = re.compile(r"`((?:feeslab|tests|benchmarks|notebooks|data|docs)/[^`\s]*)`")
NAME = re.compile(r"\bfeeslab(?:\.[A-Za-z_]\w*)+")


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a ``#`` there is a comment, not a heading)."""
    return FENCE.sub("", text)


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_the_readme_is_at_most_200_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_the_readme_first_code_is_five_lines_or_fewer():
    first = re.search(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    assert first is not None, "the README has no python block"
    lines = [line for line in first.group(1).splitlines() if line.strip()]
    assert 0 < len(lines) <= 5, lines


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_points_to_a_file_and_heading_that_exist(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(_prose(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file here
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md":
            slugs = {_slug(h) for h in HEADING.findall(_prose(linked.read_text(encoding="utf-8")))}
            if anchor not in slugs:
                broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, broken


def test_the_docs_are_linked_from_the_readme():
    linked = {(ROOT / t).resolve() for t in LINK.findall(README.read_text(encoding="utf-8"))
              if not t.startswith("http")}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_path_the_pages_name_exists(page):
    missing = []
    for path in PATH.findall(page.read_text(encoding="utf-8")):
        found = list(ROOT.glob(path.rstrip("/"))) if "*" in path else [ROOT / path]
        if not found or not all(p.exists() for p in found):
            missing.append(path)
    assert not missing, missing


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_feeslab_name_the_pages_mention_exists(page):
    names = sorted(set(NAME.findall(page.read_text(encoding="utf-8"))))
    missing = [name for name in names if not _resolves(name)]
    assert not missing, missing


def test_the_pages_name_every_dataset_its_lab_method_and_its_cli_kind():
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert [n for n in REGISTRY if f"`{n}`" not in architecture] == []
    assert [n for n in REGISTRY if f"`lab.{n}(" not in api] == []
    kinds = [d.cli for d in REGISTRY.values() if d.cli is not None]
    assert kinds and [k for k in kinds if f"| `{k}` |" not in cli] == []
