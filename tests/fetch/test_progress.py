"""Progress bars: a widget in a real Jupyter kernel, text on stderr in a terminal.

A fetch of 4,000 blocks (past the bar's threshold) from the session devnet, with the default
``progress=True``, runs in a real kernel started by nbclient and in a plain subprocess whose
stderr is a pipe, not a tty.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

from feeslab.fetch.node import DEFAULT_CHUNK

ROOT = Path(__file__).resolve().parents[2]
WIDGET = "application/vnd.jupyter.widget-view+json"
BLOCKS = DEFAULT_CHUNK // 2  # the fewest calls that get a bar


def fetch_code(devnet: Any) -> str:
    return (
        "import feeslab\n"
        f"lab = feeslab.connect(url={devnet.url!r}, api_key={devnet.api_key!r}, "
        f"api_key_secret={devnet.api_key_secret!r}, cache=False)\n"
        f"frame = lab.blocks(1, {BLOCKS + 1})\n"
        "lab.close()\n"
        "print(len(frame), feeslab.__file__)\n"
    )


@pytest.fixture
def worktree_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels and subprocesses import this checkout's feeslab."""
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", ":".join(path))


def run_in_kernel(*cells: str) -> list[dict[str, Any]]:
    """The outputs a notebook of ``cells`` keeps, executed by nbclient in a real kernel."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in cells]
    client = NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    return [output for cell in notebook.cells for output in cell.outputs]


def kernel_messages(code: str) -> list[dict[str, Any]]:
    """Every IOPub message a real kernel sends while it runs ``code``, as a front end gets them."""
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    messages: list[dict[str, Any]] = []
    try:
        reply = client.execute_interactive(code, output_hook=messages.append, timeout=240)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", messages
    return messages


def stream_text(outputs: list[dict[str, Any]], name: str) -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == name)


@pytest.mark.slow
def test_a_scan_in_a_jupyter_kernel_shows_a_widget(devnet, worktree_first) -> None:
    messages = kernel_messages(fetch_code(devnet))
    kinds = [m["msg_type"] for m in messages]
    streams = [m["content"] for m in messages if m["msg_type"] == "stream"]
    stdout = "".join(c["text"] for c in streams if c["name"] == "stdout")
    stderr = "".join(c["text"] for c in streams if c["name"] == "stderr")
    assert stdout == f"{BLOCKS} {ROOT / 'feeslab' / '__init__.py'}\n"
    assert "TqdmWarning" not in stderr and "IProgress" not in stderr
    assert "%|" not in stderr  # a widget, not a text bar as well
    # the bar: one widget view, alone (no text/plain twin for nbval to compare) ...
    (shown,) = [m["content"] for m in messages if m["msg_type"] == "display_data"]
    assert set(shown["data"]) == {WIDGET}
    # ... whose progress model the kernel drives to the end ...
    opened = [m["content"] for m in messages if m["msg_type"] == "comm_open"]
    progress = [c["comm_id"] for c in opened if c["data"]["state"].get("_model_name")
                == "FloatProgressModel"]  # fmt: skip
    assert len(progress) == 1
    values = [
        m["content"]["data"]["state"]["value"]
        for m in messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == progress[0]
        and "value" in m["content"]["data"].get("state", {})
    ]
    assert values and values[-1] == BLOCKS
    # ... and once complete, its output is emptied: nothing stale stays in the notebook
    (update,) = [m["content"] for m in messages if m["msg_type"] == "update_display_data"]
    assert update["data"] == {}
    assert update["transient"]["display_id"] == shown["transient"]["display_id"]
    assert kinds.index("display_data") < kinds.index("update_display_data")


@pytest.mark.slow
def test_nbval_sees_the_same_outputs_with_or_without_a_bar(devnet, tmp_path, worktree_first):
    """A notebook saved with a cold cache (a bar shown) checks under nbval with a warm cache
    (no bar) and again with a cold one."""
    cache = tmp_path / "cache"
    code = fetch_code(devnet).replace("cache=False", f"cache={str(cache)!r}")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code.replace(", feeslab.__file__", ""))]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    NotebookClient(notebook, timeout=240, kernel_name="python3").execute()
    saved = notebook.cells[0].outputs
    assert [o["output_type"] for o in saved] == ["display_data", "stream"]
    assert saved[0]["data"] == {}  # the bar's output, emptied when complete
    path = tmp_path / "scan.ipynb"
    nbformat.write(notebook, path)
    nbval = [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-q", path.name]
    warm = subprocess.run(nbval, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert warm.returncode == 0, warm.stdout
    shutil.rmtree(cache)
    cold = subprocess.run(nbval, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert cold.returncode == 0, cold.stdout
    assert "1 passed" in warm.stdout and "1 passed" in cold.stdout


@pytest.mark.slow
def test_a_kernel_without_ipywidgets_gets_a_text_bar_and_no_warning(devnet, worktree_first):
    hide_ipywidgets = "import sys\nsys.modules['ipywidgets'] = None  # as if not installed\n"
    outputs = run_in_kernel(hide_ipywidgets, fetch_code(devnet))
    assert not [o for o in outputs if o["output_type"] == "display_data"]
    stderr = stream_text(outputs, "stderr")
    assert f"0/{BLOCKS}" in stderr and "blocks:" in stderr
    assert "TqdmWarning" not in stderr and "IProgress" not in stderr


def test_jupyterlab_has_the_widget_front_end() -> None:
    """The kernel's widget needs JupyterLab's widget manager (jupyterlab_widgets) to render."""
    found = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    listing = found.stdout + found.stderr
    line = next(
        (li for li in listing.splitlines() if "@jupyter-widgets/jupyterlab-manager" in li), ""
    )
    assert "enabled" in line and "OK" in line, listing


def test_a_scan_in_a_terminal_shows_text_on_stderr(devnet, worktree_first) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", fetch_code(devnet)],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"{BLOCKS} {ROOT / 'feeslab' / '__init__.py'}\n"  # no bar on stdout
    assert f"blocks:   0%|          | 0/{BLOCKS}" in ran.stderr
    assert "call/s" in ran.stderr or "?call" in ran.stderr
    assert "Warning" not in ran.stderr
