"""Answers encoded once: compact JSON for settled blocks, spliced into responses as bytes.

A settled block never changes on the devnet (no reorgs; live mode only appends), and a scan
asks for the same headers again and again (every client, every rerun), so the node keeps their
encoded JSON in a bounded LRU, as a provider's edge cache would.  Building and encoding a
header costs ~40 us; splicing cached bytes costs well under 1 us.
"""

from __future__ import annotations

import json
import mmap
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Any

import cramjam

MAX_BYTES = 64 * 1024 * 1024  # ~45,000 mainnet-like headers


def encode(payload: Any) -> bytes:
    """Compact ASCII JSON, so lone surrogates or odd text in echoed ids cannot break encoding."""
    return json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("ascii")


class Encoded(bytes):
    """A JSON-RPC result already encoded by :func:`encode`; answers splice it in as is."""

    __slots__ = ()


class EncodedCache:
    """A thread-safe LRU of :class:`Encoded` values, bounded by their total size [bytes]."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Encoded] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size(self) -> int:
        """Bytes held."""
        return self._size

    def get(self, key: Hashable, make: Callable[[], Any]) -> Encoded | None:
        """The encoded value of ``key``, made with ``make()`` on a miss.

        A ``None`` from ``make`` is returned as None and not kept: a block missing now (above
        the head) may exist later.
        """
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        value = make()  # outside the lock: two threads may build the same value, both correct
        if value is None:
            return None
        encoded = Encoded(encode(value))
        with self._lock:
            if key not in self._items:
                self._items[key] = encoded
                self._size += len(encoded)
                while self._size > self.max_bytes and self._items:
                    _, dropped = self._items.popitem(last=False)
                    self._size -= len(dropped)
        return encoded

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0


CHUNK = 32  # consecutive answers compressed together: their field names repeat [answers]
# a 1,000,000-block devnet chain whole (``feeslab serve --height``): its headers list their
# transactions' hashes (random hex, which LZ4 does not shrink), ~1.1 KB a header compressed
# at block 5,000 (3 transactions), 1.6 KB at 100,000 (9), ~3.2 KB from Shanghai on (16
# withdrawals, 15 transactions at 180,000), 4.1 KB at 205,000 (28): ~3.3 GiB for the million,
# ~0.4 GiB for chain 1's default 210,000 blocks. Below what a whole rescan needs, the tier
# evicts each chunk just before it is asked for again and a rescan builds every header anew.
# A bound, not a reservation: the tier holds what has been asked for
PACKED_MAX_BYTES = 4 * 1024**3
# the compressed chunks are appended to regions of this size mapped for the tier alone
# (anonymous mmap), not allocated one by one on the C heap: 3.3 GiB of chunks interleaved
# with the temporaries of building them left glibc's heap so fragmented that every later
# answer's allocation searched it, and a rescan of blocks 1-20,000 ran 22 % slower with a
# million blocks held than with 20,000 (jemalloc: flat; benchmarks/devnet_perf.py)
SLAB_BYTES = 64 * 1024**2
# the chunks opened last, ready to splice: a few chunks, so that a scan of any range (20,000
# blocks or 1,000,000) takes the same path, one decompression a chunk a pass
OPEN_MAX_BYTES = 4 * 1024 * 1024


class _Slab:
    """A region the tier appends compressed chunks to, and drops whole. Its pages are mapped
    as they are written (an anonymous map is zero until then, and costs no memory); readers
    keep it mapped while they decompress from it (their slice holds a reference)."""

    __slots__ = ("keys", "memory", "used")

    def __init__(self, size: int) -> None:
        self.memory = mmap.mmap(-1, size)
        self.used = 0
        self.keys: list[Hashable] = []  # the chunks appended here (some may have moved on)

    def append(self, key: Hashable, packed: bytes | memoryview) -> int | None:
        """Where ``packed`` now starts, or None if it does not fit."""
        start, stop = self.used, self.used + len(packed)
        if stop > len(self.memory):
            return None
        self.memory[start:stop] = packed
        self.used = stop
        self.keys.append(key)
        return start


# a compressed chunk: its slab, its bytes' start and stop there, its answers' offsets opened
_Entry = tuple[_Slab, int, int, tuple[int, ...]]


def _view(entry: _Entry) -> memoryview:
    slab, start, stop, _ = entry
    return memoryview(slab.memory)[start:stop]


class ChunkedCache:
    """Encoded answers for consecutive numbers, kept compressed ``CHUNK`` at a time.

    Two tiers, each bounded by its bytes: every chunk LZ4-compressed (``max_bytes``), and the
    few chunks used last open, split into their answers (``open_bytes``, an LRU).  A scan
    opens each chunk once (~0.2 us an answer before Shanghai, ~0.5-0.9 us after: its
    decompression and split) and takes its answers from the open chunk; the open tier is kept
    small on purpose, so a rescan of 20,000 blocks costs what one of 1,000,000 costs an
    answer, instead of being faster while it fits and slower beyond.  A header's JSON is
    ~1,430 bytes, mostly random hashes and a random logs bloom; compressed with its
    neighbours it is ~930 bytes, so a rescan of a whole devnet chain stays warm.  LZ4, not
    zstd: zstd packs the random hex twice as tight but decompresses it six times slower
    (~2.5 us an answer), which made a rescan beyond the open tier slower than one within it.

    The compressed chunks are appended to slabs of ``slab_bytes`` (:class:`_Slab`), the
    oldest slab dropped whole when the tier is full; a chunk asked for from the oldest slab
    of a full tier is moved to the newest first (a second chance: what is in use stays).
    """

    def __init__(self, max_bytes: int = PACKED_MAX_BYTES, open_bytes: int = OPEN_MAX_BYTES,
                 slab_bytes: int = SLAB_BYTES) -> None:  # fmt: skip
        self.max_bytes = max_bytes
        self.open_bytes = open_bytes
        self.slab_bytes = max(1, min(slab_bytes, max_bytes))
        self._max_slabs = max(1, max_bytes // self.slab_bytes)
        self._slabs: deque[_Slab] = deque()
        # chunk -> (its slab, its bytes' start and stop there, its answers' offsets opened)
        self._packed: dict[Hashable, _Entry] = {}
        # answers of an open chunk, and their bytes (kept: summing them at eviction costs)
        self._open: OrderedDict[Hashable, tuple[tuple[Encoded, ...], int]] = OrderedDict()
        self._size = 0
        self._open_size = 0
        self._lock = threading.Lock()
        # the chunk answered from last, as (key, start, answers): a scan asks for the next
        # number of the same chunk 31 times in 32, and this skips the lock and the LRU for it
        self._last: tuple[Hashable, int, tuple[Encoded, ...]] = (None, -1, ())

    @property
    def size(self) -> int:
        """Compressed bytes held."""
        return self._size

    def get(self, key: Hashable, number: int, make: Callable[[int, int], list[Any]]) -> Encoded:
        """The encoded answer for ``number`` under ``key``, its chunk made with
        ``make(start, stop)`` (one value per number in ``range(start, stop)``) on a miss."""
        offset = number % CHUNK
        last_key, last_start, last_answers = self._last  # one read: a consistent triple
        if last_start == number - offset and last_key == key:
            return last_answers[offset]
        chunk_key = (key, number - offset)
        with self._lock:
            opened = self._open.get(chunk_key)
            if opened is not None:
                self._open.move_to_end(chunk_key)
                self._last = (key, number - offset, opened[0])
                return opened[0][offset]
            entry = self._packed.get(chunk_key)
            if entry is not None and entry[0] is self._slabs[0] and self._full():
                entry = self._append(chunk_key, _view(entry), entry[3])  # second chance
        # outside the lock: two threads may open or build the same chunk, both correct
        if entry is not None:
            offsets = entry[3]
            buffer = bytearray(offsets[-1])  # a plain buffer: slices of it copy fastest
            cramjam.lz4.decompress_block_into(_view(entry), buffer)
            data = memoryview(buffer)
            # map, not a generator: ~0.2 us an answer less, a third of the split's cost
            answers = tuple(map(Encoded, map(data.__getitem__, map(slice, offsets, offsets[1:]))))
        else:
            start = number - offset
            answers = tuple(Encoded(encode(v)) for v in make(start, start + CHUNK))
            made = [0]
            for answer in answers:
                made.append(made[-1] + len(answer))
            offsets = tuple(made)
            # no size stored: the offsets say it
            packed = cramjam.lz4.compress_block(b"".join(answers), store_size=False)
        with self._lock:
            if entry is None and chunk_key not in self._packed:
                self._append(chunk_key, memoryview(packed), offsets)
            if chunk_key not in self._open:
                self._open[chunk_key] = (answers, offsets[-1])
                self._open_size += offsets[-1]
                while self._open_size > self.open_bytes and self._open:
                    _, (_, closed) = self._open.popitem(last=False)
                    self._open_size -= closed
            self._last = (key, number - offset, answers)
        return answers[offset]

    def _full(self) -> bool:
        return len(self._slabs) >= self._max_slabs > 1

    def _append(self, chunk_key: Hashable, packed: memoryview,
                offsets: tuple[int, ...]) -> _Entry:  # fmt: skip
        """Put ``packed`` in the newest slab (a new one if it does not fit, the oldest
        dropped if the tier is full); under the lock."""
        start = self._slabs[-1].append(chunk_key, packed) if self._slabs else None
        if start is None:
            if len(self._slabs) >= self._max_slabs:
                self._drop(self._slabs.popleft())
            self._slabs.append(_Slab(max(self.slab_bytes, len(packed))))
            start = self._slabs[-1].append(chunk_key, packed)
            assert start is not None
        moved = self._packed.get(chunk_key)
        if moved is not None:  # its old copy stays in its slab, unused, until that is dropped
            self._size -= moved[2] - moved[1]
        entry = self._packed[chunk_key] = (self._slabs[-1], start, start + len(packed), offsets)
        self._size += len(packed)
        return entry

    def _drop(self, slab: _Slab) -> None:
        """Forget the chunks that still live in ``slab`` (not those moved on since)."""
        for chunk_key in slab.keys:
            entry = self._packed.get(chunk_key)
            if entry is not None and entry[0] is slab:
                del self._packed[chunk_key]
                self._size -= entry[2] - entry[1]

    def clear(self) -> None:
        with self._lock:
            self._slabs.clear()
            self._packed.clear()
            self._open.clear()
            self._size = self._open_size = 0
            self._last = (None, -1, ())
