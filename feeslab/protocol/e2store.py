"""What the e2store archive readers share: records, snappy framing, keccak, RLP walking, tries.

era1 (``feeslab.sources.era1``), Era (``feeslab.sources.era``) and Ere
(``feeslab.sources.ere``) files are all e2store files: a sequence of records ::

    record := type (2 bytes) | length (uint32 LE) | reserved (2 zero bytes) | data

whose payloads are snappy-framed (RLP for the execution layer, SSZ for the consensus layer),
with an index record at the end giving each block's offset relative to the index record's
own start. This module holds the pieces the three readers have in common, each written once:

* :func:`snappy_frames` decodes a snappy-framed stream (cramjam), with the one-chunk fast path
  the era1 reader measured; :func:`first_chunk` decodes only a stream's first chunk (an Era
  state's slot is in its first bytes, the state is hundreds of MB).
* :func:`record`, :func:`framed` write records (the exporters' and the tests').
* :func:`keccak` is keccak256 called directly (safe-pysha3 where it has wheels).
* :func:`rlp_item`, :func:`rlp_children` walk RLP without building objects, and
  :func:`ordered_trie_root` is the Merkle-Patricia root of a list keyed by ``rlp(index)``
  (transactions, receipts, withdrawals).

Why :func:`ordered_trie_root` is written here rather than taken from the ``trie`` package:
``trie.HexaryTrie`` keeps a node database and re-walks the trie on every insert; a block of
200 transactions of 300 bytes costs ~15 ms with it and ~0.5 ms with a builder that knows the
fixed shape of the keys ``rlp(0..n-1)`` (cached per count). The Era reader checks every
block's hash, so this is most of its per-block cost. ``HexaryTrie`` stays the reference the
tests compare it with.

References
----------
.. [1] nimbus-eth2, ``docs/e2store.md``; eth-clients/e2store-format-specs (``formats/``,
   ``types/``).
.. [2] Snappy framing format, https://github.com/google/snappy/blob/main/framing_format.txt
.. [3] Ethereum yellow paper, appendix D (modified Merkle-Patricia trie), and go-ethereum
   ``core/types/hashing.go`` (``DeriveSha``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import cramjam
import numpy as np
from Crypto.Hash import keccak as _keccak_mod  # pycryptodome: wheels everywhere, no compiler

try:  # safe-pysha3 where it has wheels (Linux x86-64): 1.7 us a header against 4.5 us
    from sha3 import keccak_256 as _keccak_256  # type: ignore[import-untyped]

    _hasher = _keccak_256

    def keccak(data: bytes) -> bytes:
        """keccak256 (safe-pysha3), called directly: eth-hash's wrapper adds ~2 us a header."""
        return _keccak_256(data).digest()  # type: ignore[no-any-return]

except ImportError:  # pragma: no cover - elsewhere pycryptodome, which has wheels everywhere

    def _hasher(data: bytes) -> Any:
        return _keccak_mod.new(data=data, digest_bits=256)

    def keccak(data: bytes) -> bytes:
        """keccak256 (pycryptodome), called directly: eth-hash's wrapper adds ~2 us a header."""
        return _keccak_mod.new(data=data, digest_bits=256).digest()


__all__ = [
    "EMPTY_TRIE_ROOT",
    "EMPTY_UNCLES_HASH",
    "HEADER_SIZE",
    "STREAM_ID",
    "VERSION",
    "decompress_all",
    "first_chunk",
    "framed",
    "keccak",
    "ordered_trie_root",
    "record",
    "rlp_bytes",
    "rlp_children",
    "rlp_int",
    "rlp_item",
    "rlp_list",
    "rlp_list_size",
    "snappy_frames",
    "u16",
    "u32",
    "uint_column",
]

VERSION = b"e2"  # the first record of every e2store file (and of each concatenated group)
HEADER_SIZE = 8  # type (2) + length (4) + reserved (2)
STREAM_ID = b"\xff\x06\x00\x00sNaPpY"
EMPTY_UNCLES_HASH = keccak(b"\xc0")
EMPTY_TRIE_ROOT = keccak(b"\x80")


# -- snappy ------------------------------------------------------------------------------------


def snappy_frames(data: bytes | memoryview) -> bytes:
    """Decode a snappy-framed stream.

    One chunk (every header and most bodies) goes straight to cramjam's raw decoder, or
    is the data itself when stored uncompressed: cramjam's framed decoder costs ~10 us a
    call against ~0.4 us for the raw one, and the chunk's CRC is not checked because the
    content is checked by hash (header hash, ``sha3Uncles``, ``transactionsRoot``, a
    payload's ``block_hash``) right after. Longer streams use cramjam's framed decoder,
    CRCs included.

    Raises
    ------
    cramjam.DecompressionError, ValueError
        Not a snappy-framed stream (the readers name the file and record).
    """
    if (
        len(data) > 18
        and data[:10] == STREAM_ID
        and data[10] in (0, 1)
        and int.from_bytes(data[11:14], "little") == len(data) - 14
    ):
        if data[10] == 1:  # an uncompressed chunk: what compression would not shrink
            return bytes(data[18:])
        return bytes(cramjam.snappy.decompress_raw(data[18:]))
    return bytes(cramjam.snappy.decompress(bytes(data)))


def first_chunk(data: bytes | memoryview) -> bytes:
    """The decoded first data chunk of a snappy-framed stream (at most 65,536 bytes).

    Raises
    ------
    ValueError
        The stream does not start with the stream identifier and a data chunk.
    cramjam.DecompressionError
        The chunk does not decompress.
    """
    if len(data) < 18 or bytes(data[:10]) != STREAM_ID or data[10] not in (0, 1):
        raise ValueError("not a snappy-framed stream (no stream identifier and data chunk)")
    end = 14 + int.from_bytes(data[11:14], "little")
    if end > len(data):
        raise ValueError(f"its first chunk runs past the data ({end} > {len(data)} bytes)")
    if data[10] == 1:
        return bytes(data[18:end])
    return bytes(cramjam.snappy.decompress_raw(bytes(data[18:end])))


def decompress_all(mm: Any, offsets: Sequence[int], lengths: Sequence[int]) -> list[bytes] | None:
    """The snappy-framed records ``mm[o : o + n]``, decompressed, or None where one is not a
    single chunk or fails to decompress (the caller then goes record by record to name it).

    The single-chunk layout is found for all records at once with numpy, then each chunk goes
    to cramjam's raw decoder in one comprehension: ~1 us a record less than
    :func:`snappy_frames` called on each (the era1 and Ere header scans' hot loop).
    """
    if not len(offsets):
        return []
    view = memoryview(mm)
    try:
        where = np.asarray(offsets, dtype=np.int64)
        size = np.asarray(lengths, dtype=np.int64)
        buf = np.frombuffer(mm, dtype=np.uint8)
        fast = size > 18
        near = np.where(fast, where, 0)
        for k, byte in enumerate(STREAM_ID):
            fast &= buf[near + k] == byte
        kind = buf[near + 10]
        fast &= (kind <= 1) & ((u32(buf, near + 10) >> 8) == size - 14)
        if not fast.all():
            return None
        raw_decode = cramjam.snappy.decompress_raw
        chunks = zip(offsets, lengths, kind.tolist(), strict=True)
        return [bytes(raw_decode(view[o + 18 : o + n])) if k == 0 else
                bytes(view[o + 18 : o + n]) for o, n, k in chunks]  # fmt: skip
    except cramjam.DecompressionError:
        return None
    finally:
        view.release()


def uint_column(buf: np.ndarray, pos: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised: the canonical RLP integer (at most 8 bytes) at each ``pos`` of ``buf``, and
    the position after it; ``ok`` is cleared where there is none."""
    b = buf[pos].astype(np.int64)
    single = b < 0x80
    length = np.where(single, 0, b - 0x80)
    ok &= single | (length <= 8)
    length = np.where(ok, length, 0)
    value = np.where(single, b, 0).astype(np.uint64)
    first = buf[pos + 1]
    ok &= (length == 0) | (first != 0)  # no leading zero
    ok &= (length != 1) | (first >= 0x80)  # a byte below 0x80 stands alone
    for k in range(8):
        more = length > k
        if not more.any():
            break
        value[more] = (value[more] << np.uint64(8)) | buf[pos[more] + 1 + k].astype(np.uint64)
    return value, pos + np.where(single, 1, 1 + length)


def framed(data: bytes) -> bytes:
    """``data`` snappy-framed (cramjam), as e2store records hold it."""
    return bytes(cramjam.snappy.compress(data))


def record(kind: bytes, data: bytes) -> bytes:
    """One e2store record: ``kind | len(data) (uint32 LE) | 0x0000 | data``."""
    return kind + len(data).to_bytes(4, "little") + b"\x00\x00" + data


def u32(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Vectorised: the uint32 (little-endian) at each ``pos`` of the byte array ``buf``."""
    pos = pos.astype(np.int64)
    out: np.ndarray = (
        buf[pos].astype(np.int64)
        | buf[pos + 1].astype(np.int64) << 8
        | buf[pos + 2].astype(np.int64) << 16
        | buf[pos + 3].astype(np.int64) << 24
    )
    return out


def u16(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Vectorised: the uint16 (little-endian) at each ``pos`` of the byte array ``buf``."""
    out: np.ndarray = buf[pos].astype(np.int64) | buf[pos + 1].astype(np.int64) << 8
    return out


# -- RLP -----------------------------------------------------------------------------------------


def rlp_item(data: bytes, pos: int, end: int) -> tuple[bool, int, int]:
    """(is_list, payload start, item end) of the RLP item at ``pos``; ValueError if cut."""
    if pos >= end:
        raise ValueError(f"RLP item expected at byte {pos}, the data ends at {end}")
    b = data[pos]
    if b < 0x80:
        is_list, start, stop = False, pos, pos + 1
    elif b <= 0xB7:
        is_list, start, stop = False, pos + 1, pos + 1 + b - 0x80
    elif b <= 0xBF:
        n = b - 0xB7
        is_list, start = False, pos + 1 + n
        stop = start + int.from_bytes(data[pos + 1 : start], "big")
    elif b <= 0xF7:
        is_list, start, stop = True, pos + 1, pos + 1 + b - 0xC0
    else:
        n = b - 0xF7
        is_list, start = True, pos + 1 + n
        stop = start + int.from_bytes(data[pos + 1 : start], "big")
    if stop > end:
        raise ValueError(f"RLP item at byte {pos} runs past its end ({stop} > {end})")
    return is_list, start, stop


def rlp_children(data: bytes, start: int, stop: int) -> list[tuple[int, int, int, bool]]:
    """The items of the list payload ``data[start:stop]``: (item start, payload start, end,
    is_list)."""
    out = []
    pos = start
    while pos < stop:
        is_list, payload, end = rlp_item(data, pos, stop)
        out.append((pos, payload, end, is_list))
        pos = end
    return out


def rlp_list_size(payload: int) -> int:
    """The length of an RLP list whose payload is ``payload`` bytes [bytes]."""
    if payload < 56:
        return 1 + payload
    return 1 + (payload.bit_length() + 7) // 8 + payload


def rlp_bytes(value: bytes) -> bytes:
    """The RLP of a byte string."""
    n = len(value)
    if n == 1 and value[0] < 0x80:
        return value
    if n < 56:
        return bytes((0x80 + n,)) + value
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((0xB7 + len(size),)) + size + value


def rlp_int(value: int) -> bytes:
    """The RLP of a non-negative integer (big-endian, no leading zeros)."""
    if value == 0:
        return b"\x80"
    if value < 0x80:
        return bytes((value,))
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes((0x80 + len(raw),)) + raw


def rlp_list(encoded: Sequence[bytes]) -> bytes:
    """The RLP list of already-encoded items."""
    payload = b"".join(encoded)
    n = len(payload)
    if n < 56:
        return bytes((0xC0 + n,)) + payload
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((0xF7 + len(size),)) + size + payload


# -- the ordered Merkle-Patricia root ----------------------------------------------------------


def _nibbles(key: bytes) -> tuple[int, ...]:
    return tuple(n for b in key for n in (b >> 4, b & 0x0F))


def _hex_prefix(path: Sequence[int], leaf: bool) -> bytes:
    """The compact (hex-prefix) encoding of a nibble path."""
    flag = 2 if leaf else 0
    nibbles = [flag + 1, *path] if len(path) % 2 else [flag, 0, *path]
    return bytes(nibbles[i] << 4 | nibbles[i + 1] for i in range(0, len(nibbles), 2))


def _plan(paths: list[tuple[int, ...]], order: list[int], lo: int, hi: int, depth: int) -> Any:
    """The shape of the trie over the sorted ``paths[lo:hi]`` below ``depth`` nibbles:
    ``("leaf", encoded path, index)``, ``("ext", encoded path, child)`` or
    ``("branch", ((nibble, child), ...))``. Keys ``rlp(i)`` are prefix-free, so no branch holds
    a value."""
    if hi - lo == 1:
        return ("leaf", rlp_bytes(_hex_prefix(paths[lo][depth:], True)), order[lo])
    first, last = paths[lo], paths[hi - 1]
    common = depth
    while first[common] == last[common]:
        common += 1
    if common > depth:
        return ("ext", rlp_bytes(_hex_prefix(first[depth:common], False)),
                _plan(paths, order, lo, hi, common))  # fmt: skip
    children = []
    start = lo
    while start < hi:
        nibble = paths[start][depth]
        stop = start
        while stop < hi and paths[stop][depth] == nibble:
            stop += 1
        children.append((nibble, _plan(paths, order, start, stop, depth + 1)))
        start = stop
    return ("branch", tuple(children))


@functools.lru_cache(maxsize=4096)
def _ordered_plan(count: int) -> Any:
    """The trie shape of ``count`` items keyed by ``rlp(0..count-1)``, built once per count."""
    keyed = sorted((_nibbles(rlp_int(i)), i) for i in range(count))
    return _plan([k for k, _ in keyed], [i for _, i in keyed], 0, count, 0)


def _leaf_ref(path: bytes, value: bytes) -> bytes:
    """How a branch holds the leaf ``rlp([path, value])``: the leaf itself below 32 bytes,
    else its hash, the value fed to keccak as it is (a transaction's bytes are not copied
    into the leaf first: hashing them is most of a root's cost)."""
    n = len(value)
    if n >= 56:
        size = n.to_bytes((n.bit_length() + 7) // 8, "big")
        head = bytes((0xB7 + len(size),)) + size
    elif n == 1 and value[0] < 0x80:
        head = b""
    else:
        head = bytes((0x80 + n,))
    total = len(path) + len(head) + n
    if total < 56:
        node = bytes((0xC0 + total,)) + path + head + value
        return node if len(node) < 32 else b"\xa0" + keccak(node)
    size = total.to_bytes((total.bit_length() + 7) // 8, "big")
    hasher = _hasher(bytes((0xF7 + len(size),)) + size + path + head)
    hasher.update(value)
    digest: bytes = hasher.digest()
    return b"\xa0" + digest


@functools.lru_cache(maxsize=65536)
def _leaf_prefix(path: bytes, n: int) -> bytes | None:
    """What precedes a value of ``n`` bytes in the leaf ``rlp([path, value])`` (list prefix,
    path, string prefix), or None where the leaf is short (under 56 bytes) or the value a
    single byte: those go through :func:`_leaf_ref`. Cached: a block's values share a few
    lengths and paths."""
    if n < 56:
        return None
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    head = bytes((0xB7 + len(size),)) + size
    total = len(path) + len(head) + n
    size = total.to_bytes((total.bit_length() + 7) // 8, "big")
    return bytes((0xF7 + len(size),)) + size + path + head


def _node(plan: Any, values: Sequence[bytes]) -> bytes:
    kind = plan[0]
    if kind == "leaf":
        return rlp_list((plan[1], rlp_bytes(values[plan[2]])))
    if kind == "ext":
        return rlp_list((plan[1], _ref(_node(plan[2], values))))
    slots = [b"\x80"] * 17
    for nibble, child in plan[1]:
        if child[0] == "leaf":
            value = values[child[2]]
            prefix = _leaf_prefix(child[1], len(value))
            if prefix is None:
                slots[nibble] = _leaf_ref(child[1], value)
            else:  # the common case: a long value, hashed behind its cached prefix
                hasher = _hasher(prefix)
                hasher.update(value)
                slots[nibble] = b"\xa0" + hasher.digest()
        else:
            slots[nibble] = _ref(_node(child, values))
    return rlp_list(slots)


def _ref(node: bytes) -> bytes:
    """How a parent holds a child node: inline below 32 bytes, else its hash."""
    return node if len(node) < 32 else b"\xa0" + keccak(node)


def ordered_trie_root(values: Sequence[bytes]) -> bytes:
    """The Merkle-Patricia root of ``values`` keyed by ``rlp(index)``.

    What ``transactionsRoot`` (values: each transaction's encoding, ``type || rlp`` for typed
    ones), ``receiptsRoot`` and ``withdrawalsRoot`` commit to.

    Parameters
    ----------
    values : sequence of bytes
        The list's items, in order.

    Returns
    -------
    bytes
        The 32-byte root (keccak of ``0x80`` for an empty list).
    """
    if not values:
        return EMPTY_TRIE_ROOT
    return keccak(_node(_ordered_plan(len(values)), values))
