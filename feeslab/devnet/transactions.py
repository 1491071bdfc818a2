"""The devnet's transactions and receipts: a pure function of the chain's seed and block number.

Each block of a :class:`~feeslab.devnet.chain.History` holds transactions that agree with its
header and with the chain's tip model, as :meth:`History.withdrawals` agrees with the
consensus layer's sweep; nothing is stored, everything is drawn again on demand from a
counter-based random stream keyed by ``(seed, chain, block, transaction, field)``, so any
range of blocks is generated at once with numpy, in any order, with the same result.

What a block holds:

* **Count and gas.**  An empty header (``gasUsed`` 0) has none.  Otherwise about one
  transaction per ``GAS_PER_TX`` (1,000,000) gas of the header's ``gasUsed``, +-40 %; three in
  ten are plain transfers (exactly 21,000 gas), the others contract calls sharing the rest of
  the block's gas with log-normal weights, so the receipts' ``gasUsed`` add up to the header's
  ``gasUsed`` exactly (the rounding remainder goes to the block's last transaction, always a
  call).  From Amsterdam the header counts gas before refunds (EIP-7778): the shares are
  then each transaction's gas before refunds, one contract call in four gets an EIP-3529
  refund (at most a fifth of its gas, never below the calldata floor) and its receipt's
  ``gasUsed`` is what is left, so the receipts add up to at most the header's ``gasUsed``
  (go-ethereum 02b73d4 ``core/state_transition.go`` ``settleGas``; ``cumulativeGasUsed`` the
  receipts' running sum, ``core/state_processor.go`` ``MakeReceipt``).
  Mainnet averages ~100,000 gas a transaction; the devnet's ten times fewer, larger
  ones keep a header with its transaction hashes ~1.5x a bare header's size, not 6x, and the
  cost of drawing and hashing them near a header's (see *How they are built*).
* **Types per fork.**  Legacy before London (EIP-155-protected from Byzantium on chain 1,
  ``v`` 27/28 before); from London eight in ten EIP-1559 (type 2), the rest legacy; from
  Cancun the header's blobs are carried by type-3 transactions of at most 6 blobs each, whose
  blob gas adds up to the header's ``blobGasUsed`` and whose ``maxFeePerBlobGas`` is 1-3x the
  block's blob base fee.  No type-1 (access list) or type-4 transactions; access lists are
  empty; no contract creations (``to`` is always set).
* **Fees.**  Each transaction's effective tip is drawn from the chain's tip model
  (:meth:`History.priority_fee_table`: log-normal, sigma 0.8, around the block's median tip),
  so fee dynamics stay what they were.  Before London the tip is the whole gas price (geth's
  ``EffectiveGasTip`` with no base fee).  After it a legacy transaction pays base fee + tip; a
  type-2/3 one sets ``maxPriorityFeePerGas`` = tip and ``maxFeePerGas`` = base fee x 1.25-3 +
  tip, or, one in seven, a ``maxFeePerGas`` of exactly base fee + tip below a larger priority
  fee (the fee cap binds).  Every max fee covers the block's base fee, and
  ``effectiveGasPrice = min(maxFeePerGas, baseFee + maxPriorityFeePerGas)``.
* **Hashes and signatures.**  ``hash`` is keccak256 of the transaction's real encoding
  (``rlp([nonce, gasPrice, gas, to, value, data, v, r, s])`` for legacy ones, ``type ||
  rlp([...])`` for typed ones, as go-ethereum's ``core/types`` encodes them).  The signature
  is a deterministic stand-in: ``r`` and ``s`` (low-s, EIP-2) are seeded bytes and ``from`` is
  drawn from a pool of 65,536 senders, so ``ecrecover`` does not give ``from``.  Real secp256k1
  signing costs ~60 us a transaction in Python (eth-keys), more than the rest of a block's
  generation, and a recovered sender would still need a key per sender; nonces are seeded
  numbers, not an account's running count.
* **Receipts.**  Status 1 (a post-state root before Byzantium on chain 1), no logs; each
  receipt's ``logsBloom`` holds a share of the header's bloom bits, so the receipts' blooms OR
  to the header's ``logsBloom``.

The header's ``transactionsRoot`` and ``receiptsRoot`` do NOT commit to these transactions and
receipts: they stay the seeded stand-ins the chain was generated with (see
:mod:`feeslab.devnet.chain`).  Committing would put every block's transactions, receipts and
their two tries into chain generation, which hashes the headers in order.  Measured (CPU time,
chain 1 of seed 7, this module's first version): generating a chain costs ~33 us a block; a
block's transactions ~140 us at block 10,000 (7 of them), ~390 us at 100,000 (19), ~620 us at
150,000 (30), ~1.6 ms at 205,000 (62); their receipts and both roots ~0.33, 0.72, 1.1 and 2.4
ms more.  The roots would make generation 10-70x slower where the devnet's header rate was to
stay within 10 %, so they do not commit.
:func:`transactions_root` and :func:`receipts_root` compute what the roots would be.

How they are built: a header answer lists its transactions' hashes, so every header read the
first time draws and hashes its block's transactions.  ``_CHUNK`` (256) blocks' transactions
are drawn and encoded together (:func:`_chunk`): every field as a numpy column, then the RLP
of all of them at once, each field a byte matrix with the rows' used columns marked, one
boolean mask laying the bytes out end to end (:class:`_Bytes`).  A block then costs one
keccak per transaction (~1.6 us, pysha3) on slices of that buffer; the
:class:`Transaction` tuples (and the 65,536 senders' table) are built only when a full block,
receipts or an era1 file asks for them.  Measured under load (2 cores, load average ~10, CPU
time): ~80-120 us a block at block 180,000 (15 transactions) for the chunk, ~45 us for the
hashes; the previous per-transaction Python encoder took ~300 us a block there.  The output
is the same, byte for byte (compared on 3,595 blocks of the four chains).

References
----------
.. [1] go-ethereum ``internal/ethapi/api.go`` (``RPCMarshalBlock``, ``RPCTransaction``,
   ``newRPCTransaction``, ``effectiveGasPrice``, ``MarshalReceipt``, ``GetBlockReceipts``),
   github.com/ethereum/go-ethereum at commit 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
.. [2] go-ethereum ``eth/gasprice/feehistory.go`` (``processBlock``), same commit.
.. [3] go-ethereum ``core/types/transaction.go`` (``EffectiveGasTip``), ``tx_legacy.go``,
   ``tx_dynamic_fee.go``, ``tx_blob.go`` (the encodings), same commit.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from feeslab.devnet._draws import (  # the draws a header's access list shares (chain.py)
    _MAX_NONCE,
    _RECIPIENTS,
    _S_BLOBFEE,
    _S_BLOOM,
    _S_CAP,
    _S_HEAD,
    _S_INPUT,
    _S_LIMIT,
    _S_NONCE,
    _S_PRIO,
    _S_REFUND_SIZE,
    _S_REFUNDS,
    _S_TO,
    _S_TRANSFER,
    _S_TYPE,
    _S_VALUE,
    _S_W1,
    _S_W2,
    _S_WHO,
    _SENDERS,
    GAS_PER_TX,
    TX_GAS,
    _addresses,
    _bits,
    _counts,
    _uniform,
)
from feeslab.devnet.chain import (
    _keccak,
    _rlp_int,
    _rlp_item,
    ordered_trie_root,
    rlp_list_of_encoded,
)
from feeslab.protocol.blobs import GAS_PER_BLOB

if TYPE_CHECKING:
    from feeslab.devnet.chain import Block, History

__all__ = [
    "GAS_PER_TX",
    "REWARDS",
    "REWARD_CACHE_BYTES",
    "BlockBody",
    "Receipt",
    "Transaction",
    "block_body",
    "fee_history_rewards",
    "receipts_root",
    "transactions_root",
]

MAX_BLOBS_PER_TX = 6  # EIP-7594 (Osaka); the devnet keeps it from Cancun on
_TRANSFER_SHARE = 0.3
_DYNAMIC_SHARE = 0.8  # type-2 among a post-London block's non-blob transactions
_CAPPED_SHARE = 0.15  # typed transactions whose fee cap binds
_TIP_SIGMA = 0.8  # the tip model's (chain._TIP_SIGMA)
_WEIGHT_SIGMA = 1.1  # spread of contract calls' gas
_CHUNK = 256  # blocks whose transactions are drawn and encoded together (numpy per chunk)

_REFUND_SHARE = 0.25  # contract calls that clear storage and get a refund, from Amsterdam
# the highest EIP-7623/7976 calldata floor a devnet call can have: 21,000 + 16 gas a token x 4
# tokens a byte x 100 bytes of input (a selector and three words) [gas]; a refund never takes
# a receipt's gas below it, so the floor never binds (geth's settleGas: max(used, floor))
_FLOOR_CEILING = 21_000 + 16 * 4 * 100


# -- the counter-based generator ---------------------------------------------------------------


def _normals(
    salt: int, keys: np.ndarray, first: int, second: int
) -> tuple[np.ndarray, np.ndarray]:
    """Two independent standard normals per key (Box-Muller over two streams)."""
    u1, u2 = _uniform(salt, keys, first), _uniform(salt, keys, second)
    radius, angle = np.sqrt(-2.0 * np.log(u1)), 2.0 * np.pi * u2
    return radius * np.cos(angle), radius * np.sin(angle)


def _salt(history: History) -> int:
    return int.from_bytes(history._salt[:8], "big")


# -- gas and tips: all the fee history needs ---------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """Blocks ``start..start+len(counts)-1``'s transactions as columns: per block its count and
    the offset of its first transaction, per transaction its key, block (relative), index in
    the block, gas used and effective tip [wei]."""

    start: int
    counts: np.ndarray
    offsets: np.ndarray  # len(counts) + 1
    used: np.ndarray  # the headers' gasUsed
    keys: np.ndarray
    block_of: np.ndarray
    index: np.ndarray
    gas: np.ndarray
    tip: np.ndarray
    transfer: np.ndarray
    refund: np.ndarray  # EIP-3529 refund of each transaction [gas]; 0 before Amsterdam


def _refunds(salt: int, keys: np.ndarray, gas: np.ndarray, transfer: np.ndarray,
             amsterdam: np.ndarray) -> np.ndarray:  # fmt: skip
    """EIP-3529 refunds of the transactions [gas], drawn from Amsterdam on (zero before).

    Before Amsterdam a block's ``gasUsed`` is its receipts' sum, after refunds: the devnet's
    blocks share the header's gas among the receipts, so refunds are already inside them and
    are not drawn.  From Amsterdam (EIP-7778) the header counts gas before refunds, so one
    contract call in four (``_REFUND_SHARE``, storage cleared) gets a refund of up to the
    EIP-3529 cap, a fifth of its gas, never taking its receipt below the calldata floor (go-
    ethereum 02b73d4 ``core/state_transition.go`` ``settleGas``, ``calcRefund``).
    """
    refund = np.zeros(len(gas), dtype=np.int64)
    if not amsterdam.any():
        return refund
    lucky = amsterdam & ~transfer & (_uniform(salt, keys, _S_REFUNDS) < _REFUND_SHARE)
    cap = np.maximum(np.minimum(gas // 5, gas - _FLOOR_CEILING), 0)
    size = _uniform(salt, keys, _S_REFUND_SIZE)
    refund[lucky] = np.floor(cap[lucky] * size[lucky]).astype(np.int64)
    return refund


def _layout(history: History, start: int, stop: int) -> _Layout:
    """Counts, gas used and effective tips of blocks ``start..stop-1``' transactions."""
    columns = history.block_columns(start, stop)
    used = columns["gas_used"]
    salt = _salt(history)
    numbers = np.arange(start, stop, dtype=np.uint64)
    counts = _counts(salt, numbers, used)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    block_of = np.repeat(np.arange(len(counts)), counts)
    index = np.arange(offsets[-1], dtype=np.int64) - offsets[:-1][block_of]
    keys = (numbers[block_of] << np.uint64(24)) | (index.astype(np.uint64) << np.uint64(8))
    # gas: transfers take exactly TX_GAS, calls share the rest of the block's gas by weight
    extra = (used - TX_GAS * counts)[block_of]
    last = index == counts[block_of] - 1
    transfer = (_uniform(salt, keys, _S_TRANSFER) < _TRANSFER_SHARE) & ~(last & (extra > 0))
    z_weight, z_tip = _normals(salt, keys, _S_W1, _S_W2)
    weight = np.where(transfer, 0.0, np.exp(_WEIGHT_SIGMA * z_weight))
    nonempty = counts > 0
    total = np.zeros(len(counts))
    if offsets[-1]:
        total[nonempty] = np.add.reduceat(weight, offsets[:-1][nonempty])
    share_of = np.divide(weight, total[block_of], out=np.zeros_like(weight),
                         where=total[block_of] > 0)  # fmt: skip
    gas = TX_GAS + np.floor(np.maximum(extra, 0) * share_of).astype(np.int64)
    if offsets[-1]:
        shared = np.add.reduceat(gas, offsets[:-1][nonempty])
        gas[offsets[1:][nonempty] - 1] += used[nonempty] - shared  # the rounding remainder
    # a block below one transfer's gas (none on the devnet's chains): one transaction, all of it
    small = extra < 0
    gas[small] = used[block_of][small]
    median = columns["tip_median"][block_of]
    tip = np.floor(median * np.exp(_TIP_SIGMA * z_tip))
    fork = history.params.forks.get("amsterdam")
    amsterdam = (numbers[block_of] >= fork if fork is not None
                 else np.zeros(len(gas), dtype=bool))  # fmt: skip
    refund = _refunds(salt, keys, gas, transfer, amsterdam)
    return _Layout(start, counts, offsets, used, keys, block_of, index, gas,
                   tip.astype(np.int64), transfer, refund)  # fmt: skip


def _block_tip_order(lay: _Layout) -> np.ndarray:
    """The transactions' order by (block, tip): one argsort of a packed key where it fits in
    63 bits (ten times faster than ``np.lexsort``), else lexsort."""
    if len(lay.counts) < 1 << 15 and (not len(lay.tip) or int(lay.tip.max()) < 1 << 47):
        return np.argsort((lay.block_of.astype(np.int64) << 47) | lay.tip)
    return np.lexsort((lay.tip, lay.block_of))


_REWARD_CHUNK = 1024  # blocks whose sorted tips are kept together (geth's fee history limit)
REWARD_CACHE_BYTES = 128 * 1024**2  # ~all of chain 1's 210,000 blocks (16 bytes a transaction)


class _RewardCache:
    """Per aligned chunk of blocks: counts, gas used and the transactions' tips sorted within
    each block with their running gas; an LRU bounded by its bytes.  A fee-history call reads
    its 1,024 blocks from at most two chunks instead of drawing ~25,000 transactions again."""

    def __init__(self, max_bytes: int = REWARD_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        # keyed by the history itself, not its id: an id is reused once a history is freed
        self._items: OrderedDict[tuple[History, int], tuple[np.ndarray, ...]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, history: History, chunk: int) -> tuple[np.ndarray, ...]:
        key = (history, chunk)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        lay = _layout(history, chunk * _REWARD_CHUNK, (chunk + 1) * _REWARD_CHUNK)
        order = _block_tip_order(lay)
        # geth's processBlock sorts the receipts' gas (after refunds) against the header's
        # gasUsed, which from Amsterdam (EIP-7778) counts them
        receipt_gas = lay.gas - lay.refund
        entry = (lay.counts, lay.offsets, lay.used, lay.tip[order], np.cumsum(receipt_gas[order]))
        size = sum(a.nbytes for a in entry)
        with self._lock:
            if key not in self._items:
                self._items[key] = entry
                self._size += size
                while self._size > self.max_bytes and self._items:
                    _, dropped = self._items.popitem(last=False)
                    self._size -= sum(a.nbytes for a in dropped)
        return entry

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0


REWARDS = _RewardCache()


def fee_history_rewards(
    history: History, start: int, stop: int, percentiles: Sequence[float]
) -> list[list[int]]:
    """``eth_feeHistory``'s reward rows of blocks ``start..stop-1`` [wei], as geth computes them.

    geth's ``processBlock`` (``eth/gasprice/feehistory.go``): the block's transactions sorted by
    effective tip, ascending; for each percentile ``p`` the tip of the first transaction whose
    running gas used reaches ``uint64(float64(gasUsed) * p / 100)`` (the last one if none
    does); a block without transactions gives zeros.  Vectorised: the transactions of an
    aligned chunk sorted by (block, tip) once (kept in :data:`REWARDS`), then one
    ``searchsorted`` per percentile.
    """
    if not percentiles:
        return [[] for _ in range(stop - start)]
    history.ensure(stop - 1)
    pieces = []
    for chunk in range(start // _REWARD_CHUNK, (stop - 1) // _REWARD_CHUNK + 1):
        counts, offsets, used, tips, running = REWARDS.get(history, chunk)
        base = chunk * _REWARD_CHUNK
        lo, hi = max(start, base) - base, min(stop, base + _REWARD_CHUNK) - base
        rows = np.zeros((hi - lo, len(percentiles)), dtype=np.int64)
        nonempty = lo + np.flatnonzero(counts[lo:hi])
        if len(nonempty):
            first, last = offsets[nonempty], offsets[nonempty + 1] - 1
            before = np.where(first > 0, running[first - 1], 0)
            gas_used = used[nonempty].astype(np.float64)
            for k, p in enumerate(percentiles):
                # Go: uint64(float64(gasUsed) * p / 100), truncated
                threshold = (gas_used * float(p) / 100).astype(np.int64)
                at = np.searchsorted(running, before + threshold, side="left")
                rows[nonempty - lo, k] = tips[np.clip(at, first, last)]
        pieces.append(rows)
    return np.concatenate(pieces).tolist()


# -- whole transactions ------------------------------------------------------------------------


class Transaction(NamedTuple):
    """One transaction as included, in go-ethereum's terms (a named tuple: a block's are
    built from its chunk's columns with one ``_make`` each, ~10x a frozen dataclass's speed).

    ``gas_price`` is what it pays per gas (``effectiveGasPrice``); for legacy transactions it
    is also their signed ``gasPrice``, and ``max_fee_per_gas`` / ``max_priority_fee_per_gas``
    equal it (geth's ``GasFeeCap``/``GasTipCap`` of a legacy transaction).  ``v`` is the
    signature's: ``yParity`` for typed transactions, ``27/28`` or ``chainId * 2 + 35/36``
    (EIP-155) for legacy ones.  ``encoded`` is the canonical encoding (legacy: the RLP list;
    typed: ``type || rlp(payload)``) and ``hash`` its keccak256.
    """

    type: int
    chain_id: int | None
    nonce: int
    gas_price: int
    max_fee_per_gas: int
    max_priority_fee_per_gas: int
    gas: int
    to: bytes
    value: int
    input: bytes
    v: int
    r: int
    s: int
    sender: bytes
    max_fee_per_blob_gas: int | None
    blob_versioned_hashes: tuple[bytes, ...]
    encoded: bytes
    hash: bytes

    @property
    def y_parity(self) -> int:
        if self.type:
            return self.v
        return (self.v - 35) % 2 if self.v >= 35 else self.v - 27


@dataclass(frozen=True, slots=True)
class Receipt:
    """A transaction's receipt: ``post_state`` (32 bytes) before Byzantium, else ``status``."""

    type: int
    status: int
    post_state: bytes | None
    gas_used: int
    cumulative_gas_used: int
    effective_gas_price: int
    logs_bloom: bytes
    blob_gas_used: int | None
    blob_gas_price: int | None

    def _first(self) -> bytes:
        return b"\xa0" + self.post_state if self.post_state is not None else _rlp_int(self.status)

    def encode(self) -> bytes:
        """The consensus encoding: ``rlp([status or root, cumulativeGasUsed, bloom, logs])``,
        prefixed by the type for typed receipts (as the receipts trie holds them)."""
        payload = rlp_list_of_encoded([self._first(), _rlp_int(self.cumulative_gas_used),
                                       b"\xb9\x01\x00" + self.logs_bloom, b"\xc0"])  # fmt: skip
        return payload if self.type == 0 else bytes((self.type,)) + payload

    def encode_storage(self) -> bytes:
        """geth's stored form, as era1 files hold receipts: ``rlp([status or root,
        cumulativeGasUsed, logs])`` (no type, no bloom)."""
        return rlp_list_of_encoded([self._first(), _rlp_int(self.cumulative_gas_used), b"\xc0"])


class BlockBody:
    """A block's transactions, in block order, with what their receipts need.

    ``hashes`` are the transactions' hashes, ``encoded`` their encodings; ``transactions``
    the whole :class:`Transaction` tuples, built on first use (a header answer lists the
    hashes alone).  ``gas_used`` is each transaction's receipt's gas used (after refunds)
    [gas], ``post_states`` the
    receipts' state roots before Byzantium (empty from it on), ``blob_gas_price`` the
    block's blob base fee (None before Cancun) [wei], ``items_length`` the length of the
    body's transaction list payload (``b"".join(block_items())``) [bytes].
    """

    # a plain class with slots: one is made for every header answered, ~3x faster than a
    # frozen dataclass's __init__
    __slots__ = ("_chunk", "_first", "_transactions", "base_fee", "blob_gas_price", "encoded",
                 "gas_used", "hashes", "items_length", "number", "post_states")  # fmt: skip

    def __init__(
        self, number: int, base_fee: int | None, hashes: tuple[bytes, ...],
        encoded: tuple[bytes, ...], gas_used: tuple[int, ...], post_states: tuple[bytes, ...],
        blob_gas_price: int | None, items_length: int, chunk: _Chunk | None = None,
        first: int = 0,
    ) -> None:  # fmt: skip
        self.number, self.base_fee, self.hashes, self.encoded = number, base_fee, hashes, encoded
        self.gas_used, self.post_states, self.blob_gas_price = gas_used, post_states, blob_gas_price
        self.items_length = items_length
        self._chunk, self._first = chunk, first  # its first transaction's index in the chunk
        self._transactions: tuple[Transaction, ...] | None = None

    def __repr__(self) -> str:
        return f"BlockBody(number={self.number}, transactions={len(self.hashes)})"

    @property
    def transactions(self) -> tuple[Transaction, ...]:
        if self._transactions is None:
            if self._chunk is None:
                return ()
            lo, hi = self._first, self._first + len(self.hashes)
            columns = (column[lo:hi] for column in self._chunk.fields)
            self._transactions = tuple(map(
                Transaction._make, zip(*columns, self.encoded, self.hashes, strict=True)))
        return self._transactions

    def block_items(self) -> list[bytes]:
        """The transactions as a block body's list holds them: legacy ones as their RLP list,
        typed ones as an RLP string of their encoding."""
        return [encoded if encoded[0] >= 0xC0 else _rlp_item(encoded) for encoded in self.encoded]

    def size(self, block: Block) -> int:
        """``len(rlp([header, transactions, uncles(, withdrawals)]))`` [bytes]: geth's size.

        Worked out from ``block.size`` (the same with an empty transaction list) and the
        length of the transactions' list, without encoding the header, uncles and
        withdrawals again.
        """
        items = self.items_length
        inner = block.size - 1  # the list's payload: what its prefix (1-9 bytes) leaves
        while _prefix_length(inner) != block.size - inner:
            inner -= 1
        inner += _prefix_length(items) + items - 1  # b"\xc0" (empty list) replaced
        return _prefix_length(inner) + inner

    def receipts(self, logs_bloom: bytes) -> tuple[Receipt, ...]:
        """The receipts, each with a share of the header's ``logs_bloom`` bits (their blooms
        OR to it): status 1 (or a root before Byzantium), no logs."""
        n = len(self.transactions)
        shares = _split_bloom(logs_bloom, self.number, n)
        out, cumulative = [], 0
        for i, (tx, used) in enumerate(zip(self.transactions, self.gas_used, strict=True)):
            cumulative += used
            blob = tx.type == 3
            out.append(Receipt(
                type=tx.type, status=1, post_state=self.post_states[i] if self.post_states
                else None, gas_used=used, cumulative_gas_used=cumulative,
                effective_gas_price=tx.gas_price, logs_bloom=shares[i],
                blob_gas_used=len(tx.blob_versioned_hashes) * GAS_PER_BLOB if blob else None,
                blob_gas_price=self.blob_gas_price if blob else None,
            ))  # fmt: skip
        return tuple(out)


def transactions_root(body: BlockBody) -> bytes:
    """What ``transactionsRoot`` would be if it committed to ``body`` (geth's ``DeriveSha``)."""
    return ordered_trie_root(list(body.encoded))


def receipts_root(receipts: Sequence[Receipt]) -> bytes:
    """What ``receiptsRoot`` would be if it committed to ``receipts``."""
    return ordered_trie_root([r.encode() for r in receipts])


class _Bodies:
    """Recently built bodies of one history, a small LRU (a block's JSON is cached above it)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.items: OrderedDict[int, BlockBody] = OrderedDict()
        self.lock = threading.Lock()


_BODIES: weakref.WeakKeyDictionary[History, _Bodies] = weakref.WeakKeyDictionary()
_BODIES_LOCK = threading.Lock()


def block_body(history: History, number: int) -> BlockBody:
    """Block ``number``'s transactions (generated on demand, the last 256 kept)."""
    bodies = _BODIES.get(history)
    if bodies is None:
        with _BODIES_LOCK:
            bodies = _BODIES.setdefault(history, _Bodies())
    with bodies.lock:
        body = bodies.items.get(number)
        if body is not None:
            bodies.items.move_to_end(number)
            return body
    body = _build_body(history, number)
    with bodies.lock:
        bodies.items[number] = body
        while len(bodies.items) > bodies.size:
            bodies.items.popitem(last=False)
    return body


_ERC20_TRANSFER = bytes.fromhex("a9059cbb")
_RANDOM_PER_TX = 240  # seeded bytes a transaction takes: signature, hashes, root, input
_INT64_SAFE = 1 << 50  # fee columns computed in int64 while the base fee stays below this [wei]


class _Bytes:
    """A transaction's encoding built as byte columns: each piece a (n, width) matrix with
    the rows' used columns ``lo <= c < hi``; one boolean mask then lays all the rows' bytes
    out end to end, in order (RLP's variable lengths without a Python loop a transaction)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.mats: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []

    def add(self, mat: np.ndarray, lo: np.ndarray | int, hi: np.ndarray | int) -> np.ndarray:
        """Append a piece; returns each row's length in it [bytes]."""
        cols = np.arange(mat.shape[1])
        lo_, hi_ = np.broadcast_to(lo, (self.n,)), np.broadcast_to(hi, (self.n,))
        self.mats.append(mat)
        self.masks.append((cols >= lo_[:, None]) & (cols < hi_[:, None]))
        return hi_ - lo_

    def constant(self, value: bytes, present: np.ndarray) -> np.ndarray:
        mat = np.broadcast_to(np.frombuffer(value, dtype=np.uint8), (self.n, len(value)))
        return self.add(mat, 0, np.where(present, len(value), 0))

    def integer(self, big_endian: np.ndarray, present: np.ndarray | bool = True) -> np.ndarray:
        """RLP of unsigned integers given as right-aligned big-endian rows: 0x80 for zero, a
        byte below 0x80 as itself, else 0x80 + length and the bytes without leading zeros."""
        width = big_endian.shape[1]
        nonzero = big_endian != 0
        first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), width)
        length = width - first
        single = (length == 1) & (big_endian[:, -1] < 0x80)
        prefix = (0x80 + length).astype(np.uint8)[:, None]
        present = np.broadcast_to(present, (self.n,))
        size = self.add(prefix, 0, np.where(present & ~single, 1, 0))
        return size + self.add(big_endian, np.where(present, first, width), width)

    def uint64(self, values: np.ndarray, present: np.ndarray | bool = True) -> np.ndarray:
        rows = values.astype(">u8").view(np.uint8).reshape(self.n, 8)
        return self.integer(rows, present)

    def length_prefix(self, length: np.ndarray, offset: int,
                      present: np.ndarray | bool = True) -> np.ndarray:  # fmt: skip
        """RLP's length prefix of a string (offset 0x80) or list (0xc0) of ``length`` bytes
        (below 65,536)."""
        mat = np.zeros((self.n, 3), dtype=np.uint8)
        short, one = length < 56, length < 256
        mat[:, 0] = np.where(short, offset + length, np.where(one, offset + 56, offset + 57))
        mat[:, 1] = np.where(one, length, length >> 8)
        mat[:, 2] = length & 0xFF
        size = np.where(short, 1, np.where(one, 2, 3))
        return self.add(mat, 0, np.where(np.broadcast_to(present, (self.n,)), size, 0))

    def join(self) -> tuple[bytes, np.ndarray]:
        """The rows' bytes end to end, and each row's length [bytes]."""
        mask = np.hstack(self.masks)
        return np.hstack(self.mats)[mask].tobytes(), mask.sum(axis=1)


def _prefix_length(length: int) -> int:
    """Length of RLP's prefix for a payload of ``length`` bytes [bytes]."""
    return 1 if length < 56 else 1 + (length.bit_length() + 7) // 8


@dataclass(frozen=True, eq=False)
class _Chunk:
    """``_CHUNK`` blocks' transactions, drawn and encoded at once (a scan's blocks, a cached
    chunk of headers, read in a row): the encodings end to end with each transaction's
    offset; per block the offset of its first transaction, the length of its body's
    transaction list payload [bytes], its base fee and blob base fee [wei]; per transaction
    its gas used [gas] and (before Byzantium) its receipt's post-state root.  The other
    fields stay numpy columns until a whole transaction is asked for (:attr:`fields`)."""

    offsets: list[int]
    items_length: list[int]
    base_fees: list[int | None]
    blob_fees: list[int | None]
    encoding: bytes
    at: list[int]
    gas_used: list[int]
    roots: list[bytes]
    columns: dict[str, object]

    @functools.cached_property
    def fields(self) -> tuple[list, ...]:
        """Transaction's fields but ``encoded`` and ``hash``, in its order, as Python lists
        (bytes cut from one buffer a column, no numpy scalar each)."""
        c: dict = self.columns
        n = len(c["kind"])
        data, data_length = c["data"], c["data_length"]
        data_flat = data[np.arange(data.shape[1]) < data_length[:, None]].tobytes()
        data_at = [0, *np.cumsum(data_length).tolist()]
        r_flat, s_flat = c["r"].tobytes(), c["s"].tobytes()
        # the senders' table (65,536 keccaks a history) is drawn only when one is asked for
        senders = _addresses(c["salt"], b"sender", _SENDERS)[c["senders"]].tobytes()
        to_flat = c["to"].tobytes()
        return (
            c["kind"].tolist(), [None if x < 0 else x for x in c["chain_id"].tolist()],
            c["nonce"].tolist(), c["price"].tolist(), c["max_fee"].tolist(),
            c["prio"].tolist(), c["gas"].tolist(),
            [to_flat[i : i + 20] for i in range(0, 20 * n, 20)], c["value"].tolist(),
            [data_flat[a:b] for a, b in itertools.pairwise(data_at)], c["v"].tolist(),
            [int.from_bytes(r_flat[i : i + 32], "big") for i in range(0, 32 * n, 32)],
            [int.from_bytes(s_flat[i : i + 32], "big") for i in range(0, 32 * n, 32)],
            [senders[i : i + 20] for i in range(0, 20 * n, 20)], c["blob_cap"],
            c["blob_hashes"],
        )  # fmt: skip


_FEE_HEADROOM = 1000  # maxFeePerGas headroom above base fee + tip, in thousandths of it


@functools.lru_cache(maxsize=8)
def _chunk(history: History, chunk: int) -> _Chunk:
    start, stop = chunk * _CHUNK, (chunk + 1) * _CHUNK
    lay = _layout(history, start, stop)
    salt, keys, block_of, n = _salt(history), lay.keys, lay.block_of, len(lay.keys)
    params = history.params
    numbers = np.arange(start, stop)
    counts = lay.counts[block_of]
    fees = history.base_fees(start, stop)
    london_block = np.array([fee is not None for fee in fees])
    base_block = np.array([fee or 0 for fee in fees], dtype=object)
    wide = bool(len(base_block)) and max(base_block) >= _INT64_SAFE
    base = (base_block if wide else base_block.astype(np.int64))[block_of]
    london = london_block[block_of]
    byz_at = params.forks.get("byzantium")
    byzantium = numbers >= byz_at if byz_at is not None else np.ones(len(numbers), bool)
    byzantium_tx = byzantium[block_of]
    blobs = np.maximum(history.block_columns(start, stop)["blob_gas_used"], 0) // GAS_PER_BLOB
    carriers = np.minimum(lay.counts, -(-blobs // MAX_BLOBS_PER_TX))
    carriers_tx = carriers[block_of]
    # the blob carriers spread evenly through their block: i * c mod n < c for c of n indexes
    is_blob = london & (carriers_tx > 0) & ((lay.index * carriers_tx) % np.maximum(counts, 1)
                                            < carriers_tx)  # fmt: skip
    dynamic = _uniform(salt, keys, _S_TYPE) < _DYNAMIC_SHARE
    kind = np.where(london, np.where(is_blob, 3, np.where(dynamic, 2, 0)), 0)
    typed = kind != 0
    # a carrier's blobs: the block's shared as evenly as can be, the first ones one more
    before = np.concatenate(([0], np.cumsum(is_blob)))
    rank = before[1:] - 1 - before[lay.offsets[:-1]][block_of]
    each, spare = np.divmod(blobs, np.maximum(carriers, 1))
    tx_blobs = np.where(is_blob, each[block_of] + (rank < spare[block_of]), 0)
    words = _bits(salt, keys, _S_INPUT) % np.uint64(5)
    transfer = lay.transfer
    # fees: the tip is the whole price before London (geth's EffectiveGasTip without a base
    # fee); after it a legacy transaction pays base fee + tip, a typed one sets a fee cap
    # 1.25-4x the base fee above the tip, or, one in seven, exactly base fee + tip below a
    # larger priority fee (the cap binds)
    tip = lay.tip if not wide else lay.tip.astype(object)
    capped = _uniform(salt, keys, _S_CAP) < _CAPPED_SHARE
    headroom = (250 + np.floor(1750 * _uniform(salt, keys, _S_HEAD))).astype(np.int64)
    extra = np.floor(lay.tip.astype(np.float64) * _uniform(salt, keys, _S_PRIO)).astype(np.int64)
    price = np.where(london, base + tip, tip)
    prio = np.where(typed, np.where(capped, tip + 1 + extra, tip), price)
    max_fee = np.where(typed & ~capped, base + base * headroom // _FEE_HEADROOM + tip, price)
    # gas: a transfer's is what it uses; a call's up to 1.5x, at most the block's gas pool
    used = lay.gas
    cumulative = np.cumsum(used) - used
    cumulative = cumulative - cumulative[lay.offsets[:-1][block_of]]  # in its block, before it
    pool = history.block_columns(start, stop)["gas_limit"][block_of] - cumulative
    call_gas = used + (used.astype(np.float64) * 0.5 * _uniform(salt, keys, _S_LIMIT)).astype(
        np.int64)  # fmt: skip
    gas = np.where(transfer, used, np.minimum(pool, call_gas))
    raw_value = (_bits(salt, keys, _S_VALUE) >> np.uint64(2)).astype(np.int64)  # < 2**62 wei
    value = np.where(transfer, raw_value, np.where(raw_value % 5 == 0, raw_value >> 8, 0))
    # the seeded bytes: each block's stream, 240 bytes a transaction, end to end
    rnd = np.frombuffer(b"".join(
        history._random(number, b"transactions", _RANDOM_PER_TX * count)
        for number, count in zip(range(start, stop), lay.counts.tolist(), strict=True)
    ), dtype=np.uint8).reshape(n, _RANDOM_PER_TX)  # fmt: skip
    # r odd (never 0); s below 2**254 < n/2: a low s (EIP-2)
    r = rnd[:, :32].copy()
    r[:, 31] |= 1
    s = rnd[:, 32:64].copy()
    s[:, 0] &= 0x3F
    parity = (rnd[:, 64] & 1).astype(np.int64)
    v = np.where(typed, parity, np.where(byzantium_tx, params.chain_id * 2 + 35 + parity,
                                         27 + parity))  # fmt: skip
    # input: a selector and 0-3 words, or an ERC-20 transfer(address, uint256); none for a
    # plain transfer
    data = rnd[:, 129:229].copy()
    erc20 = words == 4
    data[erc20] = 0
    data[erc20, :4] = np.frombuffer(_ERC20_TRANSFER, dtype=np.uint8)
    data[erc20, 16:36] = rnd[erc20, 133:153]
    data[erc20, 52:68] = rnd[erc20, 153:169]
    data_length = np.where(transfer, 0, np.where(erc20, 68, 4 + 32 * words.astype(np.int64)))
    to_index = (_bits(salt, keys, _S_TO) % np.uint64(_RECIPIENTS)).astype(np.int64)
    to = _addresses(history._salt, b"to", _RECIPIENTS)[to_index]
    # blob transactions' fee cap and versioned hashes (0x01 || 31 bytes, EIP-4844's KZG
    # version): a few a block, in Python
    blob_fees = [history.blob_base_fee(number) for number in range(start, stop)]
    blob_mult = (1 + np.floor(3 * _uniform(salt, keys, _S_BLOBFEE))).astype(np.int64)
    blob_cap: list[int | None] = [None] * n
    blob_hashes: list[tuple[bytes, ...]] = [()] * n
    blob_part = [b""] * n
    for i in np.flatnonzero(is_blob).tolist():
        seed = rnd[i, 65:97].tobytes()
        hashes = tuple(b"\x01" + _keccak(seed + bytes((j,)))[1:] for j in range(tx_blobs[i]))
        blob_cap[i] = (blob_fees[block_of[i]] or 1) * int(blob_mult[i])
        blob_hashes[i] = hashes
        blob_part[i] = _rlp_int(blob_cap[i]) + rlp_list_of_encoded([b"\xa0" + h for h in hashes])
    nonce = (_bits(salt, keys, _S_NONCE) % np.uint64(_MAX_NONCE)).astype(np.int64)

    def fee_column(values: np.ndarray) -> np.ndarray:
        if not wide:
            return values.astype(">u8").view(np.uint8).reshape(n, 8)
        return np.frombuffer(b"".join(int(x).to_bytes(32, "big") for x in values),
                             dtype=np.uint8).reshape(n, 32)  # fmt: skip

    # the payload, in go-ethereum's field order: legacy [nonce, gasPrice, gas, to, value,
    # data, v, r, s]; typed [chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, to,
    # value, data, accessList (empty), (maxFeePerBlobGas, blobVersionedHashes), yParity, r, s]
    body = _Bytes(n)
    chain_id = np.full(n, params.chain_id, dtype=np.int64)
    payload = body.uint64(chain_id, typed)
    payload += body.uint64(nonce)
    payload += body.integer(fee_column(np.where(typed, prio, price)))
    payload += body.integer(fee_column(max_fee), typed)
    payload += body.uint64(gas)
    payload += body.constant(b"\x94", np.ones(n, bool))
    payload += body.add(to, 0, 20)
    payload += body.uint64(value)
    payload += body.length_prefix(data_length, 0x80, ~((data_length == 1) & (data[:, 0] < 0x80)))
    payload += body.add(data, 0, data_length)
    payload += body.constant(b"\xc0", typed)
    width = max(map(len, blob_part), default=0)
    if width:  # the blob fields, laid into a matrix by one mask
        part_length = np.fromiter(map(len, blob_part), dtype=np.int64, count=n)
        part = np.zeros((n, width), dtype=np.uint8)
        part[np.arange(width) < part_length[:, None]] = np.frombuffer(b"".join(blob_part),
                                                                      dtype=np.uint8)
        payload += body.add(part, 0, part_length)
    payload += body.uint64(v)
    payload += body.integer(r)
    payload += body.integer(s)
    head = _Bytes(n)
    head.add(kind.astype(np.uint8)[:, None], 0, typed.astype(np.int64))
    head.length_prefix(payload, 0xC0)
    head.mats += body.mats
    head.masks += body.masks
    encoding, length = head.join()
    at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length, out=at[1:])
    # a block body's list holds typed transactions as RLP strings of their encoding
    item = length + np.where(typed, np.where(length < 56, 1, np.where(length < 256, 2, 3)), 0)
    items_length = np.zeros(len(lay.counts), dtype=np.int64)
    nonempty = lay.counts > 0
    if n:
        items_length[nonempty] = np.add.reduceat(item, lay.offsets[:-1][nonempty])
    senders = (_bits(salt, keys, _S_WHO) % np.uint64(_SENDERS)).astype(np.int64)
    columns = {
        "kind": kind, "chain_id": np.where(typed | byzantium_tx, params.chain_id, -1),
        "nonce": nonce, "price": price, "max_fee": max_fee, "prio": prio, "gas": gas, "to": to,
        "value": value, "data": data, "data_length": data_length, "v": v, "r": r, "s": s,
        "senders": senders, "blob_cap": blob_cap, "blob_hashes": blob_hashes,
        "salt": history._salt,
    }  # fmt: skip
    roots = [b""] * n
    for i in np.flatnonzero(~byzantium_tx).tolist():
        roots[i] = rnd[i, 97:129].tobytes()
    return _Chunk(lay.offsets.tolist(), items_length.tolist(), list(fees), blob_fees,
                  encoding, at.tolist(), (used - lay.refund).tolist(), roots,
                  columns)  # fmt: skip


def _build_body(history: History, number: int) -> BlockBody:
    chunk = number // _CHUNK
    col = _chunk(history, chunk)
    b = number - chunk * _CHUNK
    lo, hi = col.offsets[b], col.offsets[b + 1]
    encoding, at = memoryview(col.encoding), col.at
    encoded = tuple([bytes(encoding[at[i] : at[i + 1]]) for i in range(lo, hi)])
    hashes = tuple(map(_keccak, encoded))  # the one cost a transaction: ~1 us a hash (pysha3)
    roots = tuple(col.roots[lo:hi]) if lo < hi and col.roots[lo] else ()
    return BlockBody(number, col.base_fees[b], hashes, encoded, tuple(col.gas_used[lo:hi]),
                     roots, col.blob_fees[b], col.items_length[b], col, lo)  # fmt: skip


def _split_bloom(bloom: bytes, number: int, n: int) -> list[bytes]:
    """A logsBloom's bits dealt among ``n`` receipts (each set bit to one of them)."""
    if n <= 1:
        return [bloom] * n
    bits = np.unpackbits(np.frombuffer(bloom, dtype=np.uint8))
    keys = (np.uint64(number) << np.uint64(24)) | (np.arange(2048, dtype=np.uint64)
                                                   << np.uint64(8))  # fmt: skip
    owner = (_bits(number, keys, _S_BLOOM) % np.uint64(n)).astype(np.int64)
    return [np.packbits(bits & (owner == i)).tobytes() for i in range(n)]
