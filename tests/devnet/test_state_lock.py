"""Processes that miss the same stored world state at once build it once (_store.building).

Real processes throughout: each child imports feeslab, builds or loads a short chain's state
in a shared cache directory, and reports how many windows of blocks it ran through the EVM.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from feeslab.devnet import _store
from feeslab.devnet import state as state_module

SEED = 7
HEIGHT = 3_000  # a short chain 1: its history takes a few ms, so the children time the state
# contracts this many blocks below the head: three windows, past state.SHORT_BUILD (shorter
# builds never wait for another process), seconds even on py-evm
DEPTH = 600

# A child: wait for "go" on stdin (so both miss the file together), ensure the state up to the
# height, print what it did. Counting _apply_window's calls is all the instrumentation.
CHILD = f"""
import json, sys
from dataclasses import replace
from feeslab.devnet import state as state_module
from feeslab.devnet.chain import History, devnet_params

windows = 0
apply_window = state_module.WorldState._apply_window

def counted(self):
    global windows
    windows += 1
    apply_window(self)

state_module.WorldState._apply_window = counted
history = History(replace(devnet_params()[1], height={HEIGHT}), {SEED})
state = state_module.WorldState(
    history, contracts_block={HEIGHT - DEPTH}, upgrade_block={HEIGHT - DEPTH // 2}
)
print("ready", flush=True)
assert sys.stdin.readline().strip() == "go"
state.ensure({HEIGHT})
slots = sorted((a.hex(), s, h.blocks, [hex(v) for v in h.values])
               for (a, s), h in state._slots.items())
print(json.dumps({{"windows": windows, "applied": state._applied, "slots": slots}}), flush=True)
"""

# A child that takes a file's build lock, says so, and holds it until killed.
HOLDER = """
import sys, time
from pathlib import Path
from feeslab.devnet import _store

with _store.building(Path(sys.argv[1])) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(600)
"""


@contextlib.contextmanager
def _holder(path: Path, cache: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding ``path``'s build lock (confirmed), killed and reaped at the end."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], env=_env(cache),
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its pipe


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ, FEESLAB_CACHE_DIR=str(cache))
    env.pop("FEESLAB_DEVNET_CACHE", None)
    return env


def _state_files(cache: Path) -> list[Path]:
    return sorted((cache / "devnet").glob("state-1-*.json.gz"))


def test_two_processes_missing_the_same_state_build_it_once(tmp_path: Path) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD],
            env=_env(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:  # both miss the file at the same moment
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        reports = []
        for child in children:
            out, err = child.communicate(timeout=240)
            assert child.returncode == 0, err
            reports.append(json.loads(out.splitlines()[-1]))
    finally:
        for child in children:
            child.kill()
            child.communicate()

    # one ran every window from the contracts' block to the height; the other waited for its
    # file and ran none
    built = -(-(DEPTH + 1) // state_module.WINDOW)
    assert sorted(report["windows"] for report in reports) == [0, built]
    assert reports[0]["applied"] == reports[1]["applied"] >= HEIGHT
    assert reports[0]["slots"] == reports[1]["slots"]  # the loaded state is the built one
    assert len(_state_files(tmp_path)) == 1


def test_a_killed_holder_does_not_block_and_a_stuck_one_is_waited_for_only_so_long(
    tmp_path: Path, caplog
) -> None:
    path = tmp_path / "devnet" / "state-1-test.json.gz"
    with _holder(path, tmp_path) as holder:
        # alive and holding: a short wait gives up, with a warning, rather than hang
        with (
            caplog.at_level(logging.INFO, logger=_store.__name__),
            _store.building(path, timeout=0.3) as held,
        ):
            assert held is False
        assert any("building it here too" in r.getMessage() for r in caplog.records)
        assert any("waiting for another process" in r.getMessage() for r in caplog.records)

        holder.send_signal(signal.SIGKILL)  # dies holding it: no release, no cleanup
        holder.wait(timeout=30)
        assert holder.returncode == -signal.SIGKILL
        # the operating system dropped the dead process's lock: taken at once
        with _store.building(path, timeout=5) as held:
            assert held is True


def test_a_short_build_does_not_wait_for_another_process(tmp_path: Path, monkeypatch, caplog):
    # GET /devnet/contracts needs the deployment's block only: one window, not a whole build
    from dataclasses import replace

    from feeslab.devnet.chain import History, devnet_params

    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FEESLAB_DEVNET_CACHE", raising=False)
    history = History(replace(devnet_params()[1], height=HEIGHT), SEED)
    state = state_module.WorldState(
        history, contracts_block=HEIGHT - DEPTH, upgrade_block=HEIGHT - DEPTH // 2
    )
    path = state_module._state_file(state)
    assert path is not None
    with _holder(path, tmp_path):
        with caplog.at_level(logging.INFO, logger=_store.__name__):
            state.ensure(state.contracts_block)
        assert state.deployments
        assert not [r for r in caplog.records if r.name == _store.__name__]  # no lock asked


def test_threads_of_one_process_share_its_hold(tmp_path: Path) -> None:
    # a second thread must not wait for its own process's build (it takes turns on the
    # state's own lock instead); a timeout of 0 would give up at once if it did
    path = tmp_path / "devnet" / "state-1-test.json.gz"
    seen: list[bool] = []
    with _store.building(path) as held:
        assert held is True

        def other() -> None:
            with _store.building(path, timeout=0) as inner:
                seen.append(inner)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(timeout=30)
    assert seen == [True]
    # released by both: another process takes it at once
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom pathlib import Path\nfrom feeslab.devnet import _store\n"
            "with _store.building(Path(sys.argv[1]), timeout=0) as held: print(held)",
            str(path),
        ],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert probe.stdout.strip() == "True"


def test_no_store_no_lock(tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    from feeslab.devnet.chain import History, devnet_params

    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FEESLAB_DEVNET_CACHE", "0")
    history = History(replace(devnet_params()[1], height=HEIGHT), SEED)
    state = state_module.WorldState(
        history, contracts_block=HEIGHT - DEPTH, upgrade_block=HEIGHT - DEPTH // 2
    )
    with _store.building(state_module._state_file(state)) as held:
        assert held is False  # no file, nothing to lock
    state.ensure(HEIGHT)
    assert state.deployments
    assert not list(tmp_path.rglob("*"))  # neither a state file nor a lock file
