"""The devnet's seeded chain simulator.

Each chain is a pure function of ``(seed, chain_id, number)``: blocks are
generated in fixed chunks of :data:`CHUNK` blocks, strictly in order, from a
random stream seeded by ``(seed, chain_id)``, so two devnets with the same seed
answer with identical bytes whenever and in whatever order they are asked.

What is simulated, and how:

* **Demand.**  A latent log-demand level made of a regime Markov chain (calm,
  normal, busy, frenzy), an AR(1) wander, a daily and weekly cycle and a slow
  trend.  After London users buy gas with constant elasticity against the base
  fee, so blocks run full while demand outruns the fee and empty out when it
  overshoots; before London utilisation follows demand directly.  Rare outages
  produce runs of empty blocks.
* **Base fee.**  EIP-1559's integer update rule, exactly, with each chain's
  elasticity and change denominator (which may change at a fork height).
* **Proof of work.**  Pools with unequal, drifting hash shares; exponential
  block times scaled by difficulty over hashrate; Homestead (EIP-2) and
  Byzantium (EIP-100) difficulty adjustment (the difficulty bomb is left out).
* **Uncles.**  A competing block at the same height is found when another pool
  mines within the winning block's propagation delay, which grows with the
  block's gas and falls as the network improves (Decker & Wattenhofer 2013).
  The fork is won by the first block unless the rival pool also mines the next
  block.  The stale sibling reaches later miners after a short, random delay and
  is included by the first block whose miner includes uncles, within the
  protocol's rules: depth 1 to 6, at most two per block, each once, only
  siblings of ancestors.  Stale blocks not included by depth 6 are lost.
* **Proof of stake / sequencers.**  Fixed slots with occasional missed slots,
  difficulty 0, no uncles; Bor-style and OP-stack-style headers for 137/8453.
* **Dates.**  Chain 1's proof-of-work blocks are dated in mainnet's last weeks of
  proof of work (from 2022-08-15, ending days before mainnet's terminal block of
  2022-09-15); its first proof-of-stake block jumps ``merge_clock_jump_s`` (229
  weeks) ahead into January 2027, where the other chains start: after every real
  fork, so no simulated date can pass for a real one.  Whole weeks, so the daily
  and weekly demand cycles see the same hours and weekdays; forks activate by block
  number here, never by time.
* **After the merge** (chains 1 and 11155111): Shanghai, Cancun, Prague, Osaka,
  BPO1 and BPO2 at scaled heights, each adding geth's header fields
  (``withdrawals`` and their ``withdrawalsRoot``, ``blobGasUsed``,
  ``excessBlobGas``, ``parentBeaconBlockRoot``, ``requestsHash`` of no requests)
  and gas limits that rise 30M -> 36M -> 45M -> 60M.
* **Amsterdam** (chain 11155111, from its ``"amsterdam"`` height): headers add
  ``blockAccessListHash`` (EIP-7928: keccak of the RLP of the access list the devnet derives
  from the block's system calls, transactions and withdrawals, :mod:`feeslab.devnet._bal`)
  and ``slotNumber`` (EIP-7843: :meth:`History.slot_number`), after ``requestsHash`` as geth
  orders them.  The header's ``gasUsed`` is the simulated demand, as before; from Amsterdam it
  counts gas before refunds (EIP-7778) and the receipts
  (:mod:`feeslab.devnet.transactions`) carry the refunds, so the base fee follows the
  same rule on the same column.  Blocks below the fork are unchanged (hashes included):
  the new fields draw no random numbers.  Cost: ~0.35 ms a block (drawing the block's
  senders and hashing its list), ~20 % more CPU for chain 11155111's 60,000 blocks.
* **Blobs.**  EIP-4844's excess and fee rule with each fork's schedule (and
  EIP-7918's reserve price from Osaka), from :mod:`feeslab.protocol.blobs`; Poisson
  blob counts around a growing appetite with bursts, buyers cutting back once the
  fee passes 0.001 gwei, from a random stream of their own (the pre-merge chain
  is unchanged by it).

Headers carry every field real clients return; ``hash`` is keccak256 of the
header's RLP.  Fields the simulator has no model for (state roots, blooms, mix
hashes, nonces) are seeded pseudo-random bytes.  Each block's transactions and
receipts are drawn on demand from the seed and the block number by
:mod:`feeslab.devnet.transactions`, agreeing with the header's ``gasUsed`` and
``blobGasUsed`` and with the tip model.  ``transactionsRoot`` and ``receiptsRoot``
do NOT commit to them: they are seeded stand-ins (the empty trie's root for an
empty block), because drawing the transactions and receipts and hashing their two
tries while the chain is generated costs ~0.5-4 ms a block against ~33 us for the
whole generation of one, where the devnet's header rate was to stay within 10 %
(the measurements are in that module's docstring).

References
----------
.. [1] V. Buterin et al., "EIP-1559: Fee market change for ETH 1.0 chain", 2019.
.. [2] V. Buterin, "EIP-100: Change difficulty adjustment to target mean block
   time including uncles", 2016.
.. [3] C. Decker and R. Wattenhofer, "Information propagation in the Bitcoin
   network", IEEE P2P 2013.
.. [4] G. Wood, "Ethereum: a secure decentralised generalised transaction
   ledger" (Yellow Paper), sections 4.3 and 11.1 (uncle validity).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
import rlp
from eth_hash.auto import keccak  # pycryptodome's keccak: wheels on every platform, no compiler

from feeslab.devnet import _bal, _draws, _store
from feeslab.devnet._rlp import (  # the flat RLP encoder, also imported from here by others
    _keccak,
    _rlp_int,
    _rlp_item,
    _rlp_length_prefix,
    rlp_list_of_encoded,
)
from feeslab.protocol.blobs import (  # the one EIP-4844 rule, shared with the analysis
    GAS_PER_BLOB,
    BlobRule,
    blob_base_fee,
    blob_rule_at,
    blob_schedule,
    next_excess_blob_gas,
)
from feeslab.protocol.chaindata import load_chains
from feeslab.protocol.eip1559 import (
    next_base_fee,  # the one EIP-1559 rule, shared with the analysis
)

if TYPE_CHECKING:
    from feeslab.devnet.state import WorldState

CHUNK = 4096
# EIP-4895 / consensus-specs (Capella): withdrawals per execution payload
MAX_WITHDRAWALS_PER_PAYLOAD = 16
_VALIDATORS = 1_000_003  # the validator set the sweep walks (mainnet: about a million)
_WITHDRAWAL_ADDRESSES = 4096  # distinct withdrawal addresses among them
EMPTY_UNCLES_HASH = bytes.fromhex(
    "1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
)
EMPTY_TRIE_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")
ZERO_HASH = bytes(32)
MIN_DIFFICULTY = 131072
GAS_LIMIT_FLOOR = 5000
MAX_UNCLES = 2
MAX_UNCLE_DEPTH = 6
_OP_FEE_VAULT = bytes.fromhex("4200000000000000000000000000000000000011")
# EIP-7685: sha256 of the (here empty) list of requests' hashes
EMPTY_REQUESTS_HASH = hashlib.sha256(b"").digest()
_STORED_COLUMNS = (
    "timestamp", "gas_limit", "gas_used", "miner", "demand", "tip_median", "blob_gas_used",
    "excess_blob_gas",
)  # fmt: skip


# -- Merkle-Patricia roots of lists -------------------------------------------
# go-ethereum's ``types.DeriveSha``: the root of the trie mapping ``rlp(i)`` to item i's
# encoding, as ``withdrawalsRoot`` (and the transactions and receipts roots) are computed.
# Written out because ``trie.HexaryTrie`` takes milliseconds per root and every block after
# Shanghai needs one while the chain is hashed; tests compare the two.


def _nibbles(key: bytes) -> tuple[int, ...]:
    return tuple(half for byte in key for half in (byte >> 4, byte & 0x0F))


def _hex_prefix(path: Sequence[int], leaf: bool) -> bytes:
    """The compact (hex-prefix) encoding of a node's path (Yellow Paper, appendix C)."""
    flag = 2 if leaf else 0
    if len(path) % 2:
        first, rest = bytes(((flag + 1) << 4 | path[0],)), path[1:]
    else:
        first, rest = bytes((flag << 4,)), path
    return first + bytes(rest[i] << 4 | rest[i + 1] for i in range(0, len(rest), 2))


def _node_ref(encoded: bytes) -> bytes:
    """How a parent holds a child node: inline below 32 bytes, else by its hash."""
    return encoded if len(encoded) < 32 else b"\xa0" + _keccak(encoded)


def _trie_plan(paths: Sequence[tuple[int, ...]], order: Sequence[int], lo: int, hi: int,
               depth: int) -> tuple[Any, ...]:  # fmt: skip
    """The shape of the node over sorted ``paths[lo:hi]`` below ``depth`` nibbles, with each
    leaf's item index: the shape depends only on the keys, so it is worked out once a count.

    ``("leaf", path item, index)``, ``("extension", path item, child)`` or ``("branch",
    ((nibble, child), ...), index of a value ending here or None)``.
    """
    first = paths[lo]
    if hi - lo == 1:
        return ("leaf", _rlp_item(_hex_prefix(first[depth:], True)), order[lo])
    last = paths[hi - 1]  # sorted: the first and last share what every path shares
    end = depth
    while end < len(first) and end < len(last) and first[end] == last[end]:
        end += 1
    if end > depth:
        return ("extension", _rlp_item(_hex_prefix(first[depth:end], False)),
                _trie_plan(paths, order, lo, hi, end))  # fmt: skip
    own = None
    if len(first) == depth:  # a key that ends here: the branch's own value
        own, lo = order[lo], lo + 1
    children = []
    while lo < hi:
        nibble, stop = paths[lo][depth], lo + 1
        while stop < hi and paths[stop][depth] == nibble:
            stop += 1
        children.append((nibble, _trie_plan(paths, order, lo, stop, depth + 1)))
        lo = stop
    return ("branch", tuple(children), own)


@functools.cache
def _ordered_plan(count: int) -> tuple[Any, ...]:
    """The trie shape of ``count`` items keyed by ``rlp(0..count-1)``."""
    keyed = sorted((_nibbles(_rlp_int(i)), i) for i in range(count))
    paths, order = [path for path, _ in keyed], [i for _, i in keyed]
    return _trie_plan(paths, order, 0, count, 0)


def _trie_node(plan: tuple[Any, ...], values: Sequence[bytes]) -> bytes:
    """RLP of the node ``plan`` describes, holding ``values``."""
    kind, a, b = plan
    if kind == "leaf":
        return rlp_list_of_encoded([a, _rlp_item(values[b])])
    if kind == "extension":
        return rlp_list_of_encoded([a, _node_ref(_trie_node(b, values))])
    slots = [b"\x80"] * 17
    for nibble, child in a:
        slots[nibble] = _node_ref(_trie_node(child, values))
    if b is not None:
        slots[16] = _rlp_item(values[b])
    return rlp_list_of_encoded(slots)


def ordered_trie_root(encoded: Sequence[bytes]) -> bytes:
    """The Merkle-Patricia root of a list of encoded items keyed by ``rlp(index)``."""
    if not encoded:
        return EMPTY_TRIE_ROOT
    return _keccak(_trie_node(_ordered_plan(len(encoded)), encoded))


# -- headers and blocks -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    """A block header, in go-ethereum's field order (``core/types/block.go`` ``Header``).

    The fields after ``nonce`` exist from the fork that added them and are None before:
    ``base_fee_per_gas`` (London, EIP-1559), ``withdrawals_root`` (Shanghai, EIP-4895),
    ``blob_gas_used``, ``excess_blob_gas`` (Cancun, EIP-4844), ``parent_beacon_block_root``
    (Cancun, EIP-4788), ``requests_hash`` (Prague, EIP-7685), ``block_access_list_hash``
    (Amsterdam, EIP-7928) and ``slot_number`` (Amsterdam, EIP-7843); RLP lists exactly the
    present ones, in this order (geth 02b73d4 ``core/types/gen_header_rlp.go``).
    """

    parent_hash: bytes
    uncles_hash: bytes
    coinbase: bytes
    state_root: bytes
    transactions_root: bytes
    receipts_root: bytes
    logs_bloom: bytes
    difficulty: int
    number: int
    gas_limit: int
    gas_used: int
    timestamp: int
    extra_data: bytes
    mix_hash: bytes
    nonce: bytes
    base_fee_per_gas: int | None = None
    withdrawals_root: bytes | None = None
    blob_gas_used: int | None = None
    excess_blob_gas: int | None = None
    parent_beacon_block_root: bytes | None = None
    requests_hash: bytes | None = None
    block_access_list_hash: bytes | None = None
    slot_number: int | None = None
    # the hash once known: a canonical block's is the history's (set by History._block), so
    # answering a header does not encode and hash it again
    _hash: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def _later(self) -> list[bytes | int]:
        """The post-merge fields present, in order (None marks the end, as in geth)."""
        later: list[bytes | int] = []
        for value in (
            self.withdrawals_root, self.blob_gas_used, self.excess_blob_gas,
            self.parent_beacon_block_root, self.requests_hash, self.block_access_list_hash,
            self.slot_number,
        ):  # fmt: skip
            if value is None:
                break
            later.append(value)
        return later

    def fields(self) -> list[bytes | int]:
        items: list[bytes | int] = [
            self.parent_hash, self.uncles_hash, self.coinbase, self.state_root,
            self.transactions_root, self.receipts_root, self.logs_bloom,
            self.difficulty, self.number, self.gas_limit, self.gas_used,
            self.timestamp, self.extra_data, self.mix_hash, self.nonce,
        ]  # fmt: skip
        if self.base_fee_per_gas is not None:
            items.append(self.base_fee_per_gas)
            items.extend(self._later())
        return items

    def encode(self) -> bytes:
        """The header's RLP encoding."""
        # the fixed-width fields get their one-byte prefixes directly; this is
        # the hot path of chain generation (tests compare with ``rlp.encode``)
        payload = b"".join(
            (
                b"\xa0", self.parent_hash, b"\xa0", self.uncles_hash,
                b"\x94", self.coinbase, b"\xa0", self.state_root,
                b"\xa0", self.transactions_root, b"\xa0", self.receipts_root,
                b"\xb9\x01\x00", self.logs_bloom,
                _rlp_int(self.difficulty), _rlp_int(self.number),
                _rlp_int(self.gas_limit), _rlp_int(self.gas_used),
                _rlp_int(self.timestamp), _rlp_item(self.extra_data),
                b"\xa0", self.mix_hash, b"\x88", self.nonce,
                b"" if self.base_fee_per_gas is None else _rlp_int(self.base_fee_per_gas),
            )
        )  # fmt: skip
        if self.withdrawals_root is not None:
            payload += _encode_later(self)
        return _rlp_length_prefix(len(payload), 0xC0) + payload

    def check(self) -> None:
        """Raise ValueError unless every fixed-width field has its width."""
        widths = {
            "parent_hash": 32, "uncles_hash": 32, "coinbase": 20, "state_root": 32,
            "transactions_root": 32, "receipts_root": 32, "logs_bloom": 256,
            "mix_hash": 32, "nonce": 8, "withdrawals_root": 32,
            "parent_beacon_block_root": 32, "requests_hash": 32, "block_access_list_hash": 32,
        }  # fmt: skip
        for name, width in widths.items():
            value = getattr(self, name)
            if value is not None and len(value) != width:
                raise ValueError(f"header field {name} must be {width} bytes")

    @property
    def hash(self) -> bytes:
        """keccak256 of the header's RLP: the block hash."""
        if self._hash is None:
            object.__setattr__(self, "_hash", _keccak(self.encode()))
        return self._hash  # type: ignore[return-value]


def _encode_later(h: Header) -> bytes:
    """RLP items of the post-merge fields, in order, up to the first absent one (hot path)."""
    out = b"\xa0" + h.withdrawals_root  # type: ignore[operator]
    if h.blob_gas_used is None:
        return out
    out += _rlp_int(h.blob_gas_used) + _rlp_int(h.excess_blob_gas)  # type: ignore[arg-type]
    if h.parent_beacon_block_root is None:
        return out
    out += b"\xa0" + h.parent_beacon_block_root
    if h.requests_hash is None:
        return out
    out += b"\xa0" + h.requests_hash
    if h.block_access_list_hash is None:
        return out
    out += b"\xa0" + h.block_access_list_hash
    if h.slot_number is None:
        return out
    return out + _rlp_int(h.slot_number)


@dataclass(frozen=True, slots=True)
class Withdrawal:
    """A validator withdrawal of the consensus layer (EIP-4895), credited in the block.

    Attributes
    ----------
    index : int
        Its place in the chain's sequence of withdrawals, from 0 at Shanghai.
    validator_index : int
    address : bytes
        20 bytes: the validator's withdrawal address.
    amount_gwei : int
        [gwei], as the consensus layer counts it.
    """

    index: int
    validator_index: int
    address: bytes
    amount_gwei: int

    def encode(self) -> bytes:
        """``rlp([index, validatorIndex, address, amount])``, as in the block body."""
        return rlp_list_of_encoded([
            _rlp_int(self.index), _rlp_int(self.validator_index), b"\x94" + self.address,
            _rlp_int(self.amount_gwei),
        ])  # fmt: skip


def withdrawals_root(withdrawals: Sequence[Withdrawal]) -> bytes:
    """``withdrawalsRoot``: the trie root of the encoded withdrawals keyed by ``rlp(i)``."""
    return ordered_trie_root([w.encode() for w in withdrawals])


@dataclass(frozen=True, slots=True)
class Block:
    """A canonical block: its header, hash, uncles and derived totals.

    ``size`` is the length of ``rlp([header, transactions, uncles])`` with the
    (empty) transaction list the synthetic history serves, and from Shanghai the
    ``withdrawals`` appended.
    """

    header: Header
    hash: bytes
    uncles: tuple[Header, ...]
    total_difficulty: int
    size: int
    withdrawals: tuple[Withdrawal, ...] = ()

    @property
    def number(self) -> int:
        return self.header.number

    @property
    def uncle_hashes(self) -> list[bytes]:
        return [u.hash for u in self.uncles]


def uncles_hash(uncles: Sequence[Header]) -> bytes:
    """``sha3Uncles``: keccak256 of the RLP list of uncle headers."""
    if not uncles:
        return EMPTY_UNCLES_HASH
    return _keccak(rlp_list_of_encoded([u.encode() for u in uncles]))


def block_size(
    header: Header, uncles: Sequence[Header], withdrawals: Sequence[Withdrawal] = ()
) -> int:
    """Length of ``rlp([header, [], uncles])`` [bytes], with the withdrawals from Shanghai."""
    parts = [header.encode(), b"\xc0", rlp_list_of_encoded([u.encode() for u in uncles])]
    if header.withdrawals_root is not None:  # geth's extblock: Withdrawals `rlp:"optional"`
        parts.append(rlp_list_of_encoded([w.encode() for w in withdrawals]))
    return len(rlp_list_of_encoded(parts))


# -- parameters ----------------------------------------------------------------


@dataclass(frozen=True)
class ChainParams:
    """The devnet's settings for one chain (``devnet`` half of chains.json)."""

    chain_id: int
    network: str
    name: str
    height: int
    genesis_timestamp: int
    consensus: tuple[tuple[int, str], ...]
    forks: dict[str, int]
    eip1559: tuple[tuple[int, int, int], ...]
    initial_base_fee: int
    block_rewards: tuple[tuple[int, int], ...]
    gas_limit_targets: tuple[tuple[int, int], ...]
    slot_time_s: int
    pow_target_block_time_s: int = 13
    genesis_difficulty: int = MIN_DIFFICULTY
    missed_slot_probability: float = 0.0
    safe_depth: int = 32
    finalized_depth: int = 64
    merge_clock_jump_s: int = 0

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> ChainParams:
        dev = entry["devnet"]
        return cls(
            chain_id=int(entry["chain_id"]),
            network=entry["network"],
            name=entry["name"],
            height=int(dev["height"]),
            genesis_timestamp=int(dev["genesis_timestamp"]),
            consensus=tuple((int(c["from_block"]), c["kind"]) for c in dev["consensus"]),
            forks={k: int(v) for k, v in dev["forks"].items()},
            eip1559=tuple(
                (
                    int(e["from_block"]),
                    int(e["elasticity_multiplier"]),
                    int(e["base_fee_max_change_denominator"]),
                )
                for e in dev["eip1559"]
            ),
            initial_base_fee=int(dev["initial_base_fee_wei"]),
            block_rewards=tuple(
                (int(r["from_block"]), int(r["value"])) for r in dev["block_rewards_wei"]
            ),
            gas_limit_targets=tuple((int(a), int(b)) for a, b in dev["gas_limit_targets"]),
            slot_time_s=int(dev["slot_time_s"]),
            pow_target_block_time_s=int(dev.get("pow_target_block_time_s", 13)),
            genesis_difficulty=int(dev.get("genesis_difficulty", MIN_DIFFICULTY)),
            missed_slot_probability=float(dev.get("missed_slot_probability", 0.0)),
            safe_depth=int(dev.get("safe_depth", 32)),
            finalized_depth=int(dev.get("finalized_depth", 64)),
            merge_clock_jump_s=int(dev.get("merge_clock_jump_s", 0)),
        )

    @property
    def london_block(self) -> int | None:
        return self.forks.get("london")

    @property
    def merge_block(self) -> int | None:
        """First proof-of-stake block, or None for chains without a merge."""
        for start, kind in self.consensus:
            if kind == "proof-of-stake" and start > 0:
                return start
        return None

    def consensus_at(self, number: int) -> str:
        return _in_force(self.consensus, number)[1]

    def eip1559_at(self, number: int) -> tuple[int, int]:
        """(elasticity multiplier, max change denominator) in force at ``number``."""
        rule = _in_force(self.eip1559, number)
        return rule[1], rule[2]

    def is_london(self, number: int) -> bool:
        return self.london_block is not None and number >= self.london_block

    def has_fork(self, name: str, number: int) -> bool:
        """Whether fork ``name`` (e.g. ``"shanghai"``) is active at block ``number``."""
        start = self.forks.get(name)
        return start is not None and number >= start

    @property
    def blob_rules(self) -> tuple[BlobRule, ...]:
        """The devnet's blob schedule (from ``data/chains.json``, by block number)."""
        return blob_schedule(self.chain_id, "devnet")

    def blob_rule(self, number: int) -> BlobRule | None:
        """The blob parameters of block ``number``; None before Cancun."""
        return blob_rule_at(self.blob_rules, number)

    def block_reward(self, number: int) -> int:
        """Static block reward of a block at ``number`` [wei]."""
        return _in_force(self.block_rewards, number)[1] if number >= 0 else 0

    def gas_limit_target(self, number: int) -> int:
        return _in_force(self.gas_limit_targets, number)[1]


def _in_force(schedule: Sequence[tuple[int, ...]], number: int) -> tuple[int, ...]:
    """The last entry of a schedule sorted by start block whose start is <= ``number``.

    Before the first start, the first entry applies.
    """
    rule = schedule[0]
    for entry in schedule:
        if number >= entry[0]:
            rule = entry
    return rule


def devnet_params() -> dict[int, ChainParams]:
    """The devnet's chains from ``data/chains.json``, by chain id: the chains with a
    ``devnet`` half (a chain described for analysis only, such as Hoodi, is not simulated)."""
    return {int(e["chain_id"]): ChainParams.from_entry(e) for e in load_chains() if "devnet" in e}


# -- the simulation -------------------------------------------------------------

_REGIME_LEVEL = np.array([-0.6, 0.0, 0.55, 1.3])  # calm, normal, busy, frenzy [log]
_REGIME_MEAN_BLOCKS = np.array([2500.0, 4000.0, 900.0, 120.0])
_TIP_SIGMA = 0.8
_NORMAL = NormalDist()


def _pack_blobs(name: str, blobs: list[bytes]) -> dict[str, np.ndarray]:
    lengths = np.array([len(b) for b in blobs], np.int64)
    return {
        f"{name}_blobs": np.frombuffer(b"".join(blobs), dtype=np.uint8),
        f"{name}_lengths": lengths,
    }


def _unpack_blobs(name: str, data: dict[str, np.ndarray]) -> list[bytes]:
    raw = data[f"{name}_blobs"].tobytes()
    ends = np.cumsum(data[f"{name}_lengths"]).tolist()
    starts = [0, *ends[:-1]] if ends else []
    return [raw[a:b] for a, b in zip(starts, ends, strict=True)]


def _decode_header(encoded: bytes) -> Header:
    items = rlp.decode(encoded)
    ints = {7, 8, 9, 10, 11, 15}  # difficulty, number, gas limit/used, timestamp, base fee
    values = [int.from_bytes(v, "big") if i in ints else bytes(v) for i, v in enumerate(items)]
    return Header(*values)


def _pick(cumulative: list[float], x: float) -> int:
    """Index drawn by ``x`` in [0, total) from cumulative weights."""
    return min(bisect.bisect_right(cumulative, x), len(cumulative) - 1)


@dataclass
class _Pool:
    address: bytes
    tag: bytes
    includes_uncles: bool
    empty_rate: float


@dataclass
class _Stale:
    header: Header
    seen_from: int  # first canonical block whose miner has received it


@dataclass
class _State:
    """What generation carries from one block to the next."""

    number: int = -1
    timestamp: int = 0
    difficulty: int = 0
    total_difficulty: int = 0
    gas_limit: int = 0
    gas_used: int = 0
    base_fee: int | None = None
    hash: bytes = ZERO_HASH
    had_uncles: bool = False
    regime: int = 1
    wander: float = 0.0
    outage_left: int = 0
    burst_left: int = 0
    burst_level: float = 0.0
    pending: list[_Stale] = field(default_factory=list)
    # blobs: the parent's header fields and the blob demand's own state
    blob_gas_used: int = 0
    excess_blob_gas: int = 0
    blob_level: float = 0.0
    blob_burst_left: int = 0
    blob_burst: float = 1.0


class History:
    """The generated blocks of one chain for one seed: shared, lazily extended.

    Generation runs chunk by chunk under a lock; reads of what is already
    generated take no lock.  One ``History`` per (chain, seed) is kept for the
    life of the process (see :func:`history`), so every devnet with that seed
    shares it.
    """

    def __init__(self, params: ChainParams, seed: int) -> None:
        self.params = params
        self.chain_id = params.chain_id
        self.seed = seed
        self._salt = keccak(b"feeslab-devnet" + seed.to_bytes(16, "big", signed=True)
                            + params.chain_id.to_bytes(8, "big"))  # fmt: skip
        self._rng = np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, params.chain_id, 1559])
        self._lock = threading.RLock()
        self._state = _State()
        self._pools, self._shares = self._make_pools()
        # columns, one entry per generated canonical block
        self._hashes: list[bytes] = []
        self._by_hash: dict[bytes, int] = {}
        self._timestamp = np.zeros(0, dtype=np.int64)
        self._gas_limit = np.zeros(0, dtype=np.int64)
        self._gas_used = np.zeros(0, dtype=np.int64)
        self._base_fee: list[int | None] = []
        self._difficulty: list[int] = []
        self._total_difficulty: list[int] = []
        self._miner = np.zeros(0, dtype=np.int16)
        self._demand = np.zeros(0, dtype=np.float32)
        self._tip_median = np.zeros(0, dtype=np.float64)
        # blob gas used and excess blob gas [gas]; -1 before Cancun (no such header field)
        self._blob_gas_used = np.zeros(0, dtype=np.int64)
        self._excess_blob_gas = np.zeros(0, dtype=np.int64)
        self._uncles: dict[int, tuple[Header, ...]] = {}
        self._addresses: dict[int, bytes] = {}  # withdrawal addresses, by slot
        self._merge_timestamp: int | None = None  # the slot clock's start [s] (slot_number)
        # blocks below this are complete in every column; readers take no lock
        self._ready = 0
        self._stored = False  # the on-disk store was consulted
        self._saved = False
        # the longest head a chain of this history asked for (Chain(height=...)): a history
        # that long is stored in a file of its own, so the default chain's stays short
        self._extent = params.height
        self._saved_extent = params.height

    def number_of(self, block_hash: bytes) -> int | None:
        """Number of the generated canonical block with this hash."""
        number = self._by_hash.get(block_hash)
        return number if number is not None and number < self._ready else None

    def block(self, number: int) -> Block:
        """Canonical block ``number`` (generated on demand)."""
        return self._block(number)

    def ensure(self, number: int) -> None:
        """Generate at least up to block ``number``."""
        self._ensure(number)

    def reach(self, height: int) -> None:
        """Note that a chain will ask for blocks up to ``height``: a history generated that far
        is stored (and loaded) as one of that length."""
        with self._lock:
            self._extent = max(self._extent, height)

    def generated(self) -> int:
        """How many blocks have been generated so far."""
        return self._ready

    def uncle_count(self, number: int) -> int:
        """How many uncles canonical block ``number`` includes (no block is built)."""
        self._ensure(number)
        return len(self._uncles.get(number, ()))

    def base_fee(self, number: int) -> int | None:
        self._ensure(number)
        return self._base_fee[number]

    def gas_used(self, number: int) -> int:
        self._ensure(number)
        return int(self._gas_used[number])

    def gas_limit(self, number: int) -> int:
        self._ensure(number)
        return int(self._gas_limit[number])

    def timestamp(self, number: int) -> int:
        self._ensure(number)
        return int(self._timestamp[number])

    def base_fees(self, start: int, stop: int) -> list[int | None]:
        """Base fees of blocks ``start..stop-1`` [wei]; None before London."""
        self._ensure(stop - 1)
        return self._base_fee[start:stop]

    def gas_used_range(self, start: int, stop: int) -> list[int]:
        self._ensure(stop - 1)
        return self._gas_used[start:stop].tolist()

    def gas_limit_range(self, start: int, stop: int) -> list[int]:
        self._ensure(stop - 1)
        return self._gas_limit[start:stop].tolist()

    def timestamp_range(self, start: int, stop: int) -> list[int]:
        self._ensure(stop - 1)
        return self._timestamp[start:stop].tolist()

    def next_base_fee(self, number: int) -> int:
        """Base fee of block ``number + 1``, computed from block ``number`` [wei]."""
        self._ensure(number)
        child = number + 1
        if not self.params.is_london(child):
            return 0
        parent_fee = self._base_fee[number]
        if parent_fee is None:  # the fork block itself
            return self.params.initial_base_fee
        elasticity, denominator = self.params.eip1559_at(child)
        return next_base_fee(
            parent_fee, int(self._gas_used[number]), int(self._gas_limit[number]),
            elasticity, denominator,
        )  # fmt: skip

    def blob_gas_used(self, number: int) -> int | None:
        """Blob gas used by block ``number`` [gas]; None before Cancun."""
        self._ensure(number)
        value = int(self._blob_gas_used[number])
        return None if value < 0 else value

    def excess_blob_gas(self, number: int) -> int | None:
        """Excess blob gas of block ``number`` [gas]; None before Cancun."""
        self._ensure(number)
        value = int(self._excess_blob_gas[number])
        return None if value < 0 else value

    def blob_gas_used_range(self, start: int, stop: int) -> list[int]:
        """Blob gas used by blocks ``start..stop-1`` [gas]; -1 before Cancun."""
        self._ensure(stop - 1)
        return self._blob_gas_used[start:stop].tolist()

    def excess_blob_gas_range(self, start: int, stop: int) -> list[int]:
        """Excess blob gas of blocks ``start..stop-1`` [gas]; -1 before Cancun."""
        self._ensure(stop - 1)
        return self._excess_blob_gas[start:stop].tolist()

    def blob_base_fee(self, number: int) -> int | None:
        """Blob base fee of block ``number`` [wei]; None before Cancun (geth's CalcBlobFee)."""
        excess = self.excess_blob_gas(number)
        rule = self.params.blob_rule(number)
        if excess is None or rule is None:
            return None
        return blob_base_fee(excess, rule.update_fraction)

    def next_excess_blob_gas(self, number: int) -> int | None:
        """Excess blob gas of block ``number + 1``, from block ``number`` [gas]."""
        self._ensure(number)
        rule = self.params.blob_rule(number + 1)
        if rule is None:
            return None
        used, excess = self.blob_gas_used(number) or 0, self.excess_blob_gas(number) or 0
        return next_excess_blob_gas(
            excess, used, rule.target_blobs, rule.max_blobs, rule.update_fraction,
            reserve_price=rule.reserve_price, parent_base_fee=self._base_fee[number] or 0,
        )  # fmt: skip

    def next_blob_base_fee(self, number: int) -> int | None:
        """Blob base fee of block ``number + 1``, from block ``number`` [wei]."""
        excess = self.next_excess_blob_gas(number)
        rule = self.params.blob_rule(number + 1)
        if excess is None or rule is None:
            return None
        return blob_base_fee(excess, rule.update_fraction)

    def priority_fee_percentiles(self, number: int, percentiles: Sequence[float]) -> list[int]:
        """Effective priority fees paid in block ``number`` at ``percentiles`` [wei]."""
        return self.priority_fee_table(number, number + 1, percentiles)[0]

    def priority_fee_table(
        self, start: int, stop: int, percentiles: Sequence[float]
    ) -> list[list[int]]:
        """Tips at ``percentiles`` for blocks ``start..stop-1``, one row per block [wei].

        The devnet's tip model: tips are log-normal (sigma 0.8) around a median
        that rises with the block's utilisation above 90 % (and, before London,
        with the demand level, since the whole gas price was then the tip).
        Empty blocks pay none.
        """
        self._ensure(stop - 1)
        q = [min(max(p / 100.0, 0.005), 0.995) for p in percentiles]
        spread = np.exp(_TIP_SIGMA * np.array([_NORMAL.inv_cdf(x) for x in q]))
        table = np.floor(self._tip_median[start:stop, None] * spread[None, :])
        return table.astype(np.int64).tolist()

    def block_columns(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """Blocks ``start..stop-1``' generated columns, as read-only views: ``gas_used``,
        ``gas_limit`` [gas], ``tip_median`` (the tip model's median) [wei] and
        ``blob_gas_used`` [gas] (-1 before Cancun); what :mod:`feeslab.devnet.transactions`
        draws a range's transactions from."""
        self._ensure(stop - 1)
        out = {"gas_used": self._gas_used[start:stop], "gas_limit": self._gas_limit[start:stop],
               "tip_median": self._tip_median[start:stop],
               "blob_gas_used": self._blob_gas_used[start:stop]}  # fmt: skip
        for column in out.values():
            column.flags.writeable = False
        return out

    def demand_level(self, start: int, stop: int) -> np.ndarray:
        """The latent log-demand level of blocks ``start..stop-1`` (ground truth)."""
        self._ensure(stop - 1)
        return self._demand[start:stop].copy()

    def miner_index(self, start: int, stop: int) -> np.ndarray:
        """Index of each block's producer in the chain's pool list (ground truth)."""
        self._ensure(stop - 1)
        return self._miner[start:stop].copy()

    # -- internals -----------------------------------------------------------

    def _random(self, number: int, tag: bytes, size: int) -> bytes:
        return hashlib.shake_256(self._salt + number.to_bytes(8, "big") + tag).digest(size)

    def _block(self, number: int) -> Block:
        self._ensure(number)
        uncles = self._uncles.get(number, ())
        withdrawals = self.withdrawals(number)
        # encoded once, for both the header's withdrawalsRoot and the block's size
        encoded = [w.encode() for w in withdrawals]
        header = self._header(number, encoded)
        object.__setattr__(header, "_hash", self._hashes[number])  # what generation hashed
        parts = [header.encode(), b"\xc0", rlp_list_of_encoded([u.encode() for u in uncles])]
        if header.withdrawals_root is not None:  # as block_size
            parts.append(rlp_list_of_encoded(encoded))
        return Block(
            header=header,
            hash=self._hashes[number],
            uncles=uncles,
            total_difficulty=self._total_difficulty[number],
            size=len(rlp_list_of_encoded(parts)),
            withdrawals=withdrawals,
        )

    def withdrawals(self, number: int) -> tuple[Withdrawal, ...]:
        """The withdrawals block ``number`` credits: none before Shanghai, then a full payload
        of 16 a block (``MAX_WITHDRAWALS_PER_PAYLOAD``), as mainnet's blocks carry.

        The consensus layer's sweep walks the validators in order; most withdrawals skim a
        validator's rewards above 32 ETH (0.012-0.02 ETH), one in 500 is a full exit. A
        pure function of the seed and ``number``, so it needs no stored state.
        """
        start = self.params.forks.get("shanghai")
        if start is None or number < start:
            return ()
        first = (number - start) * MAX_WITHDRAWALS_PER_PAYLOAD
        rnd = self._random(number, b"withdrawals", 4 * MAX_WITHDRAWALS_PER_PAYLOAD)
        out = []
        for i in range(MAX_WITHDRAWALS_PER_PAYLOAD):
            u = int.from_bytes(rnd[4 * i : 4 * i + 4], "big")
            validator = (first + i) % _VALIDATORS  # the sweep takes the next in order
            amount = 32 * 10**9 + u % 10**8 if u % 500 == 0 else 12_000_000 + u % 8_000_000
            out.append(Withdrawal(first + i, validator, self._withdrawal_address(validator),
                                  amount))  # fmt: skip
        return tuple(out)

    def _withdrawal_address(self, validator: int) -> bytes:
        # validators share withdrawal addresses, as staking pools' do
        slot = validator % _WITHDRAWAL_ADDRESSES
        address = self._addresses.get(slot)
        if address is None:
            address = self._addresses[slot] = _keccak(self._salt + b"withdrawal"
                                                     + slot.to_bytes(4, "big"))[12:]  # fmt: skip
        return address

    def _header(self, number: int, withdrawals: list[bytes] | None = None) -> Header:
        uncles = self._uncles.get(number, ())
        return self._make_header(
            number=number,
            parent_hash=self._hashes[number - 1] if number else ZERO_HASH,
            uncles=uncles,
            miner=int(self._miner[number]),
            difficulty=self._difficulty[number],
            gas_limit=int(self._gas_limit[number]),
            gas_used=int(self._gas_used[number]),
            timestamp=int(self._timestamp[number]),
            base_fee=self._base_fee[number],
            blob_gas_used=self.blob_gas_used(number),
            excess_blob_gas=self.excess_blob_gas(number),
            withdrawals=withdrawals,
        )

    def _make_header(
        self, *, number: int, parent_hash: bytes, uncles: Sequence[Header], miner: int,
        difficulty: int, gas_limit: int, gas_used: int, timestamp: int,
        base_fee: int | None, tag: bytes = b"block", blob_gas_used: int | None = None,
        excess_blob_gas: int | None = None, withdrawals: list[bytes] | None = None,
    ) -> Header:  # fmt: skip
        """A header from its columns; ``withdrawals`` the block's encoded withdrawals, when
        the caller has them (else drawn here from Shanghai on)."""
        p = self.params
        cancun = blob_gas_used is not None
        shanghai = p.has_fork("shanghai", number)
        # shake's output is a stream: asking for 32 more bytes keeps the first 904 unchanged
        size = 32 * 4 + 8 + 256 * 3 + (32 if cancun else 0)
        rnd = self._random(number, tag + miner.to_bytes(2, "big"), size)
        kind = self.params.consensus_at(number)
        empty = gas_used == 0
        pool = self._pools[miner]
        if kind == "ethash":
            coinbase, extra, mix, nonce = pool.address, pool.tag, rnd[96:128], rnd[128:136]
        elif kind == "proof-of-stake":
            coinbase, extra, mix, nonce = pool.address, pool.tag, rnd[96:128], bytes(8)
        elif kind == "bor":
            # Bor: coinbase zero, signer's vanity + 65-byte seal in extraData
            coinbase, extra, mix, nonce = bytes(20), rnd[136:233], ZERO_HASH, bytes(8)
        else:  # optimism: fees go to the sequencer fee vault
            coinbase, extra, mix, nonce = _OP_FEE_VAULT, b"", rnd[96:128], bytes(8)
        if empty:
            tx_root = receipts_root = EMPTY_TRIE_ROOT
            bloom = bytes(256)
        else:
            tx_root, receipts_root = rnd[32:64], rnd[64:96]
            a = int.from_bytes(rnd[136:392], "big")
            b = int.from_bytes(rnd[392:648], "big")
            c = int.from_bytes(rnd[648:904], "big")
            dense = gas_used * 2 > gas_limit  # busier blocks emit more logs
            bloom = ((a & b) | (c if dense else 0) & a).to_bytes(256, "big")
        amsterdam = cancun and p.has_fork("amsterdam", number)
        access_list_hash = slot = None
        if amsterdam:
            drawn = self.withdrawals(number)  # once, for the access list and the root
            if withdrawals is None:
                withdrawals = [w.encode() for w in drawn]
            access_list_hash = self._access_list_hash(
                number, timestamp, parent_hash, rnd[904:936], coinbase, gas_used, drawn)
            slot = self.slot_number(timestamp)
        return Header(
            parent_hash=parent_hash,
            uncles_hash=uncles_hash(uncles),
            coinbase=coinbase,
            state_root=rnd[0:32],
            transactions_root=tx_root,
            receipts_root=receipts_root,
            logs_bloom=bloom,
            difficulty=difficulty,
            number=number,
            gas_limit=gas_limit,
            gas_used=gas_used,
            timestamp=timestamp,
            extra_data=extra,
            mix_hash=mix,
            nonce=nonce,
            base_fee_per_gas=base_fee,
            withdrawals_root=self._withdrawals_root(number, withdrawals) if shanghai else None,
            blob_gas_used=blob_gas_used,
            excess_blob_gas=excess_blob_gas,
            parent_beacon_block_root=rnd[904:936] if cancun else None,
            requests_hash=EMPTY_REQUESTS_HASH if cancun and p.has_fork("prague", number) else None,
            block_access_list_hash=access_list_hash,
            slot_number=slot,
        )

    def slot_number(self, timestamp: int) -> int:
        """The beacon slot of a proof-of-stake block with this timestamp (EIP-7843's
        ``slotNumber``).

        The devnet's slot clock starts at its first proof-of-stake block: slot 0 is the merge
        block's timestamp, and every later block's timestamp is it plus whole slots of
        ``slot_time_s`` (missed slots skip numbers, as on a beacon chain), so
        ``slot = (timestamp - merge timestamp) // slot_time_s`` [slots].  Real chains' slots
        count from their beacon chain's genesis, before their merge: the devnet has no beacon
        chain before its merge, so its slots are smaller than a real chain's at the same fork.
        """
        merge = self._merge_timestamp
        if merge is None:
            start = self.params.merge_block
            if start is None or start >= len(self._timestamp):
                raise ValueError(f"chain {self.chain_id} has no proof-of-stake slot clock yet")
            merge = self._merge_timestamp = int(self._timestamp[start])
        return (timestamp - merge) // self.params.slot_time_s

    def _access_list_hash(
        self, number: int, timestamp: int, parent_hash: bytes, beacon_root: bytes,
        coinbase: bytes, gas_used: int, withdrawals: Sequence[Withdrawal],
    ) -> bytes:  # fmt: skip
        """``blockAccessListHash`` of block ``number`` (see :mod:`feeslab.devnet._bal`)."""
        senders, nonces, recipients = _draws.touched(self._salt, number, gas_used)
        return _bal.devnet_access_list_hash(
            number=number, timestamp=timestamp, parent_hash=parent_hash,
            parent_beacon_block_root=beacon_root, coinbase=coinbase, senders=senders,
            nonces=nonces, recipients=recipients,
            withdrawal_addresses=[w.address for w in withdrawals],
        )  # fmt: skip

    def _withdrawals_root(self, number: int, encoded: list[bytes] | None) -> bytes:
        if encoded is None:
            return withdrawals_root(self.withdrawals(number))
        return ordered_trie_root(encoded)

    def _make_pools(self) -> tuple[list[_Pool], np.ndarray]:
        """Block producers: PoW pools (or PoS builders) with unequal shares."""
        count = 14
        rng = np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, self.chain_id, 7])
        pools = []
        for i in range(count):
            address = keccak(self._salt + b"pool" + bytes([i]))[12:]
            pools.append(
                _Pool(
                    address=address,
                    tag=b"feeslab pool %02d" % i,
                    # one mid-sized pool never includes uncles, as some real pools did
                    includes_uncles=i != 4,
                    empty_rate=float(rng.uniform(0.0, 0.02)) if i % 3 == 0 else 0.002,
                )
            )
        ranks = np.arange(1, count + 1, dtype=float)
        shares = ranks**-1.1
        return pools, shares / shares.sum()

    def _pool_shares(self, number: int) -> list[float]:
        # shares drift: the second and third pools trade places over the chain
        phase = 0.5 - 0.5 * math.cos(2 * math.pi * number / max(self.params.height, 1))
        shares = self._shares.tolist()
        shares[1], shares[2] = (
            shares[1] * (1 - phase) + shares[2] * phase,
            shares[2] * (1 - phase) + shares[1] * phase,
        )
        return shares

    def _ensure(self, number: int) -> None:
        if self._ready > number:
            return
        if self._stored:
            self._generate_to(number)
            return
        # the first miss: load the file, or generate under its cross-process build lock, so that
        # of processes starting together one generates and the others load (_store.building)
        with _store.building(_store.history_file(self)):
            self._generate_to(number)

    def _generate_to(self, number: int) -> None:
        # one chunk per lock hold, so concurrent callers take turns and each
        # returns as soon as its own block exists
        while self._ready <= number:
            with self._lock:
                if not self._stored:
                    self._stored = True
                    long = self._extent > self.params.height and _store.load(self, self._extent)
                    # a long history loaded is never saved as the default chain's
                    self._saved = self._saved or long
                    if (long or _store.load(self)) and self._ready > number:
                        return
                if self._ready <= number:
                    self._generate_chunk()
                    if self._ready > self.params.height and not self._saved:
                        self._saved = True
                        _store.save(self)
                    if self._ready > self._extent > self._saved_extent:
                        self._saved_extent = self._extent
                        _store.save(self, self._extent)

    # -- persistence (see feeslab.devnet._store) ------------------------------------------

    def export_columns(self) -> dict[str, np.ndarray]:
        """Everything generated so far, and the generator's state, as numpy arrays."""
        s = self._state
        big = max([*self._difficulty, *self._total_difficulty, 0])
        if big >= 2**63:
            raise OverflowError("difficulty beyond int64: not stored")
        uncle_numbers, uncle_blobs = [], []
        for number, uncles in sorted(self._uncles.items()):
            for uncle in uncles:
                uncle_numbers.append(number)
                uncle_blobs.append(uncle.encode())
        rng = self._rng.bit_generator.state
        return {
            "hashes": np.frombuffer(b"".join(self._hashes), dtype=np.uint8).reshape(-1, 32),
            "timestamp": self._timestamp,
            "gas_limit": self._gas_limit,
            "gas_used": self._gas_used,
            "miner": self._miner,
            "demand": self._demand,
            "tip_median": self._tip_median,
            "base_fee": np.array([-1 if f is None else f for f in self._base_fee], np.int64),
            "difficulty": np.array(self._difficulty, np.int64),
            "total_difficulty": np.array(self._total_difficulty, np.int64),
            "uncle_numbers": np.array(uncle_numbers, np.int64),
            **_pack_blobs("uncle", uncle_blobs),
            **_pack_blobs("stale", [st.header.encode() for st in s.pending]),
            "stale_seen_from": np.array([st.seen_from for st in s.pending], np.int64),
            "state_ints": np.array(
                [
                    s.number,
                    s.timestamp,
                    s.difficulty,
                    s.total_difficulty,
                    s.gas_limit,
                    s.gas_used,
                    -1 if s.base_fee is None else s.base_fee,
                    int(s.had_uncles),
                    s.regime,
                    s.outage_left,
                    s.burst_left,
                ],
                np.int64,
            ),
            "state_floats": np.array([s.wander, s.burst_level], np.float64),
            "blob_gas_used": self._blob_gas_used,
            "excess_blob_gas": self._excess_blob_gas,
            "blob_state_ints": np.array(
                [s.blob_gas_used, s.excess_blob_gas, s.blob_burst_left], np.int64
            ),
            "blob_state_floats": np.array([s.blob_level, s.blob_burst], np.float64),
            "state_hash": np.frombuffer(s.hash, dtype=np.uint8),
            "rng": np.array(
                [
                    str(rng["state"]["state"]),
                    str(rng["state"]["inc"]),
                    str(rng["has_uint32"]),
                    str(rng["uinteger"]),
                ]
            ),
        }

    def import_columns(self, data: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`export_columns` wrote (the inverse, exactly).

        Everything is decoded first and assigned last, so a damaged file leaves
        the history untouched.
        """
        raw = data["hashes"].tobytes()
        hashes = [raw[i : i + 32] for i in range(0, len(raw), 32)]
        uncles: dict[int, tuple[Header, ...]] = {}
        for number, blob in zip(
            data["uncle_numbers"].tolist(), _unpack_blobs("uncle", data), strict=True
        ):
            uncles[number] = (*uncles.get(number, ()), _decode_header(blob))
        ints = data["state_ints"].tolist()
        floats = data["state_floats"].tolist()
        stale = [
            _Stale(_decode_header(blob), seen_from)
            for blob, seen_from in zip(
                _unpack_blobs("stale", data), data["stale_seen_from"].tolist(), strict=True
            )
        ]
        state = _State(
            number=ints[0], timestamp=ints[1], difficulty=ints[2], total_difficulty=ints[3],
            gas_limit=ints[4], gas_used=ints[5], base_fee=None if ints[6] < 0 else ints[6],
            hash=data["state_hash"].tobytes(), had_uncles=bool(ints[7]), regime=ints[8],
            wander=floats[0], outage_left=ints[9], burst_left=ints[10], burst_level=floats[1],
            pending=stale,
        )  # fmt: skip
        blob_ints = data["blob_state_ints"].tolist()
        blob_floats = data["blob_state_floats"].tolist()
        state.blob_gas_used, state.excess_blob_gas, state.blob_burst_left = blob_ints
        state.blob_level, state.blob_burst = blob_floats
        rng_state, inc, has_uint32, uinteger = (int(x) for x in data["rng"].tolist())
        columns = {name: data[name] for name in _STORED_COLUMNS}
        if any(len(column) != len(hashes) for column in columns.values()):
            raise ValueError("stored columns have different lengths")
        base_fee = [None if f < 0 else f for f in data["base_fee"].tolist()]
        difficulty = data["difficulty"].tolist()
        total_difficulty = data["total_difficulty"].tolist()
        # decoded: now assign
        self._hashes = hashes
        self._by_hash = {h: n for n, h in enumerate(hashes)}
        for name, column in columns.items():
            setattr(self, f"_{name}", column)
        self._base_fee, self._difficulty = base_fee, difficulty
        self._total_difficulty, self._uncles, self._state = total_difficulty, uncles, state
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": rng_state, "inc": inc},
            "has_uint32": has_uint32,
            "uinteger": uinteger,
        }
        self._ready = len(self._hashes)

    def _propagation_delay(self, number: int, gas_used: int) -> float:
        """Seconds for a block to reach most hash power [s].

        A base network latency that improves over the proof-of-work era plus a
        per-gas term: bigger blocks take longer to send and to verify.
        """
        end = self.params.merge_block or self.params.height
        progress = min(1.0, number / max(end, 1))
        return 1.1 - 0.7 * progress + 0.055 * gas_used / 1e6

    def _generate_chunk(self) -> None:
        p = self.params
        rng = self._rng
        n0 = len(self._hashes)
        size = CHUNK
        # python lists: indexing numpy scalars one by one is several times slower
        u = rng.random((size, 10)).tolist()
        z = rng.standard_normal((size, 3)).tolist()
        expo = rng.standard_exponential((size, 2)).tolist()
        tip_noise = rng.random(size)
        blob_u, blob_z = self._blob_noise(n0, size)
        blob_used_col = np.full(size, -1, dtype=np.int64)
        excess_col = np.full(size, -1, dtype=np.int64)
        # hash shares drift slowly: one share vector per chunk is fine-grained enough
        shares = self._pool_shares(n0 + size // 2)
        cumulative = list(itertools.accumulate(shares))
        s = self._state
        ts_col = np.empty(size, dtype=np.int64)
        gl_col = np.empty(size, dtype=np.int64)
        gu_col = np.empty(size, dtype=np.int64)
        miner_col = np.empty(size, dtype=np.int16)
        demand_col = np.empty(size, dtype=np.float32)
        stay = 1.0 - 1.0 / _REGIME_MEAN_BLOCKS
        reference_fee = 25e9 if p.chain_id == 1 else 8e9 if p.chain_id == 11155111 else 40e9
        if p.chain_id == 8453:
            reference_fee = 0.05e9
        for i in range(size):
            n = n0 + i
            kind = p.consensus_at(n)
            london = p.is_london(n)
            # ---- who produces the block and when
            if n == 0:
                timestamp = p.genesis_timestamp
                difficulty = p.genesis_difficulty if kind == "ethash" else 0
                miner = 0
                fork = None
            elif kind == "ethash":
                miner, fork, timestamp, difficulty = self._pow_step(
                    n, s, u[i], expo[i], shares, cumulative
                )
            else:
                miner = _pick(cumulative, u[i][0])
                fork = None
                slots = 1
                if p.missed_slot_probability > 0:
                    while u[i][1] < p.missed_slot_probability**slots and slots < 8:
                        slots += 1
                timestamp = s.timestamp + p.slot_time_s * slots
                if n == p.merge_block:  # proof-of-work dates end, proof-of-stake dates begin
                    timestamp += p.merge_clock_jump_s
                    self._merge_timestamp = timestamp  # slot 0 (slot_number)
                # Bor's difficulty is the signer's in-turn score
                difficulty = 1 + int(u[i][2] * 20) if kind == "bor" else 0
            # ---- gas limit: producers vote towards the era's target
            gas_limit = self._next_gas_limit(n, s.gas_limit)
            # ---- demand and gas used
            if n > 0:
                if u[i][3] > stay[s.regime]:
                    s.regime = int(min(3, max(0, s.regime + (1 if u[i][4] < 0.5 else -1))))
                s.wander = 0.996 * s.wander + 0.045 * z[i][0]
            hour = (timestamp % 86400) / 86400.0
            weekday = (timestamp // 86400 + 4) % 7  # 1970-01-01 was a Thursday
            level = (
                _REGIME_LEVEL[s.regime]
                + s.wander
                + 0.28 * math.sin(2 * math.pi * (hour - 0.42))
                - (0.12 if weekday >= 5 else 0.0)
                + 0.35 * math.sin(2 * math.pi * n / 60000.0)
            )
            if s.burst_left == 0 and u[i][8] < 0.0006:
                # a short rush (a mint, an airdrop, a liquidation cascade)
                s.burst_left = 5 + int(u[i][9] * 60)
                s.burst_level = 1.4 + 2.0 * u[i][9]
            if s.burst_left > 0:
                s.burst_left -= 1
                level += s.burst_level
            if s.outage_left == 0 and u[i][5] < 0.0004:
                s.outage_left = 2 + int(u[i][6] * 10)  # a producer outage: empty run
            base_fee = None
            if london:
                base_fee = (
                    p.initial_base_fee if s.base_fee is None or n == 0 else self._child_fee(n, s)
                )
            if n == 0:
                gas_used = 0
            elif s.outage_left > 0:
                s.outage_left -= 1
                gas_used = 0
            elif u[i][7] < self._pools[miner].empty_rate:
                gas_used = 0
            elif london:
                elasticity, _ = p.eip1559_at(n)
                target = gas_limit // elasticity
                wanted = reference_fee * math.exp(level)
                demand = target * (wanted / base_fee) ** 1.5 * math.exp(0.12 * z[i][1])
                gas_used = min(gas_limit, int(demand))
            else:
                utilisation = 0.62 * math.exp(0.5 * level + 0.1 * z[i][1])
                gas_used = min(gas_limit, int(gas_limit * utilisation))
            # ---- uncles included by this block
            included: list[Header] = []
            if kind == "ethash" and n > 0:
                included = self._take_uncles(n, miner)
            # ---- blobs (Cancun on)
            blob_used = excess = None
            rule = p.blob_rule(n) if blob_u is not None else None
            if rule is not None:
                blob_used, excess = self._blob_step(
                    n, s, rule, gas_used, timestamp, blob_u[i], blob_z[i]
                )
                blob_used_col[i], excess_col[i] = blob_used, excess
            header = self._make_header(
                number=n, parent_hash=s.hash, uncles=included, miner=miner,
                difficulty=difficulty, gas_limit=gas_limit, gas_used=gas_used,
                timestamp=timestamp, base_fee=base_fee, blob_gas_used=blob_used,
                excess_blob_gas=excess,
            )  # fmt: skip
            block_hash = _keccak(header.encode())
            # ---- the stale sibling of this height, if a fork happened
            if fork is not None:
                self._record_stale(n, s, fork, gas_limit, gas_used, base_fee, u[i])
            # ---- commit
            s.number, s.timestamp, s.difficulty = n, timestamp, difficulty
            s.total_difficulty += difficulty
            s.gas_limit, s.gas_used, s.base_fee = gas_limit, gas_used, base_fee
            s.hash, s.had_uncles = block_hash, bool(included)
            self._hashes.append(block_hash)
            self._by_hash[block_hash] = n
            self._base_fee.append(base_fee)
            self._difficulty.append(difficulty)
            self._total_difficulty.append(s.total_difficulty)
            if included:
                self._uncles[n] = tuple(included)
            ts_col[i], gl_col[i], gu_col[i] = timestamp, gas_limit, gas_used
            miner_col[i], demand_col[i] = miner, level
        self._timestamp = np.concatenate([self._timestamp, ts_col])
        self._gas_limit = np.concatenate([self._gas_limit, gl_col])
        self._gas_used = np.concatenate([self._gas_used, gu_col])
        self._miner = np.concatenate([self._miner, miner_col])
        self._demand = np.concatenate([self._demand, demand_col])
        self._blob_gas_used = np.concatenate([self._blob_gas_used, blob_used_col])
        self._excess_blob_gas = np.concatenate([self._excess_blob_gas, excess_col])
        self._tip_median = np.concatenate(
            [self._tip_median, self._tip_medians(n0, gu_col, gl_col, demand_col, tip_noise)]
        )
        self._ready = len(self._hashes)

    def _blob_noise(self, n0: int, size: int) -> tuple[list | None, list | None]:
        """Uniforms and normals for a chunk's blob demand, or (None, None) before Cancun.

        A stream of its own per chunk, seeded by (seed, chain, chunk): the main stream (and so
        every block before Cancun) stays exactly as it was before blobs were simulated.
        """
        rules = self.params.blob_rules
        if not rules or n0 + size <= rules[0].start:
            return None, None
        rng = np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, self.chain_id, 4844, n0])
        return rng.random((size, 3)).tolist(), rng.standard_normal(size).tolist()

    def _blob_step(
        self, n: int, s: _State, rule: BlobRule, gas_used: int, timestamp: int,
        u: list[float], z: float,
    ) -> tuple[int, int]:  # fmt: skip
        """(blob gas used, excess blob gas) of block ``n``; updates the blob demand state.

        Demand: a latent level (AR(1) with a daily cycle) around a blob appetite that grows
        from 2.4 blobs per block at Cancun to ~8 at the head, with bursts (rollups catching
        up, blob inscriptions) of 2-8x lasting tens to hundreds of blocks. Buyers pay little
        attention to fees up to 0.001 gwei and then cut back with elasticity 1/4, so quiet
        stretches sit at the 1-wei floor and bursts drive the fee up exponentially until
        demand falls back to the target. The block's blob count is Poisson, at most the max.
        """
        p = self.params
        start = p.blob_rules[0].start
        parent = p.blob_rule(n - 1)
        if parent is None:  # the fork block: its parent has no blob fields
            s.blob_gas_used = s.excess_blob_gas = 0
        excess = next_excess_blob_gas(
            s.excess_blob_gas, s.blob_gas_used, rule.target_blobs, rule.max_blobs,
            rule.update_fraction, reserve_price=rule.reserve_price,
            parent_base_fee=s.base_fee or 0,
        )  # fmt: skip
        # the buyers' view of the fee: e ** x is close enough for demand (the header is exact)
        fee = math.exp(min(excess / rule.update_fraction, 700.0))
        s.blob_level = 0.995 * s.blob_level + 0.07 * z
        if s.blob_burst_left == 0 and u[0] < 0.0015:
            s.blob_burst_left = 20 + int(u[1] * 300)
            s.blob_burst = 2.0 + 6.0 * u[1]
        burst = 1.0
        if s.blob_burst_left > 0:
            s.blob_burst_left -= 1
            burst = s.blob_burst
        progress = min(1.0, (n - start) / max(1, p.height - start))
        hour = (timestamp % 86400) / 86400.0
        appetite = 2.4 * (1.0 + 2.3 * progress) * burst
        mean = appetite * math.exp(s.blob_level + 0.2 * math.sin(2 * math.pi * hour))
        if fee > 1_000_000:
            mean *= (1_000_000 / fee) ** 0.25
        blobs = 0
        if gas_used > 0:  # an empty block carries no blob transactions either
            term = cumulative = math.exp(-mean)
            while u[2] > cumulative and blobs < rule.max_blobs:
                blobs += 1
                term *= mean / blobs
                cumulative += term
        used = blobs * GAS_PER_BLOB
        s.blob_gas_used, s.excess_blob_gas = used, excess
        return used, excess

    def _tip_medians(
        self, n0: int, used: np.ndarray, limits: np.ndarray, demand: np.ndarray,
        noise: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Median tip of each block of a chunk [wei]; 0 for empty blocks."""
        london = self.params.london_block
        numbers = np.arange(n0, n0 + len(used))
        utilisation = used / limits
        post = 1.2e9 * (1.0 + 4.0 * np.maximum(0.0, utilisation - 0.9) / 0.1)
        pre = 20e9 * np.exp(demand.astype(np.float64))
        is_london = numbers >= london if london is not None else np.zeros(len(used), bool)
        median = np.where(is_london, post, pre) * np.exp(0.3 * (noise - 0.5))
        return np.where(used == 0, 0.0, median)

    def _child_fee(self, n: int, s: _State) -> int:
        elasticity, denominator = self.params.eip1559_at(n)
        return next_base_fee(s.base_fee, s.gas_used, s.gas_limit, elasticity, denominator)

    def _next_gas_limit(self, n: int, parent: int) -> int:
        p = self.params
        if n == 0:
            target = p.gas_limit_target(0)
            return target * (p.eip1559_at(0)[0] if p.is_london(0) else 1)
        london_fork = p.london_block is not None and n == p.london_block and n > 0
        if london_fork:
            # EIP-1559: the fork block's gas target is the parent's gas limit
            return parent * p.eip1559_at(n)[0]
        target = p.gas_limit_target(n)
        if p.is_london(n) and (p.london_block or 0) > 0:
            target *= p.eip1559_at(n)[0]
        step = max(0, parent // 1024 - 1)
        if target > parent:
            return parent + min(step, target - parent)
        return max(GAS_LIMIT_FLOOR, parent - min(step, parent - target))

    def _next_difficulty(self, n: int, s: _State, timestamp: int) -> int:
        """Homestead (EIP-2) or Byzantium (EIP-100) difficulty; no bomb."""
        parent = s.difficulty
        byzantium = self.params.forks.get("byzantium", 0)
        elapsed = timestamp - s.timestamp
        if n >= byzantium:
            factor = max((2 if s.had_uncles else 1) - elapsed // 9, -99)
        else:
            factor = max(1 - elapsed // 10, -99)
        return max(MIN_DIFFICULTY, parent + parent // 2048 * factor)

    def _hashrate(self, n: int) -> float:
        """Network hash power [hash/s]: grows threefold over the PoW era."""
        p = self.params
        end = p.merge_block or p.height
        base = p.genesis_difficulty / p.pow_target_block_time_s
        return base * (1.0 + 2.0 * min(1.0, n / max(end, 1)))

    def _pow_step(
        self, n: int, s: _State, u: list[float], expo: list[float], shares: list[float],
        cumulative: list[float],
    ) -> tuple[int, tuple[int, int] | None, int, int]:  # fmt: skip
        """Mine height ``n``: (winner, (loser, loser timestamp) or None, ts, difficulty)."""
        first = _pick(cumulative, u[0])
        # time to the first block: exponential with mean difficulty / hashrate
        mean = max(s.difficulty, MIN_DIFFICULTY) / self._hashrate(n)
        elapsed = max(1, round(expo[0] * mean))
        timestamp = s.timestamp + elapsed
        difficulty = self._next_difficulty(n, s, timestamp)
        # a rival finds a block before the first one has propagated
        delay = self._propagation_delay(n, s.gas_used)
        if u[1] >= 1.0 - math.exp(-delay / mean):
            return first, None, timestamp, difficulty
        others = list(shares)
        others[first] = 0.0
        rival = _pick(list(itertools.accumulate(others)), u[2] * (1.0 - shares[first]))
        rival_ts = timestamp + int(u[6] * delay + 0.5)
        # the rival wins when it also mines the next block (it builds on its own)
        if u[4] * 0.999999 < shares[rival] and u[4] >= 0:
            winner, loser, loser_ts = rival, first, timestamp
            timestamp = rival_ts if rival_ts > s.timestamp else timestamp
            difficulty = self._next_difficulty(n, s, timestamp)
        else:
            winner, loser, loser_ts = first, rival, rival_ts
        return winner, (loser, loser_ts), timestamp, difficulty

    def _record_stale(
        self, n: int, s: _State, fork: tuple[int, int], gas_limit: int, gas_used: int,
        base_fee: int | None, u: list[float],
    ) -> None:  # fmt: skip
        loser, loser_ts = fork
        uncle_gas = min(gas_limit, int(gas_used * (0.85 + 0.3 * u[7])))
        header = self._make_header(
            number=n, parent_hash=s.hash, uncles=(), miner=loser,
            difficulty=self._next_difficulty(n, s, loser_ts), gas_limit=gas_limit,
            gas_used=uncle_gas, timestamp=loser_ts, base_fee=base_fee, tag=b"stale",
        )  # fmt: skip
        # most miners hear of it before the next block; some only later
        lag = 0
        while lag < 6 and u[5] < 0.2 ** (lag + 1) * 1.2:
            lag += 1
        s.pending.append(_Stale(header=header, seen_from=n + 1 + lag))

    def _take_uncles(self, n: int, miner: int) -> list[Header]:
        s = self._state
        s.pending = [st for st in s.pending if n - st.header.number <= MAX_UNCLE_DEPTH]
        if not self._pools[miner].includes_uncles:
            return []
        chosen: list[Header] = []
        for stale in list(s.pending):
            if len(chosen) == MAX_UNCLES:
                break
            if stale.seen_from <= n and stale.header.number < n:
                chosen.append(stale.header)
                s.pending.remove(stale)
        return chosen


class Chain:
    """One simulated chain as a node sees it: a history and a head.

    Parameters
    ----------
    params : ChainParams
        The chain's devnet settings.
    seed : int
        Seed of the random stream; same seed, same chain.
    block_time : float, optional
        Live mode: the head grows by one block every ``block_time`` [s] of wall
        time after the chain is created.  ``None`` keeps the head fixed at
        ``height``.
    clock : callable, optional
        Monotonic clock [s] used for live mode (injectable for tests).
    height : int, optional
        The head block instead of ``params.height``, for benchmarks and scale tests
        (:func:`check_height` says what is allowed).  The history is the same one: blocks up
        to ``params.height`` are the default chain's, byte for byte, and the blocks past it
        continue the last fork as live mode grows it (the simulation's shape, such as the
        blob appetite's growth to the configured height, follows ``params.height``).
    """

    def __init__(
        self,
        params: ChainParams,
        seed: int,
        *,
        block_time: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        height: int | None = None,
    ) -> None:
        if block_time is not None and not block_time > 0:
            raise ValueError(f"block_time must be positive, got {block_time!r}")
        self._height = None if height is None else check_height(params, height)
        self.params = params
        self.chain_id = params.chain_id
        self.network = params.network
        self.seed = seed
        self.block_time = block_time
        self._clock = clock
        self._t0 = clock()
        self._h = history(params, seed)
        if self.height > params.height:
            self._h.reach(self.height)

    def __repr__(self) -> str:
        return f"<Chain {self.chain_id} ({self.network}) head={self.head()}>"

    @property
    def history(self) -> History:
        """The process-wide history behind this chain (shared by chains of the same seed)."""
        return self._h

    @property
    def height(self) -> int:
        """The head block before any live growth: ``height`` if given, else ``params.height``."""
        return self.params.height if self._height is None else self._height

    def head(self) -> int:
        """Number of the current head block."""
        if self.block_time is None:
            return self.height
        grown = int((self._clock() - self._t0) / self.block_time)
        return self.height + max(0, grown)

    def block(self, number: int) -> Block | None:
        """Canonical block ``number``, or None outside ``0..head``."""
        if number < 0 or number > self.head():
            return None
        return self._h.block(number)

    def uncle_count(self, number: int) -> int | None:
        """How many uncles canonical block ``number`` includes, or None outside ``0..head``."""
        if number < 0 or number > self.head():
            return None
        return self._h.uncle_count(number)

    def pending(self) -> Block:
        """The block that will follow the current head."""
        return self._h.block(self.head() + 1)

    def number_of(self, block_hash: bytes) -> int | None:
        """Number of the canonical block with this hash, if it is at or below head."""
        head = self.head()
        number = self._h.number_of(block_hash)
        if number is None:
            self._h.ensure(head)
            number = self._h.number_of(block_hash)
        if number is None or number > head:
            return None
        return number

    def safe(self) -> int | None:
        """The latest safe block, or None while the chain is not proof of stake."""
        return self._settled(self.params.safe_depth)

    def finalized(self) -> int | None:
        """The latest finalized block, or None while the chain is not proof of stake."""
        return self._settled(self.params.finalized_depth)

    def warm(self) -> None:
        """Generate everything up to the head now."""
        self._h.ensure(self.head())

    @property
    def state(self) -> WorldState:
        """The contracts' world state on this chain (created on first use)."""
        from feeslab.devnet.state import world_state  # pyrevm is loaded only when needed

        return world_state(self._h)

    def generated(self) -> int:
        """How many blocks of this chain have been generated so far."""
        return self._h.generated()

    # numeric columns: the history's, unchanged (they ignore the head)
    def base_fee(self, number: int) -> int | None:
        return self._h.base_fee(number)

    def gas_used(self, number: int) -> int:
        return self._h.gas_used(number)

    def gas_limit(self, number: int) -> int:
        return self._h.gas_limit(number)

    def timestamp(self, number: int) -> int:
        return self._h.timestamp(number)

    def base_fees(self, start: int, stop: int) -> list[int | None]:
        return self._h.base_fees(start, stop)

    def gas_used_range(self, start: int, stop: int) -> list[int]:
        return self._h.gas_used_range(start, stop)

    def gas_limit_range(self, start: int, stop: int) -> list[int]:
        return self._h.gas_limit_range(start, stop)

    def timestamp_range(self, start: int, stop: int) -> list[int]:
        return self._h.timestamp_range(start, stop)

    def next_base_fee(self, number: int) -> int:
        return self._h.next_base_fee(number)

    def priority_fee_percentiles(self, number: int, percentiles: Sequence[float]) -> list[int]:
        return self._h.priority_fee_percentiles(number, percentiles)

    def priority_fee_table(
        self, start: int, stop: int, percentiles: Sequence[float]
    ) -> list[list[int]]:
        return self._h.priority_fee_table(start, stop, percentiles)

    def demand_level(self, start: int, stop: int) -> np.ndarray:
        return self._h.demand_level(start, stop)

    def miner_index(self, start: int, stop: int) -> np.ndarray:
        return self._h.miner_index(start, stop)

    def _settled(self, depth: int) -> int | None:
        head = self.head()
        if self.params.consensus_at(head) == "ethash":
            return None
        if self.params.consensus_at(head) == "proof-of-stake":
            # epochs of 32 slots: safe/finalized sit on epoch boundaries
            number = (head - depth) // 32 * 32
        else:
            number = head - depth
        start = self.params.merge_block or 0
        return max(number, start) if number >= 0 else None


MAX_HEIGHT = 10_000_000  # a history costs ~390 bytes a block in memory [blocks]


def last_fork(params: ChainParams) -> int:
    """The first block of the chain's last rule change: fork, consensus or blob schedule."""
    starts = [*params.forks.values(), *(start for start, _ in params.consensus)]
    starts += [rule.start for rule in params.blob_rules]
    return max(starts, default=0)


def check_height(params: ChainParams, height: int) -> int:
    """``height`` as a chain's head block, checked: an int from the chain's last fork (so
    every fork is still in the chain) up to ``MAX_HEIGHT``.

    Raises
    ------
    ValueError
        Not an int, below the last fork or above ``MAX_HEIGHT``; the message says which.
    """
    if isinstance(height, bool) or not isinstance(height, int):
        raise ValueError(f"height must be an int block number, not {height!r}")
    low = last_fork(params)
    if not low <= height <= MAX_HEIGHT:
        raise ValueError(
            f"height {height:,} is outside {low:,}..{MAX_HEIGHT:,} for chain "
            f"{params.chain_id} ({params.network}): its last fork starts at block {low:,}"
        )
    return height


_HISTORIES: dict[tuple[str, int], History] = {}
_HISTORIES_LOCK = threading.Lock()


def history(params: ChainParams, seed: int) -> History:
    """The process-wide shared history of ``params``' chain for ``seed``."""
    with _HISTORIES_LOCK:
        key = (repr(params), seed)  # params hold a dict: not hashable
        if key not in _HISTORIES:
            _HISTORIES[key] = History(params, seed)
        return _HISTORIES[key]


@dataclass
class ChainSet:
    """The devnet's chains, by chain id and by network name."""

    chains: tuple[Chain, ...]
    by_id: dict[int, Chain] = field(init=False)
    by_network: dict[str, Chain] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {c.chain_id: c for c in self.chains}
        self.by_network = {c.network: c for c in self.chains}

    def __iter__(self) -> Iterator[Chain]:
        return iter(self.chains)

    def __len__(self) -> int:
        return len(self.chains)


def build_chains(
    seed: int,
    *,
    block_time: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    height: int | None = None,
) -> ChainSet:
    """Every devnet chain of ``data/chains.json`` for ``seed``.

    ``height``: the mainnet chain's (chain 1's) head block instead of its configured 210,000,
    for benchmarks and scale tests (see :class:`Chain`); the other chains keep theirs.
    """
    params = devnet_params()
    chains = []
    for p in params.values():
        lengthened = height if p.chain_id == LONG_CHAIN else None
        chains.append(Chain(p, seed, block_time=block_time, clock=clock, height=lengthened))
    return ChainSet(tuple(chains))


LONG_CHAIN = 1  # the chain build_chains(height=...) lengthens: mainnet, whose scans scale
