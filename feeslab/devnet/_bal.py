"""The devnet's block-level access lists (EIP-7928) and their ``blockAccessListHash``.

From Amsterdam a header commits to its block's access list: ``keccak256(rlp(bal))``, where
``bal`` lists every account the block touched, sorted by address, each as go-ethereum
encodes ``bal.AccountAccess``::

    [address, storage_changes, storage_reads, balance_changes, nonce_changes, code_changes]

    storage_changes: [[slot, [[block_access_index, post_value], ...]], ...]  (by slot)
    storage_reads:   [slot, ...]                                            (sorted)
    balance_changes: [[block_access_index, post_balance], ...]              (by index)
    nonce_changes:   [[block_access_index, post_nonce], ...]
    code_changes:    [[block_access_index, new_code], ...]

integers as RLP integers (no leading zeros), ``block_access_index`` 0 for the system calls
before the transactions, ``i + 1`` for transaction ``i`` and ``n + 1`` after the ``n``
transactions (withdrawals, requests).  An empty block's list is ``[]``:
``keccak(rlp([])) = keccak(0xc0) = 0x1dcc4de8...49347`` (geth's
``EmptyBlockAccessListHash``).

What the devnet can honestly derive, and so what its lists hold:

* **Pre-execution system calls (index 0), exactly.**  EIP-4788's beacon-roots contract
  stores the block's timestamp at slot ``timestamp % 8191`` and its
  ``parentBeaconBlockRoot`` at slot ``timestamp % 8191 + 8191``; EIP-2935's history
  contract stores the parent's hash at slot ``(number - 1) % 8191``.  The devnet knows all
  five values, so these are the storage writes a node would list (every value changes: the
  timestamps grow, the hashes are new).
* **Transactions (index ``i + 1``).**  Each sender's nonce change (its post-nonce is the
  transaction's nonce + 1), and the sender, the recipient and the block's coinbase as touched
  accounts.
* **Withdrawals (index ``n + 1``).**  Each withdrawal address, as touched.

What it leaves out, because its synthetic transactions carry no state: balances (no account
has one on the devnet's synthetic chain, so no ``balance_changes``: the senders' gas, the
values moved, the coinbase's fees and the withdrawals' credits are not listed), the
contract calls' storage reads and writes (their input is seeded bytes run by no EVM), code
changes (no creations), and the EIP-7002/EIP-7251 request contracts' post-execution system
calls.  The hash is therefore the hash of a true sub-list of what a node would build for the
same block, never random bytes; it changes with every transaction, withdrawal and parent.

References
----------
.. [1] T. Wahrstaetter et al., "EIP-7928: Block-Level Access Lists", 2025.
.. [2] go-ethereum ``core/types/bal/bal_encoding.go`` (``BlockAccessList``,
   ``AccountAccess``, ``ToEncodingObj``, ``Hash``), ``bal_encoding_rlp_generated.go``,
   ``core/types/hashes.go`` (``EmptyBlockAccessListHash``), ``core/state_processor.go``
   (``PreExecution``: ``ProcessBeaconBlockRoot``, ``ProcessParentBlockHash``), at commit
   02b73d4ea7181464175e0a6cbecc0a3a2655a562.
.. [3] A. Stokes et al., "EIP-4788: Beacon block root in the EVM", 2022;
   T. Fuchs et al., "EIP-2935: Serve historical block hashes from state", 2020.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from feeslab.devnet._rlp import (
    _keccak,
    _rlp_int,
    _rlp_item,
    _rlp_length_prefix,
    rlp_list_of_encoded,
)

__all__ = [
    "BEACON_ROOTS_ADDRESS",
    "EMPTY_BLOCK_ACCESS_LIST_HASH",
    "HISTORY_BUFFER_LENGTH",
    "HISTORY_SERVE_WINDOW",
    "HISTORY_STORAGE_ADDRESS",
    "AccountAccess",
    "block_access_list",
    "block_access_list_hash",
    "devnet_access_list_hash",
    "encode_block_access_list",
]

# EIP-4788 (go-ethereum params.BeaconRootsAddress) and its ring buffer's length
BEACON_ROOTS_ADDRESS = bytes.fromhex("000f3df6d732807ef1319fb7b8bb8522d0beac02")
HISTORY_BUFFER_LENGTH = 8191
# EIP-2935 (go-ethereum params.HistoryStorageAddress, params.HistoryServeWindow)
HISTORY_STORAGE_ADDRESS = bytes.fromhex("0000f90827f1c53a10cb7a02335b175320002935")
HISTORY_SERVE_WINDOW = 8191
# keccak256(rlp([])): go-ethereum core/types/hashes.go EmptyBlockAccessListHash
EMPTY_BLOCK_ACCESS_LIST_HASH = bytes.fromhex(
    "1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
)


# an account touched, nothing changed: rlp([address, [], [], [], [], []]), 26 bytes of payload
_TOUCHED = b"\xda\x94"
_EMPTY_LISTS = b"\xc0" * 5


@dataclass
class AccountAccess:
    """One account's entry: its storage writes ``{slot: {index: value}}``, storage reads,
    balance changes ``{index: balance}`` [wei], nonce changes ``{index: nonce}`` and code
    changes ``{index: code}``, as go-ethereum's ``ConstructionAccountAccess`` holds them."""

    address: bytes
    storage_writes: dict[int, dict[int, int]] = field(default_factory=dict)
    storage_reads: set[int] = field(default_factory=set)
    balance_changes: dict[int, int] = field(default_factory=dict)
    nonce_changes: dict[int, int] = field(default_factory=dict)
    code_changes: dict[int, bytes] = field(default_factory=dict)

    def encode(self) -> bytes:
        """``rlp(AccountAccess)`` with every list sorted as ``toEncodingObj`` sorts it."""
        if not (self.storage_writes or self.storage_reads or self.balance_changes
                or self.code_changes):  # fmt: skip
            # the devnet's usual entries, touched or a sender's nonces: the hot path
            if not self.nonce_changes:
                return _TOUCHED + self.address + _EMPTY_LISTS
            nonces = rlp_list_of_encoded([
                rlp_list_of_encoded([_rlp_int(i), _rlp_int(v)])
                for i, v in sorted(self.nonce_changes.items())
            ])  # fmt: skip
            return rlp_list_of_encoded([b"\x94" + self.address + b"\xc0\xc0\xc0", nonces,
                                        b"\xc0"])  # fmt: skip
        writes = [
            rlp_list_of_encoded([_rlp_int(slot), rlp_list_of_encoded([
                rlp_list_of_encoded([_rlp_int(i), _rlp_int(v)]) for i, v in sorted(by.items())
            ])])
            for slot, by in sorted(self.storage_writes.items())
        ]  # fmt: skip
        pairs = [
            rlp_list_of_encoded([rlp_list_of_encoded([_rlp_int(i), _rlp_int(v)])
                                 for i, v in sorted(changes.items())])
            for changes in (self.balance_changes, self.nonce_changes)
        ]  # fmt: skip
        code = [rlp_list_of_encoded([_rlp_int(i), _rlp_item(c)])
                for i, c in sorted(self.code_changes.items())]  # fmt: skip
        return rlp_list_of_encoded([
            _rlp_item(self.address), rlp_list_of_encoded(writes),
            rlp_list_of_encoded([_rlp_int(s) for s in sorted(self.storage_reads)]),
            *pairs, rlp_list_of_encoded(code),
        ])  # fmt: skip


def block_access_list(
    *, number: int, timestamp: int, parent_hash: bytes, parent_beacon_block_root: bytes,
    coinbase: bytes, senders: Sequence[bytes], nonces: Sequence[int],
    recipients: Sequence[bytes], withdrawal_addresses: Sequence[bytes],
) -> list[AccountAccess]:  # fmt: skip
    """The access list the devnet derives for a block (see the module's docstring), sorted
    by address.

    Parameters
    ----------
    number, timestamp : int
        The block's number and timestamp [s].
    parent_hash, parent_beacon_block_root : bytes
        32 bytes each: what the pre-execution system calls store.
    coinbase : bytes
        The fee recipient (20 bytes).
    senders, nonces, recipients : sequence
        The transactions' senders, nonces (before the transaction) and recipients, in block
        order.
    withdrawal_addresses : sequence of bytes
        The block's withdrawals' addresses, in order.
    """
    accounts: dict[bytes, AccountAccess] = {}

    def account(address: bytes) -> AccountAccess:
        entry = accounts.get(address)
        if entry is None:
            entry = accounts[address] = AccountAccess(address)
        return entry

    # index 0: EIP-4788 and EIP-2935's system calls (geth's PreExecution)
    ring = timestamp % HISTORY_BUFFER_LENGTH
    roots = account(BEACON_ROOTS_ADDRESS).storage_writes
    roots[ring] = {0: timestamp}
    roots[ring + HISTORY_BUFFER_LENGTH] = {0: int.from_bytes(parent_beacon_block_root, "big")}
    if number > 0:
        history = account(HISTORY_STORAGE_ADDRESS).storage_writes
        history[(number - 1) % HISTORY_SERVE_WINDOW] = {0: int.from_bytes(parent_hash, "big")}
    if senders:
        account(coinbase)  # paid the priority fees (its balance: not modelled)
    for i, (sender, nonce, to) in enumerate(zip(senders, nonces, recipients, strict=True)):
        account(sender).nonce_changes[i + 1] = nonce + 1
        account(to)
    for address in withdrawal_addresses:  # index n + 1, credited (balances: not modelled)
        account(address)
    return [accounts[a] for a in sorted(accounts)]


def devnet_access_list_hash(
    *, number: int, timestamp: int, parent_hash: bytes, parent_beacon_block_root: bytes,
    coinbase: bytes, senders: Sequence[bytes], nonces: Sequence[int],
    recipients: Sequence[bytes], withdrawal_addresses: Sequence[bytes],
) -> bytes:  # fmt: skip
    """``block_access_list_hash(block_access_list(...))``, the same bytes, ~3x faster.

    The chain hashes one list per Amsterdam block while it generates them: the accounts
    that are only touched (one constant encoding but the address) and the senders with only
    nonce changes are encoded directly, without an :class:`AccountAccess` each.
    """
    system = block_access_list(
        number=number, timestamp=timestamp, parent_hash=parent_hash,
        parent_beacon_block_root=parent_beacon_block_root, coinbase=coinbase, senders=(),
        nonces=(), recipients=(), withdrawal_addresses=(),
    )  # fmt: skip
    encoded = {entry.address: entry.encode() for entry in system}
    by_sender: dict[bytes, list[tuple[int, int]]] = {}
    for i, (sender, nonce) in enumerate(zip(senders, nonces, strict=True)):
        by_sender.setdefault(sender, []).append((i + 1, nonce + 1))
    for sender, changes in by_sender.items():
        if sender in encoded:  # a system contract never sends: the general path, to be sure
            return block_access_list_hash(block_access_list(
                number=number, timestamp=timestamp, parent_hash=parent_hash,
                parent_beacon_block_root=parent_beacon_block_root, coinbase=coinbase,
                senders=senders, nonces=nonces, recipients=recipients,
                withdrawal_addresses=withdrawal_addresses))  # fmt: skip
        pairs = b"".join(_short_list(_rlp_int(i) + _rlp_int(v)) for i, v in changes)
        encoded[sender] = rlp_list_of_encoded([b"\x94" + sender + b"\xc0\xc0\xc0",
                                               _rlp_length_prefix(len(pairs), 0xC0) + pairs,
                                               b"\xc0"])  # fmt: skip
    touched = [*recipients, *withdrawal_addresses]
    if senders:
        touched.append(coinbase)
    for address in touched:
        if address not in encoded:
            encoded[address] = _TOUCHED + address + _EMPTY_LISTS
    return _keccak(rlp_list_of_encoded([encoded[a] for a in sorted(encoded)]))


def _short_list(payload: bytes) -> bytes:
    """RLP list of a payload shorter than 56 bytes (a nonce change: two small integers)."""
    return bytes((0xC0 + len(payload),)) + payload


def encode_block_access_list(entries: Sequence[AccountAccess]) -> bytes:
    """``rlp(bal)``: the list of the accounts' encodings (go-ethereum ``BlockAccessList``)."""
    return rlp_list_of_encoded([entry.encode() for entry in entries])


def block_access_list_hash(entries: Sequence[AccountAccess]) -> bytes:
    """``blockAccessListHash``: keccak256 of :func:`encode_block_access_list`."""
    return _keccak(encode_block_access_list(entries))
