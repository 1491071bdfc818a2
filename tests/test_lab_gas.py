"""Lab.gas_needed against the devnet over real HTTP.

Ground truth is the devnet's EVM itself (``build_chains(7)``'s world state, run in-process):
the gas a call uses before and after refunds at the same block.
"""

from __future__ import annotations

import pytest

from feeslab.devnet.evm import CallRequest
from feeslab.errors import BudgetExceeded
from feeslab.frames import encode_call, function_spec

BLOCK_DEPTH = 9_000  # blocks after the contracts' deployment: GasBurner cells and balances exist


@pytest.fixture(scope="module")
def deployed(devnet):
    info = devnet.contracts
    (chain,) = [c for c in info["chains"] if c["chain_id"] == 1]
    return {c["name"]: c for c in info["contracts"]}, info["accounts"], chain


def transaction(contract, function, args=(), *, sender):
    spec = function_spec(function, abi=contract["abi"])
    return {"from": sender, "to": contract["address"], "data": encode_call(spec, list(args))}


def used(truth, block, tx):
    """The devnet EVM's outcome of ``tx`` with plenty of gas at ``block``."""
    request = CallRequest(sender=bytes.fromhex(tx["from"][2:]), to=bytes.fromhex(tx["to"][2:]),
                          data=bytes.fromhex(tx["data"][2:]))
    outcome = truth.state.executor_at(block).execute(request, 5_000_000)
    assert outcome.success
    return outcome


def test_gas_needed_is_exact_and_the_estimate_is_within_geths_margin_above_it(
    lab, truth, deployed, rpc
):
    contracts, accounts, chain = deployed
    block = chain["contracts_block"] + BLOCK_DEPTH
    sender, other = accounts["holders"][3], accounts["holders"][7]
    burner, token = contracts["GasBurner"], contracts["FeeslabToken"]
    txs = [
        transaction(burner, "burn", [3], sender=sender),
        transaction(burner, "cost", [50], sender=sender),
        transaction(token, "transfer", [other, 10**18], sender=sender),
    ]
    frame = lab.gas_needed(txs, block=block)
    assert frame["block_number"].tolist() == [block] * 3
    assert frame["gas_needed"].dtype == "Int64" and frame["error"].isna().all()
    for tx, needed, estimate in zip(txs, frame["gas_needed"], frame["gas_estimate"], strict=True):
        outcome = used(truth, block, tx)
        # straight-line code without refunds: the least gas that succeeds is the gas used
        assert outcome.refund == 0 and needed == outcome.gas_used
        assert needed <= estimate and (estimate - needed) / estimate < 0.015
        # and it is the least: one gas less fails
        rpc("eth_call", {**tx, "gas": hex(needed)}, hex(block))
        with pytest.raises(Exception, match="out of gas"):
            rpc("eth_call", {**tx, "gas": hex(needed - 1)}, hex(block))
    assert (frame["eth_calls"] <= 22).all() and (frame["eth_calls"] >= 2).all()


def test_gas_needed_is_above_the_gas_used_with_refunds_and_across_calls(lab, truth, deployed):
    contracts, accounts, chain = deployed
    block = chain["contracts_block"] + BLOCK_DEPTH
    token, proxy = contracts["FeeslabToken"], contracts["FeeslabProxy"]
    sender = accounts["holders"][4]
    balance = lab.call(token["address"], "balanceOf", [sender], block=block, abi=token["abi"])
    assert balance > 0
    everything = transaction(token, "transfer", [accounts["holders"][8], balance], sender=sender)
    increment = {"from": sender, "to": proxy["address"],
                 "data": encode_call(function_spec("increment()"), [])}
    frame = lab.gas_needed([everything, increment], block=block)
    emptied = used(truth, block, everything)
    # clearing the sender's balance slot earns a refund (EIP-3529): gas used falls below the
    # gas needed, which is the gas used before the refund
    assert emptied.refund > 0 and frame["gas_needed"].iloc[0] == emptied.max_used
    delegated = used(truth, block, increment)
    # the proxy's DELEGATECALL keeps a 64th back (EIP-150): the limit needed exceeds the use
    assert delegated.refund == 0 and frame["gas_needed"].iloc[1] > delegated.gas_used


def test_gas_needed_leaves_failures_missing_with_their_reason(lab, deployed):
    contracts, accounts, chain = deployed
    reverter = contracts["Reverter"]
    txs = [
        transaction(reverter, "reasonRevert", sender=accounts["holders"][0]),
        transaction(reverter, "ok", [21], sender=accounts["holders"][0]),
    ]
    frame = lab.gas_needed(txs, block=chain["contracts_block"] + 10, abi=reverter["abi"])
    assert frame["gas_needed"].isna().tolist() == [True, False]
    assert frame["error"].tolist()[0] == "feeslab: not allowed"
    assert frame["eth_calls"].tolist()[0] == 0
    empty = lab.gas_needed([], block=chain["contracts_block"])
    assert empty.empty and {"gas_needed", "eth_calls"} <= set(empty.columns)


def test_gas_needed_refuses_a_search_past_the_budget_before_sending_it(lab, deployed):
    contracts, accounts, chain = deployed
    txs = [transaction(contracts["GasBurner"], "burn", [5], sender=accounts["holders"][1])]
    block = chain["contracts_block"] + 20
    estimates_only = lab.credits.spent + 300 + 80  # eth_estimateGas and the block's header
    with pytest.raises(BudgetExceeded):
        lab.gas_needed(txs, block=block, budget=estimates_only)
    assert lab.credits.by_method.get("eth_call", 0) == 0
    frame = lab.gas_needed(txs, block=block, budget=lab.credits.spent + 300 + 80 * 40)
    assert frame["gas_needed"].notna().all()


def test_the_datasets_work_under_the_blocks_fork_and_refuse_the_gas_cap_as_a_node_does(
    lab, deployed
):
    from feeslab.analysis.gas import TransactionGasCapExceeded

    contracts, accounts, chain = deployed
    sender, other = accounts["holders"][2], accounts["holders"][6]
    token = contracts["FeeslabToken"]
    tx = transaction(token, "transfer", [other, 10**18], sender=sender)
    spec = lab.chain_spec
    block = chain["contracts_block"] + BLOCK_DEPTH
    osaka = spec.fork("osaka").block
    fork = spec.fork_at(block)
    assert block > osaka and fork in ("osaka", "bpo1", "bpo2")  # the devnet's Osaka era
    # at the cap itself: accepted, estimated and searched as before
    frame = lab.gas_needed([{**tx, "gas": 2**24}], block=block)
    assert frame["gas_needed"].notna().all()
    # over EIP-7825's cap under Osaka's rules: refused before any estimate is sent
    before = lab.credits.by_method.get("eth_estimateGas", 0)
    with pytest.raises(TransactionGasCapExceeded,
                       match=rf"gas limit too high \(cap: 16777216.*under {fork}'s rules"):
        lab.gas_needed([{**tx, "gas": 2**24 + 1}], block=block)
    assert lab.credits.by_method.get("eth_estimateGas", 0) == before
    # the same limit a block before Osaka is the node's to judge: no refusal here
    assert spec.fork_at(osaka - 1) == "prague"
    earlier = lab.gas_needed([{**tx, "gas": 2**24 + 1}], block=osaka - 1)
    assert len(earlier) == 1 and lab.credits.by_method["eth_estimateGas"] > before
