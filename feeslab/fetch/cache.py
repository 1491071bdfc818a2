"""A persistent on-disk cache of settled JSON-RPC answers.

An answer about a settled block never changes, so it is worth keeping across sessions: a notebook
re-run, or a fetch interrupted half-way, then costs no credits for what was already fetched.

What is stored
--------------
Only successful answers (``result``) about blocks the caller states are settled: ``put`` takes the
answer's block number ``block`` and the first block that is *not* settled ``settled_below``, and
stores only when ``block < settled_below``. Error answers are never stored (``put_answer`` drops
them; the transport raises them instead of passing them on). Params naming a moving block tag
(``latest``, ``pending``, ``safe``, ``finalized``) are refused with ``ValueError``: their answer
changes with the head, whatever the caller states. ``earliest`` is allowed: it names the genesis
block, which is part of the cache's identity and so can never change under it. A ``null`` result
is not stored unless ``allow_null=True``: a lagging node behind a load balancer answers ``null``
for a block it has not seen yet, and caching that would hide the block for good.

Keys and identity
-----------------
A key is the method name plus the canonical JSON of the params (sorted keys, no spaces, ASCII),
so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` share an entry. Nothing else goes into a key:
not the URL, not the API key, not headers, so no secret can reach the files.

Each chain has its own database, named by its identity ``"<chain id>-<genesis hash>"`` (see
`chain_identity`). The genesis hash separates devnets with different seeds that share chain id 1;
the chain id separates chains that share a genesis (Ethereum Classic kept mainnet's genesis and
chain id 61 vs 1).

Storage choice
--------------
One SQLite database per chain identity (stdlib ``sqlite3``), not a directory of files:

- 100,000 entries are one file, not 100,000 inodes; a batch of answers is one transaction, so it
  is written all-or-nothing and fast (one fsync per batch instead of one per entry);
- WAL journal mode lets readers run while one writer writes, and ``busy_timeout`` makes writers in
  several processes queue instead of failing; within a process one connection is shared under a
  lock, so threads are safe too;
- a crash (even ``SIGKILL``) mid-transaction loses only that uncommitted batch: SQLite's journal
  rolls it back at the next open, so an entry is either whole or absent.

SQLite checks its own page structure but not the bytes of a value, so each row also carries a
sha256 of its key and value. An entry whose checksum or JSON does not match is logged, deleted and
treated as a miss. A file that is not a database at all is moved aside (``*.corrupt-<time>``) and a
fresh one started: it is a cache, and everything in it can be fetched again.

``synchronous=NORMAL`` (the usual WAL setting): a committed batch survives a process crash; a power
cut may lose the last few batches but never corrupts the file.

Layout: ``<root>/rpc/<identity>.sqlite3`` (plus SQLite's ``-wal`` and ``-shm`` files), where
``<root>`` is the ``path`` option, else ``$FEESLAB_CACHE_DIR``, else
``platformdirs.user_cache_dir("feeslab")``.

Chunks
------
A scan's settled results can also be kept whole, a chunk at a time (`put_chunks`): one file per
chunk under ``<root>/rpc/<identity>.chunks/`` (e.g. the Parquet of a scan's 4,096 blocks,
which a warm rerun reads back as a frame without decoding a single answer), with its key,
sha256 and block in the database's ``chunks`` table. A chunk is checked as an answer is:
a file whose bytes do not match its checksum is logged, deleted and missed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import platformdirs

log = logging.getLogger(__name__)

__all__ = [
    "ENV_CACHE_DIR",
    "MISSING",
    "MOVING_TAGS",
    "Cache",
    "CacheStats",
    "canonical_json",
    "chain_identity",
    "default_cache_dir",
    "moving_tag",
]

ENV_CACHE_DIR: Final = "FEESLAB_CACHE_DIR"
"""Environment variable overriding the cache's root directory."""

MOVING_TAGS: Final = frozenset({"latest", "pending", "safe", "finalized"})
"""Block tags whose answer moves with the chain head; params naming one are never cached."""

SCHEMA_VERSION: Final = 1

# "<chain id>-<genesis hash>", and an optional namespace (a devnet's simulation digest)
_IDENTITY = re.compile(r"[0-9]+-0x[0-9a-f]{64}(-[0-9a-z]{1,40})?")
_HASH = re.compile(r"0x[0-9a-fA-F]{64}")


class _Missing:
    """The type of `MISSING`: a falsy singleton distinct from a cached ``null``."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""Returned by `Cache.get` for a miss (a cached ``null`` is returned as ``None``)."""


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of a cache's counters.

    Attributes
    ----------
    hits, misses : int
        Lookups answered / not answered by this `Cache` object since it was opened.
    corrupt : int
        Entries found corrupt (bad checksum or JSON) and deleted by this object.
    entries : int
        Entries in the database now (all processes' writes).
    bytes : int
        Size of the database and its write-ahead log on disk [bytes].
    path : Path or None
        The database file, or None when the cache is disabled.
    """

    hits: int
    misses: int
    corrupt: int
    entries: int
    bytes: int
    path: Path | None


def chain_identity(chain_id: int | str, genesis_hash: str) -> str:
    """The identity naming a chain's cache: ``"<chain id>-<genesis hash>"``.

    Parameters
    ----------
    chain_id : int or str
        The chain id, as an int or as ``eth_chainId`` answers it (``"0x1"``).
    genesis_hash : str
        The hash of block 0, ``0x`` and 64 hex digits (any case).

    Returns
    -------
    str
        E.g. ``"1-0xd4e5...8fa3"``, lower case.
    """
    if isinstance(chain_id, str):
        chain_id = int(chain_id, 16) if chain_id.lower().startswith("0x") else int(chain_id)
    if isinstance(chain_id, bool) or not isinstance(chain_id, int) or chain_id < 0:
        raise ValueError(f"chain id must be a non-negative integer, not {chain_id!r}")
    if not isinstance(genesis_hash, str) or not _HASH.fullmatch(genesis_hash):
        raise ValueError(f"genesis hash must be 0x and 64 hex digits, not {genesis_hash!r}")
    return f"{chain_id}-{genesis_hash.lower()}"


def default_cache_dir() -> Path:
    """The cache root: ``$FEESLAB_CACHE_DIR`` if set, else the user cache directory."""
    override = os.environ.get(ENV_CACHE_DIR)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("feeslab"))


def canonical_json(value: object) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, ASCII only, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def moving_tag(params: object) -> str | None:
    """The first moving block tag found anywhere in ``params``, or None.

    Strings are compared case-insensitively: a client that sends ``"Latest"`` gets an error today,
    but nothing is lost by refusing to cache it.
    """
    stack: list[object] = [params]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.lower() in MOVING_TAGS:
                return item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def _checksum(method: str, params: str, value: bytes) -> bytes:
    # the key is part of the digest, so a value moved under another key is caught too
    digest = hashlib.sha256(method.encode())
    digest.update(b"\0")
    digest.update(params.encode())
    digest.update(b"\0")
    digest.update(value)
    return digest.digest()


_IN_QUERY = 500  # keys looked up by one SELECT


def _select_many(
    conn: sqlite3.Connection, columns: str, keys: Sequence[tuple[str, str | None]]
) -> dict[tuple[str, str], tuple[Any, ...]]:
    """``columns`` of the answers at ``(method, params)`` keys (None params skipped), by key:
    a few SELECTs of many keys each, not one a key (each query lets other threads run first,
    which costs a scan running beside its fetch dearly)."""
    by_method: dict[str, list[str]] = {}
    for method, params in keys:
        if params is not None:
            by_method.setdefault(method, []).append(params)
    found: dict[tuple[str, str], tuple[Any, ...]] = {}  # SQLite's values, as its columns hold
    for method, wanted in by_method.items():
        unique = list(dict.fromkeys(wanted))
        for k in range(0, len(unique), _IN_QUERY):
            part = unique[k : k + _IN_QUERY]
            marks = ",".join("?" * len(part))
            query = (f"SELECT params, {columns} FROM answers"
                     f" WHERE method = ? AND params IN ({marks})")
            for params, *values in conn.execute(query, (method, *part)):
                found[(method, params)] = tuple(values)
    return found


def _check_block(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, not {value!r}")
    return value


class Cache:
    """The on-disk cache of one chain's settled JSON-RPC answers.

    Parameters
    ----------
    identity : str
        The chain's identity from `chain_identity`: ``"<chain id>-<genesis hash>"``.
    path : str or Path, optional
        Root directory; the database is ``<path>/rpc/<identity>.sqlite3``.
        Default: ``$FEESLAB_CACHE_DIR``, else ``platformdirs.user_cache_dir("feeslab")``.
    enabled : bool
        False gives a cache that stores nothing and misses every lookup, without touching disk.
    timeout : float
        How long a write waits for another process's write to finish [s].

    Notes
    -----
    Safe to share between threads; several processes may open the same database. Use as a context
    manager or call `close`; a cache that is never closed loses nothing already written.
    """

    def __init__(
        self,
        identity: str,
        *,
        path: str | os.PathLike[str] | None = None,
        enabled: bool = True,
        timeout: float = 30.0,
    ) -> None:
        if not isinstance(identity, str) or not _IDENTITY.fullmatch(identity):
            raise ValueError(
                "identity must be '<chain id>-<genesis hash>[-<namespace>]' (see chain_identity), "
                f"not {identity!r}"
            )
        self.identity = identity
        self.enabled = bool(enabled)
        self._lock = threading.RLock()
        self._hits = 0
        self._misses = 0
        self._corrupt = 0
        self._conn: sqlite3.Connection | None = None
        self.path: Path | None = None
        if not self.enabled:
            return
        root = Path(path).expanduser() if path is not None else default_cache_dir()
        self.path = root / "rpc" / f"{identity}.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise  # locked or unwritable: not a corrupt file, and not ours to move
            self._move_aside(exc)
            self._conn = self._open()

    # -- opening --------------------------------------------------------------------------------

    def _wal(self, conn: sqlite3.Connection) -> None:
        # switching a new file to WAL takes a lock SQLite's busy handler does not wait for
        # (processes opening one new database at once): wait for it here, up to the timeout
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _open(self) -> sqlite3.Connection:
        assert self.path is not None
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE for writes, so two
        # processes never deadlock upgrading read locks); one connection shared under self._lock
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            # a 100,000-entry batch grows the WAL past 100 MB; give the space back after it
            conn.execute(f"PRAGMA journal_size_limit={32 * 2**20}")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS answers ("
                " method TEXT NOT NULL, params TEXT NOT NULL, value BLOB NOT NULL,"
                " checksum BLOB NOT NULL, block INTEGER NOT NULL,"
                " PRIMARY KEY (method, params)) WITHOUT ROWID"
            )
            # settled chunks kept whole (e.g. a scan's Parquet per chunk): the bytes live in
            # files beside the database, the key, checksum and block here
            conn.execute(
                "CREATE TABLE IF NOT EXISTS chunks ("
                " dataset TEXT NOT NULL, key TEXT NOT NULL, file TEXT NOT NULL,"
                " checksum BLOB NOT NULL, block INTEGER NOT NULL,"
                " PRIMARY KEY (dataset, key)) WITHOUT ROWID"
            )
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('identity', ?), ('schema', ?)",
                (self.identity, str(SCHEMA_VERSION)),
            )
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        if meta.get("identity") != self.identity or meta.get("schema") != str(SCHEMA_VERSION):
            conn.close()
            raise sqlite3.DatabaseError(f"{self.path} holds {meta}, not this chain or schema")
        return conn

    def _move_aside(self, exc: Exception) -> None:
        assert self.path is not None
        stamp = time.strftime("%Y%m%dT%H%M%S")
        log.warning(
            "cache %s is unreadable (%s); moving it aside and starting afresh", self.path, exc
        )
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                os.replace(part, f"{part}.corrupt-{stamp}")

    def close(self) -> None:
        """Close the database; later calls behave as on a disabled cache."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.path if self._conn is not None else "disabled"
        return f"Cache({self.identity!r}, {where})"

    # -- reading --------------------------------------------------------------------------------

    def get(self, method: str, params: object) -> Any:
        """The cached result of ``method(params)``, or `MISSING`.

        Params with a moving block tag always miss. A corrupt entry is logged, deleted and missed.
        """
        return self.get_many([(method, params)])[0]

    def get_many(self, items: Iterable[tuple[str, object]]) -> list[Any]:
        """Look up several ``(method, params)`` pairs in one read transaction.

        Returns
        -------
        list
            One element per item, in order: the cached result or `MISSING`.
        """
        keys = [
            (method, None if moving_tag(params) else canonical_json(params))
            for method, params in items
        ]
        out: list[Any] = [MISSING] * len(keys)
        bad: list[tuple[str, str, bytes]] = []
        with self._lock:
            conn = self._conn
            if conn is not None:
                try:
                    conn.execute("BEGIN")  # one snapshot for the whole lookup, and faster
                    try:
                        rows = _select_many(conn, "value, checksum", keys)
                        for i, (method, params) in enumerate(keys):
                            if params is None:  # a moving tag: never stored
                                continue
                            row = rows.get((method, params))
                            if row is None:
                                continue
                            value, checksum = row
                            if _checksum(method, params, value) != checksum:
                                bad.append((method, params, checksum))
                                continue
                            try:
                                out[i] = json.loads(value)
                            except ValueError:
                                bad.append((method, params, checksum))
                    finally:
                        conn.execute("COMMIT")
                except sqlite3.DatabaseError:
                    log.exception(
                        "cache %s could not be read; treating lookups as misses", self.path
                    )
                    out = [MISSING] * len(keys)
                if bad:
                    self._drop(bad)
            found = sum(value is not MISSING for value in out)
            self._hits += found
            self._misses += len(out) - found
        return out

    def count_cached(self, items: Iterable[tuple[str, object]]) -> dict[str, int]:
        """How many of ``(method, params)`` are cached, per method (for `Plan.minus_cached`).

        Counts present keys without reading or checking values, and does not count as lookups.
        """
        counts: Counter[str] = Counter()
        with self._lock:
            conn = self._conn
            if conn is None:
                return {}
            keys = [(method, canonical_json(params)) for method, params in items
                    if not moving_tag(params)]
            conn.execute("BEGIN")
            try:
                found = _select_many(conn, "1", keys)
            finally:
                conn.execute("COMMIT")
            counts.update(method for method, params in keys if (method, params) in found)
        return dict(counts)

    def _drop(self, bad: list[tuple[str, str, bytes]]) -> None:
        """Delete corrupt entries (only if still the same bytes: another process may have healed
        them meanwhile)."""
        assert self._conn is not None
        for method, params, _ in bad:
            log.warning("cache %s: corrupt entry %s %s deleted", self.path, method, params[:200])
        self._write_many("DELETE FROM answers WHERE method = ? AND params = ? AND checksum = ?",
                         bad, "could not delete corrupt entries")
        self._corrupt += len(bad)

    # -- writing --------------------------------------------------------------------------------

    def put(
        self,
        method: str,
        params: object,
        result: object,
        *,
        block: int,
        settled_below: int,
        allow_null: bool = False,
    ) -> bool:
        """Store ``result`` of ``method(params)`` if its block is settled.

        Parameters
        ----------
        method : str
            The JSON-RPC method.
        params : list or dict
            Its params as sent.
        result : JSON value
            The answer's ``result`` member. Never pass an error answer (see `put_answer`).
        block : int
            The block the answer is about [block number].
        settled_below : int
            The first block number the caller does not consider settled; stored only when
            ``block < settled_below`` [block number].
        allow_null : bool
            Store a ``null`` result too (see the module notes).

        Returns
        -------
        bool
            Whether it was stored.

        Raises
        ------
        ValueError
            If ``params`` names a moving block tag, or a block number is not a non-negative int.
        """
        return (
            self.put_many(
                [(method, params, result, block)],
                settled_below=settled_below,
                allow_null=allow_null,
            )
            == 1
        )

    def put_answer(
        self,
        method: str,
        params: object,
        answer: Mapping[str, object],
        *,
        block: int,
        settled_below: int,
        allow_null: bool = False,
    ) -> bool:
        """Like `put`, from a whole JSON-RPC response object: error answers are not stored."""
        if "error" in answer or "result" not in answer:
            return False
        return self.put(
            method,
            params,
            answer["result"],
            block=block,
            settled_below=settled_below,
            allow_null=allow_null,
        )

    def put_many(
        self,
        items: Iterable[tuple[str, object, object, int]],
        *,
        settled_below: int,
        allow_null: bool = False,
    ) -> int:
        """Store several ``(method, params, result, block)`` answers in one transaction.

        The batch is written all-or-nothing. Items whose block is not settled, or (unless
        ``allow_null``) whose result is ``null``, are skipped. Raises ``ValueError`` before writing
        anything if an item's params name a moving block tag.

        Returns
        -------
        int
            The number of entries written.
        """
        settled_below = _check_block("settled_below", settled_below)
        rows = []
        for method, params, result, block in items:
            if not isinstance(method, str):
                raise TypeError(f"method must be a str, not {method!r}")
            tag = moving_tag(params)
            if tag is not None:
                raise ValueError(f"{method} params name the moving tag {tag!r}; not cacheable")
            if _check_block("block", block) >= settled_below:
                continue
            if result is None and not allow_null:
                continue
            key = canonical_json(params)
            value = canonical_json(result).encode("ascii")
            rows.append((method, key, value, _checksum(method, key, value), block))
        if not rows:
            return 0
        with self._lock:
            if self._conn is None:
                return 0
            return self._store("answers", rows, "entries")

    # -- chunks: settled results kept whole ---------------------------------------------------

    def _chunk_dir(self) -> Path:
        assert self.path is not None
        return self.path.with_name(f"{self.identity}.chunks")

    def put_chunks(
        self, dataset: str, items: Iterable[tuple[str, bytes, int]], *, settled_below: int
    ) -> int:
        """Store several ``(key, data, block)`` chunks of ``dataset`` (e.g. one Parquet file per
        chunk of a scan), where ``block`` is the newest block a chunk is about.

        Chunks about blocks not settled are skipped. Each chunk is a file written whole (a
        temporary file, then renamed); its key, sha256 and block go into the database in one
        transaction, so a chunk is found only once its file is complete.

        Returns
        -------
        int
            How many chunks were written (0 when the cache is closed or disabled).
        """
        rows = []
        settled_below = _check_block("settled_below", settled_below)
        with self._lock:
            if self._conn is None:
                return 0
            folder = self._chunk_dir()
            folder.mkdir(parents=True, exist_ok=True)
            for key, data, block in items:
                if _check_block("block", block) >= settled_below:
                    continue
                name = hashlib.sha256(f"{dataset}\0{key}".encode()).hexdigest()[:40] + ".chunk"
                fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
                try:
                    with os.fdopen(fd, "wb") as out:
                        out.write(data)
                    os.replace(temporary, folder / name)
                except OSError:
                    log.exception("cache %s: could not write chunk %s %s", self.path, dataset, key)
                    Path(temporary).unlink(missing_ok=True)
                    continue
                rows.append((dataset, key, name, _checksum(dataset, key, data), block))
            return self._store("chunks", rows, "chunks")

    def get_chunks(self, dataset: str, keys: Iterable[str]) -> list[Any]:
        """The stored bytes of each of ``dataset``'s ``keys`` (in order), or `MISSING`.

        A chunk whose file is gone or whose bytes do not match its checksum is logged,
        deleted and missed.
        """
        keys = list(keys)
        out: list[Any] = [MISSING] * len(keys)
        with self._lock:
            conn = self._conn
            if conn is None or not keys:
                return out
            query = "SELECT file, checksum FROM chunks WHERE dataset = ? AND key = ?"
            try:
                conn.execute("BEGIN")
                try:
                    rows = [conn.execute(query, (dataset, key)).fetchone() for key in keys]
                finally:
                    conn.execute("COMMIT")
            except sqlite3.DatabaseError:
                log.exception("cache %s could not be read; treating lookups as misses", self.path)
                return out
            folder = self._chunk_dir()
            bad = []
            for i, (key, row) in enumerate(zip(keys, rows, strict=True)):
                if row is None:
                    continue
                name, checksum = row
                try:
                    data = (folder / name).read_bytes()
                except OSError:
                    data = None
                if data is None or _checksum(dataset, key, data) != checksum:
                    log.warning("cache %s: corrupt chunk %s %s deleted", self.path, dataset, key)
                    bad.append((dataset, key, checksum))
                    (folder / name).unlink(missing_ok=True)
                    continue
                out[i] = data
            if bad:
                self._write_many(
                    "DELETE FROM chunks WHERE dataset = ? AND key = ? AND checksum = ?", bad,
                    "could not delete corrupt chunks")  # fmt: skip
                self._corrupt += len(bad)
            found = sum(value is not MISSING for value in out)
            self._hits += found
            self._misses += len(out) - found
        return out

    def chunk_keys(self, dataset: str, low: int, high: int) -> list[str]:
        """The keys of ``dataset``'s chunks whose block is in ``low`` .. ``high - 1``, in the
        order of their blocks; nothing is read or checked (`get_chunks` does that)."""
        with self._lock:
            conn = self._conn
            if conn is None:
                return []
            query = ("SELECT key FROM chunks WHERE dataset = ? AND block >= ? AND block < ? "
                     "ORDER BY block")
            try:
                return [key for (key,) in conn.execute(query, (dataset, low, high))]
            except sqlite3.DatabaseError:
                log.exception("cache %s could not be read; treating lookups as misses", self.path)
                return []

    def chunks_between(self, dataset: str, low: int, high: int) -> list[tuple[str, bytes]]:
        """Every ``(key, data)`` chunk of ``dataset`` whose block is in ``low`` .. ``high - 1``,
        checked as `get_chunks` checks (a bad one is logged, deleted and left out)."""
        with self._lock:  # re-entrant: the keys and their bytes in one hold
            keys = self.chunk_keys(dataset, low, high)
            found = self.get_chunks(dataset, keys)
        return [(k, v) for k, v in zip(keys, found, strict=True) if v is not MISSING]

    def drop_chunks(self, dataset: str, low: int, high: int) -> None:
        """Delete ``dataset``'s chunks whose block is in ``low`` .. ``high - 1`` (e.g. progress
        notes that a whole chunk now covers)."""
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            where = "dataset = ? AND block >= ? AND block < ?"
            try:
                conn.execute("BEGIN IMMEDIATE")
                files = [f for (f,) in conn.execute(f"SELECT file FROM chunks WHERE {where}",
                                                    (dataset, low, high))]
                conn.execute(f"DELETE FROM chunks WHERE {where}", (dataset, low, high))
                conn.execute("COMMIT")
            except sqlite3.DatabaseError:
                log.exception("cache %s: could not delete chunks", self.path)
                self._rollback()
                return
            for name in files:
                (self._chunk_dir() / name).unlink(missing_ok=True)

    def _rollback(self) -> None:
        assert self._conn is not None
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _store(self, table: str, rows: Sequence[tuple[object, ...]], what: str) -> int:
        """Put ``rows`` (five columns) in ``table`` (call with ``_lock`` held): how many were
        stored, 0 when SQLite refuses (a full disk or a lock held too long must not fail a
        fetch that already paid). Settled answers do not change, so replacing is harmless and
        heals a bad row."""
        if not rows or not self._write_many(
            f"INSERT OR REPLACE INTO {table} VALUES (?, ?, ?, ?, ?)", rows,
            f"could not store {len(rows)} {what}", sqlite3.OperationalError,
        ):  # fmt: skip
            return 0
        return len(rows)

    def _write_many(
        self,
        sql: str,
        rows: Sequence[tuple[object, ...]],
        failure: str,
        errors: type[sqlite3.DatabaseError] = sqlite3.DatabaseError,
    ) -> bool:
        """``sql`` once per row in one write transaction (call with ``_lock`` held); False,
        logged with ``failure`` and rolled back, when SQLite raises ``errors``."""
        assert self._conn is not None
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(sql, rows)
            self._conn.execute("COMMIT")
        except errors:
            log.exception("cache %s: %s", self.path, failure)
            self._rollback()
            return False
        return True

    # -- housekeeping ---------------------------------------------------------------------------

    def stats(self) -> CacheStats:
        """Hits and misses of this object; entries and size of the database now."""
        with self._lock:
            entries = 0
            size = 0
            if self._conn is not None:
                entries = self._conn.execute("SELECT count(*) FROM answers").fetchone()[0]
                for suffix in ("", "-wal"):
                    part = Path(f"{self.path}{suffix}")
                    if part.exists():
                        size += part.stat().st_size
                chunks = self._chunk_dir()
                if chunks.is_dir():
                    size += sum(f.stat().st_size for f in chunks.iterdir())
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                corrupt=self._corrupt,
                entries=entries,
                bytes=size,
                path=self.path if self._conn is not None else None,
            )

    def clear(self) -> None:
        """Delete every entry of this chain and give the space back to the file system."""
        with self._lock:
            if self._conn is None:
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("DELETE FROM answers")
            self._conn.execute("DELETE FROM chunks")
            self._conn.execute("COMMIT")
            shutil.rmtree(self._chunk_dir(), ignore_errors=True)
            try:
                self._conn.execute("VACUUM")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:
                # another process is reading: the entries are gone, only the space waits
                log.info("cache %s: space not reclaimed while other readers are open", self.path)
