"""``feeslab serve`` as a real subprocess, and the parser."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from feeslab.cli import build_parser, main


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_banner(proc: subprocess.Popen, timeout: float = 60) -> dict[str, str]:
    fields: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        match = re.match(r"^(URL|WS URL|API key|API secret):\s+(\S+)$", line.strip())
        if match:
            fields[match[1]] = match[2]
        if line.startswith("Press Ctrl-C"):
            return fields
    raise AssertionError(f"no banner; got {fields}, stderr: {proc.stderr.read()}")


def _ctrl_c_as_a_terminal_sends_it() -> None:
    """In the child: SIGINT at its default, as in a terminal. A suite run in the background
    (nohup, ``&``, some CI runners) starts with SIGINT ignored, which every child inherits and
    Python then leaves ignored: the Ctrl-C these tests send would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_serve_prints_how_to_reach_it_and_stops_on_ctrl_c():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeslab.cli", "serve", "--port", str(port), "--seed", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_ctrl_c_as_a_terminal_sends_it,
    )
    try:
        banner = read_banner(proc)
        assert banner["URL"] == f"http://127.0.0.1:{port}"
        assert banner["WS URL"] == f"ws://127.0.0.1:{port}"
        key, secret = banner["API key"], banner["API secret"]
        reply = httpx.post(
            f"{banner['URL']}/v3/{key}",
            timeout=60,
            json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"},
        )
        assert reply.json()["result"] == "0x1"
        info = httpx.get(f"{banner['URL']}/devnet/info", auth=(key, secret), timeout=60).json()
        assert info["seed"] == 3
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "devnet stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_refuses_a_non_loopback_host(capsys):
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "non-loopback" in capsys.readouterr().err


def test_parser_needs_a_subcommand_and_knows_serve_options():
    with pytest.raises(SystemExit):
        build_parser().parse_args([])
    args = build_parser().parse_args(
        ["serve", "--latency-ms", "50", "--block-time", "0.5", "--daily-credits", "10"]
    )
    assert (args.port, args.latency_ms, args.block_time, args.daily_credits) == (8545, 50, 0.5, 10)


def test_serve_passes_the_wallet_user_it_is_given(monkeypatch, capsys):
    seen = {}

    def fake_start(**options):
        seen.update(options)
        raise OSError("port in use (stopped here by the test)")

    monkeypatch.setattr("feeslab.devnet.server.start", fake_start)
    argv = ["serve", "--port", "0", "--wallet-chains", "eip155:1, eip155:137",
            "--wallet-deny-methods", "eth_call", "--wallet-accounts", "0"]
    assert main(argv) == 2
    user = seen["wallet_user"]
    assert {str(c) for c in user.chains} == {"eip155:1", "eip155:137"}
    assert user.deny_methods == {"eth_call"} and user.accounts_per_scope == 0 and user.approve
    assert main(["serve", "--port", "0", "--wallet-decline", "--wallet-accounts", "all"]) == 2
    assert seen["wallet_user"].approve is False and seen["wallet_user"].accounts_per_scope is None
    capsys.readouterr()
    # a chain that breaks CAIP-2 is refused before anything starts, naming the field
    seen.clear()
    assert main(["serve", "--port", "0", "--wallet-chains", "eip155:1,not a chain"]) == 2
    assert "chains[1]" in capsys.readouterr().err and not seen
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--wallet-accounts", "some"])


def test_serve_history_postmerge_prunes_as_geth_and_says_so():
    """``feeslab serve --history postmerge``: geth's --history.chain; the banner names each
    chain's cutoff, a pre-merge body answers 4444 and the head stays served."""
    assert build_parser().parse_args(["serve"]).history == "all"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--history", "postprague"])  # no devnet cut there
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeslab.cli", "serve", "--port", str(port), "--seed", "3",
         "--history", "postmerge"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=_ctrl_c_as_a_terminal_sends_it,
    )  # fmt: skip
    try:
        lines = []
        while not lines or not lines[-1].startswith("Press Ctrl-C"):
            line = proc.stdout.readline()
            assert line, f"no banner: {''.join(lines)} {proc.stderr.read()}"
            lines.append(line)
        banner = dict(re.findall(r"^(URL|WS URL|API key|API secret):\s+(\S+)$", "".join(lines),
                                 flags=re.MULTILINE))  # fmt: skip
        assert ("history:         postmerge (4444 below each chain's cutoff: 1: 164,999, "
                "11155111: 15,000)\n") in lines  # fmt: skip
        node = f"{banner['URL']}/v3/{banner['API key']}"

        def call(method, *params):
            return httpx.post(node, timeout=60, json={"jsonrpc": "2.0", "id": 1,
                                                      "method": method, "params": list(params)})

        assert call("eth_getUncleCountByBlockNumber", "0x10").json()["error"] == {
            "code": 4444, "message": "pruned history unavailable"}  # fmt: skip
        assert call("eth_blockNumber").json()["result"] == hex(210_000)
        info = httpx.get(f"{banner['URL']}/devnet/info", timeout=60,
                         auth=(banner["API key"], banner["API secret"])).json()  # fmt: skip
        assert info["history"] == "postmerge"
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_watch_prints_a_line_a_block_and_writes_what_it_saw(tmp_path):
    """``feeslab watch`` on the embedded devnet: a header, one line per block, the frame."""
    import pandas as pd

    out = tmp_path / "seen.parquet"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFURA_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-m", "feeslab.cli", "watch", "--stop-after", "3", "--block-time",
         "0.3", "-o", str(out)], capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:2] == ["block", "base[gwei]"]
    numbers = [int(line.split()[0]) for line in lines[1:4]]
    assert numbers == list(range(numbers[0], numbers[0] + 3))  # no gap, no repeat
    frame = pd.read_parquet(out)
    # the window of --blocks (128), prefilled as it started, ends with the blocks printed
    assert frame["block_number"].tolist() == list(range(numbers[-1] - 127, numbers[-1] + 1))


def test_watch_refuses_an_unknown_output_format_without_a_traceback():
    proc = subprocess.run([sys.executable, "-m", "feeslab.cli", "watch", "-o", "seen.txt"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "FILE.parquet or FILE.csv" in proc.stderr
    assert "Traceback" not in proc.stderr
