"""revenue_from_transactions: burn and tips of any range, checked against what the chain says.

On four real mainnet blocks (``samples.post_merge_blocks()``) the expected values are
computed here from the shipped consensus RLP alone (header, transactions, receipts), without
the loader's JSON; on the devnet, from ``eth_getBlockReceipts`` and ``eth_getBlockByNumber``
asked over real HTTP.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd
import pytest
import rlp

from feeslab import samples
from feeslab.analysis import revenue

# header field positions (London on: base fee; Cancun on: blob gas used, excess blob gas)
GAS_USED, BASE_FEE, BLOB_GAS_USED, EXCESS_BLOB_GAS = 10, 15, 17, 18
# EIP-4844's and EIP-7691's BLOB_BASE_FEE_UPDATE_FRACTION; the first of these blocks is
# Shanghai's (no blobs), the second Cancun's, the last two Prague's
UPDATE_FRACTION = {19_426_587: 3_338_477, 22_431_084: 5_007_716, 22_869_878: 5_007_716}


def _int(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def _fake_exponential(factor: int, numerator: int, denominator: int) -> int:
    """EIP-4844's ``fake_exponential``, as its specification writes it."""
    i, output, accum = 1, 0, factor * denominator
    while accum > 0:
        output += accum
        accum = (accum * numerator) // (denominator * i)
        i += 1
    return output // denominator


def _tip(raw: bytes | list, base_fee: int) -> int:
    """A transaction's tip per gas from its RLP: what the block's miner gets per gas."""
    if isinstance(raw, list):  # legacy: [nonce, gasPrice, ...]
        return _int(raw[1]) - base_fee
    kind, fields = raw[0], rlp.decode(raw[1:])
    if kind == 1:  # EIP-2930: [chainId, nonce, gasPrice, ...]
        return _int(fields[2]) - base_fee
    # EIP-1559 and later: [chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, ...]
    return min(_int(fields[2]), _int(fields[3]) - base_fee)


def _expected_from_rlp() -> pd.DataFrame:
    resource = resources.files("feeslab._data").joinpath("samples/post_merge_blocks.parquet")
    with resources.as_file(resource) as path:
        stored = pd.read_parquet(path)
    rows = []
    for number, header, body, receipts in zip(stored["block_number"], stored["header_rlp"],
                                              stored["body_rlp"], stored["receipts_rlp"],
                                              strict=True):  # fmt: skip
        fields = rlp.decode(header)
        base_fee, gas_used = _int(fields[BASE_FEE]), _int(fields[GAS_USED])
        transactions = rlp.decode(body)[0]
        cumulative = [_int(r[2]) for r in rlp.decode(receipts)]
        used = [c - p for c, p in zip(cumulative, [0, *cumulative[:-1]], strict=True)]
        tips = sum(_tip(tx, base_fee) * gas for tx, gas in zip(transactions, used, strict=True))
        blob_burn = 0
        if len(fields) > EXCESS_BLOB_GAS:
            price = _fake_exponential(1, _int(fields[EXCESS_BLOB_GAS]), UPDATE_FRACTION[number])
            blob_burn = price * _int(fields[BLOB_GAS_USED])
        rows.append({"block_number": int(number), "gas_fee_wei": tips,
                     "burn_wei": base_fee * gas_used, "blob_fee_burn_wei": blob_burn,
                     "transaction_count": len(transactions)})  # fmt: skip
    return pd.DataFrame(rows)


def test_post_merge_blocks_revenue_equals_burn_and_tips_from_their_rlp():
    blocks, transactions = samples.post_merge_blocks()
    frame = revenue.revenue_from_transactions(blocks, transactions)
    expected = _expected_from_rlp()
    assert frame["block_number"].tolist() == expected["block_number"].tolist()
    for name in ("gas_fee_wei", "burn_wei", "blob_fee_burn_wei", "transaction_count"):
        assert [int(v) for v in frame[name]] == expected[name].tolist(), name
    # proof of stake: no block reward, no uncles, in the execution layer
    assert (frame["static_reward_wei"] == 0).all()
    assert (frame["uncle_inclusion_reward_wei"] == 0).all()
    assert expected["gas_fee_wei"].gt(0).all() and expected["burn_wei"].gt(0).all()
    assert expected["blob_fee_burn_wei"].gt(0).any()  # blobs burned in the Prague blocks
    assert frame.attrs["chain_id"] == 1
    # the composition's total is the proposer's: the tips, not the burn
    composition = revenue.revenue_composition(frame)
    assert composition["total_eth"].tolist() == pytest.approx(
        [t / 1e18 for t in expected["gas_fee_wei"]], rel=1e-15)  # fmt: skip
    assert composition["burn_eth"].tolist() == pytest.approx(
        [b / 1e18 for b in expected["burn_wei"]], rel=1e-15)  # fmt: skip


def test_devnet_revenue_equals_burn_and_tips_from_its_receipts(lab, rpc):
    start, stop = 150_000, 150_030  # after London on the devnet
    blocks, transactions = lab.blocks(start, stop), lab.transactions(start, stop)
    frame = revenue.revenue_from_transactions(blocks, transactions).set_index("block_number")
    assert frame.index.tolist() == list(range(start, stop))
    for number in range(start, stop):
        block = rpc("eth_getBlockByNumber", hex(number), False)
        receipts = rpc("eth_getBlockReceipts", hex(number))
        base_fee = int(block["baseFeePerGas"], 16)
        tips = sum((int(r["effectiveGasPrice"], 16) - base_fee) * int(r["gasUsed"], 16)
                   for r in receipts)  # fmt: skip
        row = frame.loc[number]
        assert int(row["gas_fee_wei"]) == tips, number
        assert int(row["burn_wei"]) == base_fee * int(block["gasUsed"], 16), number
        assert int(row["transaction_count"]) == len(receipts)
    assert frame["gas_fee_wei"].astype("int64").gt(0).any()
    assert frame["burn_wei"].astype("int64").gt(0).all()


def test_devnet_revenue_before_london_counts_whole_fees_and_rewards(lab, rpc):
    start, stop = 100_000, 100_020  # before London: the whole fee is the miner's, no burn
    blocks, transactions = lab.blocks(start, stop), lab.transactions(start, stop)
    frame = revenue.revenue_from_transactions(blocks, transactions).set_index("block_number")
    for number in range(start, stop):
        block = rpc("eth_getBlockByNumber", hex(number), False)
        receipts = rpc("eth_getBlockReceipts", hex(number))
        fees = sum(int(r["effectiveGasPrice"], 16) * int(r["gasUsed"], 16) for r in receipts)
        row = frame.loc[number]
        assert "baseFeePerGas" not in block
        assert int(row["gas_fee_wei"]) == fees and int(row["burn_wei"]) == 0
        reward = int(row["static_reward_wei"])
        assert reward > 0
        assert int(row["uncle_inclusion_reward_wei"]) == reward // 32 * len(block["uncles"])


def test_missing_transactions_and_foreign_blocks_are_refused():
    blocks, transactions = samples.post_merge_blocks()
    with pytest.raises(ValueError, match="are all its transactions there"):
        revenue.revenue_from_transactions(blocks, transactions.iloc[1:])
    with pytest.raises(ValueError, match="which blocks does not hold"):
        revenue.revenue_from_transactions(blocks.iloc[1:], transactions)
    floats = transactions.assign(effective_tip_wei=transactions["effective_tip_wei"].astype(float))
    with pytest.raises(TypeError, match="float"):
        revenue.revenue_from_transactions(blocks, floats)
