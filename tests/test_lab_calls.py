"""Lab.call, Lab.call_series and Lab.estimate_costs against the devnet over real HTTP.

Expected values come from the chain itself (``build_chains(7)``): storage words, base fees.
"""

from __future__ import annotations

import pytest

from feeslab.errors import BudgetExceeded, RevertError, RpcError
from feeslab.frames import encode_call, function_spec
from feeslab.slots import IMPLEMENTATION_SLOT, mapping_slot


@pytest.fixture(scope="module")
def deployed(devnet):
    """``(contracts by name, accounts, chain 1's heights)`` as ``GET /devnet/contracts`` says."""
    info = devnet.contracts
    contracts = {c["name"]: c for c in info["contracts"]}
    (chain,) = [c for c in info["chains"] if c["chain_id"] == 1]
    return contracts, info["accounts"], chain


def raw(address: str) -> bytes:
    return bytes.fromhex(address[2:])


def test_call_series_of_balance_of_equals_the_balance_slot(lab, truth, deployed):
    contracts, accounts, chain = deployed
    token = contracts["FeeslabToken"]
    start = chain["contracts_block"] + 1
    blocks = range(start, start + 400, 9)
    # a holder whose balance moves in these blocks, so that the series says something
    for holder in accounts["holders"]:
        slot = mapping_slot(holder, 0)
        expected = [truth.state.storage_at(raw(token["address"]), slot, n) for n in blocks]
        if len(set(expected)) > 3:
            break
    else:
        pytest.fail("no holder's balance changes in these blocks")
    frame = lab.call_series(token["address"], "balanceOf", [holder], blocks, abi=token["abi"])
    assert list(frame.columns) == ["block_number", "output", "error"]
    assert frame["block_number"].dtype == "int64"
    assert frame["block_number"].tolist() == list(blocks)
    assert frame["output"].dtype == object  # uint256: exact Python ints
    assert frame["output"].tolist() == expected
    assert frame["error"].isna().all()
    # the same with a bare signature and returns=, from a holder as sender
    again = lab.call_series(
        token["address"], "balanceOf(address)", [holder], blocks, returns=["uint256"], sender=holder
    )
    assert again["output"].tolist() == expected


def test_call_series_answers_for_settled_blocks_come_from_the_cache(lab, deployed):
    contracts, _, chain = deployed
    token = contracts["FeeslabToken"]
    blocks = range(chain["contracts_block"] + 10, chain["contracts_block"] + 30)
    first = lab.call_series(token["address"], "totalSupply", [], blocks, abi=token["abi"])
    spent = lab.credits.spent
    assert lab.credits.by_method["eth_call"] == 80 * len(blocks)
    second = lab.call_series(token["address"], "totalSupply", [], blocks, abi=token["abi"])
    assert second.equals(first)
    assert lab.credits.spent == spent  # nothing sent
    assert lab.credits.cached >= len(blocks)
    # the budget caps this Lab's spending, and the plan counts only what the cache lacks
    assert lab.call_series(
        token["address"], "totalSupply", [], blocks, abi=token["abi"], budget=spent
    ).equals(first)
    with pytest.raises(BudgetExceeded):
        lab.call_series(
            token["address"],
            "totalSupply",
            [],
            [chain["contracts_block"] + 99],
            abi=token["abi"],
            budget=spent + 79,
        )
    assert lab.credits.spent == spent


def test_proxy_count_across_the_upgrade(lab, truth, deployed):
    contracts, _, chain = deployed
    proxy = contracts["FeeslabProxy"]["address"]
    v2 = int(contracts["CounterV2"]["address"], 16)
    upgrade = chain["upgrade_block"]
    blocks = list(range(upgrade - 40, upgrade + 40, 4))
    counts = lab.call_series(proxy, "count()", [], blocks, returns=["uint256"])
    assert counts["output"].tolist() == [truth.state.storage_at(raw(proxy), 0, n) for n in blocks]
    assert counts["output"].iloc[-1] > counts["output"].iloc[0]
    versions = lab.call_series(proxy, "version()(uint256)", [], blocks)
    expected = [
        2 if truth.state.storage_at(raw(proxy), IMPLEMENTATION_SLOT, n) == v2 else 1 for n in blocks
    ]
    assert versions["output"].tolist() == expected
    assert set(expected) == {1, 2}  # the range spans the upgrade


def test_reverter_reverts_are_decoded_per_row(lab, deployed):
    contracts, accounts, chain = deployed
    reverter = contracts["Reverter"]
    address, abi = reverter["address"], reverter["abi"]
    deployed_at = chain["contracts_block"]
    blocks = [deployed_at - 2, deployed_at - 1, deployed_at, deployed_at + 1]
    divide = lab.call_series(address, "divide", [1, 0], blocks, abi=abi)
    errors = divide["error"].tolist()
    assert all("empty answer" in e for e in errors[:2])  # no code before the deployment
    assert errors[2:] == ["Panic(0x12): division or modulo by zero"] * 2
    assert divide["output"].isna().all()
    holder = accounts["holders"][0]
    custom = lab.call_series(address, "customRevert", [7], blocks[2:], abi=abi, sender=holder)
    assert custom["error"].tolist() == [f"Unauthorized({holder.lower()}, 7)"] * 2
    reason = lab.call_series(address, "reasonRevert()", [], blocks[2:])
    assert reason["error"].tolist() == ["feeslab: not allowed"] * 2
    ok = lab.call_series(address, "ok", [21], blocks, abi=abi)
    assert ok["output"].tolist()[2:] == [42, 42]
    assert ok["error"].isna().tolist() == [False, False, True, True]


def test_call_returns_the_value_or_raises_the_decoded_revert(lab, truth, deployed):
    contracts, accounts, chain = deployed
    token, reverter = contracts["FeeslabToken"], contracts["Reverter"]
    block = chain["contracts_block"] + 50
    supply = lab.call(token["address"], "totalSupply", abi=token["abi"], block=block)
    assert supply == truth.state.storage_at(raw(token["address"]), 2, block)
    assert lab.call(token["address"], "name", abi=token["abi"]) == "Feeslab Token"
    holder = accounts["holders"][1]
    with pytest.raises(RevertError) as custom:
        lab.call(reverter["address"], "customRevert", [9], abi=reverter["abi"], sender=holder)
    assert custom.value.error_name == "Unauthorized"
    assert custom.value.error_args == (holder.lower(), 9)
    with pytest.raises(RevertError) as reason:
        lab.call(reverter["address"], "reasonRevert()", block=block)
    assert reason.value.reason == "feeslab: not allowed"
    with pytest.raises(RevertError) as panic:
        lab.call(reverter["address"], "divide(uint256,uint256)(uint256)", [1, 0])
    assert panic.value.panic_code == 0x12
    # not a revert: a block beyond the head is the caller's mistake, raised as such
    with pytest.raises(RpcError, match="header not found"):
        lab.call_series(
            token["address"], "totalSupply", [], [truth.head() + 1000], abi=token["abi"]
        )


def test_estimate_costs_of_token_transfers(lab, truth, deployed, rpc):
    contracts, accounts, chain = deployed
    token = contracts["FeeslabToken"]
    transfer = function_spec("transfer", abi=token["abi"])
    holders = accounts["holders"]
    block = chain["contracts_block"] + 500
    transactions = [
        {
            "from": holders[i],
            "to": token["address"],
            "data": encode_call(transfer, [holders[i + 1], 10**18 * (i + 1)]),
        }
        for i in range(4)
    ]
    too_much = {
        "from": holders[0],
        "to": token["address"],
        "data": encode_call(transfer, [holders[1], 10**40]),
    }
    frame = lab.estimate_costs([*transactions, too_much], block=block, abi=token["abi"])
    base_fee = truth.base_fee(block)
    assert frame["block_number"].tolist() == [block] * 5
    assert frame["base_fee_wei"].tolist() == [base_fee] * 5
    gas = frame["gas_estimate"].tolist()[:4]
    assert gas == [int(rpc("eth_estimateGas", tx, hex(block)), 16) for tx in transactions]
    assert all(21_000 < g < 100_000 for g in gas)
    assert frame["cost_wei"].tolist()[:4] == [g * base_fee for g in gas]  # exact
    assert frame["cost_gwei"].tolist()[:4] == [g * base_fee / 10**9 for g in gas]
    assert frame["cost_eth"].tolist()[:4] == [g * base_fee / 10**18 for g in gas]
    assert frame["error"].isna().tolist() == [True] * 4 + [False]
    assert frame["error"].iloc[4].startswith(f"InsufficientBalance({holders[0].lower()}, ")
    assert frame["gas_estimate"].isna().iloc[4] and frame["cost_wei"].iloc[4] is None
    assert str(frame["gas_estimate"].dtype) == "Int64"
    # a priority fee is added per gas
    tipped = lab.estimate_costs(transactions[:1], block=block, priority_fee_wei=2 * 10**9)
    assert tipped["cost_wei"].tolist() == [gas[0] * (base_fee + 2 * 10**9)]
    # "latest" is the head, priced at the head's base fee
    latest = lab.estimate_costs(transactions[:1])
    head = truth.head()
    assert latest["block_number"].tolist() == [head]
    assert latest["cost_wei"].tolist() == [latest["gas_estimate"][0] * truth.base_fee(head)]
    assert lab.estimate_costs([], block=block).empty
    with pytest.raises(ValueError, match="latest"):
        lab.estimate_costs(transactions, block="pending")
