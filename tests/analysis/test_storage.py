"""feeslab.analysis.storage: layouts, packed fields, balances, proxy periods, oracle rounds.

Expected values come from the contracts' sources (their documented layouts), from words built
by hand here, and, over real HTTP, from the devnet's own ``eth_call`` getters and its chain.
"""

from __future__ import annotations

import pandas as pd
import pytest

from feeslab.analysis.storage import (
    LAYOUT_DTYPES,
    decode_fields,
    implementation_periods,
    layout_table,
    oracle_rounds,
    round_updates,
    token_balances,
)
from feeslab.devnet.contracts import load_artifacts
from feeslab.frames import parse_storage_series
from feeslab.slots import IMPLEMENTATION_SLOT, mapping_slot

TOKEN = "0x" + "11" * 20
OWNER = "0x" + "ab" * 20


def series(words: dict[int, int], slot: int = 0, address: str = TOKEN) -> pd.DataFrame:
    return parse_storage_series(address, slot, {b: f"0x{w:064x}" for b, w in words.items()})


def packed_round(round_id: int, answer: int, updated_at: int) -> int:
    """A PriceOracle Round as the contract source documents it: 10, 16 and 5 bytes."""
    return round_id | (answer % 2**128) << 80 | updated_at << 208


@pytest.fixture(scope="module")
def layouts():
    return {name: a.storage_layout for name, a in load_artifacts().items()}


# -- layout_table ------------------------------------------------------------------------------


def test_layout_table_of_the_token_matches_its_documented_slots(layouts):
    table = layout_table(layouts["FeeslabToken"])
    assert list(table.columns) == list(LAYOUT_DTYPES)
    rows = {r.label: r for r in table.itertuples()}
    # FeeslabToken.sol: 0 balances, 1 allowances, 2 totalSupply, 3 name, 4 symbol, 5 owner+decimals
    assert [(r.label, r.slot) for r in table.itertuples()] == [
        ("_balances", 0), ("_allowances", 1), ("_totalSupply", 2), ("_name", 3), ("_symbol", 4),
        ("owner", 5), ("decimals", 5),
    ]
    assert (rows["owner"].offset_bytes, rows["owner"].size_bytes) == (0, 20)
    assert (rows["decimals"].offset_bytes, rows["decimals"].size_bytes) == (20, 1)
    assert rows["_balances"].encoding == "mapping"
    assert rows["_balances"].where == "value of key k at keccak256(h(k) . 0)"
    assert rows["_allowances"].type_label == "mapping(address => mapping(address => uint256))"
    assert rows["_name"].encoding == "bytes" and "keccak256(3)" in rows["_name"].where
    assert rows["decimals"].where == "slot 5, bytes 20 to 20 from the right"
    assert table["offset_bytes"].dtype == "int64" and table["slot"].dtype == object


def test_layout_table_expands_a_struct_kept_in_place_into_its_members(layouts):
    table = layout_table(layouts["PriceOracle"])
    # PriceOracle.sol: latest is a Round packed in slot 1: roundId 0..9, answer 10..25, updatedAt
    members = table[table["label"].str.startswith("latest.")]
    assert members[["label", "slot", "offset_bytes", "size_bytes"]].values.tolist() == [
        ["latest.roundId", 1, 0, 10],
        ["latest.answer", 1, 10, 16],
        ["latest.updatedAt", 1, 26, 5],
    ]
    rounds = table[table["label"] == "rounds"].iloc[0]
    assert rounds["encoding"] == "dynamic_array"
    assert rounds["where"] == "length at slot 2; element i from keccak256(2) + i"


def test_layout_table_places_multi_slot_structs_and_far_slots_exactly():
    far = 2**255 + 7  # solc's "layout at" can move a contract's storage anywhere
    layout = {
        "storage": [
            {"label": "pair", "slot": str(far), "offset": 0, "type": "t_struct(P)"},
            {"label": "items", "slot": str(far + 2), "offset": 0, "type": "t_array(t_uint256)3"},
        ],
        "types": {
            "t_struct(P)": {
                "encoding": "inplace", "label": "struct P", "numberOfBytes": "64",
                "members": [
                    {"label": "a", "slot": "0", "offset": 0, "type": "t_uint256"},
                    {"label": "b", "slot": "1", "offset": 0, "type": "t_uint128"},
                ],
            },
            "t_uint256": {"encoding": "inplace", "label": "uint256", "numberOfBytes": "32"},
            "t_uint128": {"encoding": "inplace", "label": "uint128", "numberOfBytes": "16"},
            "t_array(t_uint256)3": {"encoding": "inplace", "label": "uint256[3]",
                                    "numberOfBytes": "96"},
        },
    }
    table = layout_table(layout)
    assert table["label"].tolist() == ["pair.a", "pair.b", "items"]
    assert table["slot"].tolist() == [far, far + 1, far + 2]
    assert table["where"].iloc[2] == f"slots {far + 2} to {far + 4}"


def test_layout_table_refuses_what_is_not_a_storage_layout():
    with pytest.raises(TypeError, match="storageLayout"):
        layout_table({"storage": "nope"})
    with pytest.raises(ValueError, match="no type entry for 't_x'"):
        layout_table({"storage": [{"label": "x", "slot": "0", "offset": 0, "type": "t_x"}]})
    empty = layout_table({"storage": [], "types": None})  # FeeslabProxy's: all in assembly
    assert empty.empty and list(empty.columns) == list(LAYOUT_DTYPES)


# -- decode_fields -----------------------------------------------------------------------------


def test_decode_fields_reads_every_variable_packed_in_a_slot(layouts):
    table = layout_table(layouts["FeeslabToken"])
    words = {10: 18 << 160 | int(OWNER, 16), 11: 6 << 160 | 0x1234}
    frame = decode_fields(series(words, slot=5), table[table["slot"] == 5])
    assert frame.columns.tolist() == ["block_number", "owner", "decimals"]
    assert frame["owner"].tolist() == [OWNER, "0x" + "00" * 18 + "1234"]
    assert frame["decimals"].tolist() == [18, 6]
    assert frame["decimals"].dtype == "int64" and frame["block_number"].tolist() == [10, 11]


def test_decode_fields_takes_names_types_and_offsets_and_keeps_signs():
    word = packed_round(7, -5 * 10**8, 1_700_000_000)
    frame = decode_fields(series({3: word}), {"id": "uint80", "answer": ("int128", 10)})
    assert frame["id"].tolist() == [7] and frame["answer"].tolist() == [-5 * 10**8]
    assert frame["answer"].dtype == object  # int128 is beyond int64: exact Python ints


def test_decode_fields_refuses_fields_whose_data_is_not_in_the_slot(layouts):
    table = layout_table(layouts["FeeslabToken"])
    with pytest.raises(ValueError, match="'_balances' is a mapping"):
        decode_fields(series({1: 0}, slot=0), table[table["slot"] == 0])
    with pytest.raises(ValueError, match="lives in slot 5, but the series holds slot 2"):
        decode_fields(series({1: 0}, slot=2), table[table["slot"] == 5])
    with pytest.raises(ValueError, match="field 'name'"):
        decode_fields(series({1: 0}), {"name": "string"})
    with pytest.raises(ValueError, match="block_number"):
        decode_fields(series({1: 0}), {"block_number": "uint8"})
    with pytest.raises(TypeError, match="storage series"):
        decode_fields(pd.DataFrame({"x": [1]}), {"a": "uint8"})


# -- token_balances --------------------------------------------------------------------------


def test_token_balances_are_exact_and_scaled_with_shares_of_the_supply():
    big = 123_456_789 * 10**18 + 1  # one base unit more than a float can hold
    frames = {"alice": series({5: big, 6: 0}), "bob": series({5: 10**18, 6: 3 * 10**18})}
    supply = series({5: 4 * big, 6: 4 * big}, slot=2)
    out = token_balances(frames, total_supply=supply)
    assert out["holder"].tolist() == ["alice", "alice", "bob", "bob"]
    assert out["block_number"].tolist() == [5, 6, 5, 6]
    assert out["balance_raw"].tolist() == [big, 0, 10**18, 3 * 10**18]
    assert out["balance"].tolist() == [123_456_789.0, 0.0, 1.0, 3.0]
    assert out["share"].iloc[0] == 0.25 and out["share"].iloc[1] == 0.0
    six = token_balances({"x": series({1: 2_500_000})}, decimals=6)
    assert six["balance"].tolist() == [2.5] and "share" not in six.columns


def test_token_balances_refuses_a_supply_series_that_misses_a_block():
    with pytest.raises(ValueError, match="no word at block 6"):
        token_balances({"a": series({5: 1, 6: 1})}, total_supply=series({5: 2}, slot=2))
    with pytest.raises(ValueError, match="decimals"):
        token_balances({"a": series({5: 1})}, decimals=-1)
    with pytest.raises(TypeError, match="non-empty dict"):
        token_balances({})


# -- implementation_periods --------------------------------------------------------------------


def test_implementation_periods_bracket_each_change_between_samples():
    a, b = int("0x" + "aa" * 20, 16), int("0x" + "bb" * 20, 16)
    words = {100: 0, 200: a, 300: a, 400: b, 500: b, 600: a}
    periods = implementation_periods(series(words, slot=IMPLEMENTATION_SLOT))
    assert periods["implementation"].tolist() == [
        "0x" + "00" * 20, "0x" + "aa" * 20, "0x" + "bb" * 20, "0x" + "aa" * 20,
    ]
    assert periods["first_block"].tolist() == [100, 200, 400, 600]
    assert periods["last_block"].tolist() == [100, 300, 500, 600]
    assert periods["samples"].tolist() == [1, 2, 2, 1]
    assert periods["changed_after"].tolist() == [pd.NA, 100, 300, 500]
    assert periods["changed_after"].dtype == "Int64"


def test_implementation_periods_refuse_a_word_that_is_not_an_address():
    with pytest.raises(ValueError, match=r"block 7 .*not an implementation slot"):
        implementation_periods(series({7: 1 << 160}))
    empty = implementation_periods(series({}))
    assert empty.empty and empty["changed_after"].dtype == "Int64"


# -- oracle_rounds and round_updates --------------------------------------------------------


def test_oracle_rounds_decode_the_packed_round_and_leave_out_samples_before_any():
    t0 = 1_700_000_000
    words = {10: 0, 11: packed_round(1, 200_012_345_678, t0),
             12: packed_round(2, -150_000_000, t0 + 12)}
    rounds = oracle_rounds(series(words, slot=1))
    assert rounds["block_number"].tolist() == [11, 12]
    assert rounds["round_id"].tolist() == [1, 2]
    assert rounds["answer_raw"].tolist() == [200_012_345_678, -150_000_000]
    assert rounds["answer"].tolist() == [2000.12345678, -1.5]
    assert rounds["updated_at"].tolist() == [
        pd.Timestamp(t0, unit="s", tz="UTC"), pd.Timestamp(t0 + 12, unit="s", tz="UTC"),
    ]
    assert str(rounds["updated_at"].dtype) == "datetime64[ns, UTC]"


def test_oracle_rounds_read_a_call_series_by_its_output_names_and_drop_errors():
    calls = pd.DataFrame(
        {"block_number": [1, 2, 3], "roundId": [5, None, 6], "answer": [10**8, None, 2 * 10**8],
         "updatedAt": [100, None, 112], "error": [None, "execution reverted", None]}
    )
    rounds = oracle_rounds(calls, decimals=8)
    assert rounds["block_number"].tolist() == [1, 3]
    assert rounds["answer"].tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="roundId"):
        oracle_rounds(pd.DataFrame({"block_number": [1], "output": [1]}))
    with pytest.raises(ValueError, match="updatedAt"):
        oracle_rounds(series({1: 1}), fields={"roundId": ("uint80", 0), "answer": ("int128", 10)})


def test_round_updates_count_the_rounds_a_sampling_missed():
    t0 = 1_700_000_000
    phase = 2 << 64  # a Chainlink proxy's round id carries its phase above bit 64
    words = {1: packed_round(1, 1, t0), 2: packed_round(1, 1, t0), 3: packed_round(4, 2, t0 + 36),
             4: packed_round(phase | 1, 3, t0 + 48)}
    updates = round_updates(oracle_rounds(series(words)))
    assert updates["block_number"].tolist() == [1, 3, 4]
    assert updates["round_id"].tolist() == [1, 4, phase | 1]
    assert updates["rounds_skipped"].tolist() == [0, 2, pd.NA]
    assert updates["seconds_since_previous"].tolist()[1:] == [36.0, 12.0]
    with pytest.raises(TypeError, match="oracle_rounds"):
        round_updates(pd.DataFrame({"x": [1]}))


# -- against the devnet, over real HTTP ----------------------------------------------------


@pytest.fixture(scope="module")
def deployed(devnet):
    info = devnet.contracts
    (chain,) = [c for c in info["chains"] if c["chain_id"] == 1]
    return {c["name"]: c for c in info["contracts"]}, info["accounts"], chain


def test_storage_reads_agree_with_the_contracts_own_getters(lab, deployed):
    contracts, accounts, chain = deployed
    oracle, token = contracts["PriceOracle"], contracts["FeeslabToken"]
    blocks = range(chain["contracts_block"], chain["contracts_block"] + 60, 3)
    from_storage = oracle_rounds(lab.storage_series(oracle["address"], 1, blocks))
    from_calls = oracle_rounds(lab.call_series(oracle["address"], "latest", [], blocks,
                                               abi=oracle["abi"]))
    assert len(from_storage) > 5 and from_storage.equals(from_calls)
    assert round_updates(from_storage)["rounds_skipped"].sum() == 0  # a round every 5 blocks
    holders = accounts["holders"][:3]
    frames = {h: lab.storage_series(token["address"], mapping_slot(h, 0), blocks) for h in holders}
    balances = token_balances(frames)
    for holder in holders:
        expected = lab.call_series(token["address"], "balanceOf", [holder], blocks,
                                   abi=token["abi"])["output"].tolist()
        assert balances[balances["holder"] == holder]["balance_raw"].tolist() == expected


def test_sampled_then_dense_reads_find_the_proxy_upgrade_block(lab, deployed):
    contracts, _, chain = deployed
    proxy = contracts["FeeslabProxy"]["address"]
    coarse = range(chain["contracts_block"] - 100, chain["contracts_block"] + 10_000, 400)
    periods = implementation_periods(lab.storage_series(proxy, IMPLEMENTATION_SLOT, coarse))
    assert periods["implementation"].tolist() == [
        "0x" + "00" * 20, contracts["CounterV1"]["address"], contracts["CounterV2"]["address"],
    ]
    start, stop = int(periods["changed_after"].iloc[2]), int(periods["first_block"].iloc[2])
    assert start < chain["upgrade_block"] <= stop
    dense = implementation_periods(
        lab.storage_series(proxy, IMPLEMENTATION_SLOT, range(start, stop + 1))
    )
    assert dense["first_block"].iloc[-1] == chain["upgrade_block"]
    assert dense["changed_after"].iloc[-1] == chain["upgrade_block"] - 1
