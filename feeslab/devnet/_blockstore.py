"""The devnet IPFS node's storage: blocks on disk as kubo's flatfs lays them out, and pins.

Layout of a blockstore directory::

    blocks/SHARDING                 /repo/flatfs/shard/v1/next-to-last/2
    blocks/<XY>/<KEY>.data          one block; KEY = base32 (upper case, unpadded) of its
                                    multihash, XY = KEY's next-to-last two characters
    pins.json                       {"recursive": [cid, ...], "direct": [cid, ...]}
    pins.lock                       taken (flock) around every change of pins.json

Durability: a block is written to a temporary file in its shard directory, fsynced and
renamed over its final name; the shard directories are fsynced by ``sync`` before the node
acknowledges anything that needs them. Pins are rewritten the same way. A killed process
leaves at worst a temporary file, never a partial block; those are removed the next time a
store opens the directory (once they are an hour old, so a neighbour process sharing the
directory is never robbed mid-write).

Blocks are keyed by multihash, like kubo: the same bytes stored as ``raw`` and as ``dag-pb``
share one file, and the CID asked for says how to read it. Every read is checked against its
hash (kubo's ``HashOnRead``), so a block damaged on disk is reported, never served.
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from feeslab.devnet._store import write_atomically
from feeslab.unixfs import CID

log = logging.getLogger(__name__)

SHARDING = "/repo/flatfs/shard/v1/next-to-last/2\n"
IO_THREADS = 16  # concurrent fsyncs share journal commits: 8 in flight was ~6x one at a time
MAX_PENDING = 64  # blocks a writer may have in flight before it waits [blocks]
STALE_TEMPORARY = 3600.0  # [s] age after which a leftover temporary file is removed
PIN_TYPES = ("recursive", "direct")


class BlockNotFound(LookupError):
    """The store has no block for this CID."""

    def __init__(self, cid: CID) -> None:
        super().__init__(f"block was not found locally (offline): ipld: could not find {cid}")
        self.cid = cid


class BlockCorrupt(OSError):
    """A stored block whose bytes no longer hash to its CID (damaged on disk)."""

    def __init__(self, cid: CID) -> None:
        super().__init__(f"block in storage has different hash than requested: {cid}")
        self.cid = cid


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, data: bytes) -> None:
    """Temporary file in the same directory, fsync, rename over ``path`` (directory not synced)."""
    write_atomically(path, data, prefix=".put-", durable=True)


class Blockstore:
    """Blocks of one node, in one directory (see the module docstring for the layout).

    Safe to share between threads and between processes: a block's file only ever appears
    whole, under a name derived from its hash.

    Parameters
    ----------
    root : path
        The blockstore directory; created when missing.
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.blocks = self.root / "blocks"
        self.blocks.mkdir(parents=True, exist_ok=True)
        sharding = self.blocks / "SHARDING"
        if not sharding.exists():
            _write_durably(sharding, SHARDING.encode())
            _fsync_dir(self.blocks)
        elif sharding.read_text() != SHARDING:
            raise ValueError(f"{self.root} is a blockstore with another layout: {sharding}")
        self.pins = PinStore(self.root)
        self._io = concurrent.futures.ThreadPoolExecutor(IO_THREADS, "feeslab-blockstore")
        self._remove_stale_temporaries()

    def __repr__(self) -> str:
        return f"<Blockstore {self.root}>"

    def close(self) -> None:
        """Stop the I/O threads (pending writes finish first)."""
        self._io.shutdown(wait=True)

    # -- paths ------------------------------------------------------------------------------

    @staticmethod
    def key(cid: CID) -> str:
        """flatfs's key of a block: base32 of its multihash, upper case, unpadded."""
        return base64.b32encode(cid.multihash).decode("ascii").rstrip("=")

    def path(self, cid: CID) -> Path:
        key = self.key(cid)
        return self.blocks / key[-3:-1] / f"{key}.data"

    # -- reading ----------------------------------------------------------------------------

    def get(self, cid: CID) -> bytes:
        """The block's bytes, checked against its hash.

        Raises
        ------
        BlockNotFound
            No such block.
        BlockCorrupt
            The stored bytes do not hash to ``cid``.
        """
        try:
            data = self.path(cid).read_bytes()
        except FileNotFoundError:
            raise BlockNotFound(cid) from None
        if not cid.matches(data):
            raise BlockCorrupt(cid)
        return data

    def size(self, cid: CID) -> int:
        """The block's size [bytes] (its bytes are checked too)."""
        return len(self.get(cid))

    # -- writing ----------------------------------------------------------------------------

    def put(self, cid: CID, data: bytes) -> Path | None:
        """Store one block; returns the shard directory written (to ``sync``), or None.

        A block already stored intact is left alone; one damaged on disk is replaced.
        """
        path = self.path(cid)
        try:
            existing = path.read_bytes()
        except FileNotFoundError:
            pass
        else:
            if hashlib.sha256(existing).digest() == cid.digest:
                return None
            log.info("replacing damaged block %s", cid)
        directory = path.parent
        if not directory.is_dir():
            directory.mkdir(exist_ok=True)
            _fsync_dir(self.blocks)
        _write_durably(path, data)
        return directory

    def put_many(self, blocks: Iterable[tuple[CID, bytes]]) -> None:
        """Store blocks durably (concurrently, then their directories fsynced)."""
        writer = self.writer()
        for cid, data in blocks:
            writer.put(cid, data)
        writer.flush()

    def sync(self, directories: Iterable[Path]) -> None:
        """fsync shard directories, so the renames of blocks written there survive a crash."""
        for done in self._io.map(_fsync_dir, list(directories)):
            assert done is None

    def writer(self) -> BlockWriter:
        """A writer that stores blocks on the I/O threads while its caller goes on."""
        return BlockWriter(self)

    def _remove_stale_temporaries(self) -> None:
        cutoff = time.time() - STALE_TEMPORARY
        for leftover in self.blocks.glob("*/.put-*.tmp"):
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < cutoff:
                    leftover.unlink()


class BlockWriter:
    """Blocks of one request, written concurrently; ``flush()`` makes them durable.

    ``put`` hands the block to the store's I/O threads and returns; nothing is durable until
    ``flush`` has returned (it waits for every write, then fsyncs the directories), so a
    caller acknowledges only after ``flush``. At most ``MAX_PENDING`` writes are in flight.
    """

    def __init__(self, store: Blockstore) -> None:
        self.store = store
        self._pending: collections.deque[concurrent.futures.Future] = collections.deque()
        self._dirty: set[Path] = set()

    def put(self, cid: CID, data: bytes) -> None:
        self._pending.append(self.store._io.submit(self.store.put, cid, data))
        while len(self._pending) > MAX_PENDING:
            self._settle(self._pending.popleft())

    def _settle(self, future: concurrent.futures.Future) -> None:
        directory = future.result()  # a failed write raises here
        if directory is not None:
            self._dirty.add(directory)

    def flush(self) -> None:
        """Wait for every write, then fsync the directories written to."""
        while self._pending:
            self._settle(self._pending.popleft())
        dirty, self._dirty = self._dirty, set()
        self.store.sync(dirty)

    def abandon(self) -> None:
        """Wait for the writes in flight without making anything durable (errors ignored)."""
        while self._pending:
            with contextlib.suppress(Exception):
                self._pending.popleft().result()


class PinStore:
    """Recursive and direct pins, in ``pins.json``; every change is made under a file lock.

    Each change re-reads the file under the lock, so processes sharing a blockstore never
    lose one another's pins.
    """

    def __init__(self, root: Path) -> None:
        self.file = root / "pins.json"
        self._lock_file = root / "pins.lock"
        self._thread_lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock, open(self._lock_file, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _read(self) -> dict[str, dict[str, None]]:
        try:
            raw = json.loads(self.file.read_bytes())
        except FileNotFoundError:
            raw = {}
        # dicts keep insertion order: pins are listed in the order they were made
        return {kind: dict.fromkeys(raw.get(kind, [])) for kind in PIN_TYPES}

    def _write(self, pins: dict[str, dict[str, None]]) -> None:
        body = json.dumps({kind: list(pins[kind]) for kind in PIN_TYPES}, indent=0)
        _write_durably(self.file, body.encode())
        _fsync_dir(self.file.parent)

    def snapshot(self) -> dict[str, list[str]]:
        """``{"recursive": [...], "direct": [...]}`` as the file holds them now."""
        with self._locked():
            pins = self._read()
        return {kind: list(pins[kind]) for kind in PIN_TYPES}

    def change(self, update) -> object:
        """Run ``update(pins) -> result`` on the current pins under the lock; save if changed.

        ``pins`` maps each pin type to an insertion-ordered dict of CID strings.
        """
        with self._locked():
            pins = self._read()
            before = {kind: list(pins[kind]) for kind in PIN_TYPES}
            result = update(pins)
            if {kind: list(pins[kind]) for kind in PIN_TYPES} != before:
                self._write(pins)
        return result
