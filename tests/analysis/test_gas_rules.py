"""`feeslab.analysis.gas`'s per-fork rules against the executable specification.

The ``ethereum-execution`` package (ethereum/execution-specs, pinned in the dev extra) holds
each fork's ``calculate_intrinsic_cost`` and ``validate_transaction``: generated transactions
(transfers, calldata of every zero/non-zero mix, creations, access lists, authorizations, over
the cap) must cost what the specification says, fork by fork. Only the fork modules needed
are imported, so this runs in seconds. Amsterdam is not in the pinned package: its cases are
checked against go-ethereum's figures (tests/data/amsterdam_intrinsic_gas.json, with source).
"""

from __future__ import annotations

import importlib
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from ethereum_types.bytes import Bytes, Bytes0, Bytes20, Bytes32
from ethereum_types.numeric import U8, U64, U256, Uint

from feeslab.analysis import gas
from feeslab.errors import ConfigError

DATA = Path(__file__).parents[1] / "data"
# the package's fork for each of feeslab's, and the forks that share one's rules
SPEC_FORKS = ("london", "paris", "shanghai", "cancun", "prague", "osaka", "bpo1", "bpo2")
TO = Bytes20(b"\x11" * 20)


def _fork(name: str) -> Any:
    return importlib.import_module(f"ethereum.forks.{name}.transactions")


def _access(fork: Any, access_list: list[tuple[bytes, int]]) -> tuple[Any, ...]:
    return tuple(fork.Access(account=Bytes20(addr), slots=tuple(Bytes32(bytes([i]) * 32)
                                                                 for i in range(n)))
                 for addr, n in access_list)  # fmt: skip


def _spec_tx(fork: Any, *, data: bytes, create: bool, access_list: list[tuple[bytes, int]],
             authorizations: int, gas_limit: int = 30_000_000) -> Any:  # fmt: skip
    to: Any = Bytes0(b"") if create else TO
    common: dict[str, Any] = dict(nonce=U256(0) if not hasattr(fork, "SetCodeTransaction")
                                  else U64(0), gas=Uint(gas_limit), to=to, value=U256(1),
                                  data=Bytes(data), r=U256(1), s=U256(1))  # fmt: skip
    if authorizations:
        auth_mod = importlib.import_module(
            fork.__name__.replace(".transactions", ".fork_types"))
        auths = tuple(auth_mod.Authorization(chain_id=U256(1), address=TO, nonce=U64(0),
                                             y_parity=U8(0), r=U256(1), s=U256(1))
                      for _ in range(authorizations))  # fmt: skip
        return fork.SetCodeTransaction(
            chain_id=U64(1), nonce=U64(0), max_priority_fee_per_gas=Uint(1),
            max_fee_per_gas=Uint(1), gas=Uint(gas_limit), to=TO, value=U256(1),
            data=Bytes(data), access_list=_access(fork, access_list), authorizations=auths,
            y_parity=U256(0), r=U256(1), s=U256(1))  # fmt: skip
    if access_list:
        common["nonce"] = U256(0)
        return fork.FeeMarketTransaction(
            chain_id=U64(1), max_priority_fee_per_gas=Uint(1), max_fee_per_gas=Uint(1),
            access_list=_access(fork, access_list), y_parity=U256(0), **common)
    common["nonce"] = U256(0)
    return fork.LegacyTransaction(gas_price=Uint(1), v=U256(27), **common)


def _spec_costs(fork: Any, tx: Any) -> tuple[int, int | None]:
    answer = fork.calculate_intrinsic_cost(tx)
    if isinstance(answer, tuple):
        return int(answer[0]), int(answer[1])
    return int(answer), None


def _calldata_cases() -> list[bytes]:
    """Every zero/non-zero mix of up to 4 bytes, then random longer ones (31..70 bytes: the
    init-code word boundaries)."""
    cases = [bytes(p) for n in range(5) for p in itertools.product((0, 0xFF), repeat=n)]
    rng = random.Random(31)
    cases += [bytes(rng.choice((0, 0, 1, 0x80)) for _ in range(n)) for n in (31, 32, 33, 64, 70)]
    return cases


CASES = [
    dict(data=data, create=create, access_list=al, authorizations=0)
    for data in _calldata_cases() for create in (False, True)
    for al in ([], [(b"\x22" * 20, 0)], [(b"\x22" * 20, 3), (b"\x33" * 20, 1)])
]  # fmt: skip


@pytest.mark.parametrize("fork_name", SPEC_FORKS)
def test_intrinsic_gas_and_floor_agree_with_the_execution_specs(fork_name: str) -> None:
    fork = _fork(fork_name)
    cases = list(CASES)
    if hasattr(fork, "SetCodeTransaction"):
        cases += [dict(data=d, create=False, access_list=al, authorizations=n)
                  for d in (b"", b"\x00\x01") for n in (1, 3)
                  for al in ([], [(b"\x22" * 20, 2)])]  # fmt: skip
    for case in cases:
        want_intrinsic, want_floor = _spec_costs(fork, _spec_tx(fork, **case))
        access_list = [(addr, [b"\x01" * 32] * n) for addr, n in case["access_list"]]
        kwargs = dict(create=case["create"], access_list=access_list, value=1,
                      fork=fork_name)  # fmt: skip
        assert gas.intrinsic_gas(case["data"], authorizations=case["authorizations"],
                                 **kwargs) == want_intrinsic, case  # fmt: skip
        assert gas.calldata_floor(case["data"], **kwargs) == want_floor, case


@pytest.mark.parametrize("fork_name", SPEC_FORKS)
def test_the_gas_cap_refuses_as_the_specification_does(fork_name: str) -> None:
    fork = _fork(fork_name)
    for limit in (2**24, 2**24 + 1, 30_000_000):
        tx = _spec_tx(fork, data=b"", create=False, access_list=[], authorizations=0,
                      gas_limit=limit)  # fmt: skip
        try:
            fork.validate_transaction(tx)
            refused = False
        except Exception as exc:  # the spec's InvalidTransaction subclasses
            assert "gas" in str(exc).lower() or type(exc).__name__.endswith("Error")
            refused = True
        intrinsic = gas.intrinsic_gas(value=1, fork=fork_name)
        floor = gas.calldata_floor(value=1, fork=fork_name)
        if refused:
            with pytest.raises(gas.TransactionGasCapExceeded, match="gas limit too high"):
                gas.check_gas_limit(limit, intrinsic=intrinsic, floor=floor, fork=fork_name)
        else:
            gas.check_gas_limit(limit, intrinsic=intrinsic, floor=floor, fork=fork_name)
    assert (fork_name in ("osaka", "bpo1", "bpo2")) == hasattr(fork, "TX_MAX_GAS_LIMIT")


AMSTERDAM = json.loads((DATA / "amsterdam_intrinsic_gas.json").read_text())


@pytest.mark.parametrize("case", AMSTERDAM["cases"], ids=lambda c: c["name"])
def test_amsterdam_against_go_ethereums_figures(case: dict[str, Any]) -> None:
    access_list = [(a, [b"\x00" * 32] * k) for a, k in case["access_list"]]
    kwargs = dict(create=case["create"], access_list=access_list, value=case["value"],
                  to_self=case["to_self"], fork="amsterdam")  # fmt: skip
    data = b"\x00" * case["zero_bytes"] + b"\x01" * case["nonzero_bytes"]
    assert gas.intrinsic_gas(data, authorizations=case.get("authorizations", 0),
                             **kwargs) == case["intrinsic_gas"]  # fmt: skip
    assert gas.calldata_floor(data, **kwargs) == case["floor_gas"]


def test_amsterdam_lets_the_limit_pass_the_cap_but_not_the_floor() -> None:
    gas.check_gas_limit(30_000_000, intrinsic=21_000, floor=21_000, fork="amsterdam")
    with pytest.raises(gas.TransactionGasCapExceeded, match="EIP-7825 cap of 16777216"):
        data = b"\x01" * 300_000  # floor 15,000 + 16 * 4 * 300,000 > 2**24
        floor = gas.calldata_floor(data, fork="amsterdam")
        gas.check_gas_limit(30_000_000, intrinsic=gas.intrinsic_gas(data, fork="amsterdam"),
                            floor=floor, fork="amsterdam")  # fmt: skip
    with pytest.raises(ValueError, match="intrinsic gas too low"):
        gas.check_gas_limit(20_000, intrinsic=21_000, fork="london")
    with pytest.raises(ValueError, match="floor data gas"):
        gas.check_gas_limit(22_000, intrinsic=21_000, floor=30_000, fork="prague")


def test_block_gas_counts_refunds_until_amsterdam() -> None:
    # a transaction of 100,000 gas that earns a 50,000 refund: EIP-3529 gives back 20,000
    for fork in ("london", "osaka"):
        tx = gas.transaction_gas_used(100_000, 50_000, fork=fork)
        assert tx["receipt_gas_used"] == 80_000
        assert gas.block_gas_used([tx, tx], fork=fork) == 160_000
    tx = gas.transaction_gas_used(100_000, 50_000, state_gas=30_000, fork="amsterdam")
    assert tx == {"receipt_gas_used": 80_000, "block_execution_gas": 70_000,
                  "block_state_gas": 30_000}  # fmt: skip
    assert gas.block_gas_used(pd.DataFrame([tx, tx]), fork="amsterdam") == 140_000
    heavy = gas.transaction_gas_used(300_000, state_gas=250_000, fork="amsterdam")
    assert gas.block_gas_used([heavy, heavy], fork="amsterdam") == 500_000  # state dominates
    # the floor holds in both dimensions' sums: a calldata-heavy tx is at least its floor
    assert gas.transaction_gas_used(30_000, floor=50_000, fork="prague")["receipt_gas_used"] \
        == 50_000


def test_forks_between_gas_forks_follow_the_last_one_and_unknown_ones_are_refused() -> None:
    assert gas.gas_rules("bpo2") is gas.gas_rules("osaka")
    assert gas.gas_rules("merge") is gas.gas_rules("london")
    with pytest.raises(ConfigError, match="berlin"):
        gas.gas_rules("berlin")
    with pytest.raises(ValueError, match="Prague"):
        gas.intrinsic_gas(authorizations=1, fork="cancun")


def test_the_base_fee_follows_each_forks_gas_used() -> None:
    from feeslab.protocol.eip1559 import next_base_fee

    # a block at its 15M target before refunds, 12M after: the fee falls under Osaka's
    # accounting and holds under Amsterdam's (EIP-7778)
    tx = {"gas_before_refund": 150_000, "refund": 30_000}
    osaka = [gas.transaction_gas_used(tx["gas_before_refund"], tx["refund"], fork="osaka")] * 100
    amsterdam = [gas.transaction_gas_used(tx["gas_before_refund"], tx["refund"],
                                          fork="amsterdam")] * 100  # fmt: skip
    used_osaka = gas.block_gas_used(osaka, fork="osaka")
    used_amsterdam = gas.block_gas_used(amsterdam, fork="amsterdam")
    assert (used_osaka, used_amsterdam) == (12_000_000, 15_000_000)
    assert next_base_fee(10**9, used_osaka, 30_000_000) == 10**9 - 10**9 * 3 // 15 // 8
    assert next_base_fee(10**9, used_amsterdam, 30_000_000) == 10**9
