"""lab.transactions: every transaction of a range, from full blocks and their receipts, on the
real devnet over loopback: consistent with the headers and the fee history, planned, cached,
and the same through feeslab fetch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from feeslab.frames.io import frame_from_bytes

# before London (gas price only), after it (EIP-1559), after Cancun (blob transactions)
RANGES = [(100_000, 100_040), (150_000, 150_040), (200_000, 200_040)]


def _geth_rewards(block: pd.DataFrame, gas_used: int, percentiles: list[float]) -> list[int]:
    """eth_feeHistory's rewards of one block, as go-ethereum's processBlock computes them
    (eth/gasprice/feehistory.go): the effective tips sorted rising, each weighted by its gas
    used; percentile p is the tip of the first transaction whose cumulative gas reaches
    p% of the block's gas used; an empty block's are zeros."""
    if block.empty:
        return [0] * len(percentiles)
    ordered = block.sort_values("effective_tip_wei", kind="stable")
    tips = ordered["effective_tip_wei"].astype("int64").tolist()
    gas = ordered["gas_used"].tolist()
    rewards, i, total = [], 0, gas[0]
    for p in percentiles:
        threshold = gas_used * p / 100
        while total < threshold and i < len(tips) - 1:
            i += 1
            total += gas[i]
        rewards.append(tips[i])
    return rewards


@pytest.mark.parametrize(("start", "stop"), RANGES)
def test_transactions_agree_with_the_headers_and_the_fee_history(lab, start, stop):
    frame = lab.transactions(start, stop)
    blocks = lab.blocks(start, stop)
    assert frame.attrs["source"] == "devnet" and frame.attrs["chain_id"] == 1
    assert frame["block_number"].between(start, stop - 1).all()
    # the receipts' gas adds up to each header's gasUsed, blob counts to its blob gas
    used = frame.groupby("block_number")["gas_used"].sum()
    assert (used.reindex(blocks["block_number"], fill_value=0).to_numpy()
            == blocks["gas_used"].to_numpy()).all()  # fmt: skip
    if blocks["blob_gas_used"].notna().any():
        blobs = frame.groupby("block_number")["blob_count"].sum() * 131_072
        expected = blocks.set_index("block_number")["blob_gas_used"].astype("int64")
        assert (blobs.reindex(expected.index, fill_value=0) == expected).all()
    # the tip is the price paid above the base fee (the whole price before London)
    fees = blocks.set_index("block_number")["base_fee_wei"].fillna(0).astype("int64")
    paid = frame["effective_gas_price_wei"].astype("int64")
    assert (frame["effective_tip_wei"].astype("int64")
            == paid - fees.loc[frame["block_number"]].to_numpy()).all()  # fmt: skip
    eip1559 = frame["type"] >= 2
    if eip1559.any():
        cap = (frame.loc[eip1559, "max_fee_per_gas_wei"].astype("int64"))
        assert (paid[eip1559] <= cap).all()
    assert frame.loc[frame["type"] < 2, "max_fee_per_gas_wei"].isna().all()
    # eth_feeHistory's rewards are geth's percentiles of exactly these transactions
    percentiles = [0.0, 10.0, 50.0, 90.0, 100.0]
    history = lab.fee_history(start, stop, percentiles=percentiles)
    for row in history.itertuples(index=False):
        block = frame[frame["block_number"] == row.block_number]
        gas_used = int(blocks.loc[blocks["block_number"] == row.block_number, "gas_used"].iloc[0])
        served = [int(getattr(row, f"reward_p{int(p)}_wei")) for p in percentiles]
        assert served == _geth_rewards(block, gas_used, percentiles), row.block_number


def test_the_plan_is_what_is_spent_and_a_rerun_costs_nothing(lab):
    start, stop = 160_000, 160_100
    plan = lab.plan_transactions(start, stop)
    assert plan.total == (stop - start) * 160  # a full block and its receipts, 80 each
    before = lab.credits.spent
    first = lab.transactions(start, stop, budget=plan.total + 1_000)
    spent = lab.credits.spent - before
    assert plan.total <= spent <= plan.total + 200  # and the head, asked once
    assert lab.plan_transactions(start, stop).total == 0  # every settled group cached
    again = lab.transactions(start, stop)
    assert lab.credits.spent - before == spent
    pd.testing.assert_frame_equal(first, again)
    # a range overlapping the cached one asks only for the blocks no kept file holds:
    # 160,050..160,095 lie in whole groups read back, 160,096..160,099 were kept as a part,
    # which a range going on past it reads back too (the engine cuts at a kept file's end)
    assert lab.plan_transactions(start + 50, stop + 16).total == 16 * 160
    part = lab.transactions(start + 50, start + 60)
    assert lab.credits.spent - before == spent  # read back from the group 160,048..160,063
    pd.testing.assert_frame_equal(
        part, first[first["block_number"].between(start + 50, start + 59)].reset_index(drop=True))


def test_feeslab_fetch_transactions_writes_the_labs_frame(devnet, lab, tmp_path):
    start, stop = 150_000, 150_020
    path = tmp_path / "tx.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "feeslab.cli", "fetch", "transactions", "--start", str(start),
         "--stop", str(stop), "-o", str(path), "--url", devnet.url, "--api-key",
         devnet.api_key, "--api-key-secret", devnet.api_key_secret, "--no-cache"],
        capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "eth_getBlockReceipts" in proc.stdout  # the plan, printed first
    written = frame_from_bytes(path.read_bytes())
    expected = lab.transactions(start, stop)
    assert len(written) == len(expected) > 0
    assert written["hash"].tolist() == expected["hash"].tolist()
    assert np.array_equal(written["effective_tip_wei"].astype("int64"),
                          expected["effective_tip_wei"].astype("int64"))  # fmt: skip
