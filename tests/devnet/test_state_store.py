"""The built world state is kept on disk and a later process loads it (state.py's store)."""

from __future__ import annotations

from feeslab.devnet import state as state_module
from feeslab.devnet.chain import build_chains
from feeslab.devnet.evm import backend

SEED = 7
DEPTH = 300  # contracts this many blocks below the head: a short build on either backend


def _fresh(history) -> state_module.WorldState:
    height = history.params.height
    return state_module.WorldState(
        history, contracts_block=height - DEPTH, upgrade_block=height - DEPTH // 2
    )


def _snapshot(state: state_module.WorldState) -> dict:
    return {
        "slots": {k: (h.blocks, h.values) for k, h in state._slots.items()},
        "code": dict(state._code),
        "deployments": {n: (d.address, d.block, d.role) for n, d in state.deployments.items()},
        "applied": state._applied,
    }


def test_a_state_built_to_the_height_is_saved_and_loads_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    history = build_chains(SEED).by_id[1].history
    height = history.params.height
    built = _fresh(history)
    built.ensure(built.contracts_block + 10)  # one window of blocks, below the height
    assert built._applied < height
    assert not list(tmp_path.glob("devnet/state-*"))  # nothing saved yet
    built.ensure(height)
    files = list((tmp_path / "devnet").glob(f"state-1-{backend().NAME}-*.json.gz"))
    assert len(files) == 1

    loaded = _fresh(history)

    def no_generation(self) -> None:
        raise AssertionError("the stored state should have been loaded")

    with monkeypatch.context() as mp:
        mp.setattr(state_module.WorldState, "_apply_window", no_generation)
        loaded.ensure(height)
    assert _snapshot(loaded) == _snapshot(built)
    assert loaded.executor_at(height).accounts == built.executor_at(height).accounts

    # the seeded transaction stream resumes where it stopped: later blocks agree too
    later = built._applied + 300
    built.ensure(later)
    loaded.ensure(later)
    assert _snapshot(loaded) == _snapshot(built)


def test_a_damaged_file_is_rebuilt_not_trusted(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    history = build_chains(SEED).by_id[1].history
    state = _fresh(history)
    path = state_module._state_file(state)
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not gzip")
    state.ensure(state.contracts_block + 10)
    assert state.deployments  # built from the transactions instead
    assert not path.exists()  # the bad file is removed


def test_the_store_can_be_turned_off(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FEESLAB_DEVNET_CACHE", "0")
    history = build_chains(SEED).by_id[1].history
    assert state_module._state_file(_fresh(history)) is None
