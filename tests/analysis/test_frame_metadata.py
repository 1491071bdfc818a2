"""Frames say which chain and heights they are of, and the analysis reads it from them.

Real frames from ``feeslab.connect()`` (the embedded devnet, seed of the session devnet) and
the devnet's other networks over ``url=``. The truth each result is checked against is
computed here from the headers' gasUsed and ``data/chains.json`` read directly, not by the
code under test.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import feeslab
from feeslab.analysis import fees
from feeslab.analysis import uncles as U
from feeslab.protocol.chainspec import ChainSpec

SEED = 7  # the session devnet's seed: its chains are built and stored already
CHAINS = json.loads((Path(__file__).resolve().parents[2] / "data" / "chains.json").read_text())
DEVNET = {entry["chain_id"]: entry["devnet"] for entry in CHAINS["chains"] if "devnet" in entry}
NETWORKS = {"mainnet": 1, "sepolia": 11155111, "polygon-mainnet": 137, "base-mainnet": 8453}
WINDOW = 2_048  # blocks of fee history per chain


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    """One Lab per network: mainnet on ``feeslab.connect()``'s embedded devnet, the others on
    the same devnet by ``url=`` (whose ``web3_clientVersion`` says it is a devnet)."""
    cache = tmp_path_factory.mktemp("cache")
    main = feeslab.connect(seed=SEED, cache=cache / "mainnet", progress=False)
    dev = main.devnet
    found = {"mainnet": main}
    for network in NETWORKS:
        if network != "mainnet":
            found[network] = feeslab.connect(
                url=dev.url, api_key=dev.api_key, api_key_secret=dev.api_key_secret,
                network=network, cache=cache / network, progress=False,
            )  # fmt: skip
    yield found
    for network, lab in found.items():
        if network != "mainnet":
            lab.close()
    main.close()


@pytest.fixture(scope="module")
def frames(labs):
    """``{network: (fee history, headers)}`` of the last 2,048 blocks of each chain."""
    out = {}
    for network, lab in labs.items():
        head = lab.node.head()
        out[network] = (lab.fee_history(head - WINDOW + 1, head + 1),
                        lab.blocks(head - WINDOW + 1, head + 1))  # fmt: skip
    return out


def true_ratios(chain_id: int, blocks: pd.DataFrame) -> list[Fraction]:
    """gas used / gas target of each block but the last, with the elasticity that computes
    its child's base fee under the devnet's rules in chains.json (read here, not by feeslab)."""
    rules = DEVNET[chain_id]["eip1559"]
    out = []
    for used, limit, number in zip(blocks["gas_used"], blocks["gas_limit"],
                                   blocks["block_number"], strict=True):  # fmt: skip
        rule = [r for r in rules if r["from_block"] <= number + 1][-1]
        out.append(Fraction(int(used), int(limit) // rule["elasticity_multiplier"]))
    return out[:-1]


@pytest.mark.parametrize("network", list(NETWORKS))
def test_every_fetch_says_its_chain_heights_and_source(labs, frames, network):
    chain_id = NETWORKS[network]
    lab = labs[network]
    expected = {"chain_id": chain_id, "chain_spec": f"{network}@devnet", "source": "devnet"}
    assert lab.chain_spec == ChainSpec.devnet(chain_id) and lab.source == "devnet"
    history, blocks = frames[network]
    assert history.attrs == expected
    assert blocks.attrs == expected
    assert lab.base_fee_history().attrs == expected
    # what the analysis derives carries it on
    inferred = fees.infer_utilisation(history)
    assert inferred.attrs == expected
    assert fees.block_states(inferred).attrs["chain_spec"] == f"{network}@devnet"


@pytest.mark.parametrize("network", list(NETWORKS))
def test_fee_summary_reads_the_spec_from_the_frame_and_gives_the_truth(frames, network):
    chain_id = NETWORKS[network]
    history, blocks = frames[network]
    summary = fees.fee_summary(history)
    # the same as with the spec given, or the chain id (whose heights the frame knows)
    given = fees.fee_summary(history, spec=ChainSpec.devnet(chain_id))
    pd.testing.assert_series_equal(summary, given)
    pd.testing.assert_series_equal(summary, fees.fee_summary(history, chain_id=chain_id))
    truth = true_ratios(chain_id, blocks)
    assert len(truth) == summary["blocks"] - 1
    mean = float(sum(truth) / len(truth))
    assert summary["mean_gas_used_target_ratio"] == pytest.approx(mean, rel=1e-7)
    last = DEVNET[chain_id]["eip1559"][-1]
    assert summary["max_fall"] == 1 / last["base_fee_max_change_denominator"]
    # the block-by-block intervals contain the truth too
    inferred = fees.infer_utilisation(history).iloc[:-1]
    low = inferred["gas_used_target_ratio_low"].tolist()
    high = inferred["gas_used_target_ratio_high"].tolist()
    assert all(lo <= float(t) <= hi for lo, t, hi in zip(low, truth, high, strict=True))


def test_base_with_the_real_heights_would_be_wrong_so_it_is_refused(frames):
    history, blocks = frames["base-mainnet"]
    truth = true_ratios(8453, blocks)
    right = fees.fee_summary(history)["mean_gas_used_target_ratio"]
    assert right == pytest.approx(float(sum(truth) / len(truth)), rel=1e-7)
    # the real Base (denominator 50 before Canyon, far past these blocks) gives another number
    with pytest.raises(feeslab.ChainSpecConflict, match=r"'base-mainnet@devnet'.*'base-mainnet'"):
        fees.fee_summary(history, spec=ChainSpec.from_chain(8453))
    with pytest.raises(feeslab.ChainSpecConflict):
        fees.fee_summary(history, spec="base-mainnet")  # the real heights by label
    with pytest.raises(feeslab.ChainSpecConflict, match=r"frame is of chain 8453.*say chain 1"):
        fees.fee_summary(history, chain_id=1)


@pytest.mark.parametrize("network", ["mainnet", "polygon-mainnet"])
def test_devnet_blocks_under_the_real_heights_are_a_clear_error_not_a_type_error(frames, network):
    # these blocks have base fees, but the real chains reached London millions of blocks later
    history, _ = frames[network]
    bare = history.copy()
    bare.attrs = {}
    message = rf"has a base fee, but the spec '{network}' puts it before its London"
    with pytest.raises(feeslab.ChainSpecError, match=message):
        fees.fee_summary(bare, chain_id=NETWORKS[network])
    with pytest.raises(feeslab.ChainSpecError, match="has a base fee"):
        fees.infer_utilisation(bare, chain_id=NETWORKS[network])


def test_a_frame_that_says_nothing_needs_a_spec_named_in_the_error(frames):
    history, _ = frames["base-mainnet"]
    bare = history.copy()
    bare.attrs = {}
    for call in (fees.fee_summary, fees.infer_utilisation, fees.fee_regimes):
        with pytest.raises(feeslab.MissingChainSpec, match=r"pass spec=.* or chain_id=") as info:
            call(bare)
        assert info.value.argument == "spec"
    # explicit parameters are an answer too
    explicit = fees.fee_summary(bare, elasticity_multiplier=6, max_change_denominator=250)
    pd.testing.assert_series_equal(explicit, fees.fee_summary(history))
    with pytest.raises(ValueError, match="chain_id= or the parameters, not both"):
        fees.fee_summary(history, chain_id=8453, max_change_denominator=250)


def test_uncle_eras_follow_the_devnets_heights(labs):
    lab = labs["mainnet"]
    byzantium = DEVNET[1]["forks"]["byzantium"]
    scan = lab.uncles(byzantium - 300, byzantium + 300)
    assert scan.blocks.attrs["chain_spec"] == scan.uncles.attrs["chain_spec"] == "mainnet@devnet"
    eras = U.uncle_rate_by_era(scan.blocks)
    assert eras.index.tolist() == ["genesis", "byzantium"]
    assert eras["blocks"].tolist() == [300, 300]
    counts = scan.blocks.groupby(scan.blocks["block_number"] >= byzantium)["uncle_count"].sum()
    assert eras["uncles"].tolist() == [counts[False], counts[True]]
    # rewards: 5 ETH before the devnet's Byzantium, 3 ETH from it (chains.json)
    paid = U.uncle_rewards(scan.uncles)
    rewards = {r["from_block"]: int(r["value"]) for r in DEVNET[1]["block_rewards_wei"]}
    expected = [rewards[byzantium] if n >= byzantium else rewards[0]
                for n in paid["block_number"]]  # fmt: skip
    assert paid["block_reward_wei"].tolist() == expected
    assert len(set(expected)) == 2  # uncles on both sides of the fork
    # the real heights put all of it in the genesis era: refused for these frames
    with pytest.raises(feeslab.ChainSpecConflict):
        U.uncle_rate_by_era(scan.blocks, spec=ChainSpec.from_chain(1))
    real = scan.uncles.copy()
    real.attrs.update(chain_spec="mainnet")
    with pytest.raises(feeslab.ChainSpecConflict, match="follows 'mainnet'"):
        U.rewards_by_era(scan.blocks, real)
    bare = scan.blocks.copy()
    bare.attrs = {}
    with pytest.raises(feeslab.MissingChainSpec, match="uncle_rate_by_era: pass spec="):
        U.uncle_rate_by_era(bare)


def test_storage_calls_and_estimates_carry_the_chain_too(labs):
    lab = labs["mainnet"]
    token = next(c for c in lab.devnet.contracts["contracts"] if c["name"] == "FeeslabToken")
    head = lab.node.head()
    expected = {"chain_id": 1, "chain_spec": "mainnet@devnet", "source": "devnet"}
    assert lab.storage_series(token["address"], 2, [head - 1, head]).attrs == expected
    series = lab.call_series(token["address"], "totalSupply()(uint256)", [], [head])
    assert series.attrs == expected
    transfer = {"from": "0x" + "00" * 20, "to": token["address"], "data": "0x"}
    assert lab.estimate_costs([transfer], block=head).attrs == expected


def test_blob_fees_read_the_spec_from_the_frame_too(frames):
    _, blocks = frames["mainnet"]  # the devnet's chain 1 is past Cancun at its head
    own = fees.blob_base_fees(blocks)
    pd.testing.assert_series_equal(own, fees.blob_base_fees(blocks, chain_id=1))
    pd.testing.assert_series_equal(own, fees.blob_base_fees(blocks, spec=ChainSpec.devnet(1)))
    assert own.notna().all()
    with pytest.raises(feeslab.ChainSpecConflict):
        fees.next_blob_base_fees(blocks, spec=ChainSpec.from_chain(1))
    bare = blocks.copy()
    bare.attrs = {}
    with pytest.raises(feeslab.MissingChainSpec, match="fee_burn: pass spec="):
        fees.fee_burn(bare)
