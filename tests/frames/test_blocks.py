"""parse_blocks on the execution-apis conformance fixtures and synthetic edge cases."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from feeslab.frames import BLOCK_DTYPES, blocks_frame, gas_used_ratio, parse_blocks

DATA = Path(__file__).resolve().parents[1] / "data"  # vendored, see tests/data/SOURCES.md
BLOCK_TESTS = DATA / "execution-apis" / "tests" / "eth_getBlockByNumber"


def io_result(path: Path):
    """The ``<< {json}`` answer of an execution-apis ``.io`` test."""
    for line in path.read_text().splitlines():
        if line.startswith("<< "):
            return json.loads(line[3:])["result"]
    raise AssertionError(f"no answer line in {path}")


def check_dtypes(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == list(BLOCK_DTYPES)
    assert {c: str(t) for c, t in frame.dtypes.items()} == BLOCK_DTYPES


def test_london_block_from_the_conformance_suite():
    frame = parse_blocks([io_result(BLOCK_TESTS / "get-block-london-fork.io")])
    check_dtypes(frame)
    row = frame.iloc[0]
    # values written out from the fixture's JSON
    assert row.block_number == 0x1B == 27
    assert row.hash == "0xb82be38216daf4487ab4fcafe9413892e7140f6816276560ec10d94d039db1aa"
    assert row.parent_hash == "0xea412d6a2f9d9f21112e310261ff8cc2a1b0e4e4369f9d8feffb91da818d13af"
    assert row.timestamp == pd.Timestamp(0x10E, unit="s", tz="UTC")  # 270 s after the epoch
    assert row.miner == "0x0000000000000000000000000000000000000000"
    assert row.difficulty == 0x202C0 == 131776
    assert row.total_difficulty is None  # the fixture has no totalDifficulty
    assert row.gas_limit == 0xBEBC200 == 200_000_000
    assert row.gas_used == 0x23948 == 145736
    assert row.gas_used_ratio == pytest.approx(145736 / 200_000_000)
    assert row.base_fee_wei == 0x3B9ACA00 == 1_000_000_000  # London's initial base fee
    assert row.size_bytes == 0x4A5
    assert row.uncle_count == 0
    assert row.uncle_hashes == ()


def test_every_fixture_block_parses_together():
    names = [
        "get-genesis.io",
        "get-block-london-fork.io",
        "get-block-merge-fork.io",
        "get-block-shanghai-fork.io",
        "get-block-cancun-fork.io",
        "get-block-prague-fork.io",
        "get-latest.io",  # full transaction objects (params [.., true])
    ]
    results = [io_result(BLOCK_TESTS / name) for name in names]
    frame = parse_blocks(results)
    check_dtypes(frame)
    assert frame.block_number.tolist() == [0, 0x1B, 0x24, 0x27, 0x2A, 0x2D, 0x36]
    # genesis is pre-London: no baseFeePerGas -> <NA>
    assert frame.base_fee_wei.isna().tolist() == [True] + [False] * 6
    assert frame.base_fee_wei.iloc[2] == 0x11F76EC1
    assert frame.difficulty.tolist()[:3] == [0x20000, 0x202C0, 0]  # 0 after the merge
    assert frame.transaction_count.tolist() == [len(r["transactions"]) for r in results]
    assert frame.timestamp.iloc[0] == pd.Timestamp("1970-01-01", tz="UTC")
    assert frame.size_bytes.iloc[0] == 0x205


def header(number: int, **fields) -> dict:
    block = {
        "number": hex(number),
        "hash": "0x" + f"{number:064x}",
        "parentHash": "0x" + f"{number - 1:064x}",
        "timestamp": hex(1_438_269_988 + 13 * number),
        "miner": "0x" + "ab" * 20,
        "difficulty": "0x1",
        "totalDifficulty": "0x2",
        "gasLimit": "0x1388",
        "gasUsed": "0x0",
        "size": "0x21d",
        "transactions": [],
        "uncles": [],
    }
    block.update(fields)
    return {k: v for k, v in block.items() if v is not ...}


def test_pre_london_huge_difficulty_and_null_total_difficulty_stay_exact():
    huge = 2**64 + 12345  # beyond int64 and float precision
    total = 2**100 + 1
    frame = parse_blocks(
        [
            header(100, difficulty=hex(huge), totalDifficulty=hex(total)),
            header(101, totalDifficulty=None, uncles=["0x" + "11" * 32, "0x" + "22" * 32]),
            header(102, totalDifficulty=..., baseFeePerGas="0x7"),  # key absent
        ]
    )
    check_dtypes(frame)
    assert frame.difficulty.iloc[0] == huge and type(frame.difficulty.iloc[0]) is int
    assert frame.total_difficulty.tolist() == [total, None, None]
    assert frame.base_fee_wei.isna().tolist() == [True, True, False]
    assert frame.base_fee_wei.iloc[2] == 7
    assert frame.uncle_count.tolist() == [0, 2, 0]
    assert frame.uncle_hashes.iloc[1] == ("0x" + "11" * 32, "0x" + "22" * 32)
    assert frame.timestamp.iloc[0] == pd.Timestamp(1_438_269_988 + 1300, unit="s", tz="UTC")
    assert frame.gas_used_ratio.tolist() == [0.0, 0.0, 0.0]


def test_empty_input_gives_empty_frame_with_dtypes():
    frame = parse_blocks([])
    assert len(frame) == 0
    check_dtypes(frame)


def test_zero_gas_limit_gives_nan_ratio():
    frame = parse_blocks([header(1, gasLimit="0x0")])
    assert frame.gas_used_ratio.isna().all()


@pytest.mark.parametrize(
    ("blocks", "error", "match"),
    [
        ([None], ValueError, r"blocks\[0\] is null"),
        ([header(1, gasUsed=...)], ValueError, r"blocks\[0\] has no 'gasUsed'"),
        ([header(1), header(2, gasUsed="zz")], ValueError, r"blocks\[1\]\.gasUsed"),
        ([header(1, baseFeePerGas=hex(2**63))], ValueError, r"does not fit int64"),
        ([header(1, hash=5)], TypeError, r"blocks\[0\]\.hash must be a string"),
        ([["not", "a", "dict"]], TypeError, r"blocks\[0\] must be a JSON object"),
        (header(1), TypeError, "must be a list"),
    ],
)
def test_bad_input_names_the_block_and_field(blocks, error, match):
    with pytest.raises(error, match=match):
        parse_blocks(blocks)


def _real_header_json(number: int) -> dict:
    """A real mainnet header (tests/data, see SOURCES.md) as eth_getBlockByNumber prints it."""
    import json
    from pathlib import Path

    import rlp

    samples = Path(__file__).resolve().parents[2] / "data" / "samples"
    data = json.loads((samples / "mainnet_fork_headers.json").read_text())
    raw = next(h for h in data["headers"] if h["number"] == number)["header_rlp"]
    items = rlp.decode(bytes.fromhex(raw[2:]))
    names = ["parentHash", "sha3Uncles", "miner", "stateRoot", "transactionsRoot", "receiptsRoot",
             "logsBloom", "difficulty", "number", "gasLimit", "gasUsed", "timestamp", "extraData",
             "mixHash", "nonce", "baseFeePerGas", "withdrawalsRoot", "blobGasUsed", "excessBlobGas",
             "parentBeaconBlockRoot", "requestsHash"]  # fmt: skip
    quantities = {"difficulty", "number", "gasLimit", "gasUsed", "timestamp", "baseFeePerGas",
                  "blobGasUsed", "excessBlobGas"}  # fmt: skip
    block = {
        name: hex(int.from_bytes(v, "big")) if name in quantities else "0x" + bytes(v).hex()
        for name, v in zip(names, items, strict=False)
    }
    block.update(hash="0x" + "00" * 32, size="0x0", uncles=[], transactions=[])
    return block


def test_blob_columns_are_exact_and_absent_before_cancun():
    frame = parse_blocks([_real_header_json(n) for n in (19_426_586, 19_426_587, 22_431_084)])
    assert str(frame["blob_gas_used"].dtype) == "Int64"
    assert str(frame["excess_blob_gas"].dtype) == "Int64"
    assert frame["blob_gas_used"].isna().tolist() == [True, False, False]
    assert frame["excess_blob_gas"].tolist()[1:] == [0, 50_462_720]
    assert frame["blob_gas_used"].tolist()[2] == 1_179_648  # 9 blobs: a full Prague block


def test_slim_headers_give_the_same_frame_and_the_same_refusals():
    """A streaming fetch keeps only ``slim_block`` of each header: the frame must not change
    (the conformance blocks: London to Prague, full transaction objects, genesis), nor the
    error a bad header gets."""
    from feeslab.frames import slim_block

    names = sorted(p.name for p in BLOCK_TESTS.glob("get-*.io"))
    results = [r for r in (io_result(BLOCK_TESTS / name) for name in names) if r is not None]
    assert len(results) >= 7 and any(len(r["transactions"]) for r in results)
    slim = [slim_block(r) for r in results]
    assert all("withdrawals" not in s and "logsBloom" not in s for s in slim)
    pd.testing.assert_frame_equal(parse_blocks(slim), parse_blocks(results))
    pd.testing.assert_frame_equal(parse_blocks([slim_block(header(1, transactions=None))]),
                                  parse_blocks([header(1, transactions=None)]))
    bad = [None, header(1, gasUsed=...), header(2, hash=5), ["not", "a", "dict"]]
    for block in bad:
        with pytest.raises((ValueError, TypeError)) as whole:
            parse_blocks([block])
        with pytest.raises(type(whole.value), match=re.escape(str(whole.value))):
            parse_blocks([slim_block(block)])


# -- blocks_frame: the one builder every source's blocks go through ------------------------------


def columns_of(n: int = 3) -> dict:
    """blocks_frame's columns as a non-JSON source has them: ints, bytes turned to hex, None."""
    return {
        "block_number": np.arange(100, 100 + n, dtype=np.uint64),  # era1's walker gives uint64
        "hash": ["0x" + f"{i:064x}" for i in range(100, 100 + n)],
        "parent_hash": ["0x" + f"{i:064x}" for i in range(99, 99 + n)],
        "timestamp": [1_438_269_988 + 13 * i for i in range(n)],
        "miner": ["0x" + "ab" * 20] * n,
        "difficulty": np.array([2**63 + 5, 1, 7][:n], dtype=np.uint64),
        "total_difficulty": [2**100 + 1, None, 3][:n],
        "gas_limit": [5000, 0, 5000][:n],
        "gas_used": [2500, 0, 5000][:n],
        "base_fee_wei": [None, 7, None][:n],
        "size_bytes": [540] * n,
        "transaction_count": [0, 3, 1][:n],
        "uncle_hashes": [[], ["0x" + "11" * 32, "0x" + "22" * 32], ()][:n],
        "blob_gas_used": [None] * n,
        "excess_blob_gas": [None, None, 2**17][:n],
    }


def test_blocks_frame_types_every_column_and_computes_ratio_and_uncle_count():
    frame = blocks_frame(columns_of())
    check_dtypes(frame)
    assert frame.attrs == {} and isinstance(frame.index, pd.RangeIndex)
    assert frame.block_number.tolist() == [100, 101, 102]
    assert frame.difficulty.tolist() == [2**63 + 5, 1, 7]  # exact beyond int64
    assert {type(d) for d in frame.difficulty} == {int}  # Python ints, not numpy's
    assert frame.total_difficulty.tolist() == [2**100 + 1, None, 3]
    assert frame.gas_used_ratio.iloc[0] == 0.5 and np.isnan(frame.gas_used_ratio.iloc[1])
    assert frame.uncle_count.tolist() == [0, 2, 0]
    assert frame.uncle_hashes.tolist() == [(), ("0x" + "11" * 32, "0x" + "22" * 32), ()]
    assert frame.base_fee_wei.isna().tolist() == [True, False, True]
    assert frame.excess_blob_gas.tolist()[2] == 2**17
    assert frame.timestamp.iloc[1] == pd.Timestamp(1_438_269_988 + 13, unit="s", tz="UTC")
    # a stored frame's datetimes give the same timestamps as Unix seconds
    again = blocks_frame({**columns_of(), "timestamp": frame.timestamp})
    pd.testing.assert_frame_equal(again, frame)


def test_blocks_frame_equals_parse_blocks_on_the_same_blocks():
    """The builder is what parse_blocks returns: the JSON path only makes columns."""
    c = columns_of()
    as_json = [
        header(int(c["block_number"][i]), hash=c["hash"][i], timestamp=hex(c["timestamp"][i]),
               difficulty=hex(int(c["difficulty"][i])),
               totalDifficulty=None if c["total_difficulty"][i] is None
               else hex(c["total_difficulty"][i]),
               gasLimit=hex(c["gas_limit"][i]), gasUsed=hex(c["gas_used"][i]),
               baseFeePerGas=... if c["base_fee_wei"][i] is None else hex(c["base_fee_wei"][i]),
               size=hex(540), transactions=["0x1"] * c["transaction_count"][i],
               uncles=list(c["uncle_hashes"][i]),
               excessBlobGas=... if c["excess_blob_gas"][i] is None
               else hex(c["excess_blob_gas"][i]))
        for i in range(3)
    ]  # fmt: skip
    pd.testing.assert_frame_equal(parse_blocks(as_json), blocks_frame(c))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda c: c.pop("miner"), r"missing \['miner'\]"),
        (lambda c: c.update(uncle_count=[0, 2, 0]), r"not its columns \['uncle_count'\] "
                                                    r"\(\['gas_used_ratio', 'uncle_count'\] it "
                                                    "computes"),
        (lambda c: c.update(gasUsed=[1, 2, 3]), r"not its columns \['gasUsed'\]"),
        (lambda c: c.update(size_bytes=[540]), r"differ in length: .*'size_bytes': 1"),
    ],
)
def test_blocks_frame_names_a_wrong_column(change, match):
    columns = columns_of()
    change(columns)
    with pytest.raises(ValueError, match=match):
        blocks_frame(columns)


def test_blocks_frame_of_no_rows_is_parse_blocks_empty_frame():
    frame = blocks_frame({name: [] for name in columns_of()})
    check_dtypes(frame)
    pd.testing.assert_frame_equal(frame, parse_blocks([]))


def test_gas_used_ratio_is_nan_at_a_zero_limit():
    ratio = gas_used_ratio(np.array([0, 15, 3], dtype=np.uint64), [0, 30, 0])
    assert ratio.dtype == np.float64
    assert np.isnan(ratio[0]) and ratio[1] == 0.5 and np.isnan(ratio[2])


def test_rows_make_the_same_frame_as_their_columns_and_a_missing_column_is_named():
    from feeslab.frames import blocks_frame, blocks_frame_from_rows

    rows = [{"block_number": n, "hash": f"0x{n:064x}", "parent_hash": f"0x{n - 1:064x}",
             "timestamp": 1_700_000_000 + 12 * n, "miner": "0x" + "00" * 20, "difficulty": 0,
             "total_difficulty": None, "gas_limit": 30_000_000, "gas_used": 15_000_000 + n,
             "base_fee_wei": 7 + n, "size_bytes": 600, "transaction_count": 1,
             "uncle_hashes": (), "blob_gas_used": None, "excess_blob_gas": None}
            for n in (1, 2)]  # fmt: skip
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    pd.testing.assert_frame_equal(blocks_frame_from_rows(iter(rows)), blocks_frame(columns))
    del rows[1]["miner"]
    with pytest.raises(ValueError, match="row 1 has no 'miner'"):
        blocks_frame_from_rows(rows)
