"""ChainSpec against data/chains.json read here directly, and resolve_spec's rules."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

import feeslab
from feeslab.protocol.chainspec import ChainSpec, frame_spec, resolve_spec, with_chain

CHAINS = json.loads((Path(__file__).resolve().parents[1] / "data" / "chains.json").read_text())
ENTRIES = {entry["chain_id"]: entry for entry in CHAINS["chains"]}
# a chain with a protocol half only (Hoodi) has no devnet heights: the devnet does not run it
CASES = [(chain_id, heights) for chain_id, entry in ENTRIES.items()
         for heights in ("protocol", "devnet") if heights in entry]  # fmt: skip


@pytest.mark.parametrize(("chain_id", "heights"), CASES)
def test_a_spec_holds_what_chains_json_says(chain_id, heights):
    entry = ENTRIES[chain_id]
    half = entry[heights]
    spec = ChainSpec.from_chain(chain_id, heights=heights)
    assert (spec.chain_id, spec.network, spec.heights) == (chain_id, entry["network"], heights)
    forks = {
        name: value["block"] if isinstance(value, dict) else value
        for name, value in half["forks"].items()
    }
    unscheduled = []
    for name, value in half.get("timestamp_forks", {}).items():  # Shanghai and later
        if value.get("timestamp") is None and value.get("block") is None:
            unscheduled.append(name)  # announced, not scheduled on this chain
            continue
        forks[name] = value.get("block")
    assert {f.name: f.block for f in spec.forks} == forks
    assert list(spec.unscheduled) == unscheduled
    known = [f.block for f in spec.forks if f.block is not None]
    assert known == sorted(b for b in forks.values() if b is not None)  # in activation order
    rewards = [(r["from_block"], int(r["value"])) for r in half["block_rewards_wei"]]
    assert list(spec.block_rewards_wei) == rewards
    assert list(spec.consensus) == [(c["from_block"], c["kind"]) for c in half["consensus"]]
    rules = half["eip1559"]
    assert [r.max_change_denominator for r in spec.eip1559] == [
        r["base_fee_max_change_denominator"] for r in rules
    ]
    assert [r.elasticity_multiplier for r in spec.eip1559] == [
        r.get("elasticity_multiplier") for r in rules
    ]
    # Polygon's client keys forks by the parent: a fork's rule computes the block after it
    shift = 1 if (chain_id, heights) == (137, "protocol") else 0
    assert [r.from_block for r in spec.eip1559] == [
        r["from_block"] + (shift if i else 0) for i, r in enumerate(rules)
    ]
    initial = half["initial_base_fee_wei"]
    assert spec.initial_base_fee_wei == (initial["value"] if isinstance(initial, dict) else initial)
    assert (spec.uncles is None) == (entry["protocol"]["uncles"] is None)
    # the blob schedule, each fork by timestamp (real chains) or block (the devnet)
    blobs = sorted(
        (item.get("from_timestamp", item.get("from_block")), item["fork"], item["target"],
         item["max"], item["base_fee_update_fraction"], bool(item.get("eip7918", False)))
        for item in half.get("blob_schedule", ())
    )  # fmt: skip
    assert [(r.start, r.fork, r.target_blobs, r.max_blobs, r.update_fraction, r.reserve_price)
            for r in spec.blob_schedule] == blobs  # fmt: skip
    key = "timestamp" if heights == "protocol" else "block"
    assert all(r.key == key for r in spec.blob_schedule)
    # the label names it, survives a deep copy (pandas copies attrs so) and reads back
    assert ChainSpec.from_label(spec.label) == spec == copy.deepcopy(spec)
    assert spec.label == entry["network"] + ("@devnet" if heights == "devnet" else "")


def test_the_devnet_compresses_the_same_rules():
    real, devnet = ChainSpec.from_chain(1), ChainSpec.devnet(1)
    assert real != devnet and hash(real) != hash(devnet)
    assert [f.name for f in real.forks] == [f.name for f in devnet.forks]
    assert real.fork("cancun").timestamp == 1_710_338_135 and devnet.fork("cancun").block == 175_000
    assert [w for _, w in real.block_rewards_wei] == [w for _, w in devnet.block_rewards_wei]
    assert real.fork("london").block == 12_965_000 and devnet.fork("london").block == 120_000
    assert real.eip1559_rule_at(12_964_999) is None
    assert devnet.eip1559_rule_at(120_000).max_change_denominator == 8
    assert ChainSpec.from_chain(8453).fork("canyon").timestamp == 1_704_992_401
    assert repr(devnet) == "ChainSpec('mainnet@devnet': chain 1, devnet heights)"
    # one way to name a spec wherever a chain is taken: the spec, its label or a chain id
    assert ChainSpec.of(devnet) is devnet and ChainSpec.of("mainnet@devnet") == devnet
    assert ChainSpec.of(1) == real and ChainSpec.of("mainnet") == real
    assert [r.fork for r in devnet.blob_schedule] == ["cancun", "prague", "osaka", "bpo1", "bpo2"]
    assert real.blob_schedule[0].update_fraction == 3_338_477


def test_unknown_chains_heights_and_labels_are_clear_errors():
    with pytest.raises(feeslab.ConfigError, match=r"chain id 5 is not in data/chains\.json"):
        ChainSpec.from_chain(5)
    with pytest.raises(feeslab.ConfigError, match=r"heights must be 'protocol'.*not 'main'"):
        ChainSpec.from_chain(1, heights="main")
    with pytest.raises(feeslab.ConfigError, match="no chain spec is labelled 'goerli'"):
        ChainSpec.from_label("goerli")
    with pytest.raises(feeslab.ConfigError, match="chain_id must be an int"):
        ChainSpec.from_chain("one")


def tagged(spec: ChainSpec | None, chain_id: int | None = None) -> pd.DataFrame:
    frame = pd.DataFrame({"block_number": [1, 2], "base_fee_wei": [10, 11]})
    cid = spec.chain_id if chain_id is None else chain_id
    return with_chain(frame, chain_id=cid, spec=spec, source="devnet")


def test_resolve_spec_reads_the_frame_and_checks_the_arguments():
    devnet = ChainSpec.devnet(8453)
    frame = tagged(devnet)
    assert frame.attrs == {"chain_id": 8453, "chain_spec": "base-mainnet@devnet",
                           "source": "devnet"}  # fmt: skip
    assert frame_spec(frame) == (8453, devnet)
    assert resolve_spec(frame) is devnet
    # chain_id= that agrees with the frame keeps the frame's heights
    assert resolve_spec(frame, chain_id=8453) is devnet
    assert resolve_spec(frame, spec="base-mainnet@devnet") is devnet
    # without attrs chain_id= means the real chain
    bare = pd.DataFrame({"block_number": [1]})
    assert resolve_spec(bare, chain_id=8453) == ChainSpec.from_chain(8453)
    assert resolve_spec(bare, spec="mainnet@devnet") == ChainSpec.devnet(1)
    assert resolve_spec(bare, required=False) is None
    # a column keeps its frame's attrs, so a Series knows its chain too
    assert resolve_spec(frame["block_number"]) is devnet


def test_missing_and_conflicting_specs_raise_naming_the_argument():
    bare = pd.DataFrame({"block_number": [1]})
    with pytest.raises(feeslab.MissingChainSpec, match=r"f: pass spec=.* or chain_id=") as info:
        resolve_spec(bare, what="f")
    assert info.value.argument == "spec"
    assert isinstance(info.value, feeslab.FeeslabError) and isinstance(info.value, ValueError)
    unknown = tagged(None, chain_id=1337)
    with pytest.raises(feeslab.MissingChainSpec, match=r"chain 1337, which data/chains\.json"):
        resolve_spec(unknown)
    frame = tagged(ChainSpec.devnet(8453))
    with pytest.raises(feeslab.ChainSpecConflict, match=r"frame is of chain 8453.*say chain 1"):
        resolve_spec(frame, chain_id=1)
    with pytest.raises(feeslab.ChainSpecConflict, match=r"follows 'base-mainnet@devnet'.*"
                                                        r"'base-mainnet' \(protocol"):  # fmt: skip
        resolve_spec(frame, spec=ChainSpec.from_chain(8453))
    with pytest.raises(feeslab.ChainSpecConflict, match="follows 'base-mainnet@devnet'"):
        resolve_spec(frame, spec="base-mainnet")
    with pytest.raises(feeslab.ChainSpecConflict, match="chain_id=1 contradicts spec="):
        resolve_spec(bare, spec=ChainSpec.from_chain(8453), chain_id=1)
    with pytest.raises(feeslab.ChainSpecConflict, match="cannot follow the spec of chain 1"):
        with_chain(bare, chain_id=8453, spec=ChainSpec.from_chain(1), source="node")


def test_attrs_survive_what_the_analysis_and_notebooks_do(tmp_path):
    frame = tagged(ChainSpec.devnet(1))
    twice = pd.concat([frame, frame], ignore_index=True)
    kept = [
        frame.tail(1),
        frame[frame["block_number"] > 1],
        frame[["base_fee_wei"]],
        frame.assign(x=1),
        frame.reset_index(drop=True),
        twice,
        frame.merge(frame, on="block_number"),
    ]
    for part in kept:
        assert part.attrs == frame.attrs
    path = tmp_path / "frame.parquet"
    frame.to_parquet(path)  # a label, not an object: the attrs are JSON in the file
    assert pd.read_parquet(path).attrs == frame.attrs
    # frames of different chains concatenated lose them: no spec is better than a wrong one
    other = tagged(ChainSpec.devnet(8453))
    assert pd.concat([frame, other]).attrs == {}


# Read from ethereum/go-ethereum params/config.go (commit 02b73d4e, 2026-08-20): the
# Default*BlobConfig values (DefaultOsakaBlobConfig from its git history, equal to Prague's)
# and MainnetChainConfig's / SepoliaChainConfig's fork times; EIP-7607 lists the same times.
GETH_BLOB_CONFIGS = {
    "cancun": (3, 6, 3_338_477),
    "prague": (6, 9, 5_007_716),
    "osaka": (6, 9, 5_007_716),
    "bpo1": (10, 15, 8_346_193),
    "bpo2": (14, 21, 11_684_671),
}
GETH_FORK_TIMES = {
    1: {"cancun": 1_710_338_135, "prague": 1_746_612_311, "osaka": 1_764_798_551,
        "bpo1": 1_765_290_071, "bpo2": 1_767_747_671},
    11155111: {"cancun": 1_706_655_072, "prague": 1_741_159_776, "osaka": 1_760_427_360,
               "bpo1": 1_761_017_184, "bpo2": 1_761_607_008},
}  # fmt: skip


@pytest.mark.parametrize("chain_id", sorted(GETH_FORK_TIMES))
def test_blob_schedules_are_go_ethereums_with_their_sources(chain_id):
    spec = ChainSpec.from_chain(chain_id)
    got = {r.fork: (r.target_blobs, r.max_blobs, r.update_fraction) for r in spec.blob_schedule}
    assert got == GETH_BLOB_CONFIGS
    assert {r.fork: r.start for r in spec.blob_schedule} == GETH_FORK_TIMES[chain_id]
    assert {f.name: f.timestamp for f in spec.forks if f.name in GETH_BLOB_CONFIGS} == (
        GETH_FORK_TIMES[chain_id]
    )
    # EIP-7918's reserve price from Osaka on, never before
    assert [r.reserve_price for r in spec.blob_schedule] == [False, False, True, True, True]
    # the devnet's compressed chain runs the same parameters, by block number
    devnet = ChainSpec.devnet(chain_id).blob_schedule
    assert [(r.target_blobs, r.max_blobs, r.update_fraction, r.reserve_price) for r in devnet] == [
        (r.target_blobs, r.max_blobs, r.update_fraction, r.reserve_price)
        for r in spec.blob_schedule
    ]
    for item in ENTRIES[chain_id]["protocol"]["blob_schedule"]:
        assert "go-ethereum params/config.go" in item["source"], item["fork"]
        assert "EIP-" in item["source"], item["fork"]


def test_amsterdam_is_scheduled_on_sepolia_and_a_what_if_on_mainnet():
    sepolia = ChainSpec.from_chain(11155111)
    assert sepolia.fork("amsterdam").timestamp == 1_791_294_816  # 2026-10-06 13:53:36 UTC
    assert 1_655_733_600 + 353_024 * 32 * 12 == 1_791_294_816  # beacon genesis + Gloas epoch
    assert sepolia.fork_at(timestamp=1_791_294_815) == "bpo2"
    assert sepolia.fork_at(timestamp=1_791_294_816) == "amsterdam"
    mainnet = ChainSpec.from_chain(1)
    assert mainnet.unscheduled == ("amsterdam",) and mainnet.fork("amsterdam") is None
    what_if = mainnet.with_activation("amsterdam", timestamp=1_800_000_000)
    assert what_if.fork("amsterdam").timestamp == 1_800_000_000 and what_if.unscheduled == ()
    assert what_if != mainnet and ChainSpec.from_chain(1) == mainnet  # a new spec; frozen
    assert what_if.fork_at(24_000_000, timestamp=1_799_999_999) == "bpo2"
    assert what_if.fork_at(24_000_000, timestamp=1_800_000_000) == "amsterdam"
    # chains.json lists the forks whose rules feeslab follows (no Berlin)
    assert mainnet.fork_at(12_965_000) == "london"
    assert mainnet.fork_at(12_964_999) == "constantinople"
    with pytest.raises(feeslab.errors.ConfigError, match="order"):
        mainnet.with_activation("amsterdam", timestamp=1_700_000_000)  # before Osaka
    with pytest.raises(feeslab.errors.ConfigError, match="no fork 'hegota'"):
        mainnet.with_activation("hegota", timestamp=1_900_000_000)
    with pytest.raises(feeslab.errors.ConfigError, match="timestamp= or block="):
        mainnet.with_activation("amsterdam")
    with pytest.raises(feeslab.errors.ConfigError, match="pass timestamp="):
        mainnet.fork_at(23_000_000)  # past Prague's first block: Osaka's is not recorded
    assert mainnet.fork_at(20_000_000) == "cancun"  # first blocks recorded up to Prague


# go-ethereum params/config.go HoodiChainConfig at 02b73d4ea7181464175e0a6cbecc0a3a2655a562,
# read there (PragueTime .. BPO2Time), and eth-clients/hoodi's README (the beacon epochs)
HOODI_TIMES = {"shanghai": 0, "cancun": 0, "prague": 1_742_999_832, "osaka": 1_761_677_592,
               "bpo1": 1_762_365_720, "bpo2": 1_762_955_544}  # fmt: skip
HOODI_EPOCHS = {"prague": 2_048, "osaka": 50_688, "bpo1": 52_480, "bpo2": 54_016}
HOODI_BEACON_GENESIS = 1_742_213_400  # 2025-03-17 12:10 UTC: genesis time + 600 s delay


def test_hoodi_knows_its_forks_through_bpo2_with_timestamps_and_sources():
    spec = ChainSpec.of(560048)
    assert (spec.network, spec.name, spec.heights) == ("hoodi", "Hoodi testnet", "protocol")
    assert ChainSpec.of("hoodi") == spec and 560048 in ChainSpec.known()
    assert {f.name: f.timestamp for f in spec.forks if f.timestamp is not None} == HOODI_TIMES
    assert [f.name for f in spec.forks] == ["london", "merge", *HOODI_TIMES]
    assert spec.fork("london").block == spec.fork("merge").block == 0  # both at genesis
    for fork, epoch in HOODI_EPOCHS.items():  # each a beacon epoch's first slot
        assert HOODI_BEACON_GENESIS + epoch * 32 * 12 == HOODI_TIMES[fork], fork
    assert spec.fork_at(0, timestamp=1_742_212_800) == "cancun"  # genesis: Dencun at once
    assert spec.fork_at(1, timestamp=1_762_955_543) == "bpo1"
    assert spec.fork_at(1, timestamp=1_762_955_544) == "bpo2"
    # Amsterdam is announced, not scheduled: a what-if, as on mainnet
    assert spec.unscheduled == ("amsterdam",) and spec.fork("amsterdam") is None
    what_if = spec.with_activation("amsterdam", timestamp=1_800_000_000)
    assert what_if.fork_at(2_000_000, timestamp=1_800_000_000) == "amsterdam"
    # proof of stake from genesis: no block reward, no uncles; London's fee rule from block 0
    assert spec.consensus == ((0, "proof-of-stake"),) and spec.block_rewards_wei == ((0, 0),)
    assert spec.uncles is None and spec.initial_base_fee_wei == 10**9
    assert spec.eip1559_rule_at(0).max_change_denominator == 8
    blobs = {r.fork: (r.start, r.target_blobs, r.max_blobs, r.update_fraction, r.reserve_price)
             for r in spec.blob_schedule}  # fmt: skip
    assert blobs == {
        "cancun": (0, 3, 6, 3_338_477, False),
        "prague": (1_742_999_832, 6, 9, 5_007_716, False),
        "osaka": (1_761_677_592, 6, 9, 5_007_716, True),
        "bpo1": (1_762_365_720, 10, 15, 8_346_193, True),
        "bpo2": (1_762_955_544, 14, 21, 11_684_671, True),
    }
    # every value names its source: go-ethereum's HoodiChainConfig for each fork time
    protocol = ENTRIES[560048]["protocol"]
    for name, fork in protocol["timestamp_forks"].items():
        assert fork["source"], name
        if name != "amsterdam":
            assert "HoodiChainConfig" in fork["source"], name
    assert "HoodiChainConfig" in protocol["timestamp_forks"]["amsterdam"]["source"]
    for item in protocol["blob_schedule"]:
        assert "go-ethereum params/config.go" in item["source"], item["fork"]
    assert "devnet" not in ENTRIES[560048]  # described, not simulated


def test_amsterdams_eips_carry_parameters_and_sources():
    eips = {e["eip"]: e for e in feeslab.protocol.chainspec.upgrade_eips("amsterdam")}
    assert {"EIP-2780", "EIP-7778", "EIP-7976", "EIP-7981", "EIP-8037", "EIP-8038"} <= set(eips)
    assert all(e["source"] for e in eips.values())
    assert eips["EIP-7976"]["parameters"]["FLOOR_COST_PER_TOKEN"] == 16
    hoodi = CHAINS["upgrades"]["amsterdam"]["activations"]["hoodi"]
    assert hoodi["timestamp"] is None and "not found" in hoodi["note"]  # said, not invented
    with pytest.raises(feeslab.errors.ConfigError, match="no upgrade"):
        feeslab.protocol.chainspec.upgrade_eips("hegota")


def test_a_rules_gas_target_follows_its_elasticity_or_its_percent():
    from feeslab.protocol.eip1559 import Eip1559Rule

    assert Eip1559Rule(0, 2, 8).gas_target(30_000_001) == 15_000_000
    assert Eip1559Rule(0, 6, 250).gas_target(60_000_000) == 10_000_000  # Base-like
    assert Eip1559Rule(0, None, 16, gas_target_percent=65).gas_target(45_000_000) == 29_250_000


def test_a_chain_the_devnet_does_not_simulate_has_no_devnet_spec_and_says_so():
    """Hoodi has protocol heights only: asking for its devnet heights is a ConfigError
    naming the chain, not a bare KeyError."""
    from feeslab.errors import ConfigError
    from feeslab.protocol.chainspec import ChainSpec

    with pytest.raises(ConfigError, match="hoodi has no devnet heights"):
        ChainSpec.devnet(560048)
    assert ChainSpec.of(560048).chain_id == 560048
