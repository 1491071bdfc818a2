"""feeslab.samples.post_merge_blocks(): four whole real blocks, checked against their headers.

The headers hash to their known hashes; the bodies and receipts rebuild the headers' roots (so
every transaction and receipt is the real one); the receipts' gas adds up to ``gasUsed``; and
the frames are those of ``parse_blocks`` / ``parse_transactions``.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest
import rlp
from eth_hash.auto import keccak
from trie import HexaryTrie

from feeslab import samples
from feeslab.frames import BLOCK_DTYPES
from feeslab.frames.transactions import TRANSACTION_DTYPES
from feeslab.protocol.blobs import GAS_PER_BLOB
from feeslab.protocol.headers import header_hash

NUMBERS = [17_034_870, 19_426_587, 22_431_084, 22_869_878]
# hashes published by others: ethereumjs devp2p's Shanghai check block (CHECK_BLOCK) and
# go-ethereum's first Prague block (PraguePrunePoints, mainnet)
KNOWN = {
    17_034_870: "0xe22c56f211f03baadcc91e4eb9a24344e6848c5df4473988f893b58223f5216c",
    22_431_084: "0x50c8cab760b2948349c590461b166773c45d8f4858cccf5a43025ab2960152e8",
}


@pytest.fixture(scope="module")
def stored() -> pd.DataFrame:
    resource = resources.files("feeslab._data").joinpath("samples/post_merge_blocks.parquet")
    with resources.as_file(resource) as path:
        return pd.read_parquet(path)


@pytest.fixture(scope="module")
def loaded() -> samples.PostMergeBlocks:
    return samples.post_merge_blocks()


def _root(values: list[bytes]) -> bytes:
    """The ordered trie root of ``values`` (keys ``rlp(index)``), as block headers commit."""
    tree = HexaryTrie(db={})
    for i, value in enumerate(values):
        tree[rlp.encode(i)] = value
    return tree.root_hash


def _bloom(logs: list) -> bytes:
    """The 2048-bit logs bloom of the yellow paper (4.3.1): 3 bits per address and topic."""
    bits = 0
    for address, topics, _ in logs:
        for item in [address, *topics]:
            digest = keccak(item)
            for i in (0, 2, 4):
                bits |= 1 << (int.from_bytes(digest[i : i + 2], "big") & 2047)
    return bits.to_bytes(256, "big")


def test_headers_hash_to_the_blocks_hashes(stored, loaded):
    blocks = loaded.blocks
    assert blocks["block_number"].tolist() == NUMBERS == stored["block_number"].tolist()
    for row, raw, body, receipts in zip(blocks.itertuples(), stored["header_rlp"],
                                        stored["body_rlp"], stored["receipts_rlp"], strict=True):
        assert row.hash == "0x" + keccak(raw).hex()
        if row.block_number in KNOWN:
            assert row.hash == KNOWN[row.block_number]
        # the node-shaped JSON the loader builds re-encodes to the same header
        block, _ = samples._whole_block_json(raw, body, receipts)
        assert header_hash(block) == row.hash


def test_bodies_and_receipts_rebuild_the_headers_roots(stored):
    for header, body, receipts in zip(stored["header_rlp"], stored["body_rlp"],
                                      stored["receipts_rlp"], strict=True):  # fmt: skip
        fields = rlp.decode(header)
        transactions, uncles, withdrawals = rlp.decode(body)
        encoded = [rlp.encode(tx) if isinstance(tx, list) else tx for tx in transactions]
        assert _root(encoded) == fields[4]  # transactionsRoot
        consensus = []
        for kind, status, cumulative, logs in rlp.decode(receipts):
            receipt = rlp.encode([status, cumulative, _bloom(logs), logs])
            consensus.append(kind + receipt if kind else receipt)  # EIP-2718: type || rlp
        assert _root(consensus) == fields[5]  # receiptsRoot
        assert _root([rlp.encode(w) for w in withdrawals]) == fields[16]  # withdrawalsRoot
        assert uncles == [] and keccak(rlp.encode([])) == fields[1]  # no ommers after the merge


def test_receipts_gas_adds_up_to_each_headers_gas_used(loaded):
    blocks, transactions = loaded
    by_block = transactions.groupby("block_number")
    assert by_block["gas_used"].sum().tolist() == blocks["gas_used"].tolist()
    assert by_block.size().tolist() == blocks["transaction_count"].tolist() == [184, 37, 95, 301]
    assert (transactions["gas_used"] > 0).all()
    assert (transactions["gas_used"] <= transactions["gas_limit"]).all()
    assert (transactions["transaction_index"] == by_block.cumcount()).all()


def test_frames_have_the_columns_of_the_node_parsers(loaded):
    blocks, transactions = loaded
    assert {c: str(t) for c, t in transactions.dtypes.items()} == TRANSACTION_DTYPES
    assert list(blocks.columns) == list(BLOCK_DTYPES)
    for name, dtype in BLOCK_DTYPES.items():
        assert str(blocks[name].dtype) == dtype, name
    assert (blocks["difficulty"] == 0).all() and blocks["total_difficulty"].isna().all()
    for frame in loaded:
        assert frame.attrs["chain_id"] == 1 and frame.attrs["chain_spec"] == "mainnet"
        assert frame.attrs["source"] == "ethereum/portal-spec-tests"
        assert frame.attrs["licence"] == "MIT"


def test_fees_follow_each_transactions_type(loaded):
    blocks, tx = loaded
    assert tx["type"].value_counts().to_dict() == {2: 495, 0: 112, 3: 4, 1: 4, 4: 2}
    base = tx["block_number"].map(dict(zip(blocks["block_number"], blocks["base_fee_wei"],
                                           strict=True))).astype("int64")  # fmt: skip
    price = tx["effective_gas_price_wei"].astype("int64")
    assert (tx["effective_tip_wei"].astype("int64") == price - base).all()
    assert (price >= base).all()  # no transaction pays less than the base fee (EIP-1559)
    market = tx["type"] >= 2
    fee_cap = tx.loc[market, "max_fee_per_gas_wei"].astype("int64")
    tip_cap = tx.loc[market, "max_priority_fee_per_gas_wei"].astype("int64")
    assert (price[market] == np.minimum(fee_cap, base[market] + tip_cap)).all()
    assert tx.loc[~market, "max_fee_per_gas_wei"].isna().all()
    blobs = tx["type"] == 3
    assert tx.loc[blobs, "blob_count"].tolist() == [5, 4, 3, 1]
    assert tx.loc[~blobs, "blob_count"].eq(0).all()
    assert tx.loc[~blobs, "max_fee_per_blob_gas_wei"].isna().all()
    assert tx.loc[blobs, "max_fee_per_blob_gas_wei"].notna().all()
    per_block = tx.groupby("block_number")["blob_count"].sum() * GAS_PER_BLOB
    cancun_on = blocks.set_index("block_number")["blob_gas_used"].dropna()
    assert per_block.loc[cancun_on.index].tolist() == cancun_on.tolist()


def test_blob_fields_equal_the_blob_market_rows():
    """Two sources, one chain: the portal blocks' headers and score-da's rows agree."""
    blocks = samples.post_merge_blocks().blocks.set_index("block_number")
    resource = resources.files("feeslab._data").joinpath("samples/blob_market.parquet")
    with resources.as_file(resource) as path:
        rows = pd.read_parquet(path, filters=[("block_number", "in", NUMBERS[1:])])
    assert rows["block_number"].tolist() == NUMBERS[1:]
    for row in rows.itertuples():
        header = blocks.loc[row.block_number]
        assert header["excess_blob_gas"] == row.excess_blob_gas
        assert header["blob_gas_used"] == GAS_PER_BLOB * row.blob_count
        assert header["timestamp"].timestamp() == row.timestamp


def test_the_fork_headers_chain_parent_to_child_and_each_child_pays_the_rules_base_fee():
    headers = samples.fork_headers()
    assert headers["block_number"].is_monotonic_increasing and len(headers) == 10
    assert str(headers["timestamp"].dtype) == "datetime64[ns, UTC]"
    by_number = headers.set_index("block_number")
    pairs = [(17_034_869, 17_034_870), (19_426_586, 19_426_587), (19_999_999, 20_000_000),
             (22_431_083, 22_431_084)]  # fmt: skip
    for parent, child in pairs:
        assert by_number.at[child, "parent_hash"] == by_number.at[parent, "hash"]
        # EIP-1559 written out here (elasticity 2, denominator 8), not feeslab's rule
        base, used, target = (int(by_number.at[parent, name]) for name in
                              ("base_fee_wei", "gas_used", "gas_limit"))  # fmt: skip
        target //= 2
        if used > target:
            expected = base + max(base * (used - target) // target // 8, 1)
        else:
            expected = base - base * (target - used) // target // 8
        assert int(by_number.at[child, "base_fee_wei"]) == expected, child
    assert headers.attrs["source"] == "ethereum/portal-spec-tests"
