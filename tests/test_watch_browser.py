"""The watch in a real browser: headless Chromium (Debian's ``chromium`` package, driven by
Playwright through ``executable_path``) against the JupyterLab that ``make lab`` starts, running
a cell with a watch on a devnet growing a block a second, sees the figure change 5 times.

Needs ``/usr/bin/chromium`` (``make test`` installs Debian's package when missing) and the
``playwright`` package of the dev extra (the Python driver only: no browser download). Without
them the test fails, saying which is missing: a browser test that skips would look green.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CELL = """import feeslab
from feeslab.watch import watch

lab = feeslab.connect(block_time=1, progress=False)
w = watch(lab, redraw=0, columns=["base_fee_gwei", "gas_target_ratio"])
w"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def jupyterlab(tmp_path):
    """``make lab``'s command (``jupyter lab --no-browser --allow-root --ip ...``) on a folder
    holding one notebook; yields (url, token)."""
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None,
                           "outputs": [], "source": CELL, "id": "live"}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                            "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (tmp_path / "live.ipynb").write_text(json.dumps(notebook))
    port, token = _free_port(), secrets.token_hex(16)
    jupyter = Path(sys.executable).with_name("jupyter")
    process = subprocess.Popen(
        [str(jupyter), "lab", f"--notebook-dir={tmp_path}", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/api/status", params={"token": token}).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("JupyterLab did not start")
        yield url, token
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.slow
def test_in_jupyterlab_the_watch_figure_changes_with_the_blocks(jupyterlab):
    if CHROMIUM is None:
        pytest.fail("no chromium on PATH: apt-get install -y chromium (make test does it)")
    from playwright import sync_api  # the dev extra's

    url, token = jupyterlab
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/live.ipynb?token={token}")
            cell = page.locator(".jp-Notebook .jp-Cell").first
            cell.wait_for(timeout=120_000)
            # the kernel started and idle (the status bar says so), then run the cell as a
            # user does: click into it, Shift+Enter
            page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(
                timeout=120_000)
            time.sleep(2)  # the notebook panel finishes binding its keys
            cell.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            image = page.locator(".jp-OutputArea img").first
            image.wait_for(state="attached", timeout=240_000)  # the kernel starts a devnet
            seen: list[str] = []
            deadline = time.monotonic() + 90
            while len(seen) < 6 and time.monotonic() < deadline:
                source = image.get_attribute("src") or ""
                if source and (not seen or seen[-1] != source):
                    seen.append(source)
                time.sleep(0.2)
            outputs = page.locator(".jp-OutputArea-output").count()
            status = page.locator(".jp-OutputArea code").first.inner_text()
        finally:
            browser.close()
    assert len(seen) >= 6, f"the figure changed {len(seen) - 1} times"
    assert outputs == 1, f"{outputs} outputs: the figure must redraw in place"
    assert "websocket" in status and "credits spent" in status
