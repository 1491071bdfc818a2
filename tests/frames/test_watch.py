"""``feeslab.frames.watch``: the watch's rows from real devnet headers and fee history, held in
the column-wise ring: it wraps, it keeps the last ``capacity`` rows in block order, a reorg's
cut replaces rows (across the wrap too), and its frame has :data:`WATCH_DTYPES` and the values
``lab.blocks`` and ``lab.fee_history`` give for the same blocks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from feeslab.frames.watch import WATCH_DTYPES, WatchRing, parse_heads, watch_dtypes

FIRST = 200_000  # post-Cancun blocks of the devnet's mainnet: blob fields present
COUNT = 30
PERCENTILES = (10.0, 50.0, 90.0)


@pytest.fixture(scope="module")
def heads(devnet_batch):
    """Blocks FIRST .. FIRST + COUNT - 1 of the devnet's mainnet and of its sepolia (another
    branch: other hashes at the same numbers), with the mainnet's fee history."""
    numbers = range(FIRST, FIRST + COUNT)
    calls = [("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
    mainnet = devnet_batch(calls)
    sepolia = devnet_batch([("eth_getBlockByNumber", [hex(n), False]) for n in range(COUNT)],
                           network="sepolia")  # fmt: skip
    (history,) = devnet_batch([("eth_feeHistory", [hex(COUNT), hex(FIRST + COUNT - 1),
                                                   list(PERCENTILES)])])  # fmt: skip
    return mainnet, sepolia, history


def _columns(headers, history=None, reorged=None):
    return parse_heads(headers, [history] if history else [], percentiles=PERCENTILES,
                       reorged=reorged)  # fmt: skip


def _take(columns, rows):
    return {name: values[rows] for name, values in columns.items()}


def test_the_ring_wraps_and_keeps_the_last_rows_in_block_order(heads):
    mainnet, _, history = heads
    columns = _columns(mainnet, history)
    ring = WatchRing(8, watch_dtypes(PERCENTILES))
    assert len(ring) == 0 and ring.frame().empty
    for start in range(0, 24, 3):  # 8 batches of 3: the ring's end passes its start twice
        ring.append(_take(columns, slice(start, start + 3)))
    frame = ring.frame()
    assert frame["block_number"].tolist() == list(range(FIRST + 16, FIRST + 24))
    assert frame["hash"].tolist() == [h["hash"] for h in mainnet[16:24]]
    assert frame.index.tolist() == list(range(8))
    # a batch larger than the ring: its newest rows
    ring.append(_take(columns, slice(5, 30)))
    assert ring.frame()["block_number"].tolist() == list(range(FIRST + 22, FIRST + 30))


def test_a_reorg_cut_replaces_the_rows_across_the_wrap(heads):
    mainnet, other, history = heads
    ring = WatchRing(10, watch_dtypes(PERCENTILES))
    ring.append(_take(_columns(mainnet, history), slice(0, 16)))  # wrapped: rows 6 .. 15 held
    # blocks FIRST + 13 .. + 15 replaced by another branch's blocks (sepolia's hashes)
    branch = [dict(h, number=hex(FIRST + 13 + i)) for i, h in enumerate(other[:3])]
    assert ring.cut_from(FIRST + 13) == 3
    ring.append(_columns(branch, reorged=[True, True, True]))
    frame = ring.frame()
    assert frame["block_number"].tolist() == list(range(FIRST + 6, FIRST + 16))
    assert frame["hash"].tolist() == ([h["hash"] for h in mainnet[6:13]]
                                      + [h["hash"] for h in other[:3]])  # fmt: skip
    assert frame["reorged"].tolist() == [False] * 7 + [True] * 3
    # the replaced rows' fee history was not asked again: absent, not the old branch's
    assert frame["reward_p50_wei"].isna().tolist() == [False] * 7 + [True] * 3
    # cut from before the oldest row: nothing held
    assert ring.cut_from(FIRST) == 10 and ring.frame().empty


def test_a_value_that_is_no_hash_is_refused_and_nothing_is_written(heads):
    mainnet, other, history = heads
    ring = WatchRing(4, watch_dtypes(PERCENTILES))
    ring.append(_take(_columns(mainnet, history), slice(0, 4)))  # full: a write would overwrite
    bad = [dict(h, number=hex(FIRST + 4 + i)) for i, h in enumerate(other[:2])]
    bad[1]["parentHash"] = bad[1]["parentHash"] + "00"  # 34 bytes: numpy would cut it
    with pytest.raises(ValueError, match="parent_hash must hold 32-byte hashes"):
        ring.append(_columns(bad))
    frame = ring.frame()
    assert frame["hash"].tolist() == [h["hash"] for h in mainnet[:4]]
    assert frame["parent_hash"].tolist() == [h["parentHash"] for h in mainnet[:4]]


def test_a_frame_is_a_snapshot_of_the_ring(heads):
    mainnet, _, history = heads
    columns = _columns(mainnet, history)
    ring = WatchRing(4, watch_dtypes(PERCENTILES))
    ring.append(_take(columns, slice(0, 4)))
    before = ring.frame()
    ring.append(_take(columns, slice(4, 8)))
    assert before["block_number"].tolist() == list(range(FIRST, FIRST + 4))
    assert before["hash"].tolist() == [h["hash"] for h in mainnet[:4]]


def test_the_frame_has_watch_dtypes_and_the_values_of_lab_blocks(heads, lab):
    mainnet, _, history = heads
    ring = WatchRing(COUNT, watch_dtypes(PERCENTILES))
    ring.append(_columns(mainnet, history))
    frame = ring.frame()
    expected = WATCH_DTYPES | {"reward_p10_wei": "Int64", "reward_p50_wei": "Int64",
                               "reward_p90_wei": "Int64", "reorged": "bool",
                               "received_at": "datetime64[ns, UTC]"}  # fmt: skip
    assert {c: str(t) for c, t in frame.dtypes.items()} == expected
    assert list(frame.columns) == list(expected)
    empty = WatchRing(3, watch_dtypes(PERCENTILES)).frame()
    assert {c: str(t) for c, t in empty.dtypes.items()} == expected
    blocks = lab.blocks(FIRST, FIRST + COUNT)
    for column in set(blocks.columns) & set(WATCH_DTYPES):
        pd.testing.assert_series_equal(frame[column], blocks[column], check_names=False)
    fees = lab.fee_history(FIRST, FIRST + COUNT, percentiles=list(PERCENTILES))
    for column in ("base_fee_per_blob_gas_wei", "reward_p10_wei", "reward_p90_wei"):
        pd.testing.assert_series_equal(frame[column], fees[column].iloc[:COUNT],
                                       check_names=False)  # fmt: skip
    assert frame["blob_count"].notna().all() and (frame["blob_count"] > 0).any()
    assert (frame["blob_count"] * 2**17 == frame["blob_gas_used"]).all()
    assert (frame["gas_target"] * 2 == frame["gas_limit"]).all()
    assert np.allclose(frame["gas_target_ratio"], frame["gas_used"] / frame["gas_target"])
