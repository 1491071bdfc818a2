"""The two EVM backends (pyrevm, py-evm) give the same storage, outputs and gas.

The devnet picks pyrevm where it imports and py-evm elsewhere (CPython 3.13+), so a devnet
must answer alike on either. Here both run side by side on the same inputs: the state builder
over a few hundred seeded blocks (every written slot's history), and calls into the deployed
contracts and into hand-written bytecode (output, gas used, refund, revert data, halt reason).
Needs both backends: on CPython 3.13+ pyrevm has no wheel, and the module skips saying so.
"""

from __future__ import annotations

from typing import Any

import pytest
from eth_hash.auto import keccak

from feeslab.devnet import evm as evm_module
from feeslab.devnet import state as state_module
from feeslab.devnet.chain import build_chains
from feeslab.devnet.contracts import selector
from feeslab.devnet.evm import Account, BlockContext, CallRequest, Executor, estimate_gas

pyrevm_backend = pytest.importorskip(
    "feeslab.devnet._evm_pyrevm", reason="pyrevm is not installed (no wheel past CPython 3.12)"
)
pyevm_backend = pytest.importorskip("feeslab.devnet._evm_pyevm", reason="py-evm is not installed")

SEED = 7
BLOCKS = 300  # the builder's blocks compared: the deployment, transfers, the upgrade
BACKENDS = {"pyrevm": pyrevm_backend, "py-evm": pyevm_backend}


def _use(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(evm_module, "backend", lambda: BACKENDS[name])
    monkeypatch.setattr(state_module, "backend", lambda: BACKENDS[name])


@pytest.fixture(scope="module")
def states() -> dict[str, state_module.WorldState]:
    history = build_chains(SEED).by_id[1].history
    start = history.params.height - 2 * BLOCKS
    built = {}
    with pytest.MonkeyPatch.context() as mp:
        for name in BACKENDS:
            _use(mp, name)
            state = state_module.WorldState(
                history, contracts_block=start, upgrade_block=start + BLOCKS // 2
            )
            state.ensure(start + BLOCKS - 1)
            built[name] = state
    return built


def test_the_builders_leave_the_same_slot_histories(states) -> None:
    fast, slow = states["pyrevm"], states["py-evm"]
    assert fast.deployments.keys() == slow.deployments.keys()
    for name, deployment in fast.deployments.items():
        assert slow.deployments[name].address == deployment.address, name
    keys = set(fast._slots)
    assert keys == set(slow._slots)
    assert len(keys) > 100  # balances, allowances, rounds, the proxy's slots
    for address, slot in keys:
        assert fast.slot_history(address, slot) == slow.slot_history(address, slot)


def _calls(state: state_module.WorldState) -> list[CallRequest]:
    d = {name: dep.address for name, dep in state.deployments.items()}
    holder = state.holders[3]

    def word(value: int | bytes) -> bytes:
        return value.rjust(32, b"\0") if isinstance(value, bytes) else value.to_bytes(32, "big")

    def req(to: str, signature: str, *args: int | bytes) -> CallRequest:
        data = selector(signature) + b"".join(word(a) for a in args)
        return CallRequest(sender=holder, to=d[to], data=data)

    return [
        req("FeeslabToken", "balanceOf(address)", holder),
        req("FeeslabToken", "totalSupply()"),
        req("FeeslabToken", "transfer(address,uint256)", state.holders[4], 1),
        req("FeeslabToken", "transfer(address,uint256)", state.holders[4], 10**40),  # reverts
        req("PriceOracle", "latestRound()"),
        req("FeeslabProxy", "increment()"),
        req("GasBurner", "burn(uint256)", 7),
        req("GasBurner", "rewrite(uint256)", 5),
        req("Reverter", "reasonRevert()"),
        req("Reverter", "divide(uint256,uint256)", 1, 0),
        req("Reverter", "customRevert(uint256)", 9),
        req("Reverter", "emptyRevert()"),
        req("Reverter", "ok(uint256)", 41),
    ]


def _outcomes(monkeypatch, state, name: str, number: int) -> list[Any]:
    _use(monkeypatch, name)
    executor = Executor(state.accounts_at(number), state.block_context(number))
    results = []
    for request in _calls(state):
        outcome = executor.execute(request, 1_000_000)
        estimate: Any
        try:
            estimate = estimate_gas(executor, request, gas_cap=executor.gas_ceiling)
        except Exception as exc:  # the RpcError geth's estimator gives: compared as data
            estimate = repr(exc)
        results.append((outcome, estimate))
    return results


@pytest.mark.parametrize("offset", [0, BLOCKS // 2 + 1, BLOCKS - 1])
def test_calls_agree(states, monkeypatch, offset: int) -> None:
    number = states["pyrevm"].contracts_block + offset
    fast = _outcomes(monkeypatch, states["pyrevm"], "pyrevm", number)
    slow = _outcomes(monkeypatch, states["py-evm"], "py-evm", number)
    assert fast == slow
    assert any(o.reverted and o.output for o, _ in fast)  # the sample has reverts with data
    assert any(o.success and o.output for o, _ in fast)  # and answers


# hand-written bytecode: opcodes the contracts do not reach
BLOCK = BlockContext(
    number=300, timestamp=1_700_000_000, gas_limit=30_000_000, base_fee=7,
    coinbase=bytes.fromhex("ab" * 20), prevrandao=bytes(range(32)), difficulty=0, chain_id=1337,
)  # fmt: skip
CODES = {
    # BLOCKHASH(299) NUMBER TIMESTAMP GASLIMIT BASEFEE CHAINID COINBASE PREVRANDAO, returned
    "env": bytes.fromhex(
        "61012b405f52436020524260405245606052486080524660a0524160c0524460e0526101005ff3"
    ),
    "invalid": bytes.fromhex("fe"),
    "unknown": bytes.fromhex("0c"),
    "badjump": bytes.fromhex("600556"),
    "underflow": bytes.fromhex("01"),
    "loop": bytes.fromhex("5b5f56"),
    "store": bytes.fromhex("60015f555f5f5500"),  # SSTORE 1 then 0: a refund
    "create": bytes.fromhex("5f5f5ff05f5260205ff3"),  # CREATE(empty code), return its address
}
ADDR = {name: bytes([0xD0 + i]) * 20 for i, name in enumerate(CODES)}
RICH = bytes.fromhex("11" * 20)


@pytest.mark.parametrize("name", list(CODES))
@pytest.mark.parametrize("price", [0, 9])
def test_bytecode_agrees(monkeypatch, name: str, price: int) -> None:
    accounts = {ADDR[n]: Account(code=code) for n, code in CODES.items()}
    accounts[RICH] = Account(balance=10**24)
    request = CallRequest(sender=RICH, to=ADDR[name], data=b"\x01" * 4, gas_price=price)
    outcomes = []
    for backend in BACKENDS:
        _use(monkeypatch, backend)
        outcomes.append(Executor(accounts, BLOCK).execute(request, 200_000))
    assert outcomes[0] == outcomes[1]
    if name == "store":
        assert outcomes[0].refund > 0  # SSTORE back to the original value
    elif name not in ("env", "create"):
        assert not outcomes[0].success


def test_environment_quirks_are_the_same(monkeypatch) -> None:
    """BASEFEE 0, GASLIMIT the ceiling and BLOCKHASH revm's placeholder, on both backends."""
    accounts = {ADDR["env"]: Account(code=CODES["env"]), RICH: Account(balance=10**24)}
    request = CallRequest(sender=RICH, to=ADDR["env"], data=b"", gas_price=9)
    for backend in BACKENDS:
        _use(monkeypatch, backend)
        out = Executor(accounts, BLOCK).execute(request, 100_000).output
        words = [out[i : i + 32] for i in range(0, len(out), 32)]
        assert words[0] == keccak(b"299")  # revm's BLOCKHASH placeholder
        assert int.from_bytes(words[1], "big") == 300
        assert int.from_bytes(words[2], "big") == 1_700_000_000
        assert int.from_bytes(words[3], "big") == 10 * 30_000_000  # the gas ceiling
        assert int.from_bytes(words[4], "big") == 0  # BASEFEE
        assert int.from_bytes(words[5], "big") == 1337
        assert words[6][12:] == bytes.fromhex("ab" * 20)
        assert words[7] == bytes(range(32))


def test_contract_creation_agrees(monkeypatch) -> None:
    # init code returning the 8-byte runtime PUSH1 0x2a PUSH0 MSTORE PUSH1 0x20 PUSH0 RETURN
    runtime = bytes.fromhex("602a5f5260205ff3")
    init = bytes.fromhex("67") + runtime + bytes.fromhex("5f5260086018f3")
    request = CallRequest(sender=RICH, to=None, data=init)
    outcomes = []
    for backend in BACKENDS:
        _use(monkeypatch, backend)
        outcomes.append(Executor({RICH: Account(balance=10**24)}, BLOCK).execute(request, 200_000))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0].output == runtime
