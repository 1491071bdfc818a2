"""The blob rules against real mainnet headers, EIP-4844's reference and the devnet.

Real headers: data/samples/mainnet_fork_headers.json (ethereum/portal-spec-tests, see SOURCES.md),
around Shanghai, Cancun (19,426,587) and Prague (22,431,084). The reference rules come from
``protocol_reference`` (transcribed from the EIPs), never from feeslab.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import rlp
from protocol_reference import calc_excess_blob_gas, eip1559_base_fee, fake_exponential

from feeslab.analysis import fees
from feeslab.protocol.chainspec import ChainSpec

DATA = Path(__file__).resolve().parents[2] / "data" / "samples" / "mainnet_fork_headers.json"
CANCUN_FRACTION, PRAGUE_FRACTION = 3_338_477, 5_007_716  # EIP-4844, EIP-7691


def real_blocks() -> pd.DataFrame:
    """The real headers as a blocks frame with Lab.blocks' columns and dtypes."""
    rows = []
    for item in json.loads(DATA.read_text())["headers"]:
        h = rlp.decode(bytes.fromhex(item["header_rlp"][2:]))

        def q(i: int, h=h) -> int | None:
            return int.from_bytes(h[i], "big") if len(h) > i else None

        rows.append(
            {
                "block_number": q(8),
                "timestamp": pd.Timestamp(q(11), unit="s", tz="UTC"),
                "gas_limit": q(9),
                "gas_used": q(10),
                "base_fee_wei": q(15),
                "blob_gas_used": q(17),
                "excess_blob_gas": q(18),
            }
        )
    frame = pd.DataFrame(rows)
    for name in ("base_fee_wei", "blob_gas_used", "excess_blob_gas"):
        frame[name] = frame[name].astype("Int64")
    return frame


def pairs(frame: pd.DataFrame) -> list[tuple[int, int]]:
    numbers = frame["block_number"].tolist()
    return [(i, i + 1) for i in range(len(numbers) - 1) if numbers[i + 1] == numbers[i] + 1]


def test_the_data_has_the_fork_pairs():
    blocks = real_blocks()
    parents = {int(blocks["block_number"][i]) for i, _ in pairs(blocks)}
    assert parents == {17_034_869, 19_426_586, 19_999_999, 22_431_083}


def test_next_base_fee_of_every_real_pair():
    blocks = real_blocks()
    predicted = fees.next_base_fees(blocks, chain_id=1)
    for i, j in pairs(blocks):
        assert predicted[i] == blocks["base_fee_wei"][j]
        assert predicted[i] == eip1559_base_fee(
            int(blocks["base_fee_wei"][i]), int(blocks["gas_used"][i]), int(blocks["gas_limit"][i])
        )


def test_next_blob_base_fee_of_every_real_pair_across_cancun_and_prague():
    blocks = real_blocks()
    predicted = fees.next_blob_base_fees(blocks, chain_id=1)
    own = fees.blob_base_fees(blocks, chain_id=1)
    checked = 0
    for i, j in pairs(blocks):
        if pd.isna(blocks["excess_blob_gas"][j]):
            assert pd.isna(predicted[i])  # Shanghai: no blobs yet
            continue
        assert predicted[i] == own[j]
        checked += 1
    assert checked == 3
    by_number = dict(zip(blocks["block_number"], range(len(blocks)), strict=True))
    # Cancun's first block: its parent had no blob fields, so excess 0 and the 1-wei floor
    assert predicted[by_number[19_426_586]] == 1
    # Prague's first block: excess from Cancun's parent with Prague's target 6, priced with
    # Prague's fraction; the fee fell from Cancun's to a fraction of it
    parent, child = by_number[22_431_083], by_number[22_431_084]
    excess = calc_excess_blob_gas(
        int(blocks["excess_blob_gas"][parent]), int(blocks["blob_gas_used"][parent]), 6, 9,
        PRAGUE_FRACTION,
    )  # fmt: skip
    assert excess == blocks["excess_blob_gas"][child] == 50_462_720
    assert predicted[parent] == fake_exponential(1, excess, PRAGUE_FRACTION) == 23_789
    assert own[parent] == fake_exponential(1, 50_593_792, CANCUN_FRACTION) == 3_816_148


def test_scalar_rules_match_the_reference():
    r = random.Random(4844)
    for _ in range(300):
        excess = r.randrange(0, 400_000_000)
        fraction = r.choice([CANCUN_FRACTION, PRAGUE_FRACTION, 8_346_193, 11_684_671])
        assert fees.blob_base_fee(excess, fraction) == fake_exponential(1, excess, fraction)
        used = r.randrange(0, 22) * 2**17
        base = r.randrange(1, 10**11)
        want = calc_excess_blob_gas(excess, used, 14, 21, fraction, base)
        got = fees.next_excess_blob_gas(
            excess, used, target_blobs=14, max_blobs=21, update_fraction=fraction,
            reserve_price=True, parent_base_fee=base,
        )  # fmt: skip
        assert got == want


def test_vectorised_rule_is_exact_past_int64():
    r = np.random.default_rng(7)
    excess = np.concatenate(
        [r.integers(0, 1_000, 500) * 2**17, r.integers(0, 4 * 10**8, 500), [0, 2**28]]
    )
    fraction = r.choice([CANCUN_FRACTION, PRAGUE_FRACTION, 11_684_671], len(excess))
    got = fees.blob_base_fee(pd.Series(excess), pd.Series(fraction))
    want = [fake_exponential(1, int(e), int(f)) for e, f in zip(excess, fraction, strict=True)]
    assert got.tolist() == want
    assert max(want) > 2**63  # the Python-int fallback was exercised
    parents = pd.Series(r.integers(0, 2_000, 400) * 2**17)
    used = pd.Series(r.integers(0, 22, 400) * 2**17)
    base = pd.Series(r.integers(1, 10**11, 400))
    vector = fees.next_excess_blob_gas(
        parents, used, target_blobs=14, max_blobs=21, update_fraction=11_684_671,
        reserve_price=True, parent_base_fee=base,
    )  # fmt: skip
    for k in range(400):
        assert vector[k] == calc_excess_blob_gas(
            int(parents[k]), int(used[k]), 14, 21, 11_684_671, int(base[k])
        )


def test_int_parents_with_a_fraction_and_base_fee_per_row_give_a_series():
    # the parent's fields are ints, the child's fraction and base fee are per row: the
    # vectorised rule, on the Series' index (a scalar call would have no row to pick)
    index = [7, 8, 9]
    fractions = pd.Series([CANCUN_FRACTION, PRAGUE_FRACTION, 11_684_671], index=index)
    base = pd.Series([1, 10**9, 10**11], index=index)
    excess, used = 50_593_792, 655_360
    got = fees.next_excess_blob_gas(
        excess, used, target_blobs=14, max_blobs=21, update_fraction=fractions,
        reserve_price=True, parent_base_fee=base,
    )  # fmt: skip
    assert got.index.tolist() == index
    assert got.tolist() == [
        calc_excess_blob_gas(excess, used, 14, 21, int(f), int(b))
        for f, b in zip(fractions, base, strict=True)
    ]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="excess_blob_gas"):
        fees.blob_base_fee(-1, CANCUN_FRACTION)
    with pytest.raises(TypeError, match="float"):
        fees.blob_base_fee(pd.Series([1.5]), CANCUN_FRACTION)
    with pytest.raises(ValueError, match="blob_gas_used"):
        fees.next_blob_base_fees(pd.DataFrame({"block_number": [1]}), chain_id=1)
    with pytest.raises(ValueError, match="reserve_price"):
        fees.next_excess_blob_gas(0, 0, target_blobs=6, max_blobs=9, reserve_price=True)


@pytest.fixture(scope="module")
def devnet_blocks(devnet, tmp_path_factory):
    """3,000 devnet headers over HTTP (Lab.blocks), around the devnet's Prague (190,000)."""
    import feeslab

    lab = feeslab.connect(
        url=devnet.url, api_key=devnet.api_key, api_key_secret=devnet.api_key_secret,
        cache=tmp_path_factory.mktemp("blob-cache"), progress=False,
    )  # fmt: skip
    try:
        return lab.blocks(189_000, 192_000)
    finally:
        lab.close()


def test_devnet_blocks_follow_the_rule_across_prague(devnet_blocks):
    blocks = devnet_blocks
    assert str(blocks["blob_gas_used"].dtype) == "Int64"
    nxt = fees.next_blob_base_fees(blocks, spec=ChainSpec.devnet(1))
    own = fees.blob_base_fees(blocks, spec=ChainSpec.devnet(1))
    assert (nxt.iloc[:-1].to_numpy() == own.iloc[1:].to_numpy()).all()
    params = fees.blob_parameters(blocks, spec=ChainSpec.devnet(1))
    assert set(params["fork"]) == {"cancun", "prague"}


def test_usage_inferred_from_fees_brackets_the_truth(devnet_blocks):
    blocks = devnet_blocks.copy()
    blocks["blob_base_fee_wei"] = fees.blob_base_fees(blocks, spec=ChainSpec.devnet(1))
    usage = fees.infer_blob_usage(blocks, spec=ChainSpec.devnet(1))
    truth = (blocks["blob_gas_used"] // 2**17).astype(float).to_numpy()
    known = ~np.isnan(usage["blobs_low"].to_numpy())
    assert known.sum() > 1000
    assert (usage["blobs_low"].to_numpy()[known] <= truth[known]).all()
    assert (usage["blobs_high"].to_numpy()[known] >= truth[known]).all()
    states = fees.blob_states(usage)
    assert {"full", "below_target"} <= set(states.astype(str))
    # a "full" block really carried the max
    full = (states == "full").to_numpy()
    assert (truth[full] == usage["max_blobs"].to_numpy(dtype=float)[full]).all()


def test_burn_is_exact_and_sums_per_day(devnet_blocks):
    blocks = devnet_blocks
    burn = fees.fee_burn(blocks, spec=ChainSpec.devnet(1))
    own = fees.blob_base_fees(blocks, spec=ChainSpec.devnet(1))
    for k in (0, 500, 2_999):
        assert burn["base_fee_burn_wei"][k] == int(blocks["base_fee_wei"][k]) * int(
            blocks["gas_used"][k]
        )
        assert burn["blob_fee_burn_wei"][k] == int(own[k]) * int(blocks["blob_gas_used"][k])
    assert (burn["issuance_wei"] == 0).all()  # after the merge: none on the execution layer
    daily = fees.burn_by_day(burn)
    assert int(daily["burn_wei"].sum()) == sum(int(v) for v in burn["burn_wei"])
    assert daily["blocks"].sum() == len(blocks)
    share = burn["blob_share"].dropna()
    assert ((share >= 0) & (share <= 1)).all()


def test_regimes_see_the_floor_and_the_bursts(devnet_blocks):
    blocks = devnet_blocks.copy()
    blocks["blob_base_fee_wei"] = fees.blob_base_fees(blocks, spec=ChainSpec.devnet(1))
    regimes = fees.blob_fee_regimes(blocks)
    seen = set(regimes["regime"].astype(str))
    assert "floor" in seen and "rising" in seen
    at_floor = (regimes["regime"] == "floor").to_numpy()
    assert (blocks["blob_base_fee_wei"].to_numpy()[at_floor] == 1).all()


def test_the_reserve_rule_is_exact_at_its_boundary():
    # EIP-7918 binds when 2**13 * base_fee > 2**17 * blob_fee: base fees within a few wei of
    # 16 x the blob fee, where a float shortcut would go wrong
    r = random.Random(7918)
    for _ in range(2_000):
        fraction = r.choice([PRAGUE_FRACTION, 8_346_193, 11_684_671])
        excess = r.randrange(0, 3_000) * 2**17 + r.randrange(0, 2**17)
        base = max(0, 16 * fake_exponential(1, excess, fraction) + r.randrange(-2, 3))
        used = r.randrange(0, 22) * 2**17
        got = fees.next_excess_blob_gas(
            excess, used, target_blobs=14, max_blobs=21, update_fraction=fraction,
            reserve_price=True, parent_base_fee=base,
        )  # fmt: skip
        assert got == calc_excess_blob_gas(excess, used, 14, 21, fraction, base)


def test_chains_json_fork_times_fall_between_the_real_fork_headers():
    chains = json.loads((Path(__file__).resolve().parents[2] / "data" / "chains.json").read_text())
    mainnet = next(c for c in chains["chains"] if c["chain_id"] == 1)["protocol"]
    blocks = real_blocks().set_index("block_number")
    seconds = (blocks["timestamp"] - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(seconds=1)
    checked = []
    for name, fork in mainnet["timestamp_forks"].items():
        if "block" not in fork:
            continue
        first = fork["block"]
        assert seconds[first - 1] < fork["timestamp"] <= seconds[first], name
        checked.append(name)
    assert checked == ["shanghai", "cancun", "prague"]
    # the schedules as EIP-4844 and EIP-7691 state them
    schedule = {s["fork"]: (s["target"], s["max"], s["base_fee_update_fraction"])
                for s in mainnet["blob_schedule"]}  # fmt: skip
    assert schedule["cancun"] == (3, 6, CANCUN_FRACTION)
    assert schedule["prague"] == (6, 9, PRAGUE_FRACTION)
    assert schedule["bpo2"] == (14, 21, 11_684_671)


def test_issuance_before_the_merge_is_the_block_reward_and_nephew_rewards(devnet, tmp_path):
    import feeslab

    lab = feeslab.connect(
        url=devnet.url, api_key=devnet.api_key, api_key_secret=devnet.api_key_secret,
        cache=tmp_path, progress=False,
    )  # fmt: skip
    try:
        blocks = lab.blocks(119_900, 120_100)  # the devnet's London at 120,000 (chains.json)
    finally:
        lab.close()
    burn = fees.fee_burn(blocks, spec=ChainSpec.devnet(1))
    reward = 2 * 10**18  # Constantinople's block reward (EIP-1234), from 60,000 on the devnet
    want = [reward + reward // 32 * int(u) for u in blocks["uncle_count"]]
    assert burn["issuance_wei"].tolist() == want
    assert blocks["uncle_count"].sum() > 0
    before = (blocks["block_number"] < 120_000).to_numpy()
    assert (burn["base_fee_burn_wei"][before] == 0).all()
    assert (burn["blob_fee_burn_wei"] == 0).all()
    after = blocks[~before]
    assert burn["base_fee_burn_wei"][~before].tolist() == [
        int(f) * int(g) for f, g in zip(after["base_fee_wei"], after["gas_used"], strict=True)
    ]


# Another client's EIP-7918 cases (Osaka: target 6, max 9, fraction 5,007,716): Nethermind's
# src/Nethermind/Nethermind.Evm.Test/Eip7918Tests.cs (NethermindEth/nethermind, LGPL-3.0), its
# six (parent excess, parent blobs, parent base fee, expected excess) cases as numbers
NETHERMIND_EIP7918 = [
    (786_433, 0, 1_000_000_000, 786_433),  # reserve binds, nothing used: excess kept
    (1_000, 7, 1_000_000_000, 1_000 + 7 * 2**17 // 3),
    (786_432, 6, 1_000_000_000, 4 * 786_432 // 3),
    (786_433, 0, 1, 1),  # target above the floor: the EIP-4844 rule
    (1_000, 6, 16, 1_000),  # exactly at the boundary: not applied
    (1_000, 6, 116, 1_000 + 786_432 * 3 // 9),  # below the floor
]


@pytest.mark.parametrize("excess, blobs, base_fee, expected", NETHERMIND_EIP7918)
def test_eip7918_matches_another_clients_cases(excess, blobs, base_fee, expected):
    got = fees.next_excess_blob_gas(
        excess, blobs * 2**17, target_blobs=6, max_blobs=9, update_fraction=PRAGUE_FRACTION,
        reserve_price=True, parent_base_fee=base_fee,
    )  # fmt: skip
    assert got == expected


# -- the real market's summaries: branches of the rule, periods, forks --------------------------

G = 2**17  # blob gas per blob


def osaka_chain() -> pd.DataFrame:
    """Hand-made headers around the devnet's Osaka (block 199,000; target 6, max 9 both sides),
    one row per branch of the excess rule."""
    rows = [  # block, excess [blobs of gas], used [blobs]
        (198_997, 0, 0),  # no parent in the frame
        (198_998, 0, 9),  # parent 0 + 0 below target: reset to 0
        (198_999, 3, 9),  # Prague: 0 + 9 - 6
        (199_000, 6, 3),  # Osaka, full parent: 3 + 9 - 6 = 3 + 9 * 3 // 9
        (199_001, 7, 0),  # 6 + 3 * 3 // 9 = 7, not 6 + 3 - 6 = 3: the reserve price bound
    ]
    frame = pd.DataFrame(rows, columns=["block_number", "excess", "used"])
    frame = pd.concat([frame, pd.DataFrame({"block_number": [199_002, 199_004], "excess": [5, 0],
                                            "used": [0, 0]})], ignore_index=True)  # fmt: skip
    return pd.DataFrame({
        "block_number": frame["block_number"],
        "excess_blob_gas": (frame["excess"] * G).astype("Int64"),
        "blob_gas_used": (frame["used"] * G).astype("Int64"),
    })  # fmt: skip


def test_excess_branches_read_which_branch_each_header_followed():
    branches = fees.excess_branches(osaka_chain(), spec=ChainSpec.devnet(1))
    assert list(branches.cat.categories) == list(fees.EXCESS_BRANCHES)
    got = branches.astype(object).where(branches.notna(), None).tolist()
    # 199,002: 7 - 6 = 1 or 7 + 0 = 7, not 5: off the rule; 199,004 follows a gap: no parent
    assert got == [None, "below_target", "target", "either", "reserve", "off_rule", None]


def test_excess_branches_allow_the_reserve_branch_only_from_osaka():
    chain = osaka_chain().iloc[:3].copy()
    chain.loc[1, "blob_gas_used"] = 7 * G  # not full: the branches differ (1 blob or 7 * 3 // 9)
    chain.loc[2, "excess_blob_gas"] = 7 * G * 3 // 9  # the reserve branch's value, in Prague
    branches = fees.excess_branches(chain, spec=ChainSpec.devnet(1))
    assert branches.iloc[2] == "off_rule"


def test_blob_market_by_period_gives_exact_fee_range_counts_and_floor_share():
    stamps = pd.to_datetime(["2025-01-01 10:00", "2025-01-01 11:00", "2025-01-01 23:59",
                             "2025-01-02 00:00", "2025-01-02 05:00"], utc=True)  # fmt: skip
    blocks = pd.DataFrame({
        "block_number": [10, 11, 12, 13, 14], "timestamp": stamps,
        "blob_gas_used": pd.array([0, 3 * G, 6 * G, 2 * G, 2 * G], dtype="Int64"),
        "blob_base_fee_wei": [1, 9_000_000_000_000_000_001, 5, 1, 1],
        "fork": ["prague", "prague", "prague", "prague", "osaka"],
    })  # fmt: skip
    blocks["blob_base_fee_wei"] = blocks["blob_base_fee_wei"].astype(np.int64)
    blocks.attrs["source"] = "test"
    daily = fees.blob_market_by_period(blocks)
    assert list(daily.index) == list(pd.to_datetime(["2025-01-01", "2025-01-02"], utc=True))
    first = daily.iloc[0]
    assert (first["first_block"], first["last_block"], first["blocks"]) == (10, 12, 3)
    assert first["min_blob_base_fee_wei"] == 1
    assert first["median_blob_base_fee_wei"] == 5  # the lower middle: a fee that was charged
    assert first["max_blob_base_fee_wei"] == 9_000_000_000_000_000_001  # exact, past float's 2**53
    assert first["mean_blobs"] == 3.0 and first["at_floor_share"] == pytest.approx(1 / 3)
    assert daily["fork"].tolist() == ["prague", "osaka"]  # the period's last block's
    assert daily.iloc[1]["at_floor_share"] == 1.0 and daily.attrs["source"] == "test"
    hourly = fees.blob_market_by_period(blocks, freq="h")
    assert len(hourly) == 5
    with pytest.raises(ValueError, match="lacks"):
        fees.blob_market_by_period(blocks.drop(columns="blob_base_fee_wei"))


def test_blob_fork_summary_counts_each_fork_against_its_own_target():
    chain = osaka_chain().iloc[1:5].copy()  # 198,998 .. 199,001: two Prague, two Osaka blocks
    chain["timestamp"] = pd.to_datetime([0, 12, 24, 36], unit="s", utc=True)
    chain["blob_base_fee_wei"] = np.array([1, 1, 7, 2_000], dtype=np.int64)
    summary = fees.blob_fork_summary(chain, spec=ChainSpec.devnet(1))
    assert list(summary.index) == ["prague", "osaka"]
    prague, osaka = summary.loc["prague"], summary.loc["osaka"]
    assert (prague["blocks"], prague["target_blobs"], prague["max_blobs"]) == (2, 6, 9)
    assert prague["mean_blobs"] == 9 and prague["mean_over_target"] == 1.5
    assert prague["full_share"] == 1.0 and prague["at_floor_share"] == 1.0
    assert osaka["mean_blobs"] == 1.5 and osaka["full_share"] == 0.0
    assert osaka["at_floor_share"] == 0
    assert (osaka["median_blob_base_fee_wei"], osaka["max_blob_base_fee_wei"]) == (7, 2_000)


def test_reserve_price_is_a_sixteenth_of_the_base_fee_rounded_down():
    blocks = pd.DataFrame({"base_fee_wei": pd.array([16_000_000_015, 15, None], dtype="Int64")})
    assert fees.reserve_price(blocks).tolist() == [1_000_000_000, 0, pd.NA]
    with pytest.raises(ValueError, match="base_fee_wei"):
        fees.reserve_price(pd.DataFrame({"gas_used": [1]}))


def test_branch_shares_by_period_count_only_blocks_with_a_branch():
    chain = osaka_chain()
    chain["timestamp"] = pd.to_datetime([0, 1, 2, 3, 86_400, 86_401, 86_402], unit="s", utc=True)
    branches = fees.excess_branches(chain, spec=ChainSpec.devnet(1))
    shares = fees.branch_shares_by_period(chain, branches)
    assert shares["blocks"].tolist() == [3, 2]  # the first row and the one after a gap have none
    day0, day1 = shares.iloc[0], shares.iloc[1]
    assert day0[["below_target", "target", "either"]].tolist() == pytest.approx([1 / 3] * 3)
    assert (day1["reserve"], day1["off_rule"]) == (0.5, 0.5)
    assert shares[list(fees.EXCESS_BRANCHES)].sum(axis=1).tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError, match="rows"):
        fees.branch_shares_by_period(chain, branches.iloc[:3])


def test_excess_branches_on_every_real_block_from_cancun_to_2026():
    """All 5,039,067 mainnet blocks of samples.blob_market(): each excess follows one branch of
    the rule, EIP-7918's only from Osaka, and the branches agree with the sample's own
    reserve_price_bound column (computed separately, when the sample was built)."""
    from feeslab import samples

    market = samples.blob_market()
    branches = fees.excess_branches(market)
    assert branches.isna().sum() == 1  # Cancun's first block: its parent has no blob fields here
    assert (branches == "off_rule").sum() == 0
    forks = market["fork"].astype(str)
    before_osaka = forks.isin(["cancun", "prague"])
    assert (branches[before_osaka] == "reserve").sum() == 0
    assert (branches[~before_osaka] == "reserve").sum() > 100_000  # it binds, and often
    if "reserve_price_bound" in market.columns:
        told = branches.isin(["target", "reserve", "below_target"])
        bound = market["reserve_price_bound"][told].astype(bool)
        assert ((branches[told] == "reserve") == bound).all()
