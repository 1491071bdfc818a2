"""Base-fee frames: Gas API strings, eth_feeHistory (synthetic and from the devnet), stitching."""

from __future__ import annotations

import re

import httpx
import numpy as np
import pandas as pd
import pytest

from feeslab.frames import (
    BASE_FEE_DTYPES,
    FEE_HISTORY_DTYPES,
    fee_history_frame,
    parse_base_fee_history,
    parse_fee_history,
    reward_column,
    stitch_base_fee_snapshots,
)


def dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {c: str(t) for c, t in frame.dtypes.items()}


# --- Gas API baseFeeHistory ---------------------------------------------------------------------


def test_decimal_gwei_strings_become_exact_wei():
    frame = parse_base_fee_history(
        ["14.585610312", "14", "14.5", "0.000000001", "0", "007.25", "9223372036.854775807"],
        newest_block=106,
    )
    assert dtypes(frame) == BASE_FEE_DTYPES
    assert frame.block_number.tolist() == list(range(100, 107))
    assert frame.base_fee_wei.tolist() == [
        14_585_610_312,
        14_000_000_000,
        14_500_000_000,
        1,
        0,
        7_250_000_000,
        2**63 - 1,  # the largest int64, exact (a float would round it)
    ]
    assert frame.base_fee_gwei.iloc[0] == pytest.approx(14.585610312)


def test_without_newest_block_the_index_is_the_position():
    frame = parse_base_fee_history(["1.5", "2.5"])
    assert list(frame.columns) == ["base_fee_wei", "base_fee_gwei"]
    assert frame.index.tolist() == [0, 1]
    assert frame.base_fee_wei.tolist() == [1_500_000_000, 2_500_000_000]


def test_empty_history_gives_empty_frames():
    with_block = parse_base_fee_history([], newest_block=10)
    assert len(with_block) == 0 and dtypes(with_block) == BASE_FEE_DTYPES
    without = parse_base_fee_history([])
    assert dtypes(without) == {"base_fee_wei": "int64", "base_fee_gwei": "float64"}


def test_round_trip_against_the_devnet_formatter_on_random_wei():
    # the devnet's Gas API formats integer wei as exact decimal gwei
    from feeslab.devnet.gasapi import format_gwei

    rng = np.random.default_rng(1)
    wei = rng.integers(0, 2**63 - 1, 20_000, dtype=np.int64)
    wei[:3] = [0, 1, 10**9]
    frame = parse_base_fee_history([format_gwei(int(w)) for w in wei])
    np.testing.assert_array_equal(frame.base_fee_wei.to_numpy(), wei)


@pytest.mark.parametrize(
    ("values", "error", "match"),
    [
        (["1.0", "-1"], ValueError, r"values\[1\] = '-1'"),
        (["1e9"], ValueError, "only digits and one dot"),
        ([" 1"], ValueError, "only digits and one dot"),
        (["1.2.3"], ValueError, "more than one dot"),
        (["1."], ValueError, "digits on both sides"),
        ([".5"], ValueError, "digits on both sides"),
        (["1.0000000001"], ValueError, "finer than 1 wei"),
        (["9223372036.854775808"], ValueError, "too large for int64"),
        (["99999999999"], ValueError, "too large for int64"),
        (["1", ""], ValueError, r"values\[1\] = '' .* empty"),
        (["1", 2], TypeError, r"values\[1\] must be a str"),
        (["ü"], ValueError, r"values\[0\]"),
        ("1.5", TypeError, "list of decimal gwei strings"),
    ],
)
def test_bad_strings_are_named(values, error, match):
    with pytest.raises(error, match=match):
        parse_base_fee_history(values)


def test_newest_block_before_genesis_is_refused():
    with pytest.raises(ValueError, match="too small"):
        parse_base_fee_history(["1", "2", "3"], newest_block=1)


# --- eth_feeHistory ------------------------------------------------------------------------------


def test_fee_history_rows_next_block_and_rewards():
    result = {
        "oldestBlock": "0x64",
        "reward": [["0x3b9aca00", "0x77359400"], ["0x0", "0x1"]],
        "baseFeePerGas": ["0x2540be400", "0x25a4b3b7c", "0x2625a0000"],
        "gasUsedRatio": [0.5, 1.0],
        "baseFeePerBlobGas": ["0x1", "0x1", "0x2"],
        "blobGasUsedRatio": [0, 0.25],
    }
    frame = parse_fee_history(result, percentiles=[10, 92.5])
    expected = {**FEE_HISTORY_DTYPES, "reward_p10_wei": "Int64", "reward_p92_5_wei": "Int64"}
    assert dtypes(frame) == expected
    assert frame.block_number.tolist() == [100, 101, 102]  # the last is the next block
    assert frame.base_fee_wei.tolist() == [10_000_000_000, 10_104_814_460, 10_240_000_000]
    assert frame.base_fee_gwei.tolist() == [10.0, 10.10481446, 10.24]
    assert frame.gas_used_ratio.tolist()[:2] == [0.5, 1.0]
    assert np.isnan(frame.gas_used_ratio.iloc[2])
    assert frame.base_fee_per_blob_gas_wei.tolist() == [1, 1, 2]
    assert frame.blob_gas_used_ratio.tolist()[:2] == [0.0, 0.25]
    assert frame.reward_p10_wei.tolist() == [1_000_000_000, 0, pd.NA]
    assert frame.reward_p92_5_wei.tolist() == [2_000_000_000, 1, pd.NA]


def test_fee_history_without_rewards_or_blob_fields():
    frame = parse_fee_history(
        {"oldestBlock": "0x0", "baseFeePerGas": ["0x0", "0x3b9aca00"], "gasUsedRatio": [0]}
    )
    assert dtypes(frame) == FEE_HISTORY_DTYPES
    assert frame.base_fee_wei.tolist() == [0, 1_000_000_000]  # 0: pre-London, as geth answers
    assert frame.base_fee_per_blob_gas_wei.isna().all()
    assert frame.blob_gas_used_ratio.isna().all()


def test_fee_history_empty_answer_gives_empty_frame():
    # geth's (and the devnet's) answer to blockCount 0
    frame = parse_fee_history({"oldestBlock": "0x0", "gasUsedRatio": None}, percentiles=[50])
    assert len(frame) == 0
    assert dtypes(frame) == {**FEE_HISTORY_DTYPES, "reward_p50_wei": "Int64"}


@pytest.mark.parametrize(
    ("result", "percentiles", "match"),
    [
        ({"oldestBlock": "0x1", "baseFeePerGas": ["0x1"], "gasUsedRatio": [0.5]}, None,
         "expected 1 = 1 \\+ 1"),
        ({"oldestBlock": "0x1", "baseFeePerGas": ["0x1", "0x1"], "gasUsedRatio": [0.5],
          "reward": [["0x1"]]}, None, "pass the request's percentiles"),
        ({"oldestBlock": "0x1", "baseFeePerGas": ["0x1", "0x1"], "gasUsedRatio": [0.5],
          "reward": [["0x1"]]}, [10, 20], r"reward'\]\[0\] must hold 2 values"),
        ({"oldestBlock": "0x1", "baseFeePerGas": ["0x1", "0x1"], "gasUsedRatio": [0.5]}, [10],
         "no 'reward'"),
        ({"oldestBlock": "0x1", "baseFeePerGas": ["0x1", "zz"], "gasUsedRatio": [0.5]}, None,
         r"baseFeePerGas'\]\[1\]"),
    ],
)
def test_fee_history_inconsistent_answers_are_refused(result, percentiles, match):
    with pytest.raises(ValueError, match=match):
        parse_fee_history(result, percentiles=percentiles)


def test_fee_history_frame_from_columns_equals_parse_fee_history():
    """The one builder: columns as era1 has them (rewards in every row) or as the JSON gives
    them (none for the next block) make one frame."""
    columns = {
        "block_number": np.array([100, 101, 102], dtype=np.uint64),
        "base_fee_wei": [10_000_000_000, 10_104_814_460, 10_240_000_000],
        "gas_used_ratio": [0.5, 1.0, np.nan],
        "base_fee_per_blob_gas_wei": [1, 1, 2],
        "blob_gas_used_ratio": [0.0, 0.25, np.nan],
        "reward_p10_wei": [1_000_000_000, 0, None],
        "reward_p92_5_wei": np.array([2_000_000_000, 1, 0]),
    }
    frame = fee_history_frame(columns, [10, 92.5])
    assert dtypes(frame) == {**FEE_HISTORY_DTYPES, "reward_p10_wei": "Int64",
                             "reward_p92_5_wei": "Int64"}  # fmt: skip
    assert frame.base_fee_gwei.tolist() == [10.0, 10.10481446, 10.24]  # computed
    assert frame.reward_p92_5_wei.tolist() == [2_000_000_000, 1, 0]
    parsed = parse_fee_history({
        "oldestBlock": "0x64", "reward": [["0x3b9aca00", "0x77359400"], ["0x0", "0x1"]],
        "baseFeePerGas": ["0x2540be400", "0x25a4b3b7c", "0x2625a0000"], "gasUsedRatio": [0.5, 1.0],
        "baseFeePerBlobGas": ["0x1", "0x1", "0x2"], "blobGasUsedRatio": [0, 0.25],
    }, percentiles=[10, 92.5])  # fmt: skip
    columns["reward_p92_5_wei"] = [2_000_000_000, 1, None]
    pd.testing.assert_frame_equal(fee_history_frame(columns, [10, 92.5]), parsed)
    with pytest.raises(ValueError, match=r"missing \['reward_p50_wei'\]"):
        fee_history_frame(columns, [10, 50, 92.5])
    with pytest.raises(ValueError, match="percentiles must be distinct"):
        fee_history_frame(columns, [10, 10.0])
    with pytest.raises(ValueError, match=r"not its columns \['base_fee_gwei'\]"):
        fee_history_frame({**columns, "base_fee_gwei": [10.0] * 3}, [10, 92.5])


def test_reward_column_names():
    assert reward_column(10) == "reward_p10_wei"
    assert reward_column(2.5) == "reward_p2_5_wei"
    assert reward_column(100.0) == "reward_p100_wei"
    with pytest.raises(ValueError, match=r"0\.\.100"):
        reward_column(101)


def test_fee_history_from_the_devnet_matches_its_blocks(devnet):
    url = f"{devnet.url}/v3/{devnet.api_key}"

    def call(method, *params):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
        answer = httpx.post(url, json=body, timeout=60)
        answer.raise_for_status()
        return answer.json()["result"]

    newest = 150_000
    result = call("eth_feeHistory", "0x8", hex(newest), [25, 75])
    frame = parse_fee_history(result, percentiles=[25, 75])
    assert frame.block_number.tolist() == list(range(newest - 7, newest + 2))
    for number in (newest - 7, newest):
        block = call("eth_getBlockByNumber", hex(number), False)
        row = frame[frame.block_number == number].iloc[0]
        assert row.base_fee_wei == int(block["baseFeePerGas"], 16)
        assert row.gas_used_ratio == pytest.approx(
            int(block["gasUsed"], 16) / int(block["gasLimit"], 16)
        )
    following = call("eth_getBlockByNumber", hex(newest + 1), False)
    assert frame.base_fee_wei.iloc[-1] == int(following["baseFeePerGas"], 16)
    assert (frame.reward_p25_wei.iloc[:-1] <= frame.reward_p75_wei.iloc[:-1]).all()


# --- stitching -----------------------------------------------------------------------------------


def test_stitch_overlapping_snapshots():
    first = parse_base_fee_history(["1", "2", "3"], newest_block=12)
    second = parse_base_fee_history(["2", "3", "4", "5"], newest_block=14)
    far = parse_base_fee_history(["9"], newest_block=20)  # a gap is kept as a gap
    stitched = stitch_base_fee_snapshots([first, second, far])
    assert dtypes(stitched) == BASE_FEE_DTYPES
    assert stitched.block_number.tolist() == [10, 11, 12, 13, 14, 20]
    assert stitched.base_fee_wei.tolist() == [n * 10**9 for n in (1, 2, 3, 4, 5, 9)]
    assert stitched.index.tolist() == list(range(6))


def test_stitch_fee_history_fills_the_next_block_from_a_later_snapshot():
    early = parse_fee_history(
        {"oldestBlock": "0xa", "baseFeePerGas": ["0x5", "0x6"], "gasUsedRatio": [0.5]}
    )
    late = parse_fee_history(
        {"oldestBlock": "0xb", "baseFeePerGas": ["0x6", "0x7"], "gasUsedRatio": [0.75]}
    )
    stitched = stitch_base_fee_snapshots([early, late])
    assert stitched.block_number.tolist() == [10, 11, 12]
    assert stitched.gas_used_ratio.tolist()[:2] == [0.5, 0.75]  # block 11's NaN filled
    assert dtypes(stitched) == FEE_HISTORY_DTYPES


def test_stitch_names_the_first_conflicting_block():
    first = parse_base_fee_history(["1", "2", "3", "4"], newest_block=13)
    second = parse_base_fee_history(["2", "3.5", "4.5"], newest_block=13)
    with pytest.raises(ValueError, match=r"block 12 \[wei\]: frames\[0\]: 3000000000, frames\[1\]: "
                                         r"3500000000"):
        stitch_base_fee_snapshots([first, second])


def test_stitch_edge_cases():
    empty = stitch_base_fee_snapshots([])
    assert len(empty) == 0 and dtypes(empty) == BASE_FEE_DTYPES
    with pytest.raises(
        ValueError,
        match=re.escape("lacks ['block_number'] (parse_base_fee_history needs newest_block)"),
    ):
        stitch_base_fee_snapshots([parse_base_fee_history(["1"])])
    doubled = pd.DataFrame({"block_number": [1, 1], "base_fee_wei": [1, 1]})
    with pytest.raises(ValueError, match="block 1 more than once"):
        stitch_base_fee_snapshots([doubled])


def test_stitch_keeps_the_chain_the_snapshots_say_and_refuses_two_chains():
    from feeslab import ChainSpecConflict

    said = {"chain_id": 8453, "chain_spec": "base-mainnet@devnet", "source": "devnet"}
    first = parse_base_fee_history(["1", "2"], newest_block=11)
    second = parse_base_fee_history(["2", "3"], newest_block=12)
    first.attrs.update(said)
    second.attrs.update(said)
    assert stitch_base_fee_snapshots([first, second]).attrs == said
    other = second.copy()
    other.attrs.update(chain_id=1, chain_spec="mainnet@devnet")
    with pytest.raises(ChainSpecConflict, match="snapshots are of different chains"):
        stitch_base_fee_snapshots([first, other])


def _history(fees: list, rewards: list | None = None) -> dict:
    count = len(fees) - 1
    result = {"oldestBlock": "0x10", "baseFeePerGas": fees, "gasUsedRatio": [0.5] * count}
    if rewards is not None:
        result["reward"] = rewards
    return result


def test_fee_history_hex_columns_are_exact_on_the_fast_and_the_checked_path():
    rng = np.random.default_rng(5)
    values = [int(v) for v in rng.integers(0, 2**63 - 1, 300, dtype=np.int64)]
    values += [0, 1, 2**63 - 1, 0xABCDEF]
    texts = [hex(v) for v in values]
    texts[-1] = "0XabCDef"  # either case, either x
    tips = [[hex(v), hex(v // 2)] for v in values[:-1]]
    fast = parse_fee_history(_history(texts, tips), percentiles=(10, 90))
    assert fast["base_fee_wei"].tolist() == values
    assert fast["reward_p10_wei"].tolist()[:-1] == values[:-1]
    assert fast["reward_p90_wei"].tolist()[:-1] == [v // 2 for v in values[:-1]]
    # a plain int among them takes the checked path, with the same result
    mixed = parse_fee_history(_history([values[0], *texts[1:]], tips), percentiles=(10, 90))
    pd.testing.assert_frame_equal(mixed, fast)


@pytest.mark.parametrize(
    ("fees", "match"),
    [
        (["0x1", hex(2**63)], r"baseFeePerGas.*does not fit int64"),
        (["0x1", "0x" + "f" * 17], r"baseFeePerGas.*does not fit int64"),
        (["0x1", "0xg1"], r"\['baseFeePerGas'\]\[1\] is not a hex quantity"),
        (["0x1", "12"], r"\['baseFeePerGas'\]\[1\] is not a hex quantity"),
        (["0x1", "0x"], r"\['baseFeePerGas'\]\[1\] is not a hex quantity"),
        (["0x1", None], r"\['baseFeePerGas'\]\[1\] is not a hex quantity"),
    ],
)
def test_fee_history_bad_quantities_are_named(fees, match):
    with pytest.raises(ValueError, match=match):
        parse_fee_history(_history(fees))
