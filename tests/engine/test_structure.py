"""The engine's shape, read from the source with ``ast`` (issue 37): dataset modules hold no
thread, future, event loop, progress bar or file of their own; nothing outside
``feeslab/sources/`` asks a source for an attribute by name or for its class; the cluster's
executor stays small (the runner is ``feeslab.jobs``, shared with the in-process executor)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "feeslab"
DATASETS = sorted((PACKAGE / "datasets").glob("*.py"))
FORBIDDEN = {"threading", "concurrent", "asyncio", "tqdm", "feeslab._progress", "multiprocessing",
             "tempfile", "shutil"}
FILE_CALLS = {"open", "read_bytes", "write_bytes", "read_text", "write_text", "fdopen",
              "mkstemp", "NamedTemporaryFile", "TemporaryDirectory"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _imports(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(
        func, ast.Attribute) else ""


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.name)
def test_a_dataset_module_holds_no_thread_loop_bar_or_file(path):
    banned = {name for name in _imports(_tree(path))
              if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)}
    assert banned == set(), f"{path.name} imports {sorted(banned)}"
    calls = {_called(node) for node in ast.walk(_tree(path)) if isinstance(node, ast.Call)}
    assert calls & FILE_CALLS == set(), f"{path.name} calls {sorted(calls & FILE_CALLS)}"


def _names_a_source(node: ast.expr) -> bool:
    """Whether an expression reads as a source: ``source``, ``self.data_source``, ``part``'s
    source, ... (feeslab's names for sources all end in ``source``)."""
    text = ast.unparse(node)
    return text.split(".")[-1].endswith("source") or text.endswith("Source")


def _asks_a_source(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called(node) in {"getattr", "hasattr",
                                                                  "isinstance"}):
            continue
        if node.args and (_names_a_source(node.args[0]) or (
                len(node.args) > 1 and _names_a_source(node.args[1]))):  # fmt: skip
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_sources_asks_a_source_by_attribute_name_or_class():
    outside = [p for p in PACKAGE.rglob("*.py")
               if "sources" not in p.relative_to(PACKAGE).parts
               and "devnet" not in p.relative_to(PACKAGE).parts]  # the devnet is the service
    found = {str(p.relative_to(PACKAGE)): asked for p in outside
             if (asked := _asks_a_source(_tree(p)))}
    assert found == {}


def test_the_check_sees_a_getattr_on_a_source():
    tree = ast.parse("def f(lab):\n    return getattr(lab.data_source, 'node', None)\n")
    assert _asks_a_source(tree) == ["line 2: getattr(lab.data_source, 'node', None)"]
    tree = ast.parse("isinstance(found, RpcSource)\nisinstance(frame, pd.DataFrame)\n")
    assert _asks_a_source(tree) == ["line 1: isinstance(found, RpcSource)"]


def test_the_cluster_executor_is_at_most_100_lines():
    executor = PACKAGE / "cluster" / "executor.py"
    assert len(executor.read_text().splitlines()) <= 100
    # the one runner both executors share, which the executor does not repeat
    assert "def run_job(" in (PACKAGE / "jobs.py").read_text()
    assert "def run_job(" not in executor.read_text()
