"""feeslab.samples.miner_revenue_2021(): Liu et al.'s miner-revenue data, exact to the wei.

The reference numbers below were computed once from the source file,
``miner_revenue_2021/miner_revenue_12710000_13509999.csv.gz`` (SciEcon/EIP1559's
``Data/MEVdata`` re-encoded as one CSV; see data/SOURCES.md), with Python's csv module and
Python ints (no floats, no pandas)::

    rows = list(csv.reader(gzip.open(path, "rt", newline="")))
    sums = {name: sum(int(r[i]) for r in rows[1:]) for i, name in enumerate(rows[0])}
    hashlib.sha256(gzip.open(path).read()).hexdigest()

The tests never read that file: a user's clone has only the shipped Parquet.
"""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from feeslab import samples

# the source CSV's column sums [wei] (Python ints: several exceed 2**63, their sums 2**77)
SOURCE_SUMS = {
    "block_number": 10_487_999_600_000,
    "static_reward_wei": 1_600_000_000_000_000_000_000_000,
    "uncle_inclusion_reward_wei": 2_500_937_500_000_000_000_000,
    "flashbots_bundle_gas_fee_wei": 27_061_199_154_364_347_204_518,
    "other_gas_fee_wei": 252_936_290_513_422_806_915_753,
    "flashbots_coinbase_transfer_wei": 34_057_689_494_058_639_284_689,
}
# sha256 of the decompressed source CSV: a header line, then one line of decimal integers
# per block, comma-separated, "\n"-terminated
SOURCE_SHA256 = "a24c4c3e65cfcc791ab4a93a3288c5ecbf269b593c7927c61d2ced010d7b1866"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return samples.miner_revenue_2021()


def test_every_column_sums_to_the_source_files_sum_to_the_wei(frame):
    assert list(frame.columns) == list(SOURCE_SUMS)
    for name, total in SOURCE_SUMS.items():
        # Python ints, added one by one: no float, no int64 wrap-around can pass this
        assert sum(int(v) for v in frame[name].tolist()) == total, name


def test_the_frame_renders_back_to_the_source_csv_byte_for_byte(frame):
    digest = hashlib.sha256((",".join(frame.columns) + "\n").encode())
    columns = [[str(int(v)) for v in frame[name].tolist()] for name in frame.columns]
    digest.update("".join(",".join(row) + "\n" for row in zip(*columns, strict=True)).encode())
    assert digest.hexdigest() == SOURCE_SHA256


def test_types_blocks_and_attribution(frame):
    assert frame["block_number"].tolist() == list(range(12_710_000, 13_510_000))
    assert isinstance(frame.index, pd.RangeIndex)
    assert frame["static_reward_wei"].dtype == "int64"
    assert frame["uncle_inclusion_reward_wei"].dtype == "int64"
    big = ["flashbots_bundle_gas_fee_wei", "other_gas_fee_wei", "flashbots_coinbase_transfer_wei"]
    for name in big:
        assert frame[name].dtype == object
        assert all(type(v) is int and v >= 0 for v in frame[name].tolist()), name
    # values past int64 are there, exact: the largest fee income, 7,676.8 ETH in one block
    assert max(frame["other_gas_fee_wei"]) > 7_676 * 10**18 > 2**63
    assert (frame["other_gas_fee_wei"].map(lambda v: v > 2**63 - 1)).sum() == 1_149
    assert frame.attrs["chain_id"] == 1 and frame.attrs["source"] == "SciEcon/EIP1559"
    assert frame.attrs["licence"] == "MIT"
    assert frame.attrs["attribution"] == samples.MINER_REVENUE_ATTRIBUTION
    assert "arXiv:2201.05574" in frame.attrs["attribution"]


def test_uncle_rewards_equal_the_shipped_uncle_counts_block_for_block(frame):
    """Two samples of one source agree: 1/32 of 2 ETH per uncle included."""
    counts = samples.uncle_counts_2021()
    assert (frame["block_number"] == counts["block_number"]).all()
    assert (frame["uncle_inclusion_reward_wei"] == counts["uncle_count"] * 625 * 10**14).all()
