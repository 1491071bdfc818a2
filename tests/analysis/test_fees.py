"""feeslab.analysis.fees against EIP-1559's reference formula, chains.json and the devnet.

The reference base-fee rule below is transcribed from the EIP's Python specification
(``validate_block``), independently of feeslab's code, and every per-height parameter set of
``data/chains.json`` is run through it. Devnet checks fetch real headers over HTTP
(``Lab.blocks``: ``eth_getBlockByNumber``) and compare with what the analysis infers.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import feeslab
from feeslab.analysis import fees
from feeslab.protocol.chainspec import ChainSpec

CHAINS_JSON = Path(__file__).resolve().parents[2] / "data" / "chains.json"
INT64_MAX = 2**63 - 1


# -- EIP-1559's reference, transcribed from the EIP ------------------------------------------------


def eip1559_reference(
    parent_base_fee_per_gas: int,
    parent_gas_used: int,
    parent_gas_limit: int,
    elasticity_multiplier: int,
    base_fee_max_change_denominator: int,
    gas_target_percent: int | None = None,
) -> int:
    """EIP-1559 Specification, ``validate_block``: the expected base fee of a child block.

    ``gas_target_percent`` is Polygon's post-Dandeli target (bor ``gasTargetForLimit``:
    ``gasLimit * percent / 100``) in place of ``parent_gas_limit // ELASTICITY_MULTIPLIER``.
    """
    if gas_target_percent is None:
        parent_gas_target = parent_gas_limit // elasticity_multiplier
    else:
        parent_gas_target = parent_gas_limit * gas_target_percent // 100
    if parent_gas_used == parent_gas_target:
        expected_base_fee_per_gas = parent_base_fee_per_gas
    elif parent_gas_used > parent_gas_target:
        gas_used_delta = parent_gas_used - parent_gas_target
        base_fee_per_gas_delta = max(
            parent_base_fee_per_gas
            * gas_used_delta
            // parent_gas_target
            // base_fee_max_change_denominator,
            1,
        )
        expected_base_fee_per_gas = parent_base_fee_per_gas + base_fee_per_gas_delta
    else:
        gas_used_delta = parent_gas_target - parent_gas_used
        base_fee_per_gas_delta = (
            parent_base_fee_per_gas
            * gas_used_delta
            // parent_gas_target
            // base_fee_max_change_denominator
        )
        expected_base_fee_per_gas = parent_base_fee_per_gas - base_fee_per_gas_delta
    return expected_base_fee_per_gas


def _chains() -> list[dict]:
    return json.loads(CHAINS_JSON.read_text())["chains"]


def _variants() -> list[tuple[str, int | None, int, int | None]]:
    """Every distinct (chain, elasticity, denominator, target %) of chains.json."""
    found = {}
    for chain in _chains():
        for half in ("protocol", "devnet"):
            for rule in chain[half]["eip1559"]:
                key = (
                    rule.get("elasticity_multiplier"),
                    rule["base_fee_max_change_denominator"],
                    rule.get("gas_target_percent"),
                )
                found.setdefault(key, f"{chain['network']}-{half}-{rule['from_block']}")
    return [(name, *key) for key, name in sorted(found.items(), key=lambda kv: kv[1])]


VARIANTS = _variants()


def test_the_variants_cover_polygon_and_base():
    keys = {(e, d, p) for _, e, d, p in VARIANTS}
    assert {(2, 8, None), (2, 16, None), (6, 50, None), (6, 250, None), (None, 64, 65)} <= keys


def _random_cases(rng: random.Random, count: int, elasticity: int, percent: int | None):
    """Random parents, with the edges (target +- 1, empty, full, tiny and huge fees)."""
    cases = []
    for i in range(count):
        limit = rng.choice(
            [
                rng.randrange(5_000, 400_000_000),
                30_000_000,
                30_000_001,
                rng.randrange(5_000, 50_000),
            ]
        )
        target = limit * percent // 100 if percent is not None else limit // elasticity
        used = rng.choice(
            [
                0,
                limit,
                target,
                target - 1,
                target + 1,
                rng.randrange(0, limit + 1),
                rng.randrange(0, limit + 1),
            ]
        )
        used = min(max(used, 0), limit)
        fee = rng.choice(
            [
                0,
                1,
                7,
                rng.randrange(1, 10**9),
                rng.randrange(10**9, 10**13),
                rng.randrange(10**13, 2**62),
                INT64_MAX - rng.randrange(0, 10**6),
            ]
        )
        if i % 97 == 0:
            fee = 2**70 + rng.randrange(0, 10**6)  # past int64: Python ints
        cases.append((fee, used, limit))
    return cases


@pytest.mark.parametrize(("name", "elasticity", "denominator", "percent"), VARIANTS)
def test_next_base_fee_matches_the_eip_reference_on_random_cases(
    name, elasticity, denominator, percent
):
    rng = random.Random(f"{name}-{elasticity}-{denominator}-{percent}")
    e = elasticity if elasticity is not None else 1
    cases = _random_cases(rng, 3000, e, percent)
    expected = [eip1559_reference(f, u, lim, e, denominator, percent) for f, u, lim in cases]
    frame = pd.DataFrame(cases, columns=["fee", "used", "limit"], dtype=object)
    got = fees.next_base_fee(
        frame["fee"],
        frame["used"],
        frame["limit"],
        elasticity_multiplier=e,
        max_change_denominator=denominator,
        gas_target_percent=percent,
    )
    assert [int(v) for v in got] == expected
    assert got.dtype == object  # some results pass int64: kept as exact Python ints
    # the int64 path (its overflow-free split of fee * delta) on the cases that fit
    fits = [i for i, (f, _, _) in enumerate(cases) if f < 2**62]
    small = frame.iloc[fits].astype("int64")
    got = fees.next_base_fee(
        small["fee"],
        small["used"],
        small["limit"],
        elasticity_multiplier=e,
        max_change_denominator=denominator,
        gas_target_percent=percent,
    )
    assert got.tolist() == [expected[i] for i in fits]
    for (f, u, lim), want in list(zip(cases, expected, strict=True))[:300]:
        assert (
            fees.next_base_fee(
                f,
                u,
                lim,
                elasticity_multiplier=e,
                max_change_denominator=denominator,
                gas_target_percent=percent,
            )
            == want
        )


def test_next_base_fee_vectorised_int64_path_is_exact():
    rng = np.random.default_rng(5)
    n = 200_000
    limit = rng.integers(5_000, 60_000_000, n)
    used = (limit * rng.random(n)).astype(np.int64)
    fee = rng.integers(1, 3 * 10**12, n)  # fee * delta passes int64: the split must hold
    e = rng.choice([2, 6], n)
    d = rng.choice([8, 16, 50, 250], n)
    got = fees.next_base_fee(
        pd.Series(fee),
        pd.Series(used),
        pd.Series(limit),
        elasticity_multiplier=pd.Series(e),
        max_change_denominator=d,
    )
    assert got.dtype == np.int64
    sample = rng.choice(n, 5000, replace=False)
    for i in sample:
        assert got.iloc[i] == eip1559_reference(
            int(fee[i]), int(used[i]), int(limit[i]), int(e[i]), int(d[i])
        )
    assert (fee.astype(object) * np.abs(used - limit // e)).max() > INT64_MAX


def test_next_base_fee_keeps_the_index_and_missing_rows():
    fee = pd.Series([10**9, None, 3 * 10**9], index=[7, 8, 9], dtype="Int64")
    got = fees.next_base_fee(fee, 30_000_000, 30_000_000)
    assert list(got.index) == [7, 8, 9]
    assert got.isna().tolist() == [False, True, False]
    assert got[9] == eip1559_reference(3 * 10**9, 30_000_000, 30_000_000, 2, 8)


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"parent_base_fee": 1.5e9}, TypeError, "float"),
        ({"parent_base_fee": pd.Series([1.0, 2.0])}, TypeError, "float64"),
        ({"parent_base_fee": True}, TypeError, "bool"),
        ({"parent_base_fee": -1}, ValueError, "parent_base_fee[0] is negative"),
        ({"parent_gas_used": 31_000_000}, ValueError, "above parent_gas_limit"),
        ({"parent_gas_limit": 1}, ValueError, "gas target"),
        ({"max_change_denominator": 0}, ValueError, "max_change_denominator"),
        (
            {"parent_base_fee": pd.Series([1, 2]), "parent_gas_used": [1, 2, 3]},
            ValueError,
            "3 values, expected 2",
        ),
    ],
)
def test_next_base_fee_refuses_bad_input_naming_it(kwargs, error, text):
    arguments = {"parent_base_fee": 10**9, "parent_gas_used": 1, "parent_gas_limit": 30_000_000}
    arguments.update(kwargs)
    rest = {
        k: arguments.pop(k)
        for k in list(arguments)
        if k not in ("parent_base_fee", "parent_gas_used", "parent_gas_limit")
    }
    with pytest.raises(error, match=text.replace("[", r"\[").replace("]", r"\]")):
        fees.next_base_fee(*arguments.values(), **rest)


# -- per-height parameters ---------------------------------------------------------------------


def _expected_rule(chain: dict, half: str, number: int):
    """The rule that computes block ``number``'s base fee, read from chains.json here.

    go-ethereum, op-geth and the devnet apply a fork's parameters from the fork block; bor
    (Polygon, protocol) from the block after it: ``BaseFeeChangeDenominator(config.Bor,
    parent.Number)``. The first rule is London: its block has the initial base fee.
    """
    rules = chain[half]["eip1559"]
    if number < rules[0]["from_block"]:
        return None
    key = number - 1 if (chain["chain_id"] == 137 and half == "protocol") else number
    chosen = rules[0]
    for rule in rules[1:]:
        if key >= rule["from_block"]:
            chosen = rule
    return chosen


@pytest.mark.parametrize("half", ["protocol", "devnet"])
def test_parameters_follow_chains_json_at_every_fork(half):
    for chain in _chains():
        starts = [r["from_block"] for r in chain[half]["eip1559"]]
        numbers = sorted({max(0, s + k) for s in starts for k in (-1, 0, 1, 2)} | {10**9})
        spec = ChainSpec.from_chain(chain["chain_id"], heights=half)
        got = fees.eip1559_parameters(spec, numbers)
        for row in got.itertuples():
            rule = _expected_rule(chain, half, row.block_number)
            where = f"{chain['network']} {half} block {row.block_number}"
            if rule is None:
                assert pd.isna(row.max_change_denominator), where
                continue
            assert row.max_change_denominator == rule["base_fee_max_change_denominator"], where
            e, p = rule.get("elasticity_multiplier"), rule.get("gas_target_percent")
            if e is None:
                assert pd.isna(row.elasticity_multiplier), where
            else:
                assert row.elasticity_multiplier == e, where
            assert row.full_ratio == pytest.approx(100 / p if p else e), where
            assert row.london_block == (row.block_number == starts[0]), where


def test_polygon_forks_apply_from_the_block_after_the_fork_block():
    got = fees.eip1559_parameters(137, [38_189_056, 38_189_057, 81_424_000, 81_424_001])
    assert got["max_change_denominator"].tolist() == [8, 16, 64, 64]
    assert got["gas_target_percent"].isna().tolist() == [True, True, True, False]
    assert got["full_ratio"].iloc[-1] == pytest.approx(100 / 65)


def test_unknown_chain_and_schedule_are_clear_errors():
    with pytest.raises(feeslab.ConfigError, match=r"chain id 42 is not in data/chains\.json"):
        fees.eip1559_parameters(42, [1])
    with pytest.raises(feeslab.ConfigError, match="no chain spec is labelled 'mainnet@testnet'"):
        fees.eip1559_parameters("mainnet@testnet", [1])
    frame = pd.DataFrame({"block_number": [1, 2], "base_fee_wei": [10, 11]})
    with pytest.raises(ValueError, match="chain_id= or the parameters, not both"):
        fees.infer_utilisation(frame, chain_id=1, max_change_denominator=8)
    # a choice of heights is the spec's business, not an argument of the analysis
    with pytest.raises(TypeError, match="unexpected keyword argument 'heights'"):
        fees.infer_utilisation(frame, chain_id=1, heights="devnet")
    # Base's denominator changes at Canyon: which rows are past it needs their numbers
    with pytest.raises(ValueError, match="needs a 'block_number' column"):
        fees.infer_utilisation(frame["base_fee_wei"], chain_id=8453)


# -- the devnet: real headers over HTTP ------------------------------------------------------------


@pytest.fixture
def network_lab(devnet, tmp_path):
    """``network_lab(network)``: a Lab on one network of the session devnet."""
    labs = []

    def make(network: str) -> feeslab.Lab:
        lab = feeslab.connect(
            url=devnet.url,
            api_key=devnet.api_key,
            api_key_secret=devnet.api_key_secret,
            network=network,
            cache=tmp_path / network,
            progress=False,
        )
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        lab.close()


# spans across London (mainnet), Delhi (Polygon: 8 -> 16) and Canyon (Base: 50 -> 250)
FORK_SPANS = [
    ("mainnet", 1, 119_980, 120_060),
    ("polygon-mainnet", 137, 39_960, 40_060),
    ("base-mainnet", 8453, 49_960, 50_060),
    ("sepolia", 11155111, 0, 80),
]


@pytest.mark.parametrize(("network", "chain_id", "start", "stop"), FORK_SPANS)
def test_next_base_fees_reproduce_every_devnet_header_across_forks(
    network_lab, network, chain_id, start, stop
):
    blocks = network_lab(network).blocks(start, stop)
    predicted = fees.next_base_fees(blocks, spec=ChainSpec.devnet(chain_id))
    actual = blocks["base_fee_wei"].shift(-1)
    compared = actual.notna() & predicted.notna()
    assert compared.sum() >= stop - start - 1 - (20 if chain_id == 1 else 0)
    assert (predicted[compared].astype("int64") == actual[compared].astype("int64")).all()
    # one set of parameters for the whole span gets the fork wrong: the check can fail
    flat = fees.next_base_fees(
        blocks.dropna(subset=["base_fee_wei"]), max_change_denominator=8, elasticity_multiplier=2
    )
    if chain_id in (137, 8453):
        realised = blocks.dropna(subset=["base_fee_wei"])["base_fee_wei"].shift(-1)
        assert (flat.iloc[:-1] != realised.iloc[:-1]).any()


def test_the_london_block_gets_the_initial_base_fee(network_lab):
    blocks = network_lab("mainnet").blocks(119_995, 120_001)
    predicted = fees.next_base_fees(blocks, spec=ChainSpec.devnet(1))
    assert predicted.isna().tolist() == [True] * 4 + [False, False]
    assert predicted.iloc[4] == 10**9 == blocks["base_fee_wei"].iloc[5]


def _true_ratio(block: pd.Series, elasticity: int | None, percent: int | None) -> Fraction:
    limit = int(block["gas_limit"])
    target = limit * percent // 100 if percent else limit // elasticity
    return Fraction(int(block["gas_used"]), target)


@pytest.mark.parametrize(
    ("network", "chain_id", "span"),
    [
        ("mainnet", 1, (208_001, 210_001)),
        ("polygon-mainnet", 137, (39_000, 41_000)),
        ("base-mainnet", 8453, (118_001, 120_001)),
    ],
)
def test_utilisation_from_fees_alone_brackets_the_true_gas_used_on_every_block(
    network_lab, network, chain_id, span
):
    blocks = network_lab(network).blocks(*span)
    inferred = fees.infer_utilisation(
        blocks[["block_number", "base_fee_wei"]], spec=ChainSpec.devnet(chain_id)
    )
    assert inferred["gas_used_target_ratio"].iloc[:-1].notna().all()
    assert inferred["gas_used_target_ratio"].iloc[-1:].isna().all()  # no next block
    assert inferred["consistent"].iloc[:-1].all()
    params = fees.eip1559_parameters(ChainSpec.devnet(chain_id), blocks["block_number"] + 1)
    for i in range(len(blocks) - 1):
        e = params["elasticity_multiplier"].iloc[i]
        truth = _true_ratio(blocks.iloc[i], int(e), None)
        low = Fraction(inferred["gas_used_target_ratio_low"].iloc[i])
        high = Fraction(inferred["gas_used_target_ratio_high"].iloc[i])
        assert low <= truth <= high, f"block {blocks['block_number'].iloc[i]}"
        # the rounding bound: width d / b (2 d / b after a 1-wei rise), plus the float ulps
        d = int(params["max_change_denominator"].iloc[i])
        fee = int(blocks["base_fee_wei"].iloc[i])
        assert high - low <= Fraction(2 * d, fee) + Fraction(1, 2**40)
        estimate = inferred["gas_used_target_ratio"].iloc[i]
        assert abs(estimate - float(truth)) <= float(high - low)


@pytest.mark.parametrize("denominator", [8, 16, 250])
def test_the_interval_holds_when_the_ratio_sits_exactly_on_its_edge(denominator):
    # b = step * d * g and target = x * g put u = 1 +- x / target exactly on an edge of the
    # interval: only the outward float rounding keeps it inside
    rng = random.Random(denominator)
    parents, children, truths = [], [], []
    for _ in range(2000):
        g, x, step = rng.randrange(10**3, 10**6), rng.randrange(1, 30), rng.randrange(2, 1000)
        fee, target = step * denominator * g, x * g
        for used in (target + x, target - x):
            parents.append(fee)
            children.append(eip1559_reference(fee, used, 2 * target, 2, denominator))
            truths.append(Fraction(used, target))
    frame = pd.DataFrame(
        {"base_fee_wei": [v for pair in zip(parents, children, strict=True) for v in pair]}
    )
    inferred = fees.infer_utilisation(frame, max_change_denominator=denominator).iloc[::2]
    low = [Fraction(v) for v in inferred["gas_used_target_ratio_low"]]
    high = [Fraction(v) for v in inferred["gas_used_target_ratio_high"]]
    assert all(lo <= t <= hi for lo, t, hi in zip(low, truths, high, strict=True))
    on_edge = sum(t in (lo, hi) for lo, t, hi in zip(low, truths, high, strict=True))
    assert on_edge < len(truths) // 10  # the edges are floats just outside, not the truth


def test_utilisation_from_the_gas_api_history_alone(lab):
    history = lab.base_fee_history()
    blocks = lab.blocks(
        int(history["block_number"].iloc[0]), int(history["block_number"].iloc[-1]) + 1
    )
    inferred = fees.infer_utilisation(history["base_fee_wei"])  # a Series: no block numbers
    truth = fees.gas_used_target_ratio(blocks)
    low, high = inferred["gas_used_target_ratio_low"], inferred["gas_used_target_ratio_high"]
    inside = (low <= truth) & (truth <= high)
    assert inside.iloc[:-1].all() and len(inside) == 500


def test_full_and_empty_blocks_are_found_from_fees(lab):
    head = lab.node.head()
    history = lab.fee_history(head - 8191, head + 1)
    inferred = fees.infer_utilisation(history, spec=ChainSpec.devnet(1))
    states = fees.block_states(inferred, spec=ChainSpec.devnet(1))
    ratio = history["gas_used_ratio"]  # gasUsed / gasLimit from eth_feeHistory
    full, empty = ratio == 1.0, ratio == 0.0
    assert full.sum() >= 20 and empty.sum() >= 20
    assert (states[full & states.notna()] == "full").all()
    assert (states[empty & states.notna()] == "empty").all()
    truth = np.select([ratio >= 0.999, ratio <= 0.001], ["full", "empty"], "partial")
    decided = states.notna() & (states != "unclear")
    assert (states[decided].astype(str) == truth[decided.to_numpy()]).all()
    assert decided.sum() == len(history) - 1


def test_changes_the_parameters_cannot_give_are_flagged_not_inferred():
    # +2 % in one block is a full Base block (elasticity 6, d 250), impossible with elasticity 2
    frame = pd.DataFrame({"base_fee_wei": [10**9, 102 * 10**7]})
    base = fees.infer_utilisation(frame, elasticity_multiplier=6, max_change_denominator=250)
    assert base["consistent"].iloc[0] and base["gas_used_target_ratio"].iloc[0] == pytest.approx(6)
    wrong = fees.infer_utilisation(frame, elasticity_multiplier=2, max_change_denominator=250)
    assert not wrong["consistent"].iloc[0]
    assert np.isnan(wrong["gas_used_target_ratio_low"].iloc[0])
    assert pd.isna(wrong["consistent"].iloc[1])  # the last row: nothing to infer


def test_block_states_say_unclear_where_rounding_straddles_a_threshold():
    # at a 20 wei base fee one wei of change is 40 % of the target at d = 8
    frame = pd.DataFrame({"base_fee_wei": [20, 22, 20, 18]})  # 18: what an empty block gives
    inferred = fees.infer_utilisation(frame, max_change_denominator=8)
    states = fees.block_states(inferred, elasticity_multiplier=2)
    assert states.astype(str).tolist()[:3] == ["unclear", "unclear", "unclear"]
    assert pd.isna(states.iloc[3])


# -- volatility and regimes -------------------------------------------------------------------


def test_log_returns_by_hand_and_across_a_gap():
    frame = pd.DataFrame({"block_number": [1, 2, 3, 5], "base_fee_wei": [100, 110, 99, 99]})
    got = fees.log_returns(frame)
    assert np.isnan(got.iloc[0]) and np.isnan(got.iloc[3])  # first row; 3 -> 5 is a gap
    assert got.iloc[1] == pytest.approx(math.log(1.1))
    assert got.iloc[2] == pytest.approx(math.log(0.9))


def test_devnet_log_returns_stay_within_what_eip1559_allows(lab):
    head = lab.node.head()
    returns = fees.log_returns(lab.fee_history(head - 4095, head + 1))
    assert returns.max() <= math.log(1 + 1 / 8) + 1e-12
    assert returns.min() >= math.log(1 - 1 / 8) - 1e-12
    assert returns.max() > 0.11 and returns.min() < -0.12  # full and empty blocks occur


def test_rolling_volatility_is_the_windowed_sample_deviation():
    rng = np.random.default_rng(3)
    fee = (10**10 * np.exp(np.cumsum(rng.normal(0, 0.03, 300)))).astype(np.int64)
    got = fees.rolling_volatility(pd.Series(fee), window=50)
    returns = np.diff(np.log(fee.astype(float)))
    assert got.iloc[:50].isna().all()
    assert got.iloc[120] == pytest.approx(np.std(returns[120 - 50 : 120], ddof=1))
    hourly = fees.rolling_volatility(pd.Series(fee), window=50, blocks_per_period=300)
    assert hourly.iloc[120] == pytest.approx(got.iloc[120] * math.sqrt(300))


def _path(start: int, gas_used: list[int], limit: int = 30_000_000) -> list[int]:
    path = [start]
    for used in gas_used:
        path.append(eip1559_reference(path[-1], used, limit, 2, 8))
    return path


def test_fee_regimes_find_rising_falling_volatile_and_calm_stretches():
    limit, target = 30_000_000, 15_000_000
    used = (
        [limit] * 150
        + [0] * 150
        + [limit, 0] * 75
        + [target + (1 if i % 2 else -1) * 1_000_000 for i in range(150)]
    )
    base = _path(10**10, used)
    frame = pd.DataFrame({"block_number": np.arange(len(base)), "base_fee_wei": base})
    regimes = fees.fee_regimes(frame, window=32, max_change_denominator=8)
    middle = {
        name: regimes["regime"].iloc[lo + 50 : lo + 100]
        for name, lo in (("rising", 1), ("falling", 151), ("volatile", 301), ("calm", 451))
    }
    for name, labels in middle.items():
        assert (labels == name).all(), name
    # all full: each return is ln(1 + 1/8), times d = 8: about u - 1 = 1
    assert regimes["drift"].iloc[60] == pytest.approx(8 * math.log(1.125))
    spans = fees.regime_spans(regimes)
    assert spans["regime"].astype(str).tolist()[:1] == ["rising"]
    assert (spans["last_block"] - spans["first_block"] + 1 == spans["blocks"]).all()
    assert spans["blocks"].sum() == regimes["regime"].notna().sum()
    assert (spans["first_block"].iloc[1:].to_numpy() > spans["last_block"].iloc[:-1]).all()


# -- Gas API percentiles -------------------------------------------------------------------------


def test_percentiles_agree_with_the_devnet_gas_api(lab):
    history = lab.base_fee_history()
    median = lab.gas.get(1, "baseFeePercentile")["baseFeePercentile"]
    busy = lab.gas.get(1, "busyThreshold")["busyThreshold"]

    def wei(gwei: str) -> int:
        whole, _, frac = gwei.partition(".")
        return int(whole) * 10**9 + int(frac.ljust(9, "0"))

    assert fees.base_fee_percentile(history) == wei(median)
    assert fees.busy_threshold(history) == wei(busy)
    head = lab.node.head()
    rolling = fees.gas_api_percentiles(lab.fee_history(head - 999, head + 1))
    last = rolling.iloc[-1]
    assert (last["base_fee_percentile_wei"], last["busy_threshold_wei"]) == (wei(median), wei(busy))
    assert rolling["busy_threshold_wei"].iloc[:499].isna().all()


@pytest.mark.parametrize("window", [1, 7, 10, 500])
def test_rolling_nearest_rank_is_exact(window):
    rng = np.random.default_rng(window)
    values = rng.integers(10**8, 10**12, 1200)
    got = fees.gas_api_percentiles(pd.Series(values), window=window, min_periods=1)
    for i in rng.choice(len(values), 60, replace=False):
        seen = sorted(values[max(0, i - window + 1) : i + 1].tolist())
        for column, p in (("base_fee_percentile_wei", 50), ("busy_threshold_wei", 90)):
            assert got[column].iloc[i] == seen[max(1, math.ceil(p * len(seen) / 100)) - 1]


# -- forecast bounds ---------------------------------------------------------------------------


@pytest.mark.parametrize(("elasticity", "denominator"), [(2, 8), (2, 16), (6, 250)])
def test_bounds_follow_full_and_empty_blocks_exactly(elasticity, denominator):
    limit = 30_000_000
    got = fees.base_fee_bounds(
        25 * 10**9, 40, elasticity_multiplier=elasticity, max_change_denominator=denominator
    )
    high, low = [25 * 10**9], [25 * 10**9]
    for _ in range(40):
        high.append(eip1559_reference(high[-1], limit, limit, elasticity, denominator))
        low.append(eip1559_reference(low[-1], 0, limit, elasticity, denominator))
    assert got["highest_base_fee_wei"].tolist() == high
    assert got["lowest_base_fee_wei"].tolist() == low
    assert got["blocks_ahead"].tolist() == list(range(41))


def test_no_realised_devnet_base_fee_leaves_the_bounds(lab):
    head = lab.node.head()
    history = lab.fee_history(head - 4095, head + 1)
    for k in (1, 3, 10, 25):
        bounds = fees.base_fee_range(history, k)
        later = history["base_fee_wei"].astype("Int64").shift(-k)
        known = later.notna()
        assert (bounds["lowest_base_fee_wei"][known] <= later[known]).all()
        assert (later[known] <= bounds["highest_base_fee_wei"][known]).all()
    # the bound is attained: after a run of full blocks the fee meets the highest
    one = fees.base_fee_range(history, 1)
    realised = history["base_fee_wei"].astype("Int64").shift(-1)
    full = (history["gas_used_ratio"] == 1.0) & realised.notna()
    assert full.sum() > 0
    assert (one["highest_base_fee_wei"][full] == realised[full]).all()


@pytest.mark.parametrize(("elasticity", "denominator"), [(2, 8), (6, 250)])
def test_max_fee_per_gas_and_includable_blocks_are_inverse(elasticity, denominator):
    params = {"elasticity_multiplier": elasticity, "max_change_denominator": denominator}
    base = 31_415_926_535
    for k in (1, 2, 6, 30):
        cap = fees.max_fee_per_gas(base, k, **params)
        assert fees.includable_blocks(cap, base, **params) == k
        assert fees.includable_blocks(cap - 1, base, **params) == k - 1
    assert fees.max_fee_per_gas(base, 1, priority_fee_wei=2 * 10**9, **params) == base + 2 * 10**9
    counts = fees.includable_blocks(pd.Series([base - 1, 2 * base]), base, **params)
    assert counts.iloc[0] == 0
    assert counts.iloc[1] == (6 if denominator == 8 else 36)  # 2x covers ~6 full blocks at d=8


def test_bounds_refuse_bad_input():
    with pytest.raises(ValueError, match="horizon"):
        fees.base_fee_bounds(10**9, -1)
    with pytest.raises(ValueError, match="blocks must be an int >= 1"):
        fees.max_fee_per_gas(10**9, 0)
    with pytest.raises(ValueError, match="gas_target_percent needs gas_limit"):
        fees.base_fee_bounds(10**9, 3, gas_target_percent=65)
    with pytest.raises(TypeError, match="float"):
        fees.base_fee_bounds(1.5e9, 3)
    beyond = fees.base_fee_bounds(INT64_MAX, 2)
    assert beyond["highest_base_fee_wei"].iloc[2] == eip1559_reference(
        eip1559_reference(INT64_MAX, 2, 2, 2, 8), 2, 2, 2, 8
    )


# -- chains compared ---------------------------------------------------------------------------


def test_fee_summary_compares_chains_in_their_own_units(network_lab):
    summaries = {}
    for network, chain_id in (("mainnet", 1), ("base-mainnet", 8453)):
        lab = network_lab(network)
        head = lab.node.head()
        history = lab.fee_history(head - 2047, head + 1)
        summaries[network] = fees.fee_summary(
            history, spec=ChainSpec.devnet(chain_id), name=network
        )
        states = fees.block_states(
            fees.infer_utilisation(history, spec=ChainSpec.devnet(chain_id)),
            spec=ChainSpec.devnet(chain_id),
        )
        assert summaries[network]["full_share"] == pytest.approx(
            (states == "full").sum() / states.isin(["full", "partial", "empty"]).sum()
        )
        assert summaries[network]["median_base_fee_gwei"] == fees.base_fee_percentile(history) / 1e9
    assert summaries["mainnet"][["max_rise", "max_fall"]].tolist() == [0.125, 0.125]
    assert summaries["base-mainnet"][["max_rise", "max_fall"]].tolist() == [0.02, 0.004]
    assert summaries["mainnet"]["blocks"] == 2048


# -- tips inside whole blocks ----------------------------------------------------------------


def tips_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "block_number": [7, 7, 7, 7, 8],
        "effective_tip_wei": [3, 1, 2, 100, 5],
        "gas_used": [21_000, 50_000, 21_000, 8_000, 30_000],
    })  # fmt: skip


def test_tip_percentiles_follow_geths_cumulative_gas_rule():
    from feeslab.analysis.fees import tip_percentiles

    table = tip_percentiles(tips_frame(), [0, 50, 60, 99, 100])
    # block 7 by tip: 1 (50,000 gas), 2 (21,000), 3 (21,000), 100 (8,000); 100,000 gas in all
    assert table.loc[7].tolist() == [4, 1, 1, 2, 100, 100]
    assert table.loc[8].tolist() == [1, 5, 5, 5, 5, 5]
    unweighted = tip_percentiles(tips_frame(), [50], weight=None)
    assert unweighted.loc[7, "tip_p50_wei"] == 2  # the second of four transactions
    with pytest.raises(ValueError, match="percentiles"):
        tip_percentiles(tips_frame(), [101])
    with pytest.raises(ValueError, match="lacks"):
        tip_percentiles(tips_frame().drop(columns="gas_used"))


def test_tip_cdf_gives_the_share_of_gas_at_or_below_each_tip():
    from feeslab.analysis.fees import tip_cdf

    cdf = tip_cdf(tips_frame())
    seven = cdf[cdf["block_number"] == 7]
    assert seven["tip_wei"].tolist() == [1, 2, 3, 100]
    assert seven["share"].tolist() == pytest.approx([0.5, 0.71, 0.92, 1.0])
    assert cdf[cdf["block_number"] == 8]["share"].tolist() == [1.0]
