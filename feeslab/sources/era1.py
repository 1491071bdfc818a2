"""era1 files: mainnet's pre-merge history (blocks 0 .. 15,537,393) as offline archive files.

An era1 file is an e2store file of up to 8,192 blocks::

    era1       := Version | block-tuple* | other-entries* | Accumulator | BlockIndex
    block-tuple := CompressedHeader | CompressedBody | CompressedReceipts | TotalDifficulty

Each e2store record is ``type (2 bytes) | length (uint32 LE) | reserved (2 zero bytes) |
data``. Header, body and receipts are snappy-framed RLP; ``TotalDifficulty`` is a uint256
little-endian; ``Accumulator`` is ``hash_tree_root(List[HeaderRecord(block_hash,
total_difficulty), 8192])``; ``BlockIndex`` is ``starting-number | offsets | count`` (int64
LE, offsets relative to the index record's start). Files are named
``<network>-<epoch:05>-<first 4 bytes of the accumulator root>.era1``. The format's rules
(record types, the accumulator, the writer the devnet exports with) are in
:mod:`feeslab.protocol.era1`; this module reads and checks files against them.

Reading checks everything the file can prove: the record layout and the block index, every
header's hash (keccak of its RLP) and parent link, the total difficulties, the accumulator
root over the file's (hash, total difficulty) pairs, for every body that is decoded,
``sha3Uncles`` and ``transactionsRoot``, and for receipts (read for fee-history tips only)
``receiptsRoot``. Any mismatch raises :class:`Era1Error` naming the
file, the record and the block, before a row is returned.

References
----------
.. [1] nimbus-eth1, ``docs/e2store.md`` (e2store, era1).
.. [2] go-ethereum, ``internal/era`` (the era1 builder and reader).
.. [3] Snappy framing format, https://github.com/google/snappy/blob/main/framing_format.txt
.. [4] Ethereum consensus specs, SSZ ``hash_tree_root`` (merkleisation of lists).
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cramjam
import numpy as np
import pandas as pd
import rlp

from feeslab.errors import FeeslabError
from feeslab.frames import (
    blocks_frame,
    fee_history_frame,
    gas_used_ratio,
    reward_column,
    uncle_scan_frame,
    uncles_frame,
)
from feeslab.protocol.e2store import (
    EMPTY_TRIE_ROOT,
    EMPTY_UNCLES_HASH,
    decompress_all,
    ordered_trie_root,
    rlp_children,
    rlp_item,
    rlp_list_size,
    snappy_frames,
    u16,
    u32,
    uint_column,
)
from feeslab.protocol.era1 import (
    ACCUMULATOR,
    BLOCK_INDEX,
    COMPRESSED_BODY,
    COMPRESSED_HEADER,
    COMPRESSED_RECEIPTS,
    EPOCH_SIZE,
    RECORD_NAMES,
    TOTAL_DIFFICULTY,
    VERSION,
    accumulator_root,
    keccak,
)
from feeslab.sources._mapped import MappedFile
from feeslab.sources.base import SourceBase, require

if TYPE_CHECKING:
    from feeslab.protocol.chainspec import ChainSpec

__all__ = [
    "Era1Error",
    "Era1File",
    "Era1Source",
    "archive_files",
    "effective_rewards",
    "era1_files",
    "transaction_tip",
]

_TUPLE = (COMPRESSED_HEADER, COMPRESSED_BODY, COMPRESSED_RECEIPTS, TOTAL_DIFFICULTY)


class Era1Error(FeeslabError, ValueError):
    """An era1 file that is damaged, truncated or not an era1 file, or a range no file covers.

    Attributes
    ----------
    path : str or None
        The file.
    block : int or None
        The block whose record failed.
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 block: int | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.block = block


_HEADER_FIELDS = ("difficulty", "number", "gas_limit", "gas_used", "timestamp")


def _decode_header_slow(header: bytes) -> dict[str, Any]:
    """One header with the ``rlp`` package: the reference the fast path is tested against."""
    fields = rlp.decode(header)
    if not isinstance(fields, list) or len(fields) not in (15, 16) or any(
        not isinstance(f, bytes) for f in fields
    ):
        raise ValueError("not a pre-merge header (15 or 16 byte-string fields)")
    widths = {0: 32, 1: 32, 2: 20, 3: 32, 4: 32, 5: 32, 6: 256, 13: 32, 14: 8}
    for i, width in widths.items():
        if len(fields[i]) != width:
            raise ValueError(f"header field {i} is {len(fields[i])} bytes, not {width}")
    out = {
        "parent_hash": fields[0], "uncles_hash": fields[1], "coinbase": fields[2],
        "transactions_root": fields[4], "receipts_root": fields[5],
        "base_fee": int.from_bytes(fields[15], "big") if len(fields) == 16 else None,
    }  # fmt: skip
    for name, value in zip(_HEADER_FIELDS, fields[7:12], strict=True):
        out[name] = int.from_bytes(value, "big")
    return out


def _parse_headers(headers: Sequence[bytes]) -> tuple[dict[str, Any], np.ndarray]:
    """Columns of pre-merge headers, walked all at once with numpy.

    A hand-rolled offset walker: ``rlp.decode`` of one header takes ~25 us, 10x the budget
    of the 100 MiB/s scan; the first seven fields have fixed widths, so only the integers
    after them need walking. Headers the walker cannot read (an over-long integer, an odd
    field) go through ``rlp.decode`` instead; the second value names any that fail both.
    """
    n = len(headers)
    lengths = np.fromiter(map(len, headers), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(headers) + bytes(512), dtype=np.uint8)  # no walk runs off
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    ends = starts + lengths
    ok = (lengths >= 448) & (buf[starts] == 0xF9)
    ok &= (buf[starts + 1].astype(np.int64) << 8 | buf[starts + 2]) + 3 == lengths
    p = starts + 3
    for offset, prefix in ((0, 0xA0), (33, 0xA0), (66, 0x94), (87, 0xA0), (120, 0xA0),
                           (153, 0xA0), (186, 0xB9), (187, 0x01), (188, 0x00)):  # fmt: skip
        ok &= buf[p + offset] == prefix
    pos = np.where(ok, p + 445, starts)
    ints = {}
    for name in _HEADER_FIELDS:
        ints[name], pos = uint_column(buf, pos, ok)
    b = buf[pos].astype(np.int64)  # extraData: at most 32 bytes
    ok &= b <= 0xB7
    pos = pos + np.where(b < 0x80, 1, 1 + b - 0x80)
    ok &= buf[pos] == 0xA0
    ok &= buf[pos + 33] == 0x88
    pos = np.where(ok, pos + 42, ends)
    has_fee = pos < ends
    fee_ok = ok.copy()
    base_fee, after = uint_column(buf, np.where(has_fee, pos, starts), fee_ok)
    ok &= ~has_fee | (fee_ok & (after == ends))
    pos = np.where(ok, np.where(has_fee, after, pos), ends)
    ok &= pos == ends
    matrix = buf[p[:, None] + np.arange(445)]
    columns: dict[str, Any] = {
        "parent_hash": [bytes(r) for r in matrix[:, 1:33]] if n else [],
        "uncles_hash": matrix[:, 34:66],
        "coinbase": matrix[:, 67:87],
        "transactions_root": matrix[:, 121:153],
        "receipts_root": matrix[:, 154:186],
        "has_fee": has_fee,
        "base_fee": base_fee,
    }
    for name in _HEADER_FIELDS:
        columns[name] = ints[name]
    bad = np.flatnonzero(~ok)
    failed = []
    if len(bad):  # the general path, header by header
        for name in ("uncles_hash", "coinbase", "transactions_root", "receipts_root"):
            columns[name] = columns[name].copy()
        for name in (*_HEADER_FIELDS, "base_fee"):
            columns[name] = columns[name].astype(object)
        for i in bad:
            try:
                slow = _decode_header_slow(headers[int(i)])
            except (ValueError, rlp.exceptions.DecodingError):
                failed.append(int(i))
                continue
            columns["parent_hash"][i] = slow["parent_hash"]
            for name in ("uncles_hash", "coinbase", "transactions_root", "receipts_root"):
                columns[name][i] = np.frombuffer(slow[name], dtype=np.uint8)
            for name in _HEADER_FIELDS:
                columns[name][i] = slow[name]
            columns["has_fee"][i] = slow["base_fee"] is not None
            columns["base_fee"][i] = slow["base_fee"] or 0
    return columns, np.array(failed, dtype=np.int64)


def _hex_rows(matrix: np.ndarray) -> list[str]:
    """Rows of a uint8 matrix as 0x hex strings (one ``hex()`` call for all of them)."""
    if not len(matrix):
        return []
    width = matrix.shape[1] * 2
    text = np.ascontiguousarray(matrix).tobytes().hex()
    return ["0x" + text[i : i + width] for i in range(0, len(text), width)]


def _frame_columns(columns: dict[str, Any], rows: slice) -> dict[str, Any]:
    """The frame columns of the header fields the blocks and the uncles frames share, from
    :func:`_parse_headers`' columns (rows ``rows``)."""
    fee = pd.arrays.IntegerArray(np.asarray(columns["base_fee"][rows], dtype=np.int64),
                                 ~np.asarray(columns["has_fee"][rows], dtype=bool))  # fmt: skip
    return {
        "miner": _hex_rows(columns["coinbase"][rows]),
        "difficulty": columns["difficulty"][rows],
        "gas_limit": columns["gas_limit"][rows],
        "gas_used": columns["gas_used"][rows],
        "timestamp": columns["timestamp"][rows],
        "base_fee_wei": fee,
    }


# -- one file ----------------------------------------------------------------------------------


@dataclass
class _Headers:
    """A file's verified headers, columns in block order."""

    hashes: list[bytes]
    raw: list[bytes]
    columns: dict[str, Any]
    total_difficulty: list[int]


class Era1File(MappedFile):
    """One era1 file: its layout read and checked on opening, its blocks on demand.

    Parameters
    ----------
    path : str or Path
        The file.

    Attributes
    ----------
    path : Path
    start : int
        The first block it holds.
    count : int
        How many blocks it holds (8,192 but for the last pre-merge file).
    accumulator : bytes
        The accumulator root its ``Accumulator`` record holds.
    stand_in_roots : bool
        True for files the devnet exported (named ``devnet-*``): the devnet models no
        transactions, and its headers hold seeded stand-in ``transactionsRoot`` values, so
        that one check is left out for them (every other check still runs).
    """

    KIND, MIN_SIZE, ERROR = "an era1 file", 8, Era1Error

    def __init__(self, path: str | Path) -> None:
        self.stand_in_roots = Path(path).name.startswith("devnet-")
        self._open(path)
        self._layout()

    def __repr__(self) -> str:
        return f"<Era1File {self.path.name}: blocks {self.start:,} .. {self.stop - 1:,}>"

    @property
    def stop(self) -> int:
        """The block after the last one it holds."""
        return self.start + self.count

    def _error(self, message: str, block: int | None = None) -> Era1Error:
        where = "" if block is None else f"block {block:,}: "
        return Era1Error(f"{self.path.name}: {where}{message}", path=self.path, block=block)

    def _layout(self) -> None:
        """Read the block index and check every record's type and length against it."""
        data = self._map
        size = len(data)
        if data[:8] != VERSION + bytes(6):
            raise self._error("no e2store Version record at byte 0: not an era1 file")
        count = int.from_bytes(data[size - 8 :], "little")
        index_start = size - (8 + 16 + 8 * count)
        if count == 0 or count > EPOCH_SIZE or index_start < 8 or data[
            index_start : index_start + 2
        ] != BLOCK_INDEX or int.from_bytes(data[index_start + 2 : index_start + 6],
                                           "little") != 16 + 8 * count:  # fmt: skip
            raise self._error("no BlockIndex record at the end: truncated or not an era1 file")
        index = data[index_start + 8 : size]
        self.start = int.from_bytes(index[:8], "little")
        self.count = count
        offsets = index_start + np.frombuffer(index, dtype="<i8", count=count, offset=8)
        acc = index_start - 40
        if acc < 8 or data[acc : acc + 8] != ACCUMULATOR + (32).to_bytes(4, "little") + bytes(2):
            raise self._error("no Accumulator record before the BlockIndex")
        self.accumulator = bytes(data[acc + 8 : acc + 40])
        buf = np.frombuffer(data, dtype=np.uint8)
        if offsets[0] != 8 or (np.diff(offsets) <= 0).any() or offsets[-1] >= acc:
            raise self._error("its BlockIndex does not match its records (offsets out of order "
                              "or past the blocks): damaged or truncated")  # fmt: skip
        pos = offsets.copy()
        layout = {}
        for kind in _TUPLE:
            fits = pos + 8 <= acc
            if not fits.all():
                raise self._error(f"its {RECORD_NAMES[kind]} record starts past the blocks",
                                  self.start + int(np.argmin(fits)))  # fmt: skip
            type_ok = (u16(buf, pos) == int.from_bytes(kind, "little")) & (
                u16(buf, pos + 6) == 0
            )
            length = u32(buf, pos + 2)
            if not type_ok.all():
                i = int(np.argmin(type_ok))
                raise self._error(f"no {RECORD_NAMES[kind]} record at byte {pos[i]:,}",
                                  self.start + i)  # fmt: skip
            layout[kind] = (pos + 8, length)
            pos = pos + 8 + length
        if (layout[TOTAL_DIFFICULTY][1] != 32).any():
            i = int(np.argmin(layout[TOTAL_DIFFICULTY][1] == 32))
            raise self._error("its TotalDifficulty record is not 32 bytes", self.start + i)
        following = np.append(offsets[1:], acc)
        if (pos > following).any():
            i = int(np.argmax(pos > following))
            raise self._error("its records run into the next block's", self.start + i)
        self._records = {k: (o.tolist(), n.tolist()) for k, (o, n) in layout.items()}

    def header_bytes(self, index: int) -> bytes:
        """The RLP of the header of the file's ``index``-th block (block ``start + index``),
        decompressed, unchecked (:meth:`headers` checks every header).

        Raises
        ------
        IndexError
            ``index`` outside ``0 .. count - 1``.
        Era1Error
            The record does not decompress.
        """
        if not 0 <= index < self.count:
            raise IndexError(f"{self.path.name} holds {self.count:,} headers: no index {index!r}")
        return self._record(COMPRESSED_HEADER, index)

    def first_parent_hash(self) -> bytes:
        """The ``parentHash`` of its first block: the previous file's last hash, which a scan of
        this file alone cannot check (``ValueError`` for a header that is not pre-merge)."""
        parent: bytes = _decode_header_slow(self.header_bytes(0))["parent_hash"]
        return parent

    def last_hash(self) -> bytes:
        """The hash (keccak of the header) of its last block: the next file's first parent."""
        return keccak(self.header_bytes(self.count - 1))

    def _record(self, kind: bytes, i: int) -> bytes:
        offsets, lengths = self._records[kind]
        o = offsets[i]
        try:
            return snappy_frames(self._map[o : o + lengths[i]])
        except (cramjam.DecompressionError, ValueError) as exc:
            raise self._error(
                f"its {RECORD_NAMES[kind]} record at byte {o:,} does not decompress ({exc})",
                self.start + i,
            ) from None

    def headers(self) -> _Headers:
        """Every header, hashed and checked: hash chain, total difficulty, accumulator."""
        offsets, lengths = self._records[COMPRESSED_HEADER]
        mm = self._map
        raw = decompress_all(mm, offsets, lengths)  # one compressed chunk each: the usual case
        if raw is None:  # record by record, to name the one that fails
            raw = [self._record(COMPRESSED_HEADER, i) for i in range(len(offsets))]
        hashes = list(map(keccak, raw))
        columns, failed = _parse_headers(raw)
        if len(failed):
            i = int(failed[0])
            raise self._error(f"its CompressedHeader record at byte {offsets[i]:,} is not an "
                              "RLP block header", self.start + i)  # fmt: skip
        numbers = columns["number"]
        expected = np.arange(self.start, self.stop)
        if not np.array_equal(np.asarray(numbers, dtype=np.int64), expected):
            i = int(np.argmax(np.asarray(numbers, dtype=np.int64) != expected))
            raise self._error(f"its header says block {numbers[i]}, the index {self.start + i}",
                              self.start + i)  # fmt: skip
        parents = columns["parent_hash"]
        for i in range(1, self.count):
            if parents[i] != hashes[i - 1]:
                raise self._error(
                    f"its parentHash 0x{parents[i].hex()} is not the hash of block "
                    f"{self.start + i - 1:,} (0x{hashes[i - 1].hex()}): a damaged header",
                    self.start + i,
                )
        td_offsets = self._records[TOTAL_DIFFICULTY][0]
        tds = [int.from_bytes(mm[o : o + 32], "little") for o in td_offsets]
        difficulty = columns["difficulty"].tolist()
        first = 1 if self.start else 0
        if not first and tds[0] != difficulty[0]:
            raise self._error("its total difficulty is not its difficulty", self.start)
        for i in range(max(first, 1), self.count):
            if tds[i] - tds[i - 1] != difficulty[i]:
                raise self._error(
                    f"its total difficulty {tds[i]} is not block {self.start + i - 1:,}'s "
                    f"{tds[i - 1]} + its difficulty {difficulty[i]}",
                    self.start + i,
                )
        root = accumulator_root(hashes, tds)
        if root != self.accumulator:
            raise self._error(
                f"the accumulator root of its headers, 0x{root.hex()}, is not the one it "
                f"holds, 0x{self.accumulator.hex()}: a damaged header or total difficulty"
            )
        return _Headers(hashes=hashes, raw=raw, columns=columns, total_difficulty=tds)

    def body(self, i: int, headers: _Headers, *, transactions: bool = True) -> tuple[
            bytes, list[tuple[int, int, int, bool]], list[tuple[int, int, int, bool]], int]:
        """Block ``start + i``'s body, checked against its header: (body RLP, transaction
        items, uncle items, payload length). ``transactions=False`` leaves the transaction
        list unread and unchecked (an empty item list): the uncle scan needs only the
        uncles, which ``sha3Uncles`` checks."""
        number = self.start + i
        data = self._record(COMPRESSED_BODY, i)
        try:
            is_list, start, stop = rlp_item(data, 0, len(data))
            if not is_list or stop != len(data):
                raise ValueError("not one RLP list")
            parts = rlp_children(data, start, stop)
            if len(parts) < 2 or not parts[0][3] or not parts[1][3]:
                raise ValueError("not [transactions, uncles]")
            txs = rlp_children(data, parts[0][1], parts[0][2]) if transactions else []
            uncles = rlp_children(data, parts[1][1], parts[1][2])
        except ValueError as exc:
            raise self._error(f"its CompressedBody record is not an RLP block body ({exc})",
                              number) from None  # fmt: skip
        columns = headers.columns
        want = bytes(columns["uncles_hash"][i])
        if keccak(data[parts[1][0] : parts[1][2]]) != want:
            raise self._error(f"its body's uncles do not hash to its sha3Uncles 0x{want.hex()}",
                              number)  # fmt: skip
        # a devnet file's transactionsRoot is a stand-in: no trie (most of a body's cost) built
        if not transactions or self.stand_in_roots:
            return data, txs, uncles, stop - start
        want = bytes(columns["transactions_root"][i])
        values = [data[item:end] if is_list else data[payload:end]  # typed: type || payload
                  for item, payload, end, is_list in txs]  # fmt: skip
        if ordered_trie_root(values) != want:
            raise self._error(
                f"its body's transactions do not hash to its transactionsRoot 0x{want.hex()}",
                number,
            )
        return data, txs, uncles, stop - start

    def receipts(self, i: int, headers: _Headers) -> list[Any]:
        """Block ``start + i``'s receipts, decoded with ``rlp``; checked against its
        ``receiptsRoot`` when they are in the consensus encoding (era1 as geth writes it:
        ``[status, cumulativeGasUsed, bloom, logs]``, typed ones as ``type || rlp``). Slim
        receipts without a bloom cannot be hashed to the root, and are not checked."""
        number = self.start + i
        data = self._record(COMPRESSED_RECEIPTS, i)
        try:
            decoded = rlp.decode(data)
            is_list, start, stop = rlp_item(data, 0, len(data))
            items = rlp_children(data, start, stop) if is_list else []
        except (rlp.exceptions.DecodingError, ValueError) as exc:
            raise self._error(f"its CompressedReceipts record is not RLP ({exc})",
                              number) from None  # fmt: skip
        if not isinstance(decoded, list):
            raise self._error("its CompressedReceipts record is not an RLP list", number)
        fields = [r if isinstance(r, list) else rlp.decode(r[1:]) for r in decoded]
        if all(len(f) == 4 for f in fields):
            values = [data[a:e] if is_item_list else data[p:e]
                      for a, p, e, is_item_list in items]  # fmt: skip
            want = bytes(headers.columns["receipts_root"][i])
            if ordered_trie_root(values) != want:
                raise self._error(f"its receipts do not hash to its receiptsRoot 0x{want.hex()}",
                                  number)  # fmt: skip
        return fields




# -- many files ----------------------------------------------------------------------------------


def era1_files(path: str | Path | Iterable[str | Path]) -> list[Path]:
    """The era1 files a path names: a file, a directory (its ``*.era1``), or a glob pattern.

    Raises
    ------
    Era1Error
        When it names no era1 file.
    """
    return archive_files(path, "era1", Era1Error)


def archive_files(path: str | Path | Iterable[str | Path], suffix: str,
                  error: type[FeeslabError]) -> list[Path]:  # fmt: skip
    """The archive files a path names: a file, a directory (its ``*.<suffix>``), a glob
    pattern, or a sequence of them (era1, Ere and Era files are named alike).

    Raises
    ------
    FeeslabError
        ``error`` (the format's), with ``path``, when it names no such file.
    """
    if not isinstance(path, str | Path):
        found = [f for p in path for f in archive_files(p, suffix, error)]
        return sorted(set(found))
    text = str(path)
    candidate = Path(text).expanduser()
    if candidate.is_dir():
        found = sorted(candidate.glob(f"*.{suffix}"))
        where = f"the directory {text}"
    elif candidate.is_file():
        found = [candidate]
        where = text
    else:
        found = sorted(Path(p) for p in _glob.glob(str(candidate)) if Path(p).is_file())
        where = f"the pattern {text}" if _glob.has_magic(text) else text
    if not found:
        raise error(f"no {suffix} file in {where}", path=text)  # type: ignore[call-arg]
    return found


def _span(path: Path) -> tuple[int, int]:
    """(first block, block count) from a file's BlockIndex alone: 16 bytes read."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            if size >= 32:
                handle.seek(size - 8)
                count = int.from_bytes(handle.read(8), "little")
                index_start = size - (8 + 16 + 8 * count)
                if 0 < count <= EPOCH_SIZE and index_start >= 8:
                    handle.seek(index_start)
                    head = handle.read(16)
                    if head[:2] == BLOCK_INDEX and int.from_bytes(head[2:6], "little") == (
                            16 + 8 * count):  # fmt: skip
                        return int.from_bytes(head[8:16], "little"), count
    except OSError as exc:
        raise Era1Error(f"{path}: cannot read: {exc.strerror or exc}", path=path) from None
    raise Era1Error(f"{path.name}: no BlockIndex record at the end: truncated or not an era1 "
                    "file", path=path)  # fmt: skip


def _network(paths: Sequence[Path]) -> str:
    names = {p.name.split("-")[0] for p in paths}
    return names.pop() if len(names) == 1 else "mixed"


def effective_rewards(
    gas_used: int, rewards: Sequence[int], gas: Sequence[int], percentiles: Sequence[float]
) -> list[int]:
    """The tips at ``percentiles`` of a block's gas, as geth's ``eth_feeHistory`` computes them.

    Parameters
    ----------
    gas_used : int
        The block's ``gasUsed`` [gas].
    rewards : sequence of int
        Each transaction's effective tip, ``min(maxPriorityFeePerGas, maxFeePerGas - baseFee)``
        (``gasPrice - baseFee`` for legacy ones) [wei].
    gas : sequence of int
        Each transaction's gas used, from its receipt [gas].
    percentiles : sequence of float
        Rising, 0..100.

    Returns
    -------
    list of int
        One tip per percentile [wei]: the transactions sorted by tip (stably), the tip of the
        first whose running gas reaches ``gas_used * p / 100``; zeros for an empty block.

    References
    ----------
    .. [1] go-ethereum, ``eth/gasprice/feehistory.go``, ``processBlock``.
    """
    if not rewards:
        return [0] * len(percentiles)
    order = sorted(range(len(rewards)), key=rewards.__getitem__)  # stable, as SortStableFunc
    out = []
    index = 0
    total = gas[order[0]]
    for p in percentiles:
        threshold = int(float(gas_used) * p / 100)  # uint64(float64(gasUsed) * p / 100)
        while total < threshold and index < len(rewards) - 1:
            index += 1
            total += gas[order[index]]
        out.append(rewards[order[index]])
    return out


def transaction_tip(encoded: bytes, base_fee: int) -> int:
    """The effective tip of one transaction in its block-body encoding (the RLP list of a
    legacy one, ``type || rlp`` of a typed one), as geth's ``EffectiveGasTip`` [wei].

    Parameters
    ----------
    encoded : bytes
        The transaction as a block body holds it.
    base_fee : int
        Its block's base fee [wei] (0 before London).
    """
    if encoded[0] >= 0xC0:
        return _tip(rlp.decode(encoded), None, base_fee)
    return _tip(rlp.decode(encoded[1:]), encoded[0], base_fee)


def _tip(tx: Any, typed: int | None, base_fee: int) -> int:
    """A decoded transaction's effective tip (geth's ``EffectiveGasTip``)."""
    if typed is None or typed == 1:  # legacy [nonce, gasPrice, ..]; 2930 [chainId, nonce, gasPrice]
        price = int.from_bytes(tx[1 if typed is None else 2], "big")
        return price - base_fee
    cap = int.from_bytes(tx[2], "big")  # 1559 and later: [chainId, nonce, tipCap, feeCap, ...]
    return min(cap, int.from_bytes(tx[3], "big") - base_fee)


class Era1Source(SourceBase):
    """Blocks, uncles and fee history read from era1 files, at zero credits.

    Parameters
    ----------
    path : str, Path, or a sequence of them
        A file, a directory of ``*.era1`` files, or a glob pattern
        (``"~/era1/mainnet-0000*.era1"``).

    Attributes
    ----------
    files : list of Path
        The files found.
    network : str
        The network their names begin with (``mainnet``, ``devnet``).
    chain_id : int
        1 (era1 holds Ethereum mainnet's pre-merge history; the devnet exports its chain 1).
    heights : str
        ``"devnet"`` for files the devnet exported, else ``"protocol"``: whose fork heights
        ``feeslab.analysis`` should use.
    ends : dict of Path to dict of str
        For each file read so far, the hash links at its ends that the read reached (checked
        against the file's accumulator): ``first_parent`` (its first block's ``parentHash``)
        and ``last_hash`` (its last block's hash), 0x hex. A read of several files checks
        these links between them itself; a cluster partition, which reads one file, hands
        them to the driver to check.

    Notes
    -----
    Opening reads nothing; the first range reads each file's first block and count (16
    bytes of its block index), and every file a range touches is mapped, its layout checked,
    and only what the frame needs decoded: every header of each file it touches (they are hashed
    and checked against the accumulator); for ``uncle_rows`` the bodies of blocks with
    uncles, their transactions left unread; for ``fee_history`` the bodies and receipts of
    blocks with transactions; for ``blocks`` every body (the block size needs it).
    """

    chain_id = 1
    label = "era1"  # what the frames' attrs say their source is

    def __init__(self, path: str | Path | Sequence[str | Path]) -> None:
        self.files = era1_files(path)
        self.network = _network(self.files)
        self.heights = "devnet" if self.network == "devnet" else "protocol"
        self._ranges: list[tuple[int, int, Path]] | None = None
        # the hash links at the ends of the files read: what a cluster partition, which
        # reads one file, hands the driver to check across files (no second read of them)
        self.ends: dict[Path, dict[str, str]] = {}

    def __repr__(self) -> str:
        return f"<Era1Source {self.network}: {len(self.files)} files>"

    def offers(self) -> frozenset[str]:
        """The datasets era1 files hold (``feeslab.sources.base``): no node, no state."""
        return frozenset({"blocks", "fee_history", "uncles"})

    def read(self, dataset: str, **parameters: object) -> pd.DataFrame:
        """``dataset``'s rows of blocks ``start`` .. ``stop - 1`` (``parameters``: those of
        :meth:`blocks`, :meth:`fee_history` or :meth:`uncles`)."""
        require(self, [dataset], f"the {dataset} dataset")
        return getattr(self, dataset)(**parameters)

    def uncles(self, start: int, stop: int, *, progress: bool | None = None) -> pd.DataFrame:
        """The uncles included by blocks ``start`` .. ``stop - 1`` (``UncleScan.uncles``; the
        dataset counts them per block itself)."""
        including, index, raw = [], [], []
        empty = np.frombuffer(EMPTY_UNCLES_HASH, dtype=np.uint8)
        for handle, headers, lo, hi in self._walk(start, stop, progress):
            has = np.flatnonzero((headers.columns["uncles_hash"][lo:hi] != empty).any(axis=1))
            for i in (has + lo).tolist():
                data, _, uncles, _ = handle.body(i, headers, transactions=False)
                for k, (a, _, e, _) in enumerate(uncles):
                    including.append(handle.start + i)
                    index.append(k)
                    raw.append(data[a:e])
        return self._attrs(_uncle_frame(including, index, raw), self.network)

    def close(self) -> None:
        """Nothing stays open between calls (each file is mapped while it is read)."""

    @property
    def chain_spec(self) -> ChainSpec:
        """Mainnet's :class:`~feeslab.protocol.chainspec.ChainSpec`, at the devnet's heights for
        files the devnet exported."""
        from feeslab.protocol.chainspec import ChainSpec

        return ChainSpec.from_chain(1, heights=self.heights)

    def ranges(self) -> list[tuple[int, int, Path]]:
        """(first block, block after the last, file) for every file, in block order."""
        if self._ranges is None:
            spans = []
            for path in self.files:
                first, count = _span(path)
                spans.append((first, first + count, path))
            self._ranges = sorted(spans)
        return self._ranges

    def file_parts(self, start: int, stop: int) -> list[tuple[int, int, str]]:
        """``(first, stop, path)`` of each file holding blocks of ``start`` .. ``stop - 1``
        (a cluster job's partitions: one a file).

        Raises
        ------
        Era1Error
            No file covers some block of the range (naming the first such block).
        """
        self.covering(start, stop)  # every block covered, or Era1Error naming the gap
        return [(max(start, first), min(stop, after), str(path))
                for first, after, path in self.ranges() if max(start, first) < min(stop, after)]

    def part(self, path: str) -> Era1Source:
        """The files' source for one of them (a worker's partition)."""
        return Era1Source(path)

    def links(self, path: str) -> dict[str, str]:
        """A read file's first parent hash and last hash (``first_parent``, ``last_hash``)."""
        return dict(self.ends.get(Path(path), {}))

    def covering(self, start: int, stop: int) -> list[tuple[Path, int, int]]:
        """(file, first index, index after the last) covering blocks ``start`` .. ``stop - 1``.

        Raises
        ------
        Era1Error
            No file covers some block of the range (naming the first such block).
        """
        if not 0 <= start < stop:
            raise ValueError(f"need 0 <= start < stop, got {start}, {stop}")
        out = []
        block = start
        for first, after, path in self.ranges():
            if after <= block or first >= stop:
                continue
            if first > block:
                break
            out.append((path, block - first, min(stop, after) - first))
            block = min(stop, after)
            if block >= stop:
                return out
        spans = ", ".join(f"{a:,}..{b - 1:,}" for a, b, _ in self.ranges()[:4])
        more = " ..." if len(self.ranges()) > 4 else ""
        raise Era1Error(
            f"no era1 file covers block {block:,} (the {len(self.files)} files cover "
            f"{spans}{more})",
            block=block,
        )

    def _walk(self, start: int, stop: int,
              progress: bool | None) -> Iterator[tuple[Era1File, _Headers, int, int]]:  # fmt: skip
        """(file, its checked headers, first index, index after the last) per file."""
        parts = self.covering(start, stop)
        bar = None
        if progress or (progress is None and len(parts) > 1):
            from tqdm.auto import tqdm

            bar = tqdm(total=len(parts), desc="era1 files", unit="file", leave=False)
        previous: bytes | None = None
        try:
            for path, lo, hi in parts:
                with Era1File(path) as handle:
                    headers = handle.headers()
                    if lo == 0 and previous is not None and headers.columns["parent_hash"][
                        0] != previous:  # fmt: skip
                        raise handle._error("its parentHash is not the previous file's last "
                                            "hash", handle.start)  # fmt: skip
                    previous = headers.hashes[-1] if hi == handle.count else None
                    self._note_ends(path, headers, lo, hi == handle.count)
                    yield handle, headers, lo, hi
                if bar is not None:
                    bar.update()
        finally:
            if bar is not None:
                bar.close()

    def _note_ends(self, path: Path, headers: _Headers, lo: int, to_end: bool) -> None:
        """Note in :attr:`ends` the links at ``path``'s ends that this read reached (checked
        against its accumulator): its first block's ``parentHash`` as ``first_parent`` if
        read from its first block, its last block's hash as ``last_hash`` if to its last."""
        ends = {}
        if lo == 0:
            ends["first_parent"] = "0x" + headers.columns["parent_hash"][0].hex()
        if to_end:
            ends["last_hash"] = "0x" + headers.hashes[-1].hex()
        self.ends[Path(path)] = ends

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with ``attrs`` saying its chain, spec, source and network (as
        ``RpcSource.tag`` does for a node's frames)."""
        return self._attrs(frame, self.network)

    @staticmethod
    def _attrs(frame: pd.DataFrame, network: str) -> pd.DataFrame:
        from feeslab.protocol.chainspec import ChainSpec  # the analysis reads the spec from attrs

        spec = ChainSpec.from_chain(1, heights="devnet" if network == "devnet" else "protocol")
        frame.attrs.update({"chain_id": 1, "chain_spec": spec.label, "source": "era1",
                            "network": network})  # fmt: skip
        return frame

    def blocks(self, start: int, stop: int, *, progress: bool | None = None) -> pd.DataFrame:
        """Blocks ``start`` .. ``stop - 1`` as ``feeslab.frames.parse_blocks`` gives them."""
        pieces = []
        for handle, headers, lo, hi in self._walk(start, stop, progress):
            sizes, tx_counts, uncle_hashes = [], [], []
            for i in range(lo, hi):
                data, txs, uncles, payload = handle.body(i, headers)
                sizes.append(rlp_list_size(len(headers.raw[i]) + payload))
                tx_counts.append(len(txs))
                uncle_hashes.append(tuple("0x" + keccak(data[a:e]).hex() for a, _, e, _ in uncles))
            rows = slice(lo, hi)
            pieces.append(blocks_frame({
                **_frame_columns(headers.columns, rows),
                "block_number": headers.columns["number"][rows],
                "hash": ["0x" + h.hex() for h in headers.hashes[rows]],
                "parent_hash": ["0x" + h.hex() for h in headers.columns["parent_hash"][rows]],
                "total_difficulty": headers.total_difficulty[rows],
                "size_bytes": sizes,
                "transaction_count": tx_counts,
                "uncle_hashes": uncle_hashes,
                # era1 files end at the merge: no block has Cancun's blob fields
                "blob_gas_used": [None] * (hi - lo),
                "excess_blob_gas": [None] * (hi - lo),
            }))  # fmt: skip
        return self._attrs(pd.concat(pieces, ignore_index=True), self.network)

    def uncle_rows(self, start: int, stop: int, *, progress: bool | None = None) -> tuple[
            pd.DataFrame, pd.DataFrame]:  # fmt: skip
        """(uncles, per-block counts) of blocks ``start`` .. ``stop - 1``: the frames of
        ``UncleScan.uncles`` and ``UncleScan.blocks``."""
        frame = self.uncles(start, stop, progress=progress)
        return frame, self._attrs(uncle_scan_frame(range(start, stop), frame), self.network)

    def fee_history(
        self,
        start: int,
        stop: int,
        *,
        percentiles: Sequence[float] = (10, 50, 90),
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Base fees, gas used ratios and tip percentiles of blocks ``start`` .. ``stop - 1``,
        as ``Lab.fee_history`` gives them; the tips come from the bodies and receipts as
        geth's ``eth_feeHistory`` computes them (:func:`effective_rewards`). Base fees are 0
        before London, as nodes answer."""
        names = [reward_column(p) for p in percentiles]
        if list(percentiles) != sorted(percentiles):
            raise ValueError(f"percentiles must rise, got {list(percentiles)}")
        pieces = []
        for handle, headers, lo, hi in self._walk(start, stop, progress):
            c = headers.columns
            fee = np.where(np.asarray(c["has_fee"][lo:hi], dtype=bool),
                           np.asarray(c["base_fee"][lo:hi], dtype=np.int64), 0)  # fmt: skip
            gas_used = np.asarray(c["gas_used"][lo:hi], dtype=np.int64)
            empty = np.frombuffer(EMPTY_TRIE_ROOT, dtype=np.uint8)
            has_txs = (c["transactions_root"][lo:hi] != empty).any(axis=1)
            rewards = np.zeros((hi - lo, len(names)), dtype=np.int64)
            for j in np.flatnonzero(has_txs).tolist():
                rewards[j] = self._rewards(handle, headers, lo + j, int(fee[j]),
                                           int(gas_used[j]), percentiles)  # fmt: skip
            pieces.append(fee_history_frame({
                "block_number": np.arange(handle.start + lo, handle.start + hi, dtype=np.int64),
                "base_fee_wei": fee,
                "gas_used_ratio": gas_used_ratio(gas_used, c["gas_limit"][lo:hi]),
                # before Cancun: geth's eth_feeHistory answers zeros, not nulls
                "base_fee_per_blob_gas_wei": np.zeros(hi - lo, dtype=np.int64),
                "blob_gas_used_ratio": np.zeros(hi - lo),
                **{name: rewards[:, k] for k, name in enumerate(names)},
            }, percentiles))  # fmt: skip
        return self._attrs(pd.concat(pieces, ignore_index=True), self.network)

    @staticmethod
    def _rewards(handle: Era1File, headers: _Headers, i: int, base_fee: int, gas_used: int,
                 percentiles: Sequence[float]) -> list[int]:  # fmt: skip
        data, txs, _, _ = handle.body(i, headers)
        tips = []
        for item, payload, end, is_list in txs:
            if is_list:
                tips.append(_tip(rlp.decode(data[item:end]), None, base_fee))
            else:
                kind = data[payload]
                tips.append(_tip(rlp.decode(data[payload + 1 : end]), kind, base_fee))
        if not tips:  # a devnet file's stand-in root: no transactions, no tips
            return [0] * len(percentiles)
        receipts = handle.receipts(i, headers)
        if len(receipts) != len(tips):
            raise handle._error(f"it has {len(tips)} transactions but {len(receipts)} "
                                "receipts", handle.start + i)  # fmt: skip
        cumulative = [int.from_bytes(fields[1], "big") for fields in receipts]
        gas = [b - a for a, b in zip([0, *cumulative[:-1]], cumulative, strict=True)]
        return effective_rewards(gas_used, tips, gas, percentiles)


def _uncle_frame(including: list[int], index: list[int], raw: list[bytes]) -> pd.DataFrame:
    columns, failed = _parse_headers(raw)
    if len(failed):
        i = int(failed[0])
        raise Era1Error(f"block {including[i]:,}: its uncle {index[i]} is not an RLP header",
                        block=including[i])  # fmt: skip
    return uncles_frame({
        **_frame_columns(columns, slice(None)),
        "block_number": including,
        "uncle_index": index,
        "uncle_number": columns["number"],
        "hash": ["0x" + keccak(r).hex() for r in raw],
    })  # fmt: skip
