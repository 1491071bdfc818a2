"""The chain simulator, checked against the protocol's rules computed independently."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import rlp
from eth_hash.auto import keccak
from protocol_reference import eip1559_base_fee
from trie import HexaryTrie

from feeslab.devnet.chain import (
    EMPTY_TRIE_ROOT,
    EMPTY_UNCLES_HASH,
    Chain,
    Header,
    build_chains,
    devnet_params,
    ordered_trie_root,
)
from feeslab.protocol.chaindata import load_chains
from feeslab.protocol.chainspec import ChainSpec

SEED = 11


@pytest.fixture(scope="module")
def chains():
    return build_chains(SEED)


@pytest.fixture(scope="module")
def mainnet(chains):
    chain = chains.by_id[1]
    chain.warm()
    return chain


def header_fields(h: Header) -> list:
    items = [
        h.parent_hash, h.uncles_hash, h.coinbase, h.state_root, h.transactions_root,
        h.receipts_root, h.logs_bloom, h.difficulty, h.number, h.gas_limit, h.gas_used,
        h.timestamp, h.extra_data, h.mix_hash, h.nonce,
    ]
    if h.base_fee_per_gas is not None:
        items.append(h.base_fee_per_gas)
    # go-ethereum core/types/block.go Header: WithdrawalsHash, BlobGasUsed, ExcessBlobGas,
    # ParentBeaconRoot, RequestsHash, BlockAccessListHash, SlotNumber, each from its fork on
    for later in (
        h.withdrawals_root, h.blob_gas_used, h.excess_blob_gas, h.parent_beacon_block_root,
        h.requests_hash, h.block_access_list_hash, h.slot_number,
    ):  # fmt: skip
        if later is None:
            break
        items.append(later)
    return items


def test_chains_json_describes_the_devnet_chains():
    ids = [entry["chain_id"] for entry in load_chains()]
    assert ids[:2] == [1, 11155111]
    assert len(ids) >= 4
    for entry in load_chains():
        # every real value names where it comes from
        assert "source" in entry["protocol"]["initial_base_fee_wei"]
        if "devnet" not in entry:  # described for analysis only (Hoodi): not simulated
            assert entry["chain_id"] not in devnet_params()
            continue
        for rule in entry["devnet"]["eip1559"]:
            assert rule["elasticity_multiplier"] >= 1
            assert rule["base_fee_max_change_denominator"] >= 1


def test_header_encoding_matches_the_rlp_package():
    rng = random.Random(5)
    for _ in range(300):
        fields = dict(
            parent_hash=rng.randbytes(32), uncles_hash=rng.randbytes(32),
            coinbase=rng.randbytes(20), state_root=rng.randbytes(32),
            transactions_root=rng.randbytes(32), receipts_root=rng.randbytes(32),
            logs_bloom=rng.randbytes(256), difficulty=rng.choice([0, 1, 127, 128, 2**70]),
            number=rng.randrange(0, 2**40), gas_limit=rng.randrange(0, 2**30),
            gas_used=rng.choice([0, 1, 0x7F, 0x80, 30_000_000]),
            timestamp=rng.randrange(0, 2**33), extra_data=rng.randbytes(rng.choice([0, 1, 32, 97])),
            mix_hash=rng.randbytes(32), nonce=rng.randbytes(8),
            base_fee_per_gas=rng.choice([None, 0, 7, 10**9, 2**64]),
        )
        header = Header(**fields)
        assert header.encode() == rlp.encode(header_fields(header))
        assert header.hash == keccak(rlp.encode(header_fields(header)))


def test_every_hash_is_keccak_of_the_rlp_header_and_links_to_its_parent(mainnet):
    london, merge = mainnet.params.london_block, mainnet.params.merge_block
    numbers = [0, 1, 2, london - 1, london, london + 1, merge - 1, merge, mainnet.head()]
    numbers += random.Random(1).sample(range(1, mainnet.head()), 200)
    for n in numbers:
        block = mainnet.block(n)
        block.header.check()
        assert block.hash == keccak(rlp.encode(header_fields(block.header)))
        if n:
            assert block.header.parent_hash == mainnet.block(n - 1).hash
        assert mainnet.number_of(block.hash) == n


def test_base_fee_follows_eip1559_exactly_on_every_chain(chains):
    for chain in chains:
        p = chain.params
        head = chain.head()
        fees = chain.base_fees(0, head + 1)
        used = chain.gas_used_range(0, head + 1)
        limits = chain.gas_limit_range(0, head + 1)
        london = p.london_block
        assert fees[london] == 1_000_000_000
        assert all(f is None for f in fees[:london])
        for n in range(london + 1, head + 1):
            elasticity, denominator = p.eip1559_at(n)
            expected = eip1559_base_fee(
                fees[n - 1], used[n - 1], limits[n - 1], elasticity, denominator
            )
            assert fees[n] == expected, (chain.chain_id, n)
        # the next block's fee is the same rule applied to the head
        e, d = p.eip1559_at(head + 1)
        assert chain.next_base_fee(head) == eip1559_base_fee(
            fees[head], used[head], limits[head], e, d
        )


def test_london_doubles_the_gas_limit_and_gas_limits_move_within_the_bound(mainnet):
    london = mainnet.params.london_block
    limits = mainnet.gas_limit_range(0, mainnet.head() + 1)
    assert limits[london] == 2 * limits[london - 1]
    for n in range(1, len(limits)):
        if n == london:
            continue
        assert abs(limits[n] - limits[n - 1]) < limits[n - 1] // 1024


def test_gas_used_never_exceeds_the_limit_and_has_full_and_empty_runs(chains):
    for chain in chains:
        head = chain.head()
        used = np.array(chain.gas_used_range(1, head + 1))
        limits = np.array(chain.gas_limit_range(1, head + 1))
        assert (used <= limits).all()
        london = chain.params.london_block or 0
        post = slice(max(london - 1, 0), None)
        full = used[post] == limits[post]
        empty = used[post] == 0

        def longest_run(flags):
            best = run = 0
            for flag in flags:
                run = run + 1 if flag else 0
                best = max(best, run)
            return best

        assert longest_run(full) >= 5, chain.chain_id
        assert longest_run(empty) >= 2, chain.chain_id
        # calm and busy regimes: after London the fee absorbs demand (blocks
        # average half full), so regimes show as base fee levels
        fees = np.array(chain.base_fees(london + 1, head + 1), dtype=float)
        hourly = [np.median(fees[i : i + 300]) for i in range(0, len(fees) - 300, 300)]
        assert max(hourly) / min(hourly) > 3, chain.chain_id
        # on average blocks sit at the target, limit / elasticity
        elasticity, _ = chain.params.eip1559_at(head)
        ratio = used[post] / limits[post]
        assert abs(ratio.mean() * elasticity - 1) < 0.25, chain.chain_id


def test_pre_london_utilisation_follows_demand(mainnet):
    london = mainnet.params.london_block
    used = np.array(mainnet.gas_used_range(1, london), dtype=float)
    ratio = used / np.array(mainnet.gas_limit_range(1, london))
    hourly = [ratio[i : i + 270].mean() for i in range(0, len(ratio) - 270, 270)]
    assert max(hourly) - min(hourly) > 0.3


def test_pow_difficulty_follows_the_homestead_and_byzantium_rules(mainnet):
    byzantium = mainnet.params.forks["byzantium"]
    for n in list(range(1, 3000)) + list(range(byzantium - 50, byzantium + 3000)):
        parent, block = mainnet.block(n - 1), mainnet.block(n)
        elapsed = block.header.timestamp - parent.header.timestamp
        pd = parent.header.difficulty
        if n >= byzantium:
            factor = max((2 if parent.uncles else 1) - elapsed // 9, -99)
        else:
            factor = max(1 - elapsed // 10, -99)
        assert block.header.difficulty == max(131072, pd + pd // 2048 * factor)
        assert block.total_difficulty == parent.total_difficulty + block.header.difficulty


def test_uncles_obey_the_protocol_rules(mainnet):
    merge = mainnet.params.merge_block
    seen = set()
    canonical = set()
    count = 0
    for n in [*range(0, 40_000), *range(merge - 5000, merge + 5000)]:
        block = mainnet.block(n)
        canonical.add(block.hash)
        uncles = block.uncles
        if n >= merge:
            assert uncles == ()
            assert block.header.uncles_hash == EMPTY_UNCLES_HASH
            assert block.header.difficulty == 0
            assert block.header.nonce == bytes(8)
            continue
        assert len(uncles) <= 2
        expected = keccak(rlp.encode([header_fields(u) for u in uncles]))
        assert block.header.uncles_hash == expected
        for uncle in uncles:
            depth = n - uncle.number
            assert 1 <= depth <= 6
            # a sibling of an ancestor: its parent is canonical, it is not
            assert uncle.parent_hash == mainnet.block(uncle.number - 1).hash
            assert uncle.hash != mainnet.block(uncle.number).hash
            assert uncle.hash not in seen
            seen.add(uncle.hash)
            assert uncle.base_fee_per_gas == block_base_fee(mainnet, uncle.number)
            count += 1
    assert not seen & canonical
    assert count > 1000


def block_base_fee(chain: Chain, number: int):
    return chain.base_fee(number)


def test_uncle_rate_has_structure_over_time(mainnet):
    merge = mainnet.params.merge_block
    window = 10_000
    rates = []
    for start in range(1, merge - window, window):
        n_uncles = sum(len(mainnet.block(n).uncles) for n in range(start, start + window))
        rates.append(n_uncles / window)
    assert min(rates) > 0.02 and max(rates) < 0.2
    # the rate moves by more than sampling noise (~0.003 per window) allows
    assert max(rates) - min(rates) > 0.02
    depths = [n - u.number for n in range(1, merge) for u in mainnet.block(n).uncles]
    counts = np.bincount(depths, minlength=7)
    assert counts[1] > counts[2] > 0 and counts[1] > len(depths) / 2
    assert counts[3:].sum() > 0


def test_bigger_blocks_are_orphaned_more_often(mainnet):
    # the propagation delay grows with the block's gas, so a fork follows a
    # heavy parent more often than a light one
    merge = mainnet.params.merge_block
    stale_heights = {u.number for n in range(1, merge) for u in mainnet.block(n).uncles}
    used = np.array(mainnet.gas_used_range(0, merge))
    limits = np.array(mainnet.gas_limit_range(0, merge))
    heights = np.arange(1, merge)
    heavy = used[heights - 1] > 0.9 * limits[heights - 1]
    light = used[heights - 1] < 0.3 * limits[heights - 1]
    forked = np.isin(heights, list(stale_heights))
    assert forked[heavy].mean() > forked[light].mean()


def test_timestamps_increase_and_slots_are_whole(chains):
    for chain in chains:
        ts = np.array(chain.timestamp_range(0, chain.head() + 1))
        assert (np.diff(ts) > 0).all()
        start = chain.params.merge_block or 0
        post = np.diff(ts[start:])
        if chain.params.consensus_at(chain.head()) != "ethash":
            assert (post % chain.params.slot_time_s == 0).all()


def test_same_seed_same_chain_other_seed_other_chain():
    a = devnet_params()[11155111]
    one = Chain(a, 123).block(20_000)
    again = Chain(a, 123).block(20_000)
    other = Chain(a, 124).block(20_000)
    assert one == again
    assert one.hash != other.hash


def test_live_mode_grows_one_block_per_block_time():
    now = [1000.0]
    params = devnet_params()[137]
    chain = Chain(params, SEED, block_time=2.0, clock=lambda: now[0])
    assert chain.head() == params.height
    now[0] += 5.0
    assert chain.head() == params.height + 2
    block = chain.block(params.height + 2)
    assert block is not None and block.header.number == params.height + 2
    assert chain.block(params.height + 3) is None
    # growth does not change history: a static chain agrees block by block
    static = Chain(params, SEED)
    assert static.pending().hash == chain.block(params.height + 1).hash
    with pytest.raises(ValueError, match="block_time"):
        Chain(params, SEED, block_time=0)


def test_safe_and_finalized_trail_the_head_only_under_proof_of_stake(chains):
    mainnet = chains.by_id[1]
    assert mainnet.finalized() < mainnet.safe() < mainnet.head()
    assert mainnet.safe() % 32 == 0
    pow_only = Chain(devnet_params()[1], SEED)
    object.__setattr__(pow_only, "params", _with_height(pow_only.params, 1000))
    assert pow_only.safe() is None and pow_only.finalized() is None


def _with_height(params, height):
    from dataclasses import replace

    return replace(params, height=height)


def test_block_size_is_the_rlp_length_of_the_block(mainnet):
    for n in (5, 100_000, 150_000, 200_000):
        block = mainnet.block(n)
        body = [header_fields(block.header), [], [header_fields(u) for u in block.uncles]]
        if block.header.withdrawals_root is not None:  # geth's extblock: optional, Shanghai on
            body.append([[w.index, w.validator_index, w.address, w.amount_gwei]
                         for w in block.withdrawals])  # fmt: skip
        assert block.size == len(rlp.encode(body))


# Mainnet block 17,062,257's withdrawals (its body's third item) and header withdrawalsRoot:
# ethereum/portal-spec-tests tests/mainnet/history/block_data/block-data-17062257.yaml
MAINNET_17062257_WITHDRAWALS = bytes.fromhex(
    "f90230e28306af4d83034ed8948e609ac80f4324e499a6efd24f221a2caa86822484957b0184e28306af4e83"
    "034ed9948e609ac80f4324e499a6efd24f221a2caa86822484923ae233e28306af4f83034eda948e609ac80f"
    "4324e499a6efd24f221a2caa8682248495ca96b9e28306af5083034edb948e609ac80f4324e499a6efd24f22"
    "1a2caa8682248493fa49aae28306af5183034edc948e609ac80f4324e499a6efd24f221a2caa86822484943c"
    "fa0ee28306af5283034edd948e609ac80f4324e499a6efd24f221a2caa86822484838851e4e28306af538303"
    "4ede948e609ac80f4324e499a6efd24f221a2caa8682248495d404ace28306af5483034edf948e609ac80f43"
    "24e499a6efd24f221a2caa868224849c2483a6e28306af5583034ee0948e609ac80f4324e499a6efd24f221a"
    "2caa8682248499913170e28306af5683034ee1948e609ac80f4324e499a6efd24f221a2caa86822484970aab"
    "76e28306af5783034ee2948e609ac80f4324e499a6efd24f221a2caa868224849b9e7a0de28306af5883034e"
    "e3948e609ac80f4324e499a6efd24f221a2caa868224849e3074a5e28306af5983034ee4948e609ac80f4324"
    "e499a6efd24f221a2caa868224849251a004e28306af5a83034ee5948e609ac80f4324e499a6efd24f221a2c"
    "aa868224848857ac64e28306af5b83034ee6948e609ac80f4324e499a6efd24f221a2caa868224849025ba82"
    "e28306af5c83034ee7948e609ac80f4324e499a6efd24f221a2caa868224849595c7b4"
)
MAINNET_17062257_WITHDRAWALS_ROOT = bytes.fromhex(
    "54894cc503cc425d00a77b8280247d0ffc7377f420249bfae2d11d7cdc8d95cd"
)


def test_list_roots_match_mainnet_and_py_trie():
    items = [rlp.encode(w) for w in rlp.decode(MAINNET_17062257_WITHDRAWALS)]
    assert len(items) == 16
    assert ordered_trie_root(items) == MAINNET_17062257_WITHDRAWALS_ROOT
    assert ordered_trie_root([]) == EMPTY_TRIE_ROOT
    rng = random.Random(4895)
    for count in (1, 2, 3, 15, 16, 17, 127, 128, 129, 300):  # shapes up to 2-byte keys
        values = [rng.randbytes(rng.choice([1, 20, 31, 32, 33, 90])) for _ in range(count)]
        tree = HexaryTrie(db={})
        for i, value in enumerate(values):
            tree[rlp.encode(i)] = value
        assert ordered_trie_root(values) == tree.root_hash, count


def test_blocks_after_shanghai_credit_withdrawals_under_their_root(chains):
    for chain in (chains.by_id[1], chains.by_id[11155111]):
        shanghai = chain.params.forks["shanghai"]
        assert chain.block(shanghai - 1).withdrawals == ()
        previous = None
        for n in (shanghai, shanghai + 1, shanghai + 2, chain.head()):
            block = chain.block(n)
            ws = block.withdrawals
            assert len(ws) == 16
            first = 16 * (n - shanghai)
            assert [w.index for w in ws] == list(range(first, first + 16))
            tree = HexaryTrie(db={})
            for i, w in enumerate(ws):
                tree[rlp.encode(i)] = rlp.encode([w.index, w.validator_index, w.address,
                                                  w.amount_gwei])  # fmt: skip
            assert block.header.withdrawals_root == tree.root_hash != EMPTY_TRIE_ROOT
            assert block.hash == keccak(rlp.encode(header_fields(block.header)))
            assert all(len(w.address) == 20 and w.amount_gwei > 0 for w in ws)
            if previous is not None and n == previous + 1:  # the sweep goes on in order
                last = chain.block(previous).withdrawals[-1]
                assert ws[0].validator_index == last.validator_index + 1
            previous = n
        # a pure function of the seed: another devnet with it credits the same
        again = Chain(chain.params, SEED).block(shanghai + 1)
        assert again.withdrawals == chain.block(shanghai + 1).withdrawals


def test_readers_during_generation_see_only_complete_blocks():
    import threading

    params = _with_height(devnet_params()[11155111], 30_000)
    writer = Chain(params, 991)
    reader = Chain(params, 991)
    errors: list[BaseException] = []
    seen: dict[int, bytes] = {}

    def read():
        try:
            for n in range(0, 30_000, 97):
                block = reader.block(n)
                seen[n] = block.hash
                assert reader.gas_used(n) == block.header.gas_used
                assert reader.base_fee(n) == block.header.base_fee_per_gas
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer.warm)] + [
        threading.Thread(target=read) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(Chain(params, 991).block(n).hash == h for n, h in seen.items())


MAINNET_GENESIS_TIME = 1_438_269_973  # block 0's timestamp (2015-07-30)
MAINNET_TERMINAL_POW_TIME = 1_663_224_162  # block 15,537,393 (portal-spec-tests block data)


def test_chain_1_dates_its_proof_of_work_in_mainnets_proof_of_work_era(mainnet):
    merge = mainnet.params.merge_block
    ts = np.array(mainnet.timestamp_range(0, mainnet.head() + 1))
    pow_era, pos_era = ts[:merge], ts[merge:]
    assert pow_era.min() > MAINNET_GENESIS_TIME and pow_era.max() < MAINNET_TERMINAL_POW_TIME
    assert pow_era.max() > MAINNET_TERMINAL_POW_TIME - 14 * 86_400  # its last weeks
    jump = mainnet.params.merge_clock_jump_s
    assert jump % (7 * 86_400) == 0  # whole weeks: hours and weekdays of demand unchanged
    gap = pos_era[0] - pow_era[-1]
    assert jump < gap <= jump + 8 * mainnet.params.slot_time_s
    # after every real fork (mainnet's BPO2 of 2026-01-07 is the last scheduled), so no simulated
    # date can pass for a real one
    last_real_fork = max(f.timestamp or 0 for f in ChainSpec.from_chain(1).forks)
    assert pos_era[0] > last_real_fork
    first_pos = pd.Timestamp(pos_era[0], unit="s", tz="UTC")
    assert (first_pos.year, first_pos.month) == (2027, 1)  # as if born with the other chains
