"""The pyrevm backend of the devnet's EVM (CPython < 3.13: pyrevm 0.3.7 has no later wheel).

Two small classes, the interface ``feeslab.devnet.evm`` and ``feeslab.devnet.state`` use:

- ``Machine``: one block's world state; ``run`` executes one message and leaves the state (and
  its EIP-2929 warm set) as it was.
- ``Frontier``: the state builder's EVM; transactions commit, ``view`` does not, and ``writes``
  reports every storage slot's value after each block that wrote it.

pyrevm's quirks (listed in ``feeslab.devnet.evm``) are handled here and nowhere else.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping

from eth_hash.auto import keccak
from pyrevm import EVM, AccountInfo, BlockEnv, CfgEnv, Env

from feeslab.devnet._evm_types import (
    Account,
    BlockContext,
    InvalidTransaction,
    Outcome,
    parse_failure,
)

NAME = "pyrevm"

_JOURNAL = re.compile(r"journal: \[(.*)\], spec:", re.S)
_STORAGE_CHANGE = re.compile(
    r"StorageChange \{ address: (0x[0-9a-fA-F]{40}), key: (\d+), had_value: Some\((\d+)\) \}"
)


def _hex(address: bytes) -> str:
    return "0x" + address.hex()


def _block_env(block: BlockContext) -> BlockEnv:
    return BlockEnv(
        number=block.number,
        coinbase=_hex(block.coinbase),
        timestamp=block.timestamp,
        difficulty=block.difficulty,
        prevrandao=block.prevrandao,
        basefee=block.base_fee or 0,
        gas_limit=block.gas_limit,
    )


class Machine:
    """One block's world state in a pyrevm EVM."""

    def __init__(
        self,
        accounts: Mapping[bytes, Account],
        block: BlockContext,
        *,
        gas_ceiling: int,
        spec_id: str,
    ) -> None:
        env = Env(cfg=CfgEnv(chain_id=block.chain_id), block=_block_env(block))
        self._evm = EVM(env=env, gas_limit=gas_ceiling, spec_id=spec_id)
        self._evm.set_block_env(_block_env(block))
        for address, account in accounts.items():
            code = account.code or None  # b"" would become a 33-byte padded "contract"
            info = AccountInfo(balance=account.balance, nonce=account.nonce, code=code)
            self._evm.insert_account_info(_hex(address), info)
        # pyrevm writes a slot to its database (cold, EIP-2929) only while the account is
        # not in the journal; it then loads the account, warm for good at journal depth 0.
        # A snapshot per slot writes each slot and drops the account from the journal again.
        for address, account in accounts.items():
            for slot, value in account.storage.items():
                checkpoint = self._evm.snapshot()
                self._evm.insert_account_storage(_hex(address), slot, value)
                self._evm.revert(checkpoint)

    def move(self, block: BlockContext, storage: Mapping[tuple[bytes, int], int]) -> None:
        """Switch to another block's context and state: ``storage`` maps the slots that differ,
        ``(address, slot)``, to their values.

        The accounts, their code and the gas ceiling stay; the caller checks they are the same.
        """
        evm = self._evm
        evm.set_block_env(_block_env(block))
        snapshot, insert, revert = evm.snapshot, evm.insert_account_storage, evm.revert
        names: dict[bytes, str] = {}
        for (address, slot), value in storage.items():  # each slot cold again, as in __init__
            name = names.get(address) or names.setdefault(address, _hex(address))
            checkpoint = snapshot()
            insert(name, slot, value)
            revert(checkpoint)

    def run(
        self, sender: bytes, to: bytes | None, data: bytes, value: int, gas: int, gas_price: int
    ) -> Outcome:
        """Execute one message; the state is the same afterwards (the caller serialises)."""
        checkpoint = self._evm.snapshot()
        try:
            return self._run(sender, to, data, value, gas, gas_price)
        finally:
            self._evm.revert(checkpoint)

    def _run(
        self, sender: bytes, to: bytes | None, data: bytes, value: int, gas: int, price: int
    ) -> Outcome:
        try:
            if to is None:
                created = self._evm.deploy(
                    _hex(sender), data, value=value, gas=gas, gas_price=price
                )
                output = self._created_code(created)
            else:
                output = self._evm.message_call(
                    _hex(sender), _hex(to), data, value=value, gas=gas, gas_price=price
                )
        except RuntimeError as exc:
            outcome = parse_failure(str(exc))
            if outcome is None:
                raise InvalidTransaction(str(exc)) from None
            return outcome
        result = self._evm.result
        return Outcome(
            True, bytes(output), result.gas_used, reverted=False, halt=None,
            refund=result.gas_refunded,
        )  # fmt: skip

    def _created_code(self, address: str) -> bytes:
        """The code a CREATE left at ``address``, without revm's analysis padding.

        pyrevm returns analysed code, padded with zeros; the original is the prefix whose
        hash is the account's code hash.
        """
        padded = self._evm.get_code(address) or b""
        code_hash = self._evm.basic(address).code_hash
        for length in range(len(padded), -1, -1):
            if keccak(padded[:length]) == code_hash:
                return padded[:length]
            if padded[length - 1 : length] not in (b"", b"\x00"):
                break  # padding is zeros only
        return padded


class Frontier:
    """The state builder's EVM: code and storage in, transactions block by block.

    Storage writes are read from pyrevm's journal (``writes``): each journal entry is
    attributed to the block during which it was made.
    """

    def __init__(self, code: Mapping[bytes, bytes], storage: Mapping[tuple[bytes, int], int]):
        self._evm = EVM(spec_id="SHANGHAI")
        for address, body in code.items():
            self._evm.insert_account_info(_hex(address), AccountInfo(code=body))
        for (address, slot), word in storage.items():
            self._evm.insert_account_storage(_hex(address), slot, word)
        self._base = self._evm.journal_len
        self._ends: list[tuple[int, int]] = []  # (block, journal length after it)

    def begin_block(self, number: int, timestamp: int, gas_limit: int) -> None:
        self._evm.set_block_env(BlockEnv(number=number, timestamp=timestamp, gas_limit=gas_limit))

    def end_block(self, number: int) -> None:
        self._ends.append((number, self._evm.journal_len))

    def deploy(self, sender: bytes, initcode: bytes, gas: int) -> bytes:
        return bytes.fromhex(self._evm.deploy(_hex(sender), initcode, gas=gas)[2:])

    def send(self, sender: bytes, to: bytes, data: bytes, gas: int) -> bytes:
        """A committed transaction's output; b"" when it fails (and changes nothing)."""
        try:
            return bytes(self._evm.message_call(_hex(sender), _hex(to), data, gas=gas))
        except RuntimeError:
            return b""

    def view(self, sender: bytes, to: bytes, data: bytes) -> bytes:
        checkpoint = self._evm.snapshot()
        try:
            return bytes(self._evm.message_call(_hex(sender), _hex(to), data))
        finally:
            self._evm.revert(checkpoint)

    def storage(self, address: bytes, slot: int) -> int:
        return int(self._evm.storage(_hex(address), slot))

    def writes(self) -> dict[tuple[bytes, int], list[tuple[int, int]]]:
        """(address, slot) -> [(block, value after that block)] for every written slot."""
        match = _JOURNAL.search(self._evm.journal_str)
        if match is None:  # pragma: no cover - guards against a pyrevm format change
            raise RuntimeError("pyrevm's journal has an unexpected format")
        groups = match.group(1)[1:-1].split("], [") if match.group(1) else []
        owners = [e for _, e in self._ends]
        changes: dict[tuple[bytes, int], list[tuple[int, int]]] = {}
        for index, group in enumerate(groups):
            if index < self._base or "StorageChange" not in group:
                continue
            block = self._ends[bisect.bisect_right(owners, index)][0]
            for address, key, had in _STORAGE_CHANGE.findall(group):
                slot_key = (bytes.fromhex(address[2:]), int(key))
                changes.setdefault(slot_key, []).append((block, int(had)))
        out: dict[tuple[bytes, int], list[tuple[int, int]]] = {}
        for (address, slot), seq in changes.items():
            final = self.storage(address, slot)
            # the value after a change is the next change's previous value, or the final one
            entries = out[(address, slot)] = []
            for i, (block, _) in enumerate(seq):
                if i + 1 < len(seq) and seq[i + 1][0] == block:
                    continue  # a later write in the same block decides
                entries.append((block, seq[i + 1][1] if i + 1 < len(seq) else final))
        return out
