"""parse_uncles on real provider answers (geth/Infura, Alchemy, Besu) and uncle_scan_frame."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from feeslab.frames import (
    UNCLE_DTYPES,
    UNCLE_SCAN_DTYPES,
    parse_uncles,
    uncle_scan_frame,
    uncles_frame,
)

UNCLES = Path(__file__).resolve().parents[1] / "data" / "uncles"  # see tests/data/SOURCES.md


def answer(name: str) -> tuple[dict, dict]:
    data = json.loads((UNCLES / name).read_text())
    return data["request"], data["response"]["result"]


def by_number_row(name: str):
    """(including block, index, uncle) as a fetcher of eth_getUncleByBlockNumberAndIndex has it."""
    request, uncle = answer(name)
    number, index = request["params"]
    return int(number, 16), int(index, 16), uncle


def check_dtypes(frame: pd.DataFrame, dtypes: dict[str, str]) -> None:
    assert list(frame.columns) == list(dtypes)
    assert {c: str(t) for c, t in frame.dtypes.items()} == dtypes


@pytest.mark.parametrize(
    "name", ["geth_infura_byNumber_0x29c_0x0.json", "alchemy_byNumber_0x29c_0x0.json"]
)
def test_frontier_uncle_of_block_0x29c(name):
    frame = parse_uncles([by_number_row(name)])
    check_dtypes(frame, UNCLE_DTYPES)
    row = frame.iloc[0]
    assert row.block_number == 0x29C == 668
    assert row.uncle_index == 0
    assert row.uncle_number == 0x299 == 665
    assert row.depth == 3
    assert row.hash == "0x932bdf904546a2287a2c9b2ede37925f698a7657484b172d4e5184f80bdd464d"
    assert row.miner == "0x5bf5e9cf9b456d6591073513de7fd69a9bef04bc"
    assert row.difficulty == 0x57F117F5C == 23_606_689_628
    assert row.gas_limit == 0x1388 == 5000
    assert row.gas_used == 0
    assert row.timestamp == pd.Timestamp("2015-07-30 15:52:07", tz="UTC")  # 0x55ba4827
    assert row.base_fee_wei is pd.NA  # 2015: no baseFeePerGas


def test_besu_uncle_by_number_with_total_difficulty():
    frame = parse_uncles([by_number_row("besu_byNumber_0x7689D2_0x0.json")])
    row = frame.iloc[0]
    assert row.block_number == 0x7689D2 == 7_768_530
    assert row.uncle_number == 0x7689D0
    assert row.depth == 2
    assert row.hash == "0x42d83ae9c0743f4b1f9c61ff7ea8b164c1bab3627decd49233760680be006ecf"
    assert row.miner == "0x52bc44d5378309ee2abf1539bf71de1b7d7be3b5"
    assert row.difficulty == 0x77DAEC467BF93
    assert row.gas_limit == 0x7A121D and row.gas_used == 0x7A0F7B
    assert row.timestamp == pd.Timestamp(0x5CDCC0A7, unit="s", tz="UTC")


def test_by_hash_answers_with_the_including_block_known():
    # the geth/Infura fixture notes that block 0xb3b2...5a35 is mainnet block 0x5bad55
    rows = []
    for name in ("geth_infura_byHash_0x5bad55_0x0.json", "alchemy_byHash_0x5bad55_0x0.json"):
        request, uncle = answer(name)
        assert request["params"][0].startswith("0xb3b20624")
        rows.append((0x5BAD55, request["params"][1], uncle))  # index as the 0x quantity sent
    frame = parse_uncles(rows)
    assert frame.uncle_number.tolist() == [0x5BAD54, 0x5BAD54]
    assert frame.depth.tolist() == [1, 1]
    assert frame.uncle_index.tolist() == [0, 0]
    assert frame.difficulty.tolist() == [0xBF93DA424B943, 0xBF93DA424B943]
    assert frame.miner.iloc[0] == "0xea674fdde714fd979de3edf0f56aa9716b898ec8"
    assert frame.timestamp.iloc[0] == pd.Timestamp(0x5B54143F, unit="s", tz="UTC")
    # the same header from two providers parses to the same row
    pd.testing.assert_series_equal(frame.iloc[0], frame.iloc[1], check_names=False)


def test_besu_by_hash_uncle_fields():
    _, uncle = answer("besu_byHash_0xc48fb642_0x0.json")
    # the including block is not in the fixture; its number is 1..6 above the uncle's
    frame = parse_uncles([(0x768964 + 1, 0, uncle)])
    assert frame.uncle_number.iloc[0] == 0x768964
    assert frame.gas_used.iloc[0] == 0x7A0175
    assert (
        frame.hash.iloc[0] == "0xc20189c0b1a4a23116ab3b177e929137f6e826f17fc4c2e880e7258c620e9817"
    )


def synthetic_uncle(number: int, **fields) -> dict:
    uncle = {
        "number": hex(number),
        "hash": f"0x{number:064x}",
        "miner": "0x" + "cd" * 20,
        "difficulty": "0x10",
        "gasLimit": "0x1c9c380",
        "gasUsed": "0x5208",
        "timestamp": "0x61cdf8a0",
    }
    uncle.update(fields)
    return uncle


def test_post_london_uncle_base_fee_and_huge_difficulty():
    huge = 3 * 2**63
    frame = parse_uncles(
        [
            (13_000_001, 0, synthetic_uncle(13_000_000, baseFeePerGas="0x2540be400")),
            (13_000_001, 1, synthetic_uncle(12_999_995, difficulty=hex(huge))),
        ]
    )
    assert frame.base_fee_wei.tolist() == [10_000_000_000, pd.NA]
    assert frame.difficulty.iloc[1] == huge
    assert frame.depth.tolist() == [1, 6]


def test_empty_rows_give_empty_frame():
    frame = parse_uncles([])
    assert len(frame) == 0
    check_dtypes(frame, UNCLE_DTYPES)
    pd.testing.assert_frame_equal(frame, uncles_frame({name: [] for name in UNCLE_DTYPES
                                                       if name != "depth"}))  # fmt: skip


def test_uncles_frame_from_columns_equals_parse_uncles():
    """The one builder: decoded header fields (as era1 has them) give parse_uncles' frame."""
    huge = 3 * 2**63
    columns = {
        "block_number": [13_000_001, 13_000_001],
        "uncle_index": np.array([0, 1], dtype=np.int64),
        "uncle_number": np.array([13_000_000, 12_999_995], dtype=np.uint64),
        "hash": [f"0x{13_000_000:064x}", f"0x{12_999_995:064x}"],
        "miner": ["0x" + "cd" * 20] * 2,
        "difficulty": [16, huge],
        "gas_limit": [30_000_000, 30_000_000],
        "gas_used": [21_000, 21_000],
        "timestamp": [0x61CDF8A0, 0x61CDF8A0],
        "base_fee_wei": pd.arrays.IntegerArray(np.array([10**10, 0]), np.array([False, True])),
    }
    frame = uncles_frame(columns)
    check_dtypes(frame, UNCLE_DTYPES)
    assert frame.depth.tolist() == [1, 6]  # computed
    pd.testing.assert_frame_equal(frame, parse_uncles([
        (13_000_001, 0, synthetic_uncle(13_000_000, baseFeePerGas="0x2540be400")),
        (13_000_001, 1, synthetic_uncle(12_999_995, difficulty=hex(huge))),
    ]))  # fmt: skip
    with pytest.raises(ValueError, match=r"not its columns \['depth'\] \(\['depth'\] it computes"):
        uncles_frame({**columns, "depth": [1, 6]})
    del columns["hash"]
    with pytest.raises(ValueError, match=r"uncles_frame takes the columns .*missing \['hash'\]"):
        uncles_frame(columns)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([(10, 0, None)], r"rows\[0\]: block 10 has no uncle at index 0"),
        ([(10, 0, synthetic_uncle(10))], r"not below the including block"),
        ([(10, 0)], r"rows\[0\] must be a \(block_number, index, uncle\) triple"),
        ([(10, 0, synthetic_uncle(9, gasUsed=None))], r"uncles\[0\]\.gasUsed"),
        ([("ten", 0, synthetic_uncle(9))], r"rows\[0\] block_number is not a hex quantity"),
    ],
)
def test_bad_rows_are_named(rows, match):
    with pytest.raises((ValueError, TypeError), match=match):
        parse_uncles(rows)


def test_scan_frame_counts_blocks_without_uncles():
    uncles = parse_uncles(
        [
            (101, 0, synthetic_uncle(100)),
            (103, 0, synthetic_uncle(101)),
            (103, 1, synthetic_uncle(102)),
        ]
    )
    scan = uncle_scan_frame(range(100, 106), uncles)
    check_dtypes(scan, UNCLE_SCAN_DTYPES)
    assert scan.block_number.tolist() == [100, 101, 102, 103, 104, 105]
    assert scan.uncle_count.tolist() == [0, 1, 0, 2, 0, 0]
    assert scan.uncle_count.mean() == pytest.approx(3 / 6)  # uncle rate over all six blocks
    # a blocks frame works as the scan list too, and duplicates count once
    blocks = pd.DataFrame({"block_number": np.array([103, 101, 101], dtype=np.int64)})
    assert uncle_scan_frame(blocks, uncles).uncle_count.tolist() == [1, 2]


def test_scan_frame_edge_cases():
    empty = uncle_scan_frame([], parse_uncles([]))
    assert len(empty) == 0
    check_dtypes(empty, UNCLE_SCAN_DTYPES)
    only_zero = uncle_scan_frame(np.arange(5), parse_uncles([]))
    assert only_zero.uncle_count.tolist() == [0] * 5
    uncles = parse_uncles([(101, 0, synthetic_uncle(100))])
    with pytest.raises(ValueError, match="block 101, not in scanned_blocks"):
        uncle_scan_frame([100, 102], uncles)
    twice = pd.concat([uncles, uncles], ignore_index=True)
    with pytest.raises(ValueError, match="lists block 101 uncle index 0 twice"):
        uncle_scan_frame([101], twice)
    with pytest.raises(TypeError, match="must be integers"):
        uncle_scan_frame([1.5], uncles)
