"""The built world state is kept on disk and a later process loads it (state.py's store)."""

from __future__ import annotations

from feeslab.devnet import state as state_module
from feeslab.devnet.chain import build_chains
from feeslab.devnet.evm import backend

SEED = 7


def _fresh(history) -> state_module.WorldState:
    height = history.params.height
    return state_module.WorldState(
        history,
        contracts_block=height - state_module.CONTRACTS_DEPTH,
        upgrade_block=height - state_module.CONTRACTS_DEPTH // 2,
    )


def _snapshot(state: state_module.WorldState) -> dict:
    return {
        "slots": {k: (h.blocks, h.values) for k, h in state._slots.items()},
        "code": dict(state._code),
        "deployments": {n: (d.address, d.block, d.role) for n, d in state.deployments.items()},
        "applied": state._applied,
    }


def test_a_saved_state_loads_identically_and_continues_alike(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    history = build_chains(SEED).by_id[1].history
    height = history.params.height
    built = _fresh(history)
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
    executor = loaded.executor_at(height)
    assert executor.accounts == built.executor_at(height).accounts

    # the seeded transaction stream resumes where it stopped: later blocks agree too
    built.ensure(height + 300)
    loaded.ensure(height + 300)
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
    assert not path.exists()  # the bad file is removed (and a good one saved at the height)


def test_the_store_can_be_turned_off(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FEESLAB_DEVNET_CACHE", "0")
    history = build_chains(SEED).by_id[1].history
    assert state_module._state_file(_fresh(history)) is None
