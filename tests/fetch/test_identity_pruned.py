"""A cached fetch by URL against a node pruned as geth's ``--history.chain postmerge``: the
cache's identity is learnt from headers, which such a node still serves, not from the genesis
body, which it answers with 4444 (EIP-4444).

Real HTTP on loopback against a pruned ``feeslab serve`` in another process.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import feeslab
from feeslab.devnet import spawn
from feeslab.fetch.cache import chain_identity

SEED = 7  # the session devnet's chains, generated once
CUTOFF = 164_999  # geth's prune point on mainnet (its terminal PoW block): the devnet's too
MERGE = 165_000


@pytest.fixture(scope="module")
def pruned() -> Iterator[object]:
    with spawn(seed=SEED, daily_credits=10**15, credits_per_second=10**12,
               history="postmerge") as devnet:  # fmt: skip
        yield devnet


def _call(handle, method, *params):
    reply = httpx.post(f"{handle.url}/v3/{handle.api_key}", timeout=120,
                       json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
    return reply.json()


def _lab(handle, cache):
    return feeslab.connect(url=handle.url, api_key=handle.api_key,
                           api_key_secret=handle.api_key_secret, cache=cache, progress=False)


def test_a_cached_fetch_by_url_against_a_pruned_node_works(pruned, devnet, tmp_path):
    # the node refuses the genesis body as geth does: today's identity call alone would fail
    assert _call(pruned, "eth_getBlockByNumber", "0x0", False)["error"]["code"] == 4444
    with _lab(pruned, tmp_path) as lab:
        blocks = lab.blocks(MERGE, MERGE + 20)
        assert blocks["block_number"].tolist() == list(range(MERGE, MERGE + 20))
        identity = lab.node.identity
        sent = lab.credits.by_method["eth_getBlockByNumber"]
    # keyed by the genesis header, which the node serves as geth does (eth_getHeaderByNumber):
    # the same identity as the unpruned node's, from its genesis block
    genesis = _call(devnet, "eth_getBlockByNumber", "0x0", False)["result"]["hash"]
    assert identity == chain_identity(1, genesis)
    earliest = _call(pruned, "eth_getBlockByNumber", "earliest", False)["result"]
    assert int(earliest["number"], 16) == CUTOFF and earliest["hash"] != genesis
    # a new Lab (a restarted kernel) on the same cache finds it: the blocks are not sent again
    with _lab(pruned, tmp_path) as again:
        blocks_again = again.blocks(MERGE, MERGE + 20)
        assert again.node.identity == identity
        assert blocks_again.equals(blocks)
        # the refused genesis body and the block keying the cache [credits]: none of the range
        assert again.credits.by_method.get("eth_getBlockByNumber", 0) <= 2 * 80 < sent


def test_feeslab_identifies_a_pruned_devnet_by_its_genesis_header(pruned, devnet, tmp_path):
    header = _call(pruned, "eth_getHeaderByNumber", "0x0")["result"]
    genesis = _call(devnet, "eth_getBlockByNumber", "0x0", False)["result"]
    assert header["hash"] == genesis["hash"] and "transactions" not in header
    with _lab(pruned, tmp_path / "pruned") as lab:
        lab.blocks(MERGE, MERGE + 2)
        asked = dict(lab.credits.by_method)
        assert lab.node.identity == chain_identity(1, genesis["hash"])
    # it asked for the genesis block, was refused (4444), and asked for the header instead
    assert asked["eth_getHeaderByNumber"] == 80
    with _lab(devnet, tmp_path / "whole") as whole:  # the unpruned node: the same chain's key
        whole.blocks(MERGE, MERGE + 2)
        assert whole.node.identity == chain_identity(1, genesis["hash"])
        assert "eth_getHeaderByNumber" not in whole.credits.by_method
