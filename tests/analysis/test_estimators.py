"""feeslab.analysis.estimators against vectors derived by hand from each cited source's
arithmetic (geth's oracle, MetaMask's fee-history fallback, web3.py's fallback), against the
devnet's Gas API, and on its input checks.

The expected numbers below are worked out in the comments from the source lines they cite,
not produced by the functions under test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from feeslab.analysis import estimators
from feeslab.frames.base_fees import fee_history_frame

GWEI = 10**9


def _transactions(tips: dict[int, list[int]]) -> pd.DataFrame:
    rows = [(block, tip) for block, values in tips.items() for tip in values]
    return pd.DataFrame({
        "block_number": np.array([b for b, _ in rows], dtype=np.int64),
        "effective_tip_wei": pd.array([t for _, t in rows], dtype="Int64"),
    })


def _history(base: list[int], rewards: dict[float, list[int]], first: int = 100) -> pd.DataFrame:
    n = len(base)
    columns = {
        "block_number": np.arange(first, first + n),
        "base_fee_wei": base,
        "gas_used_ratio": [0.5] * n,
        "base_fee_per_blob_gas_wei": [None] * n,
        "blob_gas_used_ratio": [np.nan] * n,
    }
    for p, values in rewards.items():
        columns[f"reward_p{p:g}_wei".replace(".", "_")] = values
    frame = fee_history_frame(columns, list(rewards))
    frame.attrs = {"chain_id": 1, "source": "test vectors"}
    return frame


# -- geth: eth/gasprice/gasprice.go at 02b73d4e ------------------------------------------------


def test_geth_oracle_default_config_hand_vector():
    # blocks 1..20, each with tips b, b + 100 and b + 200 gwei, one of 1 wei (below geth's
    # DefaultIgnorePrice of 2 wei: skipped, line 272) and one of 900 gwei (beyond the 3
    # cheapest: sampleNumber, lines 37 and 278)
    tips = {b: [1, (b + 200) * GWEI, b * GWEI, 900 * GWEI, (b + 100) * GWEI]
            for b in range(1, 21)}
    # from block 1 every head is one (geth samples fewer blocks below 20): head 20's window
    out = estimators.geth_oracle(_transactions(tips), start=1, stop=21).iloc[[-1]]
    # the pool at head 20: 1..20, 101..120, 201..220 gwei (60 values); line 223:
    # results[(60 - 1) * 60 / 100] = results[35], the 36th smallest: 101 + 15 = 116 gwei
    assert out["block_number"].tolist() == [20]
    assert out["max_priority_fee_per_gas_wei"].tolist() == [116 * GWEI]
    assert out["max_fee_per_gas_wei"].tolist() == [116 * GWEI]
    assert not out["extended"].any()


def test_geth_oracle_cap_hand_vector():
    # every tip 600 gwei: the 36th is 600 gwei, above DefaultMaxPrice (500 gwei, line 40):
    # lines 225-227 answer the cap
    tips = {b: [600 * GWEI] * 3 for b in range(101, 121)}
    out = estimators.geth_oracle(_transactions(tips), start=101, stop=121)
    assert out["max_priority_fee_per_gas_wei"].tolist() == [500 * GWEI]


def test_geth_oracle_empty_block_takes_the_last_price_hand_vector():
    # two blocks a window, 60th percentile: block 11 has tips 5, 6, 7 gwei, block 12 none,
    # block 13 has 8, 9, 10 gwei. Head 12: block 12 gives lastPrice (lines 206-208), 0 at
    # first (startPrice nil -> 0, lines 118-120): pool [0, 5, 6, 7], element
    # (4 - 1) * 60 / 100 = 1: 5 gwei. Head 13: block 12 gives lastPrice = 5 gwei: pool
    # [5, 8, 9, 10], element 1: 8 gwei
    tips = {11: [7 * GWEI, 5 * GWEI, 6 * GWEI], 13: [10 * GWEI, 9 * GWEI, 8 * GWEI]}
    out = estimators.geth_oracle(_transactions(tips), start=11, stop=14, blocks=2)
    assert out["block_number"].tolist() == [12, 13]
    assert out["max_priority_fee_per_gas_wei"].tolist() == [5 * GWEI, 8 * GWEI]
    # an empty block gives one value: geth would fetch another block (lines 212-217)
    assert out["extended"].tolist() == [True, True]


def test_geth_oracle_never_samples_block_zero():
    # `for sent < checkBlocks && number > 0` (line 189): block 0's tips are not in the pool
    tips = {0: [1000 * GWEI] * 3, 1: [2 * GWEI, 3 * GWEI, 4 * GWEI]}
    out = estimators.geth_oracle(_transactions(tips), start=0, stop=2, blocks=20)
    # head 1: pool [2, 3, 4] gwei, element (3 - 1) * 60 / 100 = 1: 3 gwei
    assert out.set_index("block_number").loc[1, "max_priority_fee_per_gas_wei"] == 3 * GWEI


def test_geth_gas_price_adds_the_head_base_fee():
    tips = {b: [(b - 100) * GWEI] * 3 for b in range(101, 121)}
    oracle = estimators.geth_oracle(_transactions(tips), start=101, stop=121)
    history = _history([7 * GWEI + 1] * 20, {}, first=101)
    out = estimators.geth_gas_price(oracle, history)
    # api.go lines 78-87: tipcap + head.BaseFee; pool 1..20 x3, element 35 of 60: 12 gwei
    assert out["max_fee_per_gas_wei"].tolist() == [12 * GWEI + 7 * GWEI + 1]


# -- MetaMask: calculateGasFeeEstimatesForPriorityLevels.ts at 40acc6c8 ------------------------


def test_metamask_levels_hand_vectors():
    base = [10 * GWEI] * 4 + [30 * GWEI + 1]
    history = _history(base, {
        10: [3 * GWEI, 1 * GWEI, 4 * GWEI, 1 * GWEI, 5 * GWEI],
        20: [1 * GWEI, 1 * GWEI, 1 * GWEI, 2 * GWEI, 2 * GWEI],
        30: [3_333_333_333] * 5,
    })
    low = estimators.metamask_fee_history(history, "low")
    medium = estimators.metamask_fee_history(history, "medium")
    high = estimators.metamask_fee_history(history, "high")
    assert low["block_number"].tolist() == [104]
    # low: medianOf sorts [1, 1, 3, 4, 5] and takes index floor(4 / 2) = 2: 3 gwei; x 94 / 100
    # = 2.82 gwei (>= 1 gwei); base 30,000,000,001 x 110 / 100 = 33,000,000,001 (floored)
    assert (low["max_priority_fee_per_gas_wei"].item(), low["max_fee_per_gas_wei"].item()) == (
        2_820_000_000, 33_000_000_001 + 2_820_000_000)
    # medium: median 1 gwei x 97 / 100 = 0.97 gwei, below the 1.5 gwei floor (BN.max);
    # 30,000,000,001 x 120 / 100 = 36,000,000,001
    assert (medium["max_priority_fee_per_gas_wei"].item(),
            medium["max_fee_per_gas_wei"].item()) == (1_500_000_000, 37_500_000_001)
    # high: 3,333,333,333 x 98 = 326,666,666,634, / 100 floored: 3,266,666,666;
    # 30,000,000,001 x 125 = 3,750,000,000,125, / 100: 37,500,000,001
    assert (high["max_priority_fee_per_gas_wei"].item(),
            high["max_fee_per_gas_wei"].item()) == (3_266_666_666, 37_500_000_001 + 3_266_666_666)


def test_metamask_slides_over_every_head():
    base = [GWEI * (i + 1) for i in range(8)]
    history = _history(base, {10: [GWEI * 10 * (i + 1) for i in range(8)]})
    out = estimators.metamask_fee_history(history, "low")
    assert out["block_number"].tolist() == [104, 105, 106, 107]
    # each head's median is the middle of its 5 rising rewards: heads 104..107 -> 30..60 gwei
    expected = [m * GWEI * 94 // 100 for m in (30, 40, 50, 60)]
    assert out["max_priority_fee_per_gas_wei"].tolist() == expected
    assert out["max_fee_per_gas_wei"].tolist() == [
        b * 110 // 100 + t for b, t in zip(base[4:], expected, strict=True)]


# -- web3.py: web3/_utils/fee_utils.py at 2f907b87 ---------------------------------------------


def test_web3py_fallback_hand_vectors():
    # 10 blocks of 5th-percentile rewards, two zero: the non-zero mean is
    # (1.2 + 1.3 + ... ) / 8 ; here eight values summing to 10,000,000,004 wei:
    # 10,000,000,004 / 8 = 1,250,000,000.5, round() half to even: 1,250,000,000
    rewards = [0, 1_250_000_000, 1_250_000_000, 0, 1_250_000_000, 1_250_000_000,
               1_250_000_000, 1_250_000_000, 1_250_000_000, 1_250_000_004]
    history = _history([20 * GWEI] * 10, {5: rewards})
    out = estimators.web3py_fallback(history)
    assert out["max_priority_fee_per_gas_wei"].tolist() == [1_250_000_000]
    assert out["max_fee_per_gas_wei"].tolist() == [1_250_000_000 + 40 * GWEI]
    # above PRIORITY_FEE_MAX (1.5 gwei): clamped; all zero: divisor 1, mean 0 -> 1 gwei
    high = estimators.web3py_fallback(_history([GWEI] * 10, {5: [9 * GWEI] * 10}))
    zero = estimators.web3py_fallback(_history([GWEI] * 10, {5: [0] * 10}))
    assert high["max_priority_fee_per_gas_wei"].item() == 1_500_000_000
    assert zero["max_priority_fee_per_gas_wei"].item() == 1_000_000_000


# -- ethers and viem arithmetic on large values --------------------------------------------------


def test_ethers_and_viem_floor_as_bigint():
    history = _history([10**16 + 7], {})  # 10 million gwei: still exact
    tip = pd.DataFrame({"block_number": [100], "max_fee_per_gas_wei": [3],
                        "max_priority_fee_per_gas_wei": [3]})  # fmt: skip
    ethers = estimators.ethers_fee_data(history, priority_fee=tip)
    viem = estimators.viem_fees(history, priority_fee=tip)
    assert ethers["max_fee_per_gas_wei"].item() == 2 * (10**16 + 7) + 3
    # (10**16 + 7) * 12 / 10 = 12,000,000,000,000,008.4 -> bigint division floors: ...008
    assert viem["max_fee_per_gas_wei"].item() == 12_000_000_000_000_008 + 3
    assert estimators.ethers_fee_data(history)["max_priority_fee_per_gas_wei"].item() == GWEI


def test_inputs_are_checked():
    history = _history([GWEI] * 10, {5: [GWEI] * 10})
    with pytest.raises(ValueError, match="reward_p10_wei"):
        estimators.metamask_fee_history(history, "low")
    with pytest.raises(ValueError, match="level"):
        estimators.metamask_fee_history(history, "urgent")
    with pytest.raises(ValueError, match="consecutive"):
        estimators.web3py_fallback(history.iloc[[0, 2, 3]])
    with pytest.raises(ValueError, match="priority_fee"):
        estimators.viem_fees(history, priority_fee=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        estimators.viem_fees(history, priority_fee=history, base_fee_multiplier=0.9)
    huge = _history([2**62] * 10, {5: [GWEI] * 10})
    with pytest.raises(ValueError, match="int64"):
        estimators.ethers_fee_data(huge)


def test_blob_fee_cap_is_exact():
    history = _history([GWEI] * 3, {})
    history["base_fee_per_blob_gas_wei"] = pd.array([None, 3, 2**62 + 1], dtype="Int64")
    out = estimators.blob_fee_cap(history, k=1.5)
    assert out["block_number"].tolist() == [101, 102]
    assert out["max_fee_per_blob_gas_wei"].tolist() == [4, (2**62 + 1) * 3 // 2]


# -- the Gas API: the devnet's service ------------------------------------------------------------


def test_gas_api_fees_are_the_devnets_answers(lab, truth):
    from feeslab.devnet import gasapi

    head = truth.head()
    answer = lab.gas.get(1, "suggestedGasFees")
    recorded = estimators.suggested_gas_fees_frame({head: answer}, "medium")
    assert answer == gasapi.suggested_gas_fees(truth)
    # the rule from the same inputs: the last 5 blocks' eth_feeHistory rewards the service
    # uses (over their transactions), its base fees
    numbers = list(range(head - 4, head + 1))
    rewards = lab.fee_history(head - 4, head + 1, percentiles=[10, 20, 30])
    assert rewards["block_number"].tolist() == numbers
    columns = ["reward_p10_wei", "reward_p20_wei", "reward_p30_wei"]
    table = rewards[columns].astype(int).values.tolist()
    history = _history(
        [truth.base_fee(n) for n in numbers] + [truth.next_base_fee(head)],
        {p: [row[k] for row in table] + [None] for k, p in enumerate((10, 20, 30))},
        first=head - 4,
    )
    history.loc[len(history) - 1, "gas_used_ratio"] = np.nan  # the block after the newest
    for level in ("low", "medium", "high"):
        ours = estimators.gas_api_fees(history, level)
        served = estimators.suggested_gas_fees_frame({head: answer}, level)
        assert ours["block_number"].tolist() == [head]
        assert ours.to_dict("list") == served.to_dict("list")
    assert recorded.attrs["source"] == "Gas API answers, recorded block by block"


def _geth_one_head(tips: dict[int, list[int]], head: int, first: int, last_price: int) -> int:
    """SuggestTipCap at one head, as gasprice.go's loop reads (without the timing-dependent
    extra blocks): blocks head, head - 1, ... (20 of them, never block 0 or before ``first``),
    each its 3 cheapest tips >= 2 wei or else [last_price]; element (len - 1) * 60 / 100."""
    pool: list[int] = []
    for number in range(head, max(head - 20, 0, first - 1), -1):
        values = sorted(t for t in tips.get(number, []) if t >= 2)[:3]
        pool.extend(values or [last_price])
    pool.sort()
    return min(pool[(len(pool) - 1) * 60 // 100], 500 * GWEI) if pool else last_price


def test_geth_oracle_matches_a_loop_over_every_head():
    rng = np.random.default_rng(29)
    first, stop = 1, 140
    tips = {}
    for number in range(first, stop):
        count = int(rng.choice([0, 1, 2, 3, 5, 8], p=[0.1, 0.1, 0.1, 0.2, 0.3, 0.2]))
        tips[number] = [int(t) for t in rng.integers(0, 700 * GWEI, count)] + [1] * (number % 2)
    out = estimators.geth_oracle(_transactions(tips), start=first, stop=stop)
    last, expected = 0, []
    for head in range(first, stop):
        last = _geth_one_head(tips, head, first, last)
        expected.append(last)
    assert out["block_number"].tolist() == list(range(first, stop))
    assert out["max_priority_fee_per_gas_wei"].tolist() == expected
    # a frame starting at block 40 has full windows from head 59; with geth's last answer
    # (at head 58) as its start price it answers as the whole chain did
    later = estimators.geth_oracle(_transactions({k: v for k, v in tips.items() if k >= 40}),
                                   start=40, stop=stop, start_price=expected[58 - first])
    assert later["block_number"].iloc[0] == 59
    assert later["max_priority_fee_per_gas_wei"].tolist() == expected[59 - first:]
