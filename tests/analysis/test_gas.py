"""feeslab.analysis.gas: intrinsic gas, estimate accuracy, costs over a fee history.

Expected values are worked out by hand from the EIPs' numbers, or come from the devnet's own
EVM module (an independent implementation of the intrinsic gas rules).
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from feeslab.analysis.gas import (
    COST_HISTORY_DTYPES,
    cost_over_history,
    cost_summary,
    estimate_accuracy,
    intrinsic_gas,
)
from feeslab.devnet import evm

# -- intrinsic_gas -----------------------------------------------------------------------------


def test_intrinsic_gas_counts_zero_and_non_zero_bytes_as_eip_2028_prices_them():
    assert intrinsic_gas() == 21_000
    assert intrinsic_gas("0x00ff00") == 21_000 + 2 * 4 + 16
    # transfer(address,uint256): 4 selector bytes, 12 + 20 address bytes, 32 amount bytes
    data = bytes.fromhex("a9059cbb") + bytes(12) + b"\x11" * 20 + (10**18).to_bytes(32, "big")
    amount_nonzero = sum(1 for b in (10**18).to_bytes(32, "big") if b)
    expected = 21_000 + (4 + 20 + amount_nonzero) * 16 + (12 + 32 - amount_nonzero) * 4
    assert intrinsic_gas(data) == expected


def test_intrinsic_gas_of_a_creation_adds_init_code_words_and_access_lists_add_their_own():
    code = bytes(range(1, 34))  # 33 non-zero bytes: two words of init code
    assert intrinsic_gas(code, create=True) == 53_000 + 33 * 16 + 2 * 2
    access = [("0x" + "11" * 20, ["0x01", "0x02"]), ("0x" + "22" * 20, [])]
    assert intrinsic_gas(access_list=access) == 21_000 + 2 * 2_400 + 2 * 1_900


def test_intrinsic_gas_agrees_with_the_devnet_evm_on_random_calldata():
    rng = random.Random(5)
    for _ in range(50):
        data = bytes(rng.choice([0, 0, rng.randrange(256)]) for _ in range(rng.randrange(200)))
        create = rng.random() < 0.3
        request = evm.CallRequest(sender=bytes(20), to=None if create else bytes(20), data=data)
        assert intrinsic_gas(data, create=create) == evm.intrinsic_gas(request)


def test_intrinsic_gas_refuses_bad_calldata():
    with pytest.raises(ValueError, match="whole bytes"):
        intrinsic_gas("0xabc")
    with pytest.raises(ValueError, match="not hex"):
        intrinsic_gas("0xzz")
    with pytest.raises(TypeError, match="bytes or 0x hex"):
        intrinsic_gas(12)


# -- estimate_accuracy -------------------------------------------------------------------------


def test_estimate_accuracy_gives_the_overshoot_and_keeps_failures_as_missing():
    frame = pd.DataFrame(
        {"gas_estimate": pd.array([50_750, None, 21_000], dtype="Int64"),
         "gas_needed": pd.array([50_000, None, 21_000], dtype="Int64"),
         "error": pd.Series([None, "execution reverted", None], dtype="str")}
    )
    out = estimate_accuracy(frame, labels=["burn", "revert", "send"])
    assert out["transaction"].tolist() == ["burn", "revert", "send"]
    assert out["overshoot_gas"].tolist() == [750, pd.NA, 0]
    assert out["overshoot_ratio"].iloc[0] == 750 / 50_000
    assert np.isnan(out["overshoot_ratio"].iloc[1]) and out["overshoot_ratio"].iloc[2] == 0.0
    assert out["error"].tolist()[1] == "execution reverted" and out["error"].isna().sum() == 2
    assert estimate_accuracy(frame)["transaction"].tolist() == ["tx 0", "tx 1", "tx 2"]
    with pytest.raises(ValueError, match="2 names for 3 transactions"):
        estimate_accuracy(frame, labels=["a", "b"])
    with pytest.raises(TypeError, match="gas_needed"):
        estimate_accuracy(frame.drop(columns="gas_needed"))


# -- cost_over_history and cost_summary --------------------------------------------------------


@pytest.fixture
def fees() -> pd.DataFrame:
    return pd.DataFrame(
        {"block_number": [100, 101, 102], "base_fee_wei": [10**9, 3 * 10**9, 2 * 10**9],
         "reward_p50_wei": pd.array([10**8, None, 5 * 10**8], dtype="Int64")}
    )


def test_cost_over_history_prices_each_block_exactly(fees):
    costs = cost_over_history({"a": 21_000, "b": 100_000}, fees, priority_fee_wei=10**8)
    assert list(costs.columns) == list(COST_HISTORY_DTYPES)
    assert costs["transaction"].tolist() == ["a"] * 3 + ["b"] * 3
    assert costs["cost_wei"].tolist()[:3] == [21_000 * 11 * 10**8, 21_000 * 31 * 10**8,
                                               21_000 * 21 * 10**8]
    assert costs["cost_eth"].iloc[3] == 100_000 * 11 * 10**8 / 10**18
    assert costs["cost_gwei"].iloc[0] == 23_100.0  # 21,000 gas at 1.1 gwei
    assert costs.dtypes.astype(str).to_dict() == COST_HISTORY_DTYPES


def test_cost_over_history_can_tip_a_reward_percentile_and_skips_blocks_without_it(fees):
    costs = cost_over_history(50_000, fees, reward_percentile=50)
    assert costs["block_number"].tolist() == [100, 102]
    assert costs["priority_fee_wei"].tolist() == [10**8, 5 * 10**8]
    assert costs["cost_wei"].tolist() == [50_000 * 11 * 10**8, 50_000 * 25 * 10**8]
    assert costs["transaction"].unique().tolist() == ["transaction"]
    with pytest.raises(ValueError, match="reward_p90_wei"):
        cost_over_history(50_000, fees, reward_percentile=90)
    with pytest.raises(ValueError, match="not both"):
        cost_over_history(50_000, fees, reward_percentile=50, priority_fee_wei=1)
    with pytest.raises(TypeError, match="must be an int"):
        cost_over_history({"x": 1.5}, fees)
    with pytest.raises(ValueError, match=">= 0"):
        cost_over_history(-1, fees)


def test_cost_summary_gives_the_spread_and_where_it_was_cheapest(fees):
    summary = cost_summary(cost_over_history({"a": 21_000, "b": 42_000}, fees))
    assert summary.index.tolist() == ["a", "b"]
    a = summary.loc["a"]
    assert a["blocks"] == 3 and a["gas"] == 21_000
    assert a["min_eth"] == 21_000 * 10**9 / 10**18 and a["max_eth"] == 21_000 * 3 * 10**9 / 10**18
    assert a["median_eth"] == 21_000 * 2 * 10**9 / 10**18
    assert (a["cheapest_block"], a["dearest_block"]) == (100, 101)
    assert a["max_over_min"] == 3.0
    assert summary.loc["b", "min_eth"] == 2 * a["min_eth"]
