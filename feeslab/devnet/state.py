"""World state of a devnet chain: real contracts, driven block by block, with archive history.

At a fixed height of each chain (``contracts_block``, by default 10,000 blocks
below the configured head) a deployer account deploys the contracts of
``feeslab/devnet/contracts`` and hands tokens out to a hundred holders.  From
then on every block applies seeded transactions, executed by a real EVM
(pyrevm, or py-evm where pyrevm has no wheel: ``feeslab.devnet.evm.backend``):
token transfers, approvals and ``transferFrom`` spends, occasional
mints, an oracle round every few blocks, proxy increments, an EIP-1967 upgrade
at ``upgrade_block``, and gas-burner calls.  Nothing is simulated outside the
EVM: balances, rounds and counters are whatever the contracts' code makes of
the transactions.

Archive semantics come from the EVM itself.  Transactions run on a backend's
"frontier" EVM (``Frontier``), which reports every written slot's value after
each block that wrote it (pyrevm: from its journal; py-evm: from its account
database); after every window of :data:`WINDOW` blocks each written slot's
history gains one entry per block in which its value changed, and the frontier
EVM is rebuilt from the current state so its records start empty again.  The state
after block ``N`` is then the last value of every slot at or before ``N``:
``eth_getStorageAt`` reads the histories directly; ``eth_call`` and
``eth_estimateGas`` run in an :class:`~feeslab.devnet.evm.Executor` holding that
state (a few recently used ones are cached).

Like the chain history, the world state is a pure function of ``(seed,
chain)``: generated lazily, in order, and shared by every devnet in the process.
The synthetic blocks do not list these transactions (their headers come from
the chain simulator); the storage they leave is what the node methods serve.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from eth_abi import encode as abi_encode
from eth_hash.auto import keccak

from feeslab.devnet import _store
from feeslab.devnet.contracts import Artifact, load_artifacts, selector
from feeslab.devnet.evm import (
    DEFAULT_SPEC,
    Account,
    BlockContext,
    Executor,
    MachineHost,
    backend,
    gas_ceiling,
)


class History(_store.History, Protocol):
    """What the world state reads of ``feeslab.devnet.chain.History`` (named here, not
    imported: the chain imports the state)."""

    def block(self, number: int) -> Any: ...


log = logging.getLogger(__name__)

WINDOW = 256  # blocks per journal parse / frontier rebuild
CONTRACTS_DEPTH = 10_000  # the contracts are deployed this many blocks below the head
HOLDERS = 100
SPENDERS = 5
EXECUTOR_CACHE = 8
# blocks a caller runs without waiting for another process's build of the file (ensure) [blocks]
SHORT_BUILD = 2 * WINDOW
CHECKPOINT_STRIDE = 256  # blocks between storage snapshots accounts_at starts from
CHECKPOINTS = 48  # snapshots kept (LRU), each the nonzero slots of every contract
SHARED_MACHINES = 128  # EVMs that move from block to block for eth_call (pyrevm), kept LRU
SPREAD = 16  # while fewer than SHARED_MACHINES, a block this far from all gets a new EVM [blocks]
MOVE_LIMIT = 1024  # blocks a shared EVM moves at most; farther, a new one is cheaper [blocks]
TOKEN_SUPPLY = 1_000_000_000 * 10**18
ORACLE_EVERY = 5
COUNTER_EVERY = 10
BURNER_EVERY = 50
APPROVE_EVERY = 20
MINT_EVERY = 1000
TX_GAS = 5_000_000


def _copy(storage: dict[bytes, dict[int, int]]) -> dict[bytes, dict[int, int]]:
    return {address: dict(slots) for address, slots in storage.items()}


def _hex(address: bytes) -> str:
    return "0x" + address.hex()


def _word(value: int | bytes) -> bytes:
    if isinstance(value, bytes):  # an address
        return value.rjust(32, b"\0")
    return (value % 2**256).to_bytes(32, "big")  # two's complement for negative ints


def _calldata(signature: str, *args: int | bytes) -> bytes:
    """Calldata for a function whose arguments are all static words."""
    return selector(signature) + b"".join(_word(a) for a in args)


@dataclass(frozen=True)
class Deployment:
    """One deployed contract: what ``GET /devnet/contracts`` lists."""

    name: str
    address: bytes
    artifact: Artifact
    block: int
    role: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": _hex(self.address),
            "deployed_at_block": self.block,
            "role": self.role,
            "abi": list(self.artifact.abi),
            "storage_layout": self.artifact.storage_layout,
        }


@dataclass
class _SlotHistory:
    blocks: list[int] = field(default_factory=list)
    values: list[int] = field(default_factory=list)

    def record(self, block: int, value: int) -> None:
        if self.values and self.values[-1] == value:
            return
        if self.blocks and self.blocks[-1] == block:
            self.values[-1] = value
        else:
            self.blocks.append(block)
            self.values.append(value)

    def at(self, block: int) -> int:
        i = bisect.bisect_right(self.blocks, block)
        return self.values[i - 1] if i else 0


class _Storage(Mapping[int, int]):
    """One contract's nonzero slots after a block, read from the slot histories on demand:
    an executor on a shared EVM rarely reads storage itself, so none is copied for it."""

    def __init__(self, state: WorldState, address: bytes, number: int) -> None:
        self._state, self._address, self._number = state, address, number
        self._all: dict[int, int] | None = None

    def __getitem__(self, slot: int) -> int:
        history = self._state._slots.get((self._address, slot))
        value = 0 if history is None else history.at(self._number)
        if not value:
            raise KeyError(slot)
        return value

    def _slots(self) -> dict[int, int]:
        if self._all is None:
            self._all = self._state._storage_at(self._number).get(self._address, {})
        return self._all

    def __iter__(self) -> Iterator[int]:
        return iter(self._slots())

    def __len__(self) -> int:
        return len(self._slots())


class WorldState:
    """The contracts' state on one chain for one seed, block by block.

    Parameters
    ----------
    history : History
        The chain's generated blocks (for block contexts and heights).
    contracts_block : int
        Height of the block that deploys the contracts.
    upgrade_block : int
        Height at which the proxy is upgraded from CounterV1 to CounterV2.
    """

    def __init__(self, history: History, *, contracts_block: int, upgrade_block: int) -> None:
        self.history = history
        self.chain_id = history.chain_id
        self.contracts_block = contracts_block
        self.upgrade_block = upgrade_block
        self._lock = threading.RLock()
        seed_bytes = history.seed.to_bytes(16, "big", signed=True)
        self._salt = keccak(b"feeslab-state" + seed_bytes)
        # the same seed gives the same accounts, hence the same addresses, on every chain
        self.deployer = self._account(b"deployer")
        self.updater = self._account(b"oracle-updater")
        self.admin = self._account(b"proxy-admin")
        self.holders = [self._account(b"holder" + bytes([i])) for i in range(HOLDERS)]
        self.spenders = [self._account(b"spender" + bytes([i])) for i in range(SPENDERS)]
        self._rng = np.random.default_rng([history.seed & 0xFFFFFFFFFFFFFFFF, history.chain_id, 42])
        self._slots: dict[tuple[bytes, int], _SlotHistory] = {}
        self._code: dict[bytes, bytes] = {}
        self.deployments: dict[str, Deployment] = {}
        self._applied = contracts_block - 1  # last block whose transactions are recorded
        self._executors: OrderedDict[int, Executor] = OrderedDict()
        # accounts_at without a bisect per slot: snapshots every CHECKPOINT_STRIDE blocks plus
        # each block's writes; history up to ``_applied`` never changes, so neither go stale
        self._checkpoints: OrderedDict[int, dict[bytes, dict[int, int]]] = OrderedDict()
        # per block: (address, slot) -> value after it, and -> value before it
        self._writes: dict[int, tuple[dict[tuple[bytes, int], int], dict[tuple[bytes, int], int]]]
        self._writes = {}
        self._indexed = contracts_block - 1  # last block whose writes are in ``_writes``
        self._hosts: list[MachineHost] = []  # most recently used last
        self._contexts: dict[int, BlockContext] = {}  # settled blocks' contexts never change
        self._price = 2_000 * 10**8  # oracle answer, 8 decimals
        self._stored = False  # loaded from or saved to the on-disk store (``_state_file``)

    # -- queries -------------------------------------------------------------------------

    def storage_at(self, address: bytes, slot: int, number: int) -> int:
        """Value of ``slot`` of ``address`` after block ``number`` (0 when never written)."""
        self.ensure(number)
        history = self._slots.get((address, slot))
        return 0 if history is None else history.at(number)

    def executor_at(self, number: int) -> Executor:
        """An EVM holding the state after block ``number``, in block ``number``'s context."""
        self.ensure(number)
        with self._lock:
            executor = self._executors.get(number)
            if executor is not None:
                self._executors.move_to_end(number)
                return executor
        block = self.block_context(number)
        host = self._host(block)
        if host is None:
            executor = Executor(self.accounts_at(number), block)
        else:  # the EVM has the storage; the executor reads balances and code, and slots lazily
            executor = Executor(self._lazy_accounts(number), block, host=host)
        with self._lock:
            self._executors[number] = executor
            while len(self._executors) > EXECUTOR_CACHE:
                self._executors.popitem(last=False)
        return executor

    def _host(self, block: BlockContext) -> MachineHost | None:
        """A shared EVM near ``block``, moved there on use; None for a machine of its own.

        Building an EVM loads every slot (thousands, ~2-8 ms with ``accounts_at``); moving
        one loads only the slots written in between, forwards or backwards.  Up to
        ``SHARED_MACHINES`` EVMs spread over the blocks asked for, so calls in any order
        find one nearby.  Only blocks with every contract deployed share, and only EVMs with
        the same gas ceiling; the py-evm backend cannot move and never shares.
        """
        machine_class = backend().Machine
        if not hasattr(machine_class, "move") or not self.deployments:
            return None
        if block.number < max(d.block for d in self.deployments.values()):
            return None
        ceiling = gas_ceiling(block)
        with self._lock:
            number, host, distance = block.number, None, MOVE_LIMIT + 1
            for candidate in self._hosts:
                gap = abs(candidate.number - number)
                if gap < distance and candidate.ceiling == ceiling:
                    host, distance = candidate, gap
            # few EVMs yet: spread them out; all there: move the nearest unless too far
            limit = SPREAD if len(self._hosts) < SHARED_MACHINES else MOVE_LIMIT
            if host is not None and distance <= limit:
                self._hosts.remove(host)
                self._hosts.append(host)
                return host
        accounts = self.accounts_at(block.number)
        machine = machine_class(accounts, block, gas_ceiling=ceiling, spec_id=DEFAULT_SPEC)
        host = MachineHost(machine, block.number, self._move, ceiling=ceiling)
        with self._lock:
            self._hosts.append(host)
            del self._hosts[:-SHARED_MACHINES]
        return host

    def _move(self, machine: Any, start: int, block: BlockContext) -> None:
        """Bring a shared EVM from the state after ``start`` to the state after ``block``.

        Forwards, the last value each slot was written in ``(start, stop]``; backwards, the
        value each slot had before its first write in ``(stop, start]``: the writes undone.
        """
        stop = block.number
        changed: dict[tuple[bytes, int], int] = {}
        with self._lock:
            self._index_writes()
            writes = self._writes
            if start <= stop:
                for number in range(start + 1, stop + 1):
                    if number in writes:
                        changed.update(writes[number][0])
            else:
                for number in range(start, stop, -1):
                    if number in writes:
                        changed.update(writes[number][1])
        machine.move(block, changed)

    def accounts_at(self, number: int) -> dict[bytes, Account]:
        """Every contract account with its code and storage after block ``number``."""
        self.ensure(number)
        storage = self._storage_at(number)
        return self._accounts(number, lambda address: storage.get(address, {}))

    def _lazy_accounts(self, number: int) -> dict[bytes, Account]:
        """``accounts_at(number)`` whose storage is read from the slot histories when asked."""
        return self._accounts(number, lambda address: _Storage(self, address, number))

    def _accounts(
        self, number: int, storage: Callable[[bytes], Mapping[int, int]]
    ) -> dict[bytes, Account]:
        return {
            d.address: Account(code=self._code[d.address], storage=storage(d.address))
            for d in self.deployments.values()
            if d.block <= number
        }

    def _storage_at(self, number: int) -> dict[bytes, dict[int, int]]:
        """The nonzero slots of every contract after block ``number`` (a fresh dict)."""
        with self._lock:
            self._index_writes()
            base = number - (number - self.contracts_block) % CHECKPOINT_STRIDE
            storage = _copy(self._checkpoint(base))
            self._replay(storage, base + 1, number + 1)
        return storage

    def _index_writes(self) -> None:
        """Group the slot histories' entries in (``_indexed``, ``_applied``] by block: the
        values each block left and the values they replaced."""
        if self._indexed >= self._applied:
            return
        after, upto = self._indexed, self._applied
        for (address, slot), history in self._slots.items():
            blocks, values = history.blocks, history.values
            for i in range(bisect.bisect_right(blocks, after), len(blocks)):
                if blocks[i] > upto:
                    break
                after_block, before_block = self._writes.setdefault(blocks[i], ({}, {}))
                after_block[address, slot] = values[i]
                before_block[address, slot] = values[i - 1] if i else 0
        self._indexed = upto

    def _replay(self, storage: dict[bytes, dict[int, int]], start: int, stop: int) -> None:
        """Apply the writes of blocks ``start`` to ``stop - 1`` to ``storage`` in place."""
        writes = self._writes
        for block in range(start, stop):
            if block not in writes:
                continue
            for (address, slot), value in writes[block][0].items():
                if value:
                    storage.setdefault(address, {})[slot] = value
                else:
                    slots = storage.get(address)
                    if slots is not None:
                        slots.pop(slot, None)

    def _checkpoint(self, base: int) -> dict[bytes, dict[int, int]]:
        """The storage after block ``base`` (a stride boundary), kept in a bounded LRU."""
        hit = self._checkpoints.get(base)
        if hit is not None:
            self._checkpoints.move_to_end(base)
            return hit
        below = [b for b in self._checkpoints if b < base]
        if below:
            start = max(below)
            storage = _copy(self._checkpoints[start])
            self._replay(storage, start + 1, base + 1)
        else:
            storage = {}
            for (address, slot), history in self._slots.items():
                value = history.at(base)
                if value:
                    storage.setdefault(address, {})[slot] = value
        self._checkpoints[base] = storage
        while len(self._checkpoints) > CHECKPOINTS:
            self._checkpoints.popitem(last=False)
        return storage

    def block_context(self, number: int) -> BlockContext:
        """Block ``number``'s context for the EVM (kept: building a header takes ~40 us)."""
        context = self._contexts.get(number)
        if context is None:
            context = self._contexts[number] = self._make_context(number)
        return context

    def _make_context(self, number: int) -> BlockContext:
        header = self.history.block(number).header
        return BlockContext(
            number=header.number,
            timestamp=header.timestamp,
            gas_limit=header.gas_limit,
            base_fee=header.base_fee_per_gas or 0,
            coinbase=header.coinbase,
            prevrandao=header.mix_hash,
            difficulty=header.difficulty,
            chain_id=self.chain_id,
        )

    def accounts_json(self) -> dict[str, Any]:
        """The externally owned accounts that drive the contracts."""
        return {
            "deployer": _hex(self.deployer),
            "oracle_updater": _hex(self.updater),
            "proxy_admin": _hex(self.admin),
            "holders": [_hex(h) for h in self.holders],
            "spenders": [_hex(s) for s in self.spenders],
        }

    def slot_history(self, address: bytes, slot: int) -> tuple[list[int], list[int]]:
        """(blocks, values): every change of one slot, up to what is generated."""
        history = self._slots.get((address, slot), _SlotHistory())
        return list(history.blocks), list(history.values)

    # -- generation ------------------------------------------------------------------------

    def ensure(self, number: int) -> None:
        """Apply every block's transactions up to ``number``.

        Until the state is stored (loaded from its file, or saved to it on reaching the
        chain's height), a build of more than :data:`SHORT_BUILD` blocks holds the file's
        cross-process build lock (:func:`feeslab.devnet._store.building`) from the look for
        the file to the save: of processes starting together one builds, the others wait and
        load its file.
        """
        if self._applied >= number:
            return
        if self._stored:  # past the file's height: nothing for another process to share
            self._generate(number)
            return
        path = _state_file(self)
        if number - self._applied <= SHORT_BUILD:
            # a window or two (GET /devnet/contracts: the deployment's block) costs less than
            # waiting for another process's whole build: load if saved, else run them here
            with self._lock:
                if not self._stored:
                    self._stored = _load_state(self, path)
            self._generate(number)
            return
        with _store.building(path):
            with self._lock:
                if not self._stored and self._applied < number:
                    # the file may have been saved while this process waited for the lock
                    self._stored = _load_state(self, path)
            self._generate(number)

    def _generate(self, number: int) -> None:
        """Run windows of blocks up to ``number`` (one per hold of the lock: threads take
        turns, each returns once its block is applied); save on reaching the height."""
        while self._applied < number:
            with self._lock:
                if self._applied < number:
                    self._apply_window()
                    if not self._stored and self._applied >= self.history.params.height:
                        self._stored = True
                        _save_state(self)

    def _apply_window(self) -> None:
        start = self._applied + 1
        stop = start + WINDOW - (start - self.contracts_block) % WINDOW
        evm = self._rebuild()
        for number in range(start, stop):
            self._apply_block(evm, number)
            evm.end_block(number)
        self._record(evm)
        self._applied = stop - 1

    def _rebuild(self) -> Any:
        """A fresh frontier EVM holding the current state, so its records start empty."""
        storage = {
            key: history.values[-1]
            for key, history in self._slots.items()
            if history.values and history.values[-1]
        }
        return backend().Frontier(self._code, storage)

    def _record(self, evm: Any) -> None:
        """Extend the slot histories with the values the window's blocks left."""
        for key, entries in evm.writes().items():
            history = self._slots.setdefault(key, _SlotHistory())
            for block, value in entries:
                history.record(block, value)

    def _apply_block(self, evm: Any, number: int) -> None:
        header = self.history.block(number).header
        evm.begin_block(number, header.timestamp, header.gas_limit)
        if number == self.contracts_block:
            self._deploy(evm, number)
            return
        for sender, to, data in self._transactions(evm, number):
            self._send(evm, sender, to, data)

    def _send(self, evm: Any, sender: bytes, to: bytes, data: bytes) -> bytes:
        # a reverted transaction changes no state (the backend answers b""); the generator
        # avoids them, but a revert is still a faithful outcome, not an error of the devnet
        return evm.send(sender, to, data, TX_GAS)

    def _view(self, evm: Any, to: bytes, data: bytes) -> int:
        return int.from_bytes(evm.view(self.deployer, to, data), "big")

    def _deploy(self, evm: Any, number: int) -> None:
        artifacts = load_artifacts()

        def deploy(name: str, role: str, args: bytes = b"") -> bytes:
            artifact = artifacts[name]
            raw = evm.deploy(self.deployer, artifact.bytecode + args, 30_000_000)
            self._code[raw] = artifact.deployed_bytecode
            self.deployments[name] = Deployment(name, raw, artifact, number, role)
            return raw

        token = deploy(
            "FeeslabToken",
            "ERC-20 token: balances mapping, allowances nested mapping, totalSupply",
            abi_encode(["string", "string", "uint256"], ["Feeslab Token", "FLT", TOKEN_SUPPLY]),
        )
        deploy(
            "PriceOracle",
            "oracle: packed struct and dynamic array of rounds",
            abi_encode(["address", "uint64"], [_hex(self.updater), ORACLE_EVERY * 12]),
        )
        v1 = deploy("CounterV1", "proxy implementation before the upgrade")
        deploy("CounterV2", "proxy implementation after the upgrade")
        deploy(
            "FeeslabProxy",
            "EIP-1967 proxy in front of CounterV1, upgraded to CounterV2",
            abi_encode(
                ["address", "address", "bytes"],
                [_hex(v1), _hex(self.admin), selector("initialize()")],
            ),
        )
        deploy("Reverter", "reverts with Error(string), Panic codes and a custom error")
        deploy("GasBurner", "gas cost depends on the input and on state")
        # hand out the supply: a few whales and a long tail (Zipf-like)
        weights = 1.0 / np.arange(1, HOLDERS + 1) ** 1.2
        shares = weights / weights.sum() * 0.6  # the deployer keeps 40 %
        for holder, share in zip(self.holders, shares, strict=True):
            amount = int(TOKEN_SUPPLY * float(share))
            self._send(
                evm, self.deployer, token, _calldata("transfer(address,uint256)", holder, amount)
            )

    def _transactions(self, evm: Any, number: int) -> list[tuple[bytes, bytes, bytes]]:
        """The block's transactions, drawn from the seeded stream (and the live state)."""
        d = self.deployments
        token = d["FeeslabToken"].address
        proxy = d["FeeslabProxy"].address
        rng = self._rng
        age = number - self.contracts_block
        txs: list[tuple[bytes, bytes, bytes]] = []
        for _ in range(int(rng.poisson(2.0))):
            i, j = rng.integers(0, HOLDERS, size=2)
            if i == j:
                continue
            sender, receiver = self.holders[int(i)], self.holders[int(j)]
            balance = self._view(evm, token, _calldata("balanceOf(address)", sender))
            amount = int(balance * float(rng.uniform(0.01, 0.3)))
            if amount:
                txs.append(
                    (sender, token, _calldata("transfer(address,uint256)", receiver, amount))
                )
        if age % APPROVE_EVERY == 0:
            owner = self.holders[int(rng.integers(0, 20))]
            spender = self.spenders[int(rng.integers(0, SPENDERS))]
            allowance = int(rng.integers(1, 10_000)) * 10**18
            txs.append((owner, token, _calldata("approve(address,uint256)", spender, allowance)))
        if age % APPROVE_EVERY == APPROVE_EVERY // 2:
            # a spender uses part of some allowance it was given
            owner = self.holders[int(rng.integers(0, 20))]
            spender = self.spenders[int(rng.integers(0, SPENDERS))]
            allowed = self._view(
                evm, token, _calldata("allowance(address,address)", owner, spender)
            )
            balance = self._view(evm, token, _calldata("balanceOf(address)", owner))
            amount = min(allowed, balance) // 2
            if amount:
                to = self.holders[int(rng.integers(0, HOLDERS))]
                data = _calldata("transferFrom(address,address,uint256)", owner, to, amount)
                txs.append((spender, token, data))
        if age % MINT_EVERY == MINT_EVERY - 1:
            to = self.holders[int(rng.integers(0, HOLDERS))]
            data = _calldata("mint(address,uint256)", to, int(rng.integers(1, 1000)) * 10**21)
            txs.append((self.deployer, token, data))
        if age % ORACLE_EVERY == 0:
            self._price = max(10**8, int(self._price * float(np.exp(rng.normal(0.0, 0.004)))))
            txs.append(
                (self.updater, d["PriceOracle"].address, _calldata("submit(int128)", self._price))
            )
        if number == self.upgrade_block:
            data = _calldata("upgradeTo(address)", d["CounterV2"].address)
            txs.append((self.admin, proxy, data))
        elif number == self.upgrade_block + 1:
            txs.append((self.holders[0], proxy, _calldata("setStep(uint256)", 3)))
        elif age % COUNTER_EVERY == 0:
            caller = self.holders[int(rng.integers(0, HOLDERS))]
            if number > self.upgrade_block and rng.random() < 0.3:
                data = _calldata("incrementBy(uint256)", int(rng.integers(1, 100)))
            else:
                data = _calldata("increment()")
            txs.append((caller, proxy, data))
        if age % BURNER_EVERY == 0:
            burner = d["GasBurner"].address
            n = int(rng.integers(1, 20))
            fn = "burn(uint256)" if rng.random() < 0.7 else "rewrite(uint256)"
            txs.append((self.holders[int(rng.integers(0, HOLDERS))], burner, _calldata(fn, n)))
        return txs

    def _account(self, tag: bytes) -> bytes:
        return keccak(self._salt + tag)[12:]


# -- the on-disk store: a built state is kept, like the chain histories (_store.py) -------------
#
# Building chain 1's 10,000 blocks of state takes ~2 s on pyrevm but about a minute on py-evm,
# and every process (each notebook kernel, each test run) would pay it again. Once a state
# reaches its chain's configured height it is saved; a later process loads it. The file name is
# a digest of everything that decides the state: this module, the EVM backend's module and name,
# the contracts' artifacts, the chain history's own key, the heights and the seed. Processes that
# start together take turns on the file's build lock (WorldState.ensure): one builds, the rest load.

STATE_FORMAT = 1


def _state_file(state: WorldState) -> Path | None:
    history_file = _store.history_file(state.history)
    if history_file is None:
        return None
    from feeslab.devnet import contracts

    module = backend()
    digest = hashlib.sha256()
    for part in (
        Path(__file__).read_bytes(),
        Path(module.__file__ or "").read_bytes(),
        module.NAME.encode(),
        (Path(contracts.__file__).parent / contracts.ARTIFACTS_FILE).read_bytes(),
        history_file.name.encode(),  # the history's digest: simulator, chains.json, seed
        f"{state.contracts_block}/{state.upgrade_block}/{STATE_FORMAT}".encode(),
    ):
        digest.update(hashlib.sha256(part).digest())
    name = f"state-{state.chain_id}-{module.NAME}-{digest.hexdigest()[:24]}.json.gz"
    return history_file.parent / name


def _save_state(state: WorldState) -> None:
    """Write ``state``'s histories and generator position atomically; failures cost speed only."""
    path = _state_file(state)
    if path is None:
        return
    record = {
        "applied": state._applied,
        "price": state._price,
        "rng": state._rng.bit_generator.state,
        "code": {a.hex(): c.hex() for a, c in state._code.items()},
        "deployments": {
            n: [d.address.hex(), d.block, d.role] for n, d in state.deployments.items()
        },
        "slots": [
            [a.hex(), hex(s), h.blocks, [hex(v) for v in h.values]]
            for (a, s), h in state._slots.items()
        ],
    }
    _store.keep(path, gzip.compress(json.dumps(record).encode(), compresslevel=6), "state")


def _load_state(state: WorldState, path: Path | None = None) -> bool:
    """Fill a fresh ``state`` from its file (``path``, :func:`_state_file`'s by default), if
    there is a good one."""
    path = _state_file(state) if path is None else path
    if path is None or not path.exists():
        return False
    try:
        record = json.loads(gzip.decompress(path.read_bytes()))
        artifacts = load_artifacts()
        code = {bytes.fromhex(a): bytes.fromhex(c) for a, c in record["code"].items()}
        deployments = {
            name: Deployment(name, bytes.fromhex(address), artifacts[name], block, role)
            for name, (address, block, role) in record["deployments"].items()
        }
        slots = {
            (bytes.fromhex(a), int(s, 16)): _SlotHistory(list(blocks), [int(v, 16) for v in values])
            for a, s, blocks, values in record["slots"]
        }
        rng = np.random.default_rng()
        rng.bit_generator.state = record["rng"]
        applied, price = int(record["applied"]), int(record["price"])
    except Exception:  # a damaged or foreign file: rebuild rather than trust it
        log.warning("ignoring unreadable devnet state %s", path, exc_info=True)
        path.unlink(missing_ok=True)
        return False
    state._code, state.deployments, state._slots = code, deployments, slots
    state._rng, state._applied, state._price = rng, applied, price
    state._checkpoints.clear()  # indexes and EVMs of the replaced histories
    state._hosts.clear()
    state._writes, state._indexed = {}, state.contracts_block - 1
    return True


def world_state(history: History) -> WorldState:
    """The world state of ``history``'s chain, created once per history (thread-safe).

    Contracts are deployed 10,000 blocks below the configured head and the proxy
    is upgraded 5,000 blocks later, on every chain.
    """
    with _STATES_LOCK:
        state = _STATES.get(history)
        if state is None:
            height = history.params.height
            state = _STATES[history] = WorldState(
                history,
                contracts_block=max(1, height - CONTRACTS_DEPTH),
                upgrade_block=max(2, height - CONTRACTS_DEPTH // 2),
            )
        return state


_STATES: dict[History, WorldState] = {}
_STATES_LOCK = threading.Lock()
