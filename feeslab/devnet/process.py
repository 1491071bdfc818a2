"""A devnet in its own process: ``feeslab serve`` started and read like a user would.

``start()`` runs the devnet on a thread of the calling process, which is what notebooks and
most tests want. A separate process keeps the server off the caller's interpreter lock
(benchmarks, load tests), and it is how a second, independent devnet with the same seed
is made when byte-for-byte comparisons across processes are the point.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

_BANNER = re.compile(r"(URL|WS URL|API key|API secret):\s+(\S+)")
STARTUP_TIMEOUT = 60.0  # [s]; a cold start generates nothing before it prints


class SpawnedDevnet:
    """A running ``feeslab serve`` process: its URLs, key and secret, and ``stop()``.

    The key and secret never appear in the repr.
    """

    def __init__(self, process: subprocess.Popen, banner: dict[str, str]) -> None:
        self._process = process
        # keep reading what the server prints, or a full pipe would block it
        self._drainer = threading.Thread(target=_drain, args=(process,), daemon=True)
        self._drainer.start()
        self.url = banner["URL"]
        self.ws_url = banner["WS URL"]
        self.api_key = banner["API key"]
        self.api_key_secret = banner["API secret"]

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<SpawnedDevnet {self.url} pid={self._process.pid} {state}>"

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        """Terminate the process (kill it if it does not stop in ``timeout`` [s])."""
        if self.running:
            self._process.terminate()
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._drainer.join(timeout)  # it ends at the pipe's end of file
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> SpawnedDevnet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def spawn(**options: Any) -> SpawnedDevnet:
    """Start ``feeslab serve --port 0`` in a new process and wait until it listens.

    Parameters
    ----------
    **options
        ``feeslab serve``'s options as keywords: ``seed``, ``latency_ms``,
        ``daily_credits``, ``credits_per_second``, ``block_time``, ``host``, ``port``,
        ``height``, ``history`` (``"postmerge"``: pruned as geth's ``--history.chain``).
    """
    args = [sys.executable, "-m", "feeslab.cli", "serve"]
    options.setdefault("port", 0)
    for name, value in options.items():
        if value is not None:
            args += [f"--{name.replace('_', '-')}", str(value)]
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    banner: dict[str, str] = {}
    deadline = time.monotonic() + STARTUP_TIMEOUT
    lines: list[str] = []
    while not {"URL", "WS URL", "API key", "API secret"} <= banner.keys():
        line = process.stdout.readline() if process.stdout else ""
        if not line or time.monotonic() > deadline:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
            said = "".join(x for x in lines[-5:] if not x.startswith("API")).strip()
            raise RuntimeError(f"feeslab serve did not start: {said or 'no output'}")
        lines.append(line)
        match = _BANNER.match(line)
        if match:
            banner[match.group(1)] = match.group(2)
    return SpawnedDevnet(process, banner)


def _drain(process: subprocess.Popen) -> None:
    for _ in process.stdout or ():
        pass
