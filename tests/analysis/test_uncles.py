"""feeslab.analysis.uncles: intervals, rates, depth, rewards, miners and the delay model.

The reward rules are written out here from the protocol (Yellow Paper 11.3, EIP-649, EIP-1234,
EIP-3675, geth's ``accumulateRewards``), not taken from feeslab. The devnet's uncle mechanism
(its propagation delay, block times and pools) is read in-process from the simulator that
generated the chain the tests scan, so that the estimators are checked against what really
produced the data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from feeslab.analysis import uncles as U
from feeslab.errors import ConfigError
from feeslab.protocol.chainspec import ChainSpec

DATA = Path(__file__).resolve().parents[1] / "data"

# -- protocol rules, written from the specifications --------------------------------------------

ETHER = 10**18
# EIP-609: Byzantium at 4,370,000; EIP-1716: Petersburg/Constantinople at 7,280,000;
# EIP-3675 / EIP-6953: the first proof-of-stake block, 15,537,394.
MAINNET_BYZANTIUM, MAINNET_CONSTANTINOPLE, MAINNET_MERGE = 4_370_000, 7_280_000, 15_537_394


def reference_block_reward(number: int, byzantium: int, constantinople: int, merge: int) -> int:
    """Frontier 5 ETH; EIP-649 3 ETH; EIP-1234 2 ETH; EIP-3675 nothing [wei]."""
    if number >= merge:
        return 0
    if number >= constantinople:
        return 2 * ETHER
    if number >= byzantium:
        return 3 * ETHER
    return 5 * ETHER


def reference_uncle_reward(including: int, uncle_number: int, block_reward: int) -> int:
    """geth accumulateRewards: r = (U + 8 - N) * R / 8, in big-integer arithmetic [wei]."""
    return (uncle_number + 8 - including) * block_reward // 8


def reference_nephew_reward(block_reward: int) -> int:
    """geth accumulateRewards: the includer gets R / 32 per uncle [wei]."""
    return block_reward // 32


# -- the devnet's chain 1, in-process ------------------------------------------------------------


@pytest.fixture(scope="module")
def chain1(truth):
    """Frames of the whole proof-of-work era of the devnet's chain 1 and its ground truth.

    ``fork_p`` is the probability the simulator gave each height of forking: it draws a rival
    block within the propagation delay of the parent's gas (``_pow_step`` passes the parent
    state's ``gas_used``), against the expected block time difficulty / hash rate.
    """
    history = truth.history
    merge = truth.params.merge_block
    numbers = np.arange(merge)
    gas = np.array(truth.gas_used_range(0, merge), dtype=np.int64)
    stamps = np.array(truth.timestamp_range(0, merge), dtype=np.int64)
    pool_of = {p.address: i for i, p in enumerate(history._pools)}
    uncle_rows, counts = [], np.zeros(merge, dtype=np.int64)
    for n in range(merge):
        for i, uncle in enumerate(truth.block(n).uncles):
            uncle_rows.append((n, i, uncle.number, n - uncle.number, pool_of[uncle.coinbase]))
        counts[n] = len(truth.block(n).uncles)
    blocks = pd.DataFrame(
        {
            "block_number": numbers,
            "timestamp": pd.to_datetime(stamps, unit="s", utc=True),
            "miner": truth.miner_index(0, merge).astype(np.int64),
            "gas_used": gas,
            "uncle_count": counts,
        }
    )
    uncles = pd.DataFrame(
        uncle_rows, columns=["block_number", "uncle_index", "uncle_number", "depth", "miner"]
    )
    difficulty = np.array(history._difficulty[:merge], dtype=float)
    block_time = np.array(
        [difficulty[n - 1] / history._hashrate(n) if n else np.nan for n in numbers]
    )
    delay = np.array(
        [history._propagation_delay(n, int(gas[n - 1])) if n else 0.0 for n in numbers]
    )
    fork_p = -np.expm1(-delay / block_time)
    fork_p[0] = 0.0
    return {"blocks": blocks, "uncles": uncles, "fork_p": fork_p, "merge": merge,
            "history": history, "block_time": block_time}


def scan_frame(counts, start=0):
    return pd.DataFrame(
        {
            "block_number": np.arange(start, start + len(counts), dtype=np.int64),
            "uncle_count": np.asarray(counts, dtype=np.int64),
        }
    )


# -- intervals -----------------------------------------------------------------------------------


def binomial_tail_at_least(x: int, n: int, p: float) -> float:
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(x, n + 1))


def poisson_cdf(k: int, mean: float) -> float:
    return sum(math.exp(-mean + j * math.log(mean) - math.lgamma(j + 1)) for j in range(k + 1))


@pytest.mark.parametrize(("x", "n"), [(81, 263), (15, 148), (0, 20), (1, 29), (29, 29), (7, 90)])
def test_clopper_pearson_bounds_are_the_exact_binomial_tails(x, n):
    table = U.uncle_rate(scan_frame([1] * x + [0] * (n - x)), method="clopper-pearson")
    lower, upper = table.loc["all", ["lower", "upper"]]
    if x == 0:
        assert lower == 0.0
    else:
        assert binomial_tail_at_least(x, n, lower) == pytest.approx(0.025, rel=1e-7)
    if x == n:
        assert upper == 1.0
    else:
        assert 1 - binomial_tail_at_least(x + 1, n, upper) == pytest.approx(0.025, rel=1e-7)


@pytest.mark.parametrize(("x", "n"), [(81, 263), (15, 148), (0, 20), (1, 29), (29, 29)])
def test_wilson_bounds_invert_the_score_test(x, n):
    # Wilson's bounds are the p at which |x/n - p| = z sqrt(p (1 - p) / n)
    table = U.uncle_rate(scan_frame([1] * x + [0] * (n - x)), confidence=0.9)
    z = NormalDist().inv_cdf(0.95)
    for p in table.loc["all", ["lower", "upper"]]:
        assert abs(x / n - p) == pytest.approx(z * math.sqrt(p * (1 - p) / n), abs=1e-12)


def test_published_interval_values():
    # Newcombe, Statistics in Medicine 17 (1998) 857-872, table I: 81/263 and 15/148
    wilson = U.uncle_rate(scan_frame([1] * 81 + [0] * 182))
    exact = U.uncle_rate(scan_frame([1] * 15 + [0] * 133), method="clopper-pearson")
    assert wilson.loc["all", ["lower", "upper"]].round(4).tolist() == [0.2553, 0.3662]
    assert exact.loc["all", ["lower", "upper"]].round(4).tolist() == [0.0578, 0.1617]


@pytest.mark.parametrize("k", [0, 1, 4, 10, 57, 400])
def test_garwood_bounds_are_the_exact_poisson_tails(k):
    n = 1000
    table = U.uncle_rate(scan_frame([1] * k + [0] * (n - k)), method="garwood")
    lower, upper = table.loc["all", ["lower", "upper"]] * n
    if k == 0:
        assert lower == 0.0
        assert upper == pytest.approx(-math.log(0.025), rel=1e-9)  # 3.689
    else:
        assert 1 - poisson_cdf(k - 1, lower) == pytest.approx(0.025, rel=1e-7)
    assert poisson_cdf(k, upper) == pytest.approx(0.025, rel=1e-7)


def test_intervals_hold_at_large_counts_and_narrow_with_confidence():
    blocks = scan_frame(np.r_[np.ones(13_855), np.zeros(151_145)])
    rows = {
        (method, level): U.uncle_rate(blocks, method=method, confidence=level).loc["all"]
        for method in ("wilson", "clopper-pearson", "garwood")
        for level in (0.8, 0.99)
    }
    rate = 13_855 / 165_000
    normal = math.sqrt(rate * (1 - rate) / 165_000)
    for (_, level), row in rows.items():
        assert row["rate"] == rate
        z = NormalDist().inv_cdf(0.5 + level / 2)
        # at this size every method is close to the normal approximation
        assert row["upper"] - row["lower"] == pytest.approx(2 * z * normal, rel=0.05)


# -- rates -----------------------------------------------------------------------------------


def test_uncle_rate_counts_blocks_and_uncles_by_group():
    blocks = scan_frame([0, 1, 0, 2, 0, 0, 1, 0], start=10)
    blocks["half"] = ["a"] * 4 + ["b"] * 4
    whole = U.uncle_rate(blocks, method="garwood")
    assert whole.loc["all", ["blocks", "uncles"]].tolist() == [8, 4]
    assert whole.loc["all", "rate"] == 0.5
    by = U.uncle_rate(blocks.iloc[::-1], by="half")
    assert list(by.index) == ["a", "b"]  # in block order, not in row order
    assert by["blocks"].tolist() == [4, 4]
    assert by["uncles"].tolist() == [3, 1]
    assert by.index.name == "half"
    assert (by["lower"] <= by["rate"]).all()
    assert (by["rate"] <= by["upper"]).all()


def test_binomial_methods_refuse_more_uncles_than_blocks_and_garwood_does_not():
    blocks = scan_frame([2, 2, 1])
    with pytest.raises(ValueError, match=r"5 uncles in 3 blocks .* method='garwood'"):
        U.uncle_rate(blocks)
    assert U.uncle_rate(blocks, method="garwood").loc["all", "rate"] == pytest.approx(5 / 3)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: U.uncle_rate(pd.DataFrame({"block_number": [1]})), ValueError, "uncle_count"),
        (lambda: U.uncle_rate([1, 2]), TypeError, "must be a pandas DataFrame"),
        (lambda: U.uncle_rate(scan_frame([0, 1]), confidence=1.5), ValueError, r"\(0, 1\)"),
        (lambda: U.uncle_rate(scan_frame([0]), method="normal"), ValueError, "wilson"),
        (lambda: U.uncle_rate(scan_frame([0, 1]), by=["x"]), ValueError, "1 labels for 2"),
        (lambda: U.uncle_rate(pd.concat([scan_frame([0]), scan_frame([1])])), ValueError,
         "block 0 twice"),
        (lambda: U.uncle_rate_by_window(scan_frame([0]), 0), ValueError, "positive"),
        (lambda: U.uncle_rate_by_day(scan_frame([0])), ValueError, "timestamp"),
    ],
)
def test_bad_rate_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_rate_by_window_aligns_windows_and_leaves_out_unscanned_ones():
    blocks = pd.concat([scan_frame([1, 0, 0, 0], start=998), scan_frame([1] * 3, start=5_000)])
    table = U.uncle_rate_by_window(blocks, 1_000)
    assert table.index.tolist() == [0, 1_000, 5_000]
    assert table.index.name == "start_block"
    assert table["stop_block"].tolist() == [1_000, 2_000, 6_000]
    assert table["blocks"].tolist() == [2, 2, 3]
    assert table["uncles"].tolist() == [1, 0, 3]


def test_rate_by_day_groups_utc_days_with_count_intervals():
    stamps = pd.to_datetime(["2024-01-01 23:59:50", "2024-01-02 00:00:03",
                             "2024-01-02 00:00:20", "2024-01-02 13:00:00"], utc=True)
    blocks = scan_frame([1, 0, 2, 1])
    blocks["timestamp"] = stamps
    table = U.uncle_rate_by_day(blocks)
    assert table.index.tolist() == list(pd.to_datetime(["2024-01-01", "2024-01-02"], utc=True))
    assert table["blocks"].tolist() == [1, 3]
    assert table["uncles"].tolist() == [1, 3]
    # the count interval is Garwood's; the rate interval is it per block
    assert table["uncles_upper"].iloc[1] == pytest.approx(8.767, abs=1e-3)
    assert table["upper"].iloc[1] == pytest.approx(table["uncles_upper"].iloc[1] / 3)
    naive = blocks.assign(timestamp=stamps.tz_localize(None))
    with pytest.raises(TypeError, match="tz-aware"):
        U.uncle_rate_by_day(naive)


def test_rate_interval_covers_the_devnet_fork_probability_over_http(lab, chain1):
    """A 3,000-block scan through the service: its interval holds the simulator's rate."""
    start, stop = 40_000, 43_000
    scan = lab.uncles(start, stop)
    expected = chain1["fork_p"][start - 1 : stop - 1].mean()  # uncles trail their fork by >= 1
    for method in ("wilson", "clopper-pearson", "garwood"):
        row = U.uncle_rate(scan.blocks, method=method).loc["all"]
        assert row["blocks"] == 3_000
        assert row["lower"] < expected < row["upper"], (method, row.to_dict(), expected)
        # and the interval is informative: narrower than +/- 25 % of the rate
        assert row["upper"] - row["lower"] < 0.5 * expected


def test_window_and_day_intervals_cover_the_mechanism_about_as_often_as_they_say(chain1):
    blocks, fork_p = chain1["blocks"], chain1["fork_p"]
    expected = pd.Series(fork_p).groupby(blocks["block_number"] // 1_000).mean().to_numpy()
    for method in ("wilson", "clopper-pearson"):
        table = U.uncle_rate_by_window(blocks, 1_000, method=method)
        covered = (table["lower"].to_numpy() < expected) & (expected < table["upper"].to_numpy())
        assert len(table) == 165
        assert 0.90 <= covered.mean() <= 0.99, (method, covered.mean())
    days = U.uncle_rate_by_day(blocks)
    day_of = blocks["timestamp"].dt.floor("D")
    expected_count = pd.Series(fork_p).groupby(day_of).sum().reindex(days.index).to_numpy()
    inside = (days["uncles_lower"].to_numpy() < expected_count) & (
        expected_count < days["uncles_upper"].to_numpy()
    )
    assert len(days) > 20
    assert 0.85 <= inside.mean() <= 1.0, inside.mean()


# -- depth ---------------------------------------------------------------------------------------


def test_depth_distribution_lists_every_depth_with_shares():
    uncles = pd.DataFrame({"depth": [1, 1, 1, 2, 4]})
    table = U.depth_distribution(uncles)
    assert table.index.tolist() == [1, 2, 3, 4, 5, 6]
    assert table["uncles"].tolist() == [3, 1, 0, 1, 0, 0]
    assert table["share"].sum() == pytest.approx(1.0)
    assert table["reward_fraction"].tolist() == [7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8]
    assert table.loc[3, "lower"] == 0.0
    assert table.loc[3, "upper"] > 0.0
    with pytest.raises(ValueError, match=r"depth 7 is outside 1\.\.6"):
        U.depth_distribution(pd.DataFrame({"depth": [1, 7]}))


def test_depth_distribution_of_the_devnet_falls_with_depth(chain1):
    table = U.depth_distribution(chain1["uncles"], method="clopper-pearson")
    assert table["uncles"].sum() == len(chain1["uncles"])
    # most stale blocks reach the next miner in time; each extra block of lag is rarer
    assert table["share"].is_monotonic_decreasing
    assert table.loc[1, "lower"] > 0.5


# -- rewards -------------------------------------------------------------------------------------


def test_mainnet_reward_schedule_follows_the_eips():
    schedule = U.reward_schedule(1)
    assert schedule["era"].tolist() == ["genesis", "byzantium", "constantinople", "merge"]
    assert schedule["from_block"].tolist() == [0, MAINNET_BYZANTIUM, MAINNET_CONSTANTINOPLE,
                                               MAINNET_MERGE]
    assert schedule["uncles_allowed"].tolist() == [True, True, True, False]
    for n in (0, 1_150_000, MAINNET_BYZANTIUM - 1, MAINNET_BYZANTIUM, MAINNET_CONSTANTINOPLE - 1,
              MAINNET_CONSTANTINOPLE, MAINNET_MERGE - 1, MAINNET_MERGE, 20_000_000):  # fmt: skip
        got = U.block_reward([n], chain_id=1).iloc[0]
        assert got == reference_block_reward(
            n, MAINNET_BYZANTIUM, MAINNET_CONSTANTINOPLE, MAINNET_MERGE
        ), n
        assert isinstance(got, int)


def test_devnet_heights_follow_the_devnets_own_forks():
    from feeslab.devnet.chain import devnet_params

    params = devnet_params()[1]
    byzantium, constantinople = params.forks["byzantium"], params.forks["constantinople"]
    merge = params.merge_block
    assert (byzantium, constantinople, merge) != (MAINNET_BYZANTIUM, MAINNET_CONSTANTINOPLE,
                                                  MAINNET_MERGE)
    numbers = [0, byzantium - 1, byzantium, constantinople - 1, constantinople, merge - 1, merge]
    got = U.block_reward(numbers, spec=ChainSpec.devnet(1)).tolist()
    assert got == [reference_block_reward(n, byzantium, constantinople, merge) for n in numbers]
    # the devnet's simulator pays the same
    assert got == [params.block_reward(n) for n in numbers]
    eras = U.reward_era(pd.Series(numbers, index=list("abcdefg")), spec="mainnet@devnet")
    assert eras.index.tolist() == list("abcdefg")
    assert eras.tolist() == ["genesis", "genesis", "byzantium", "byzantium", "constantinople",
                             "constantinople", "merge"]


def test_other_chains_come_from_chains_json():
    sepolia = U.reward_schedule(11155111)
    assert sepolia["block_reward_wei"].tolist() == [2 * ETHER, 0]
    assert sepolia["uncles_allowed"].tolist() == [True, False]
    polygon = U.reward_schedule(ChainSpec.devnet(137))
    assert polygon["uncles_allowed"].tolist() == [False]
    assert polygon["max_depth"].isna().all()
    with pytest.raises(ConfigError, match=r"chain id 5 is not in data/chains\.json"):
        U.reward_schedule(5)
    with pytest.raises(ConfigError, match="no chain spec is labelled 'mainnet@testnet'"):
        U.reward_schedule("mainnet@testnet")


@pytest.mark.parametrize(
    ("heights", "including"),
    [("protocol", 1_000_000), ("protocol", 5_000_000), ("protocol", 15_000_000),
     ("devnet", 10_000), ("devnet", 45_000), ("devnet", 150_000)],
)
def test_uncle_and_nephew_rewards_at_every_depth(heights, including):
    forks = {"protocol": (MAINNET_BYZANTIUM, MAINNET_CONSTANTINOPLE, MAINNET_MERGE),
             "devnet": (30_000, 60_000, 165_000)}[heights]
    R = reference_block_reward(including, *forks)
    depths = np.arange(1, 7)
    uncles = pd.DataFrame({"block_number": including, "uncle_number": including - depths,
                           "depth": depths})  # fmt: skip
    paid = U.uncle_rewards(uncles, spec=ChainSpec.from_chain(1, heights=heights))
    assert paid["uncle_reward_wei"].tolist() == [
        reference_uncle_reward(including, including - int(d), R) for d in depths
    ]
    assert paid["nephew_reward_wei"].tolist() == [reference_nephew_reward(R)] * 6
    assert paid["block_reward_wei"].tolist() == [R] * 6
    assert paid["depth"].tolist() == depths.tolist()  # the input's columns are kept


def test_uncles_where_the_rules_allow_none_are_refused():
    after_merge = pd.DataFrame({"block_number": [MAINNET_MERGE], "depth": [1]})
    with pytest.raises(ValueError, match=r"block 15,537,394 includes an uncle.*merge era"):
        U.uncle_rewards(after_merge, chain_id=1)
    too_deep = pd.DataFrame({"block_number": [100], "depth": [7]})
    with pytest.raises(ValueError, match=r"depth 7; chain 1 allows 1\.\.6"):
        U.uncle_rewards(too_deep, chain_id=1)
    with pytest.raises(ValueError, match="allows none"):
        U.uncle_rewards(pd.DataFrame({"block_number": [5], "depth": [1]}), chain_id=8453)


def test_rewards_by_era_adds_up_exactly(chain1):
    blocks, uncles = chain1["blocks"], chain1["uncles"]
    table = U.rewards_by_era(blocks, uncles, spec=ChainSpec.devnet(1))
    assert table.index.tolist() == ["genesis", "byzantium", "constantinople"]
    forks = (30_000, 60_000, 165_000)
    expected_block = sum(reference_block_reward(int(n), *forks) for n in blocks["block_number"])
    expected_nephew = sum(
        reference_nephew_reward(reference_block_reward(int(n), *forks)) * int(k)
        for n, k in zip(blocks["block_number"], blocks["uncle_count"], strict=True)
    )
    expected_uncle = sum(
        reference_uncle_reward(int(n), int(u), reference_block_reward(int(n), *forks))
        for n, u in zip(uncles["block_number"], uncles["uncle_number"], strict=True)
    )
    assert sum(table["block_rewards_wei"]) == expected_block
    assert sum(table["nephew_rewards_wei"]) == expected_nephew
    assert sum(table["uncle_rewards_wei"]) == expected_uncle
    assert sum(table["issuance_wei"]) == expected_block + expected_nephew + expected_uncle
    assert all(isinstance(v, int) for v in table["issuance_wei"])
    assert table["blocks"].tolist() == [30_000, 30_000, 105_000]
    genesis = table.loc["genesis"]
    assert genesis["block_reward_eth"] == pytest.approx(5.0)
    assert genesis["uncle_share"] == pytest.approx(
        (genesis["nephew_rewards_wei"] + genesis["uncle_rewards_wei"]) / genesis["issuance_wei"]
    )


def test_rewards_by_era_refuses_inconsistent_frames():
    blocks = scan_frame([1, 0], start=100)
    uncles = pd.DataFrame({"block_number": [101], "uncle_number": [100], "depth": [1]})
    with pytest.raises(ValueError, match="block 101: uncle_count is 0 but uncles lists 1"):
        U.rewards_by_era(blocks, uncles, chain_id=1)
    with pytest.raises(ValueError, match="block 500, which is not in blocks"):
        U.rewards_by_era(blocks, uncles.assign(block_number=500), chain_id=1)


# -- miners --------------------------------------------------------------------------------------


def test_herfindahl_index_and_nakamoto_coefficient():
    assert U.herfindahl_index([0.5, 0.3, 0.2]) == pytest.approx(0.38)
    assert U.herfindahl_index([5, 3, 2]) == pytest.approx(0.38)  # counts are normalised
    assert U.herfindahl_index([1] * 8) == pytest.approx(1 / 8)
    assert U.herfindahl_index([1] * 8, unbiased=True) == 0.0
    assert U.herfindahl_index([3, 1], unbiased=True) == pytest.approx((9 + 1 - 4) / (4 * 3))
    assert math.isnan(U.herfindahl_index([0, 0]))
    with pytest.raises(ValueError, match="non-negative"):
        U.herfindahl_index([0.5, -0.1])
    blocks = pd.DataFrame({"miner": list("aaaabbbccd"), "window": [0] * 6 + [1] * 4})
    table = U.miner_concentration(blocks)
    assert table.loc["all", "nakamoto"] == 2  # a + b = 7 of 10
    assert table.loc["all", "top_share"] == 0.4
    per = U.miner_concentration(blocks, by="window")
    assert per["miners"].tolist() == [2, 3]
    assert per.loc[0, "nakamoto"] == 1  # a has 4 of 6


def test_miner_shares_sorted_with_intervals():
    blocks = pd.DataFrame({"miner": list("bbbaacc")})
    table = U.miner_shares(blocks)
    assert table.index.tolist() == ["b", "a", "c"]  # most blocks first, ties by name
    assert table["blocks"].tolist() == [3, 2, 2]
    assert table["share"].sum() == pytest.approx(1.0)
    assert (table["lower"] < table["share"]).all()
    assert (table["share"] < table["upper"]).all()


def test_devnet_concentration_matches_its_configured_pool_shares(chain1):
    history = chain1["history"]
    # Where no fork happened, the block's miner is whoever found a block first: a draw from
    # the pools' hash shares (the fork draw does not look at the miner). Races, where big
    # pools win more often, would bias canonical shares up for them, so they are left out.
    heights = U.fork_heights(chain1["blocks"], chain1["uncles"])
    quiet = heights[~heights["forked"]]
    mean_shares = np.mean(
        [history._pool_shares(int(n)) for n in quiet["block_number"].iloc[::500]], axis=0
    )
    table = U.miner_concentration(quiet)
    assert table.loc["all", "miners"] == 14
    # two random blocks share a producer with probability sum_i (mean share_i)^2
    assert table.loc["all", "hhi_unbiased"] == pytest.approx((mean_shares**2).sum(), abs=0.003)
    shares = U.miner_shares(quiet)
    assert shares.index[0] == int(np.argmax(mean_shares))
    for pool in (0, 3, 6, 13):  # pools 1 and 2 trade places over the chain
        assert shares.loc[pool, "lower"] < mean_shares[pool] < shares.loc[pool, "upper"], pool


def test_miner_uncles_finds_the_pool_that_never_includes_uncles(chain1):
    pools = chain1["history"]._pools
    abstainers = {i for i, p in enumerate(pools) if not p.includes_uncles}
    assert abstainers  # the devnet is configured with one
    table = U.miner_uncles(chain1["blocks"], chain1["uncles"], method="clopper-pearson")
    assert set(table.index[table["including"] == 0]) == abstainers
    others = table.drop(index=list(abstainers))
    for pool in abstainers:
        assert table.loc[pool, "including_upper"] < others["including_lower"].min()
    assert table["stale"].sum() == len(chain1["uncles"])
    produced = table["blocks"] + table["stale"]
    assert table["stale_rate"].to_numpy() == pytest.approx((table["stale"] / produced).to_numpy())


def test_miner_uncles_refuses_uncles_of_unscanned_blocks():
    blocks = pd.DataFrame({"block_number": [1, 2], "miner": ["a", "b"], "uncle_count": [0, 1]})
    uncles = pd.DataFrame({"block_number": [9], "miner": ["c"]})
    with pytest.raises(ValueError, match="uncles of block 9, which is not in blocks"):
        U.miner_uncles(blocks, uncles)


# -- the propagation-delay model -----------------------------------------------------------------


def test_stale_probability_and_implied_delay_are_inverse():
    assert U.stale_probability(1.3, 13.0) == pytest.approx(1 - math.exp(-0.1))
    rates = np.array([0.0, 0.05, 0.08, 0.5])
    delays = U.implied_delay(rates, 13.0)
    assert U.stale_probability(delays, 13.0) == pytest.approx(rates)
    by_era = pd.Series([0.05, 0.08], index=["a", "b"])
    assert U.implied_delay(by_era, 13.0).index.tolist() == ["a", "b"]
    assert isinstance(U.stale_probability(1.0, 13.0), float)
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
        U.implied_delay(1.0, 13.0)
    with pytest.raises(ValueError, match="block_time_s > 0"):
        U.stale_probability(1.0, 0.0)


def test_fork_heights_keeps_only_fully_observed_heights():
    numbers = np.r_[np.arange(100, 121), np.arange(200, 211)]
    blocks = pd.DataFrame(
        {
            "block_number": numbers,
            "timestamp": pd.to_datetime(1_700_000_000 + 13 * numbers, unit="s", utc=True),
            "gas_used": np.arange(len(numbers)) * 1_000,
        }
    )
    uncles = pd.DataFrame(
        {"block_number": [106, 108, 119, 205], "uncle_number": [105, 105, 118, 203]}
    )
    heights = U.fork_heights(blocks, uncles)
    # a height needs its next six blocks scanned: 100..114 and 200..204
    assert heights["block_number"].tolist() == [*range(100, 115), *range(200, 205)]
    assert heights.set_index("block_number")["forks"].to_dict()[105] == 2
    assert heights["forked"].sum() == 2  # 105 and 203; 118 is not fully observed
    assert heights["block_time_s"].tolist() == pytest.approx([13.0] * 20)
    assert "gas_used" in heights  # the blocks' columns come along


def simulate_heights(rng, n, base, slope, block_time):
    gas = rng.uniform(0, 20e6, n)
    p = -np.expm1(-(base + slope * gas / 1e6) / block_time)
    return pd.DataFrame({"gas_used": gas, "block_time_s": block_time, "forked": rng.random(n) < p})


def test_fit_intervals_have_their_stated_coverage_on_simulated_forks():
    rng = np.random.default_rng(1234)
    base, slope = 0.9, 0.06
    hits = np.zeros(2)
    fits = 120
    for _ in range(fits):
        block_time = rng.uniform(11, 15, 8_000)
        fit = U.fit_propagation_delay(simulate_heights(rng, 8_000, base, slope, block_time))
        params = fit.params
        hits += (params["lower"] < [base, slope]).to_numpy() & (
            params["upper"] > [base, slope]
        ).to_numpy()
    coverage = hits / fits
    assert (coverage >= 0.89).all()
    assert (coverage <= 0.99).all()


def test_fit_recovers_the_devnets_configured_propagation_delay(chain1):
    history, merge, blocks = chain1["history"], chain1["merge"], chain1["blocks"].copy()
    # the devnet's delay is linear: base latency falling with progress to the merge, plus gas
    base = history._propagation_delay(0, 0)
    per_mgas = history._propagation_delay(1_000, 1_000_000) - history._propagation_delay(1_000, 0)
    trend = history._propagation_delay(merge, 0) - base
    assert history._propagation_delay(1_000, 5_000_000) == pytest.approx(
        history._propagation_delay(1_000, 0) + 5 * per_mgas
    )
    blocks["parent_gas_used"] = np.r_[0, blocks["gas_used"].to_numpy()[:-1]]
    blocks["progress"] = blocks["block_number"] / merge
    heights = U.fork_heights(blocks, chain1["uncles"])
    fit = U.fit_propagation_delay(
        heights, covariates={"parent_gas_used": 1e6, "progress": 1.0}, confidence=0.99
    )
    params = fit.params
    for name, truth in (("base", base), ("parent_gas_used", per_mgas), ("progress", trend)):
        assert params.loc[name, "lower"] < truth < params.loc[name, "upper"], (name, truth)
    assert params.loc["parent_gas_used", "upper"] - params.loc["parent_gas_used", "lower"] < (
        0.5 * per_mgas
    )
    assert fit.units == {"base": "s", "parent_gas_used": "s per Mgas",
                         "progress": "s per progress"}
    # the block-time estimate the fit used tracks the simulator's expected interval
    simulated = chain1["block_time"][heights["block_number"].to_numpy()]
    assert np.nanmedian(np.abs(heights["block_time_s"] / simulated - 1)) < 0.03


def test_model_vs_data_bins_observed_and_predicted_rates():
    rng = np.random.default_rng(99)
    heights = simulate_heights(rng, 20_000, 0.9, 0.06, 13.0)
    fit = U.fit_propagation_delay(heights)
    assert fit.units["gas_used"] == "s per Mgas"
    table = U.model_vs_data(heights, fit, bins=5)
    assert table["heights"].sum() == 20_000
    assert table["forks"].sum() == heights["forked"].sum()
    assert table["x"].is_monotonic_increasing
    assert table["x"].iloc[-1] < 20.0  # in the fit's unit, Mgas
    assert table["predicted"].is_monotonic_increasing
    assert table.attrs["x_label"] == "gas used [Mgas]"
    # a correct model sits inside most bins' intervals
    inside = (table["lower"] < table["predicted"]) & (table["predicted"] < table["upper"])
    assert inside.sum() >= 4
    assert table["predicted"].mean() == pytest.approx(
        fit.stale_probability(heights).mean(), rel=1e-3
    )


def test_fit_refuses_what_it_cannot_identify():
    heights = pd.DataFrame({"gas_used": [1e6] * 50, "block_time_s": 13.0,
                            "forked": [True] * 5 + [False] * 45})
    with pytest.raises(ValueError, match="constant or collinear"):
        U.fit_propagation_delay(heights)
    with pytest.raises(ValueError, match="50 heights with 0 forks cannot identify 2"):
        U.fit_propagation_delay(heights.assign(forked=False))
    constant = U.fit_propagation_delay(heights, covariates={})
    assert constant.params.index.tolist() == ["base"]
    assert constant.params.loc["base", "estimate"] == pytest.approx(U.implied_delay(0.1, 13.0))
    with pytest.raises(ValueError, match="missing or infinite"):
        U.fit_propagation_delay(heights.assign(gas_used=np.nan))


def test_empty_scans_give_empty_tables_with_their_columns():
    from feeslab.frames import parse_blocks, parse_uncles

    blocks, uncles = parse_blocks([]), parse_uncles([])
    whole = U.uncle_rate(blocks)
    assert whole.loc["all", "blocks"] == 0
    assert np.isnan(whole.loc["all", "rate"])
    assert U.uncle_rate_by_window(blocks).empty
    assert U.uncle_rate_by_day(blocks).empty
    assert U.depth_distribution(uncles)["uncles"].sum() == 0
    assert list(U.rewards_by_era(blocks, uncles, chain_id=1).columns)[:3] == [
        "blocks", "uncles", "block_rewards_wei"]  # fmt: skip
    assert list(U.miner_concentration(blocks).columns) == [
        "blocks", "miners", "hhi", "hhi_unbiased", "top_share", "nakamoto"]
    heights = U.fork_heights(blocks, uncles)
    assert heights.empty
    assert {"forks", "forked", "block_time_s"} <= set(heights.columns)


def test_intervals_match_the_previous_independent_implementation_within_1e_9():
    # values computed by feeslab's own incomplete beta/gamma code (commit 085795d) before the
    # intervals moved to scipy; spot-checked against mpmath below
    recorded = json.loads((DATA / "uncle_intervals.json").read_text())
    rows = np.array(recorded["rows"], dtype=float)
    # edge cases: k = 0, k = n, n = 1 and a large n are in the grid
    assert {1.0, 10.0**7} <= set(rows[:, 1]) and (rows[:, 0] == 0).any()
    assert (rows[:, 0] == rows[:, 1]).any()
    for confidence in np.unique(rows[:, 2]):
        part = rows[rows[:, 2] == confidence]
        k, n = part[:, 0], part[:, 1]
        wilson = U._binomial_interval(k, n, confidence, "wilson")
        exact = U._binomial_interval(k, n, confidence, "clopper-pearson")
        counts = U._poisson_interval(k, confidence)
        np.testing.assert_allclose(np.array(wilson), part[:, 3:5].T, rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.array(exact), part[:, 5:7].T, rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.array(counts), part[:, 7:9].T, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("k", "n", "confidence"),
    [(1, 1, 0.95), (0, 1, 0.9), (3, 7, 0.99), (81, 263, 0.95), (250, 1000, 0.9999), (2, 5000, 0.5)],
)
def test_exact_intervals_agree_with_mpmath(k, n, confidence):
    import mpmath  # a dev dependency: exact tails at 40 digits

    mpmath.mp.dps = 40
    alpha = (1 - confidence) / 2
    (lower,), (upper,) = U._binomial_interval([k], [n], confidence, "clopper-pearson")
    if k > 0:
        tail = mpmath.betainc(k, n - k + 1, 0, lower, regularized=True)
        assert float(tail) == pytest.approx(alpha, rel=1e-9)
    if k < n:
        tail = mpmath.betainc(k + 1, n - k, upper, 1, regularized=True)
        assert float(tail) == pytest.approx(alpha, rel=1e-9)
    (low,), (high,) = U._poisson_interval([k], confidence)
    if k > 0:
        assert float(mpmath.gammainc(k, 0, low, regularized=True)) == pytest.approx(alpha, rel=1e-9)
    assert float(mpmath.gammainc(k + 1, high, mpmath.inf, regularized=True)) == pytest.approx(
        alpha, rel=1e-9
    )


def test_mean_block_time_by_window_counts_intervals_in_the_child_window_and_not_across_gaps():
    numbers = [0, 1, 2, 3, 10, 11]  # a gap between 3 and 10: no interval across it
    seconds = [0, 2, 6, 12, 1_000, 1_015]
    blocks = pd.DataFrame({"block_number": numbers,
                           "timestamp": pd.to_datetime(seconds, unit="s", utc=True)})
    means = U.mean_block_time_by_window(blocks.iloc[::-1], 4)  # order does not matter
    assert means.name == "mean_block_time_s"
    assert means.index.name == "start_block"
    # window 0: intervals of blocks 1, 2, 3 (2, 4, 6 s); window 8: block 11's 15 s alone
    assert means.to_dict() == {0: 4.0, 8: 15.0}


def test_mean_block_time_by_window_refuses_naive_times_and_bad_windows():
    naive = pd.DataFrame({"block_number": [0, 1], "timestamp": pd.to_datetime([0, 1], unit="s")})
    with pytest.raises(TypeError, match="tz-aware"):
        U.mean_block_time_by_window(naive, 2)
    with pytest.raises(ValueError, match="positive"):
        U.mean_block_time_by_window(naive, 0)
