"""The on-disk store of generated histories: a restart loads exactly what generation makes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from feeslab.devnet import _store
from feeslab.devnet.chain import History, devnet_params

HEIGHT = 30_000  # a PoW stretch of chain 1 with uncles


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FEESLAB_DEVNET_CACHE", raising=False)
    return tmp_path / "devnet"


def params():
    return replace(devnet_params()[1], height=HEIGHT)


def fresh(seed: int, monkeypatch) -> History:
    """A history generated without the store, as ground truth."""
    with monkeypatch.context() as m:
        m.setenv("FEESLAB_DEVNET_CACHE", "0")
        history = History(params(), seed)
        history.ensure(HEIGHT + 5000)
    return history


def test_a_stored_history_loads_identically_and_keeps_growing(store, monkeypatch):
    truth = fresh(21, monkeypatch)
    History(params(), 21).ensure(HEIGHT)
    files = list(store.glob("chain-1-*.npz"))
    assert len(files) == 1
    loaded = History(params(), 21)
    loaded.ensure(HEIGHT)
    assert loaded.generated() > HEIGHT  # whole chunks came from the file
    numbers = [*range(0, HEIGHT + 1, 37), HEIGHT]
    with_uncles = [n for n in range(1, HEIGHT) if truth.block(n).uncles][:50]
    assert with_uncles
    for n in numbers + with_uncles:
        assert loaded.block(n) == truth.block(n)
    # generation resumes from the stored generator state, bit for bit
    loaded.ensure(HEIGHT + 5000)
    for n in range(HEIGHT, HEIGHT + 5000, 13):
        assert loaded.block(n) == truth.block(n)
        assert loaded.base_fee(n) == truth.base_fee(n)


def test_a_damaged_file_is_ignored_removed_and_regenerated(store, monkeypatch, caplog):
    truth = fresh(22, monkeypatch)
    History(params(), 22).ensure(HEIGHT)
    (path,) = store.glob("chain-1-*.npz")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    history = History(params(), 22)
    history.ensure(HEIGHT)
    assert "ignoring unreadable devnet history" in caplog.text
    for n in range(0, HEIGHT, 101):
        assert history.block(n) == truth.block(n)
    assert path.exists()  # written again, whole, after regenerating


def test_seeds_have_their_own_files_and_the_store_can_be_turned_off(store, monkeypatch):
    History(params(), 23).ensure(HEIGHT)
    History(params(), 24).ensure(HEIGHT)
    assert len(list(store.glob("chain-1-*.npz"))) == 2
    monkeypatch.setenv("FEESLAB_DEVNET_CACHE", "0")
    assert _store.store_dir() is None
    History(params(), 25).ensure(HEIGHT)
    assert len(list(store.glob("chain-1-*.npz"))) == 2


def test_files_are_replaced_whole_or_not_at_all(tmp_path, monkeypatch, caplog):
    path = tmp_path / "f.bin"
    _store.write_atomically(path, b"old")
    _store.write_atomically(path, b"new", durable=True)
    assert path.read_bytes() == b"new"

    def broken_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(_store.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        _store.write_atomically(path, b"lost", prefix=".put-")
    assert path.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]  # no temporary left
    _store.keep(tmp_path / "sub" / "g.bin", b"x", "history")  # logged, not raised
    assert "could not save devnet history" in caplog.text
    assert not (tmp_path / "sub" / "g.bin").exists()
