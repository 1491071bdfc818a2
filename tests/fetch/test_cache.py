"""The on-disk cache of settled answers: hits and misses, settlement, identity, corruption,
atomicity across threads and processes, crash-resume, and that no secret reaches its files."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import httpx
import platformdirs
import pytest

from feeslab.fetch.cache import (
    ENV_CACHE_DIR,
    MISSING,
    Cache,
    chain_identity,
    default_cache_dir,
)

GENESIS_A = "0x" + "a1" * 32
GENESIS_B = "0x" + "b2" * 32
IDENT = chain_identity(1, GENESIS_A)
BLOCK_METHOD = "eth_getBlockByNumber"
REPO = Path(__file__).resolve().parents[2]


def block_answer(n: int) -> dict[str, Any]:
    return {
        "number": hex(n),
        "hash": f"0x{n:064x}",
        "baseFeePerGas": hex(10**9 + n),
        "uncles": [],
        "transactions": [f"0x{n * 10 + i:064x}" for i in range(3)],
    }


def block_item(n: int) -> tuple[str, list, dict, int]:
    return (BLOCK_METHOD, [hex(n), False], block_answer(n), n)


@pytest.fixture
def cache(tmp_path: Path):
    with Cache(IDENT, path=tmp_path) as c:
        yield c


def db_path(root: Path, identity: str = IDENT) -> Path:
    return root / "rpc" / f"{identity}.sqlite3"


# -- basics -------------------------------------------------------------------------------------


def test_put_then_get_returns_the_answer_and_counts_hits_and_misses(cache: Cache) -> None:
    assert cache.get(BLOCK_METHOD, ["0x5", False]) is MISSING
    assert cache.put(BLOCK_METHOD, ["0x5", False], block_answer(5), block=5, settled_below=100)
    assert cache.get(BLOCK_METHOD, ["0x5", False]) == block_answer(5)
    assert cache.get(BLOCK_METHOD, ["0x5", True]) is MISSING  # other params, other key
    assert cache.get("eth_getBlockByHash", ["0x5", False]) is MISSING  # other method too
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.corrupt) == (1, 3, 1, 0)
    assert stats.bytes > 0
    assert stats.path == db_path(cache.path.parents[1])


def test_keys_use_canonical_json_so_dict_order_does_not_matter(cache: Cache) -> None:
    call = {"to": "0x" + "11" * 20, "data": "0x70a08231"}
    reordered = {"data": "0x70a08231", "to": "0x" + "11" * 20}
    cache.put("eth_call", [call, "0x10"], "0x" + "00" * 32, block=16, settled_below=17)
    assert cache.get("eth_call", [reordered, "0x10"]) == "0x" + "00" * 32


def test_get_many_is_aligned_with_its_input_and_misses_are_missing(cache: Cache) -> None:
    assert cache.put_many([block_item(n) for n in range(0, 10, 2)], settled_below=10) == 5
    got = cache.get_many([(BLOCK_METHOD, [hex(n), False]) for n in range(10)])
    assert got == [block_answer(n) if n % 2 == 0 else MISSING for n in range(10)]
    assert cache.count_cached([(BLOCK_METHOD, [hex(n), False]) for n in range(10)]) == {
        BLOCK_METHOD: 5
    }


def test_answers_survive_closing_and_reopening(tmp_path: Path) -> None:
    with Cache(IDENT, path=tmp_path) as first:
        first.put_many([block_item(n) for n in range(50)], settled_below=50)
    with Cache(IDENT, path=tmp_path) as second:
        assert second.get(BLOCK_METHOD, ["0x31", False]) == block_answer(49)
        assert second.stats().entries == 50


def test_clear_removes_every_entry_and_shrinks_the_file(cache: Cache) -> None:
    cache.put_many([block_item(n) for n in range(2_000)], settled_below=2_000)
    full = cache.stats().bytes
    cache.clear()
    assert cache.stats().entries == 0
    assert cache.get(BLOCK_METHOD, ["0x1", False]) is MISSING
    assert cache.stats().bytes < full


# -- what may be stored ---------------------------------------------------------------------------


def test_only_settled_blocks_are_stored(cache: Cache) -> None:
    assert not cache.put(
        BLOCK_METHOD, ["0x64", False], block_answer(100), block=100, settled_below=100
    )
    assert not cache.put(
        BLOCK_METHOD, ["0x65", False], block_answer(101), block=101, settled_below=100
    )
    assert cache.put(BLOCK_METHOD, ["0x63", False], block_answer(99), block=99, settled_below=100)
    assert cache.put_many([block_item(n) for n in range(95, 105)], settled_below=100) == 5
    assert cache.get(BLOCK_METHOD, ["0x64", False]) is MISSING
    assert cache.stats().entries == 5


@pytest.mark.parametrize(
    "params",
    [
        ["latest", False],
        ["pending", False],
        ["safe", True],
        ["finalized", False],
        [{"to": "0x" + "11" * 20, "data": "0x"}, "latest"],
        [{"blockTag": "Latest"}],
    ],
)
def test_moving_block_tags_are_refused_and_never_hit(cache: Cache, params: list) -> None:
    with pytest.raises(ValueError, match="moving tag"):
        cache.put("eth_call", params, "0x", block=1, settled_below=100)
    # refused before the transaction: the settled item of the same batch is not written either
    with pytest.raises(ValueError):
        cache.put_many([block_item(1), ("eth_call", params, "0x", 1)], settled_below=100)
    assert cache.stats().entries == 0
    assert cache.get("eth_call", params) is MISSING


def test_earliest_is_cacheable_because_genesis_is_part_of_the_identity(cache: Cache) -> None:
    assert cache.put(BLOCK_METHOD, ["earliest", False], block_answer(0), block=0, settled_below=1)
    assert cache.get(BLOCK_METHOD, ["earliest", False]) == block_answer(0)


def test_error_answers_are_never_stored(cache: Cache) -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "header not found"}}
    assert not cache.put_answer(BLOCK_METHOD, ["0x1", False], error, block=1, settled_below=10)
    ok = {"jsonrpc": "2.0", "id": 2, "result": block_answer(2)}
    assert cache.put_answer(BLOCK_METHOD, ["0x2", False], ok, block=2, settled_below=10)
    assert cache.get(BLOCK_METHOD, ["0x1", False]) is MISSING
    assert cache.get(BLOCK_METHOD, ["0x2", False]) == block_answer(2)
    assert cache.stats().entries == 1


def test_null_results_are_stored_only_when_allowed(cache: Cache) -> None:
    params = ["0x10", "0x0"]
    method = "eth_getUncleByBlockNumberAndIndex"
    assert not cache.put(method, params, None, block=16, settled_below=100)
    assert cache.get(method, params) is MISSING
    assert cache.put(method, params, None, block=16, settled_below=100, allow_null=True)
    assert cache.get(method, params) is None  # a cached null, not a miss


def test_bad_block_numbers_are_refused(cache: Cache) -> None:
    with pytest.raises(ValueError, match="block"):
        cache.put(BLOCK_METHOD, ["0x1", False], {}, block=-1, settled_below=10)
    with pytest.raises(ValueError, match="settled_below"):
        cache.put(BLOCK_METHOD, ["0x1", False], {}, block=1, settled_below="10")  # type: ignore


# -- identity and location -----------------------------------------------------------------------


def test_chains_with_the_same_chain_id_but_different_genesis_do_not_share(tmp_path: Path) -> None:
    seed_a, seed_b = chain_identity(1, GENESIS_A), chain_identity(1, GENESIS_B)
    with Cache(seed_a, path=tmp_path) as a, Cache(seed_b, path=tmp_path) as b:
        a.put(BLOCK_METHOD, ["0x1", False], block_answer(1), block=1, settled_below=10)
        assert b.get(BLOCK_METHOD, ["0x1", False]) is MISSING
        assert a.get(BLOCK_METHOD, ["0x1", False]) == block_answer(1)
        assert a.path != b.path


def test_chains_sharing_a_genesis_but_not_a_chain_id_do_not_share(tmp_path: Path) -> None:
    # Ethereum Classic kept mainnet's genesis block
    with (
        Cache(chain_identity(1, GENESIS_A), path=tmp_path) as eth,
        Cache(chain_identity(61, GENESIS_A), path=tmp_path) as etc,
    ):
        eth.put(BLOCK_METHOD, ["0x1", False], block_answer(1), block=1, settled_below=10)
        assert etc.get(BLOCK_METHOD, ["0x1", False]) is MISSING


def test_chain_identity_normalises_and_refuses_a_bare_chain_id(tmp_path: Path) -> None:
    assert chain_identity("0x1", GENESIS_A.upper().replace("0X", "0x")) == IDENT
    assert chain_identity(1, GENESIS_A) == f"1-{GENESIS_A}"
    for bad in ("1", GENESIS_A, f"1-{GENESIS_A}/../x", ""):
        with pytest.raises(ValueError, match="identity"):
            Cache(bad, path=tmp_path)
    with pytest.raises(ValueError, match="genesis"):
        chain_identity(1, "0x1234")


def test_location_option_environment_and_default(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(ENV_CACHE_DIR, raising=False)
    assert default_cache_dir() == Path(platformdirs.user_cache_dir("feeslab"))
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "from-env"))
    with Cache(IDENT) as from_env:
        assert from_env.path == db_path(tmp_path / "from-env")
        assert from_env.path.exists()
    with Cache(IDENT, path=tmp_path / "from-option") as from_option:
        assert from_option.path == db_path(tmp_path / "from-option")


def test_a_disabled_cache_stores_nothing_and_touches_no_disk(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path))
    off = Cache(IDENT, enabled=False)
    assert not off.put(BLOCK_METHOD, ["0x1", False], block_answer(1), block=1, settled_below=10)
    assert off.get(BLOCK_METHOD, ["0x1", False]) is MISSING
    stats = off.stats()
    assert (stats.entries, stats.bytes, stats.path, stats.misses) == (0, 0, None, 1)
    assert list(tmp_path.iterdir()) == []


# -- corruption ----------------------------------------------------------------------------------


def test_a_corrupt_entry_is_a_logged_miss_and_is_deleted(cache: Cache, caplog) -> None:
    cache.put_many([block_item(n) for n in range(3)], settled_below=3)
    raw = sqlite3.connect(cache.path)
    with raw:
        # flip bytes of entry 1 behind the cache's back; move entry 0's value under entry 2's key
        raw.execute(
            "UPDATE answers SET value = CAST(replace(CAST(value AS TEXT), 'uncles', "
            "'unclez') AS BLOB) WHERE params = ?",
            ('["0x1",false]',),
        )
        value, checksum = raw.execute(
            "SELECT value, checksum FROM answers WHERE params = ?", ('["0x0",false]',)
        ).fetchone()
        raw.execute(
            "UPDATE answers SET value = ?, checksum = ? WHERE params = ?",
            (value, checksum, '["0x2",false]'),
        )
    raw.close()
    with caplog.at_level(logging.WARNING, logger="feeslab.fetch.cache"):
        got = cache.get_many([(BLOCK_METHOD, [hex(n), False]) for n in range(3)])
    assert got == [block_answer(0), MISSING, MISSING]
    assert sum("corrupt entry" in r.getMessage() for r in caplog.records) == 2
    stats = cache.stats()
    assert (stats.entries, stats.corrupt, stats.hits, stats.misses) == (1, 2, 1, 2)
    # and it heals: a fresh answer is stored again
    assert cache.put_many([block_item(1), block_item(2)], settled_below=3) == 2
    assert cache.get(BLOCK_METHOD, ["0x2", False]) == block_answer(2)


def test_a_file_that_is_not_a_database_is_moved_aside(tmp_path: Path, caplog) -> None:
    path = db_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not sqlite" * 500)
    with (
        caplog.at_level(logging.WARNING, logger="feeslab.fetch.cache"),
        Cache(IDENT, path=tmp_path) as cache,
    ):
        assert cache.get(BLOCK_METHOD, ["0x1", False]) is MISSING
        assert cache.put(BLOCK_METHOD, ["0x1", False], block_answer(1), block=1, settled_below=2)
        assert cache.get(BLOCK_METHOD, ["0x1", False]) == block_answer(1)
    assert any("moving it aside" in r.getMessage() for r in caplog.records)
    assert len(list(path.parent.glob("*.corrupt-*"))) == 1


# -- atomicity and concurrency ---------------------------------------------------------------------


def test_a_batch_that_cannot_be_encoded_writes_nothing(cache: Cache) -> None:
    items = [block_item(1), (BLOCK_METHOD, ["0x2", False], {"bad": object()}, 2)]
    with pytest.raises(TypeError):
        cache.put_many(items, settled_below=10)
    assert cache.stats().entries == 0


def test_threads_sharing_one_cache(cache: Cache) -> None:
    per_thread, threads = 400, 8
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            barrier.wait()
            base = k * per_thread
            for start in range(base, base + per_thread, 50):
                cache.put_many(
                    [block_item(n) for n in range(start, start + 50)], settled_below=10**9
                )
                got = cache.get_many(
                    [(BLOCK_METHOD, [hex(n), False]) for n in range(start, start + 50)]
                )
                assert got == [block_answer(n) for n in range(start, start + 50)]
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    assert cache.stats().entries == per_thread * threads


WRITER = textwrap.dedent(
    """
    import sys
    from feeslab.fetch.cache import Cache
    root, ident, first, count, batch = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])

    def item(n):
        return ("eth_getBlockByNumber", [hex(n), False],
                {"number": hex(n), "hash": "0x%064x" % n, "baseFeePerGas": hex(10**9 + n),
                 "uncles": [], "transactions": ["0x%064x" % (n * 10 + i) for i in range(3)]}, n)

    cache = Cache(ident, path=root)
    done = 0
    for start in range(first, first + count, batch):
        done += cache.put_many([item(n) for n in range(start, start + batch)],
                               settled_below=10**9)
        print(done, flush=True)
    """
)


def spawn_writer(root: Path, first: int, count: int, batch: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), IDENT, str(first), str(count), str(batch)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_processes_writing_one_new_database_at_once(tmp_path: Path) -> None:
    procs = [spawn_writer(tmp_path, k * 1_000, 1_000, 50) for k in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.split()[-1] == "1000"
    with Cache(IDENT, path=tmp_path) as cache:
        keys = [(BLOCK_METHOD, [hex(n), False]) for n in range(4_000)]
        assert cache.get_many(keys) == [block_answer(n) for n in range(4_000)]


# -- crash and resume ------------------------------------------------------------------------------


def assert_whole(root: Path, expected_batch: int) -> int:
    """Every stored entry is intact and batches are all-or-nothing; returns the entry count."""
    raw = sqlite3.connect(db_path(root))
    assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    raw.close()
    with Cache(IDENT, path=root) as cache:
        entries = cache.stats().entries
        assert entries % expected_batch == 0
        keys = [(BLOCK_METHOD, [hex(n), False]) for n in range(entries)]
        assert cache.get_many(keys) == [block_answer(n) for n in range(entries)]
        assert cache.stats().corrupt == 0
    return entries


def test_a_writer_killed_mid_fetch_keeps_every_committed_batch(tmp_path: Path) -> None:
    proc = spawn_writer(tmp_path, 0, 10**7, 100)  # would run for many minutes
    assert proc.stdout is not None
    reported = 0
    for line in proc.stdout:
        reported = int(line)
        if reported >= 2_000:
            break
    proc.send_signal(signal.SIGKILL)  # no close(), no clean shutdown, likely mid-transaction
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    entries = assert_whole(tmp_path, 100)
    assert entries >= reported  # nothing reported as written was lost


HALF_THEN_CRASH = textwrap.dedent(
    """
    import os, sys
    from feeslab.fetch.cache import Cache
    root, ident = sys.argv[1], sys.argv[2]

    def item(n):
        return ("eth_getBlockByNumber", [hex(n), False],
                {"number": hex(n), "hash": "0x%064x" % n, "baseFeePerGas": hex(10**9 + n),
                 "uncles": [], "transactions": ["0x%064x" % (n * 10 + i) for i in range(3)]}, n)

    class CrashAfterRows:
        # the real connection, except that the process dies once the rows are in the
        # transaction and before COMMIT
        def __init__(self, conn):
            self.conn = conn
        def execute(self, *args):
            return self.conn.execute(*args)
        def executemany(self, *args):
            self.conn.executemany(*args)
            os._exit(3)

    cache = Cache(ident, path=root)
    assert cache.put_many([item(n) for n in range(500)], settled_below=10**9) == 500
    cache._conn = CrashAfterRows(cache._conn)
    cache.put_many([item(n) for n in range(500, 1000)], settled_below=10**9)
    """
)


def test_a_crash_inside_a_batch_leaves_the_earlier_batch_and_nothing_partial(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", HALF_THEN_CRASH, str(tmp_path), IDENT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert assert_whole(tmp_path, 500) == 500
    with Cache(IDENT, path=tmp_path) as cache:
        assert cache.get(BLOCK_METHOD, ["0x1f4", False]) is MISSING  # block 500 never committed


# -- secrets ---------------------------------------------------------------------------------------


def test_no_api_key_reaches_the_cache_files(devnet, rpc, tmp_path: Path, monkeypatch) -> None:
    key = devnet.api_key
    assert len(key) >= 16
    monkeypatch.setenv("INFURA_API_KEY", key)
    monkeypatch.setenv("FEESLAB_API_KEY", key)
    url = f"{devnet.url}/v3/{key}"
    genesis = rpc("eth_getBlockByNumber", "0x0", False)
    identity = chain_identity(rpc("eth_chainId"), genesis["hash"])
    head = int(rpc("eth_blockNumber"), 16)
    settled_below = head - 5
    assert settled_below > 8
    with Cache(identity, path=tmp_path) as cache:
        payload = [
            {"jsonrpc": "2.0", "id": n, "method": BLOCK_METHOD, "params": [hex(n), True]}
            for n in range(8)
        ]
        answers = httpx.post(url, json=payload, timeout=60).json()
        stored = sum(
            cache.put_answer(
                BLOCK_METHOD, [hex(a["id"]), True], a, block=a["id"], settled_below=settled_below
            )
            for a in answers
        )
        assert stored == 8
        assert cache.get(BLOCK_METHOD, ["0x3", True]) == answers[3]["result"]
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert any(p.name.endswith("-wal") for p in files)  # the log is checked too
        assert all(key.encode() not in p.read_bytes() for p in files)
    after_close = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert after_close
    assert all(key.encode() not in p.read_bytes() for p in after_close)


# -- chunks: settled results kept whole -----------------------------------------------------------


def _chunk_files(root: Path) -> list[Path]:
    return sorted((root / "rpc" / f"{IDENT}.chunks").glob("*.chunk"))


def test_chunks_come_back_byte_for_byte_and_only_settled_ones_are_kept(
    cache: Cache, tmp_path: Path
) -> None:
    items = [("0-4096", b"PAR1 first", 4_095), ("4096-8192", b"PAR1 second", 8_191)]
    assert cache.put_chunks("uncles/v1", items, settled_below=8_000) == 1  # the second is not
    assert cache.get_chunks("uncles/v1", ["0-4096", "4096-8192"]) == [b"PAR1 first", MISSING]
    assert cache.get_chunks("fee_history/v1", ["0-4096"]) == [MISSING]  # datasets apart
    assert len(_chunk_files(tmp_path)) == 1
    assert not list((tmp_path / "rpc" / f"{IDENT}.chunks").glob(".tmp-*"))  # no partial file
    with Cache(IDENT, path=tmp_path) as reopened:  # another session reads it back
        assert reopened.get_chunks("uncles/v1", ["0-4096"]) == [b"PAR1 first"]


def test_a_corrupt_or_missing_chunk_is_a_logged_miss_and_is_deleted(
    cache: Cache, tmp_path: Path, caplog
) -> None:
    items = [(f"{k}", f"chunk {k}".encode(), k) for k in range(3)]
    cache.put_chunks("d", items, settled_below=10)
    raw = sqlite3.connect(cache.path)
    files = dict(raw.execute("SELECT key, file FROM chunks"))
    raw.close()
    folder = tmp_path / "rpc" / f"{IDENT}.chunks"
    (folder / files["1"]).write_bytes(b"chunk 9")  # changed behind the cache's back
    (folder / files["2"]).unlink()  # gone
    with caplog.at_level(logging.WARNING, logger="feeslab.fetch.cache"):
        got = cache.get_chunks("d", ["0", "1", "2"])
    assert got == [b"chunk 0", MISSING, MISSING]
    assert sum("corrupt chunk" in r.getMessage() for r in caplog.records) == 2
    assert cache.stats().corrupt == 2
    assert not (folder / files["1"]).exists()  # deleted, not read again
    raw = sqlite3.connect(cache.path)
    assert [k for (k,) in raw.execute("SELECT key FROM chunks")] == ["0"]
    raw.close()
    assert cache.put_chunks("d", [("1", b"chunk 1", 1)], settled_below=10) == 1  # it heals
    assert cache.get_chunks("d", ["1"]) == [b"chunk 1"]


def test_clear_removes_the_chunks_too(cache: Cache, tmp_path: Path) -> None:
    cache.put_chunks("d", [("a", b"x" * 10_000, 1)], settled_below=10)
    assert cache.stats().bytes > 10_000  # the chunk files count
    cache.clear()
    assert cache.get_chunks("d", ["a"]) == [MISSING]
    assert _chunk_files(tmp_path) == []


def test_chunks_between_blocks_are_listed_and_dropped(cache: Cache, tmp_path: Path) -> None:
    items = [(f"{b}", f"note {b}".encode(), b) for b in (10, 20, 30, 40)]
    cache.put_chunks("notes", items, settled_below=100)
    cache.put_chunks("other", [("20", b"not a note", 20)], settled_below=100)
    assert sorted(cache.chunks_between("notes", 20, 40)) == [("20", b"note 20"),
                                                              ("30", b"note 30")]
    cache.put_chunks("notes", [("5", b"note 5", 5)], settled_below=100)  # listed by block
    assert cache.chunk_keys("notes", 0, 35) == ["5", "10", "20", "30"]
    cache.drop_chunks("notes", 15, 35)
    assert sorted(k for k, _ in cache.chunks_between("notes", 0, 100)) == ["10", "40", "5"]
    assert cache.get_chunks("other", ["20"]) == [b"not a note"]  # another dataset is kept
    assert len(_chunk_files(tmp_path)) == 4  # the dropped notes' files are gone too


def test_a_write_sqlite_refuses_is_logged_and_rolled_back(tmp_path: Path, caplog) -> None:
    # another process holds the write lock past the timeout: the answers and chunks are not
    # stored (a fetch that already paid must not fail), no transaction is left open, and the
    # next write after the lock is gone goes through
    with Cache(IDENT, path=tmp_path, timeout=0.05) as cache:
        other = sqlite3.connect(db_path(tmp_path), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with caplog.at_level(logging.ERROR, logger="feeslab.fetch.cache"):
                assert not cache.put(BLOCK_METHOD, ["0x5", False], block_answer(5), block=5,
                                     settled_below=100)
                assert cache.put_chunks("scan", [("0-9", b"data", 9)], settled_below=100) == 0
            messages = [r.getMessage() for r in caplog.records]
            assert any(m.endswith("could not store 1 entries") for m in messages), messages
            assert any(m.endswith("could not store 1 chunks") for m in messages), messages
            assert not cache._conn.in_transaction
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert cache.put(BLOCK_METHOD, ["0x5", False], block_answer(5), block=5, settled_below=100)
        assert cache.get(BLOCK_METHOD, ["0x5", False]) == block_answer(5)
        assert cache.put_chunks("scan", [("0-9", b"data", 9)], settled_below=100) == 1
        assert cache.get_chunks("scan", ["0-9"]) == [b"data"]
