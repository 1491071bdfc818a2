"""Reorgs of the live head (``feeslab.devnet._reorg``) and how ``newHeads`` announces them:
on a chain whose clock the test moves, every replaced block's hash changes, its children name
it, orphaned hashes are no longer found, and a subscription announces the new branch from the
first replaced block, as geth and Infura do."""

from __future__ import annotations

import itertools

import pytest

from feeslab.devnet._reorg import FIRST_REORG_OFFSET, ReorgingChain, reorg_depth
from feeslab.devnet.chain import build_chains
from feeslab.devnet.rpc import format_new_head
from feeslab.devnet.subscriptions import HeadSubscriptions

SEED = 7


@pytest.fixture
def clock():
    now = [0.0]
    return now


def _chain(clock, rate=0.4):
    plain = build_chains(SEED, block_time=1.0, clock=lambda: clock[0]).by_id[1]
    return ReorgingChain(plain, SEED, rate), plain


def test_reorg_depths_are_drawn_from_the_seed_one_or_two_deep():
    depths = [reorg_depth(SEED, 1, n, 0.3) for n in range(10_000)]
    assert depths == [reorg_depth(SEED, 1, n, 0.3) for n in range(10_000)]
    assert set(depths) == {0, 1, 2}
    assert 0.25 < sum(d > 0 for d in depths) / len(depths) < 0.35  # the rate asked
    assert 0.25 < depths.count(2) / sum(d > 0 for d in depths) < 0.42  # a third two deep
    assert reorg_depth(SEED + 1, 1, 5, 1.0) and not any(reorg_depth(SEED, 1, n, 0.0)
                                                          for n in range(100))  # fmt: skip


def test_a_reorg_replaces_the_last_blocks_and_the_chain_stays_one_branch(clock):
    chain, plain = _chain(clock)
    base = chain.height
    seen: dict[int, bytes] = {}
    for step in range(1, 40):
        clock[0] = float(step)
        head = chain.head()
        assert head == base + step
        seen[head] = chain.block(head).hash
    assert chain.events, "no reorg in 39 blocks at rate 0.4"
    assert all(m > base + FIRST_REORG_OFFSET and d in (1, 2) for m, d in chain.events)
    for n in range(base, chain.head() + 1):  # one branch: each block names its parent
        assert chain.block(n).header.parent_hash == chain.block(n - 1).hash
        assert chain.block(n).hash == chain.block(n).header.hash  # keccak(rlp(header))
        assert chain.number_of(chain.block(n).hash) == n
    for m, depth in chain.events:
        for n in range(m - depth, m):
            assert chain.block(n).hash != plain.block(n).hash  # re-sealed
            assert chain.block(n).header.gas_used == plain.block(n).header.gas_used
    replaced = [n for n, h in seen.items() if chain.block(n).hash != h]
    assert replaced
    for n in replaced:  # an orphaned hash is not found any more
        assert chain.number_of(seen[n]) is None
    assert chain.block(base) == plain.block(base)  # the seeded history is never touched
    assert chain.block(chain.head() + 1) is None


def test_newheads_announces_the_new_branch_from_the_first_replaced_block(clock):
    chain, _ = _chain(clock, rate=1.0)  # a reorg at every block past the first ones
    subs = HeadSubscriptions(chain, format_new_head, prefix="t")
    sub_id = subs.subscribe(["newHeads"])
    subs.activate()
    announced: list[tuple[int, str]] = []
    for step in range(1, 12):
        clock[0] = float(step)
        events, exhausted = subs.due(lambda: True)
        assert not exhausted
        announced += [(int(h["number"], 16), h["hash"]) for s, h in events if s == sub_id]
    numbers = [n for n, _ in announced]
    assert len(numbers) > len(set(numbers))  # heights announced again
    # at each reorg the announcements go back to its first replaced block, then up again
    for (n0, _), (n1, _) in itertools.pairwise(announced):
        assert n1 == n0 + 1 or n1 <= n0
    # the last announcement of each height is the canonical block's
    last = {n: h for n, h in announced}
    for n, h in last.items():
        assert h == "0x" + chain.block(n).hash.hex()
    # every canonical header names as its parent a block announced before it (or the head
    # the subscription started at)
    hashes = {h for _, h in announced} | {"0x" + chain.block(chain.height).hash.hex()}
    for n in last:
        assert format_new_head(chain.block(n))["parentHash"] in hashes


def test_reorgs_need_a_live_chain_and_a_rate_in_range(clock):
    fixed = build_chains(SEED).by_id[1]
    with pytest.raises(ValueError, match="block_time"):
        ReorgingChain(fixed, SEED, 0.5)
    plain = build_chains(SEED, block_time=1.0, clock=lambda: clock[0]).by_id[1]
    for rate in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="chance"):
            ReorgingChain(plain, SEED, rate)
