"""feeslab.samples.blob_market(): the real blob fields of every mainnet block, Cancun to Feb 2026.

The Done-when test of issue 28: every block of the shipped sample follows from its parent by
feeslab's blob rule (EIP-4844's excess, from Osaka on one of EIP-7918's two branches), for
every fork in it. Vectorised over the 5,039,066 parent-child pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from feeslab import samples
from feeslab.analysis.blobs import blob_base_fees, blob_parameters
from feeslab.frames import BLOCK_DTYPES
from feeslab.protocol import blobs as blob_rules
from feeslab.protocol.blobs import GAS_PER_BLOB, blob_schedule

FIRST, LAST = 19_426_587, 24_465_653  # Cancun's first block; the last of 2026-02-15 UTC
FORKS = ["cancun", "prague", "osaka", "bpo1", "bpo2"]


@pytest.fixture(scope="module")
def market() -> pd.DataFrame:
    return samples.blob_market()


def rule_violations(frame: pd.DataFrame) -> np.ndarray:
    """Rows (positions) whose excess blob gas does not follow from the previous row's.

    The child's fork (by its timestamp) gives target and max; before Osaka the excess must be
    ``max(0, excess + used - target)``; from Osaka (EIP-7918) it may instead be the reserve
    branch ``excess + used * (max - target) // max`` (the source has no base fee to say which
    branch the rule takes; 0 below target either way). Row 0 is Cancun's first block, whose
    parent had no blob fields (0 and 0).
    """
    rules = blob_schedule(1)
    seconds = frame["timestamp"].array.asi8 // 10**9  # [ns] since the epoch -> [s]
    fork = np.searchsorted([r.start for r in rules], seconds, side="right") - 1
    assert (fork >= 0).all()
    target = np.array([r.target_blob_gas for r in rules], dtype=np.int64)[fork]
    top = np.array([r.max_blobs for r in rules], dtype=np.int64)[fork]
    target_blobs = np.array([r.target_blobs for r in rules], dtype=np.int64)[fork]
    reserve = np.array([r.reserve_price for r in rules])[fork]
    excess = frame["excess_blob_gas"].to_numpy(dtype=np.int64)
    used = frame["blob_gas_used"].to_numpy(dtype=np.int64)
    parent_excess = np.concatenate([[0], excess[:-1]])
    parent_used = np.concatenate([[0], used[:-1]])
    total = parent_excess + parent_used
    below = total < target
    eip4844 = np.where(below, 0, total - target)
    eip7918 = np.where(below, 0, parent_excess + parent_used * (top - target_blobs) // top)
    ok = (excess == eip4844) | (reserve & (excess == eip7918))
    return np.flatnonzero(~ok)


def test_every_block_follows_from_its_parent_by_feeslabs_rule_in_every_fork(market):
    numbers = market["block_number"].to_numpy()
    assert numbers[0] == FIRST and numbers[-1] == LAST
    assert (np.diff(numbers) == 1).all()  # parent = previous row: the pairs are real pairs
    assert list(market["fork"].cat.categories) == FORKS
    assert (market["fork"].value_counts() > 0).all()  # every fork is in the sample
    assert rule_violations(market).size == 0
    # the rule's branches are both exercised: the reserve price binds after Osaka, and
    # reserve_price_bound says so exactly where the excess is the reserve branch's alone
    rules = {r.fork: r for r in blob_schedule(1)}
    after = market.index[market["fork"].isin(["osaka", "bpo1", "bpo2"])]
    child = market.loc[after]
    parent = market.loc[after - 1]  # Osaka's first block's parent is Prague's last
    top = child["fork"].map({f: r.max_blobs for f, r in rules.items()}).to_numpy(dtype=np.int64)
    tgt = child["fork"].map({f: r.target_blobs for f, r in rules.items()}).to_numpy(np.int64)
    p_excess = parent["excess_blob_gas"].to_numpy(dtype=np.int64)
    p_used = parent["blob_gas_used"].to_numpy(dtype=np.int64)
    excess = child["excess_blob_gas"].to_numpy(dtype=np.int64)
    reserve = p_excess + p_used * (top - tgt) // top
    plain = p_excess + p_used - tgt * GAS_PER_BLOB
    full = p_used == top * GAS_PER_BLOB  # there the two branches agree
    assert (full == (reserve == plain)).all()
    bound = child["reserve_price_bound"]
    assert bound.isna().to_numpy().tolist() == full.tolist()
    assert (bound[~full].to_numpy(dtype=bool) == (excess == reserve)[~full]).all()
    assert 400_000 < bound.sum() < len(child)  # it binds in most blocks after Osaka, not all
    assert not market.loc[market["fork"].isin(["cancun", "prague"]), "reserve_price_bound"].any()


def test_the_check_catches_a_block_off_the_rule(market):
    window = market.iloc[4_000_000:4_000_400].reset_index(drop=True)  # after Osaka
    assert rule_violations(window)[1:].size == 0  # (row 0's parent is not in the window)
    broken = window.copy()
    broken.loc[200, "excess_blob_gas"] += GAS_PER_BLOB
    assert 200 in rule_violations(broken)[1:]
    early = market.iloc[:400].copy()
    early.loc[100, "excess_blob_gas"] = early.loc[99, "excess_blob_gas"] + 1
    assert 100 in rule_violations(early)


def test_columns_match_lab_blocks_and_attrs_credit_the_source(market):
    assert list(market.columns) == ["block_number", "timestamp", "blob_count", "blob_gas_used",
                                    "excess_blob_gas", "blob_base_fee_wei", "fork",
                                    "reserve_price_bound"]  # fmt: skip
    for name in ("block_number", "timestamp", "blob_gas_used", "excess_blob_gas"):
        assert str(market[name].dtype) == BLOCK_DTYPES[name], name
    assert market["blob_count"].dtype == "int64" and market["blob_base_fee_wei"].dtype == "int64"
    assert isinstance(market.index, pd.RangeIndex) and len(market) == LAST - FIRST + 1
    assert (market["blob_gas_used"] == GAS_PER_BLOB * market["blob_count"]).all()
    attrs = market.attrs
    assert attrs["chain_id"] == 1 and attrs["chain_spec"] == "mainnet"
    assert attrs["source"] == "Chainscore/score-da" and attrs["licence"] == "CC BY 4.0"
    assert "ChainsCore Labs" in attrs["attribution"] and "CC BY 4.0" in attrs["attribution"]


def test_blob_counts_stay_within_each_forks_maximum(market):
    rules = {r.fork: r for r in blob_schedule(1)}
    most = market.groupby("fork", observed=True)["blob_count"].max()
    assert most.to_dict() == {f: rules[f].max_blobs for f in FORKS}  # each fork filled blocks
    assert market["blob_count"].min() == 0


def test_forks_switch_at_their_timestamps(market):
    firsts = market.groupby("fork", observed=True)["block_number"].min()
    # Cancun's, Prague's first block as chains.json's headers confirm them
    assert firsts["cancun"] == FIRST and firsts["prague"] == 22_431_084
    rules = {r.fork: r for r in blob_schedule(1)}
    for fork in FORKS:
        row = market.loc[market["block_number"] == firsts[fork]].iloc[0]
        before = market.loc[market["block_number"] == firsts[fork] - 1]
        assert row["timestamp"].timestamp() >= rules[fork].start
        if len(before):
            assert before["timestamp"].iloc[0].timestamp() < rules[fork].start


def test_blob_base_fees_equal_the_scalar_rule(market):
    rules = {r.fork: r for r in blob_schedule(1)}
    rows = np.random.default_rng(28).choice(len(market), 1500, replace=False).tolist()
    rows += [0, len(market) - 1, int(market["blob_base_fee_wei"].to_numpy().argmax())]
    for i in rows:
        row = market.iloc[i]
        fraction = rules[row["fork"]].update_fraction
        assert row["blob_base_fee_wei"] == blob_rules.blob_base_fee(
            int(row["excess_blob_gas"]), fraction
        )
    prague = market.loc[market["block_number"] == 22_431_084].iloc[0]
    assert (prague["excess_blob_gas"], prague["blob_base_fee_wei"]) == (50_462_720, 23_789)
    # the span's highest fee: block 20,134,283 (20 June 2024), ~8,405 gwei per blob gas
    peak = market.loc[market["blob_base_fee_wei"].idxmax()]
    assert (peak["block_number"], peak["blob_base_fee_wei"]) == (20_134_283, 8_405_020_945_159)


def test_the_analysis_reads_the_chain_spec_from_attrs(market):
    """feeslab's vectorised blob rule takes the frame as it is (spec from attrs["chain_spec"])."""
    every = market.iloc[::97].copy()  # ~52,000 rows across the five forks
    every.attrs = dict(market.attrs)
    fees = blob_base_fees(every)
    assert (fees.to_numpy(dtype=np.int64) == every["blob_base_fee_wei"].to_numpy()).all()
    forks = blob_parameters(every)["fork"]
    assert (forks.to_numpy() == every["fork"].astype(str).to_numpy()).all()
