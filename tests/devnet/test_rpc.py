"""The devnet's node JSON-RPC methods, checked against real geth answers and recomputed values.

Field sets and formats come from geth's own request/response pairs (execution-apis tests) and
real mainnet uncle answers; hashes, sizes and base fees are recomputed here from the JSON with
``rlp``, ``eth_hash`` and EIP-1559's reference rule, never taken from the code under test.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import rlp
from eth_hash.auto import keccak
from protocol_reference import eip1559_base_fee as eip1559
from protocol_reference import fake_exponential, header_rlp
from test_full_blocks import encode_transaction  # tests/devnet: the independent encoder

from feeslab.devnet.chain import Chain
from feeslab.devnet.errors import RpcError
from feeslab.devnet.jsonrpc import CallContext
from feeslab.devnet.rpc import dispatch, format_new_head

# vendored reference answers (tests/data/SOURCES.md)
DATA = Path(__file__).resolve().parents[1] / "data"
GETH_TESTS = DATA / "execution-apis" / "tests"
UNCLES = DATA / "uncles"

LONDON, MERGE = 120_000, 165_000  # mainnet's devnet fork heights (data/chains.json)
EMPTY_UNCLES = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
QUANTITY = re.compile(r"^0x(0|[1-9a-f][0-9a-f]*)$")
# header fields in RLP order, with how each is encoded
DATA_BYTES = {
    "hash": 32, "parentHash": 32, "sha3Uncles": 32, "stateRoot": 32, "transactionsRoot": 32,
    "receiptsRoot": 32, "mixHash": 32, "logsBloom": 256, "miner": 20, "nonce": 8,
}
QUANTITIES = {
    "baseFeePerGas", "difficulty", "gasLimit", "gasUsed", "number", "size", "timestamp",
    "totalDifficulty",
}


# -- reference data and independent recomputation ------------------------------------------


def geth_result(path: Path) -> dict[str, Any]:
    """The result of a geth ``>>``/``<<`` test file."""
    for line in path.read_text().splitlines():
        if line.startswith("<<"):
            return json.loads(line[2:])["result"]
    raise AssertionError(f"no response in {path}")


def check_format(fields: dict[str, Any]) -> None:
    """Every value formatted as geth formats it (nulls allowed where the caller allows)."""
    for key, value in fields.items():
        if value is None:
            continue
        if key in QUANTITIES:
            assert QUANTITY.match(value), (key, value)
        elif key in DATA_BYTES:
            assert re.fullmatch(r"0x[0-9a-f]*", value), (key, value)
            assert len(value) == 2 + 2 * DATA_BYTES[key], (key, value)
        elif key == "extraData":
            assert re.fullmatch(r"0x([0-9a-f]{2})*", value), value


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chains(devnet):
    return devnet.chains


@pytest.fixture(scope="module")
def mainnet(chains) -> Chain:
    chain = chains.by_id[1]
    chain.warm()
    return chain


def call(chain: Chain, method: str, params: Any = None, *, chains: Any = None) -> Any:
    return dispatch(CallContext(chain=chain, chains=chains, transport="http"), method, params)


def error_of(chain: Chain, method: str, params: Any) -> tuple[int, str]:
    with pytest.raises(RpcError) as info:
        call(chain, method, params)
    return info.value.code, info.value.message


@pytest.fixture(scope="module")
def uncle_block(mainnet) -> int:
    """A proof-of-work block with uncles, before London."""
    return next(n for n in range(1, LONDON) if mainnet.block(n).uncles)


@pytest.fixture(scope="module")
def london_uncle_block(mainnet) -> int:
    """A block after London, before the merge, that includes an uncle."""
    return next(n for n in range(LONDON + 1, MERGE) if mainnet.block(n).uncles)


@pytest.fixture(scope="module")
def short_pow_chain(mainnet) -> Chain:
    """Mainnet's rules with the head at 300: proof of work, no safe or finalized block."""
    return Chain(dataclasses.replace(mainnet.params, height=300), seed=7)


# -- block objects against geth ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "number"),
    [
        ("eth_getBlockByNumber/get-genesis.io", 1000),  # proof of work
        ("eth_getBlockByHash/get-block-by-hash.io", 5),  # proof of work
        ("eth_getBlockByNumber/get-block-london-fork.io", LONDON + 10),
        ("eth_getBlockByNumber/get-block-merge-fork.io", MERGE + 10),
    ],
)
def test_block_fields_match_geth(mainnet, fixture, number):
    reference = geth_result(GETH_TESTS / fixture)
    block = call(mainnet, "eth_getBlockByNumber", [hex(number), False])
    # geth's current answers dropped totalDifficulty; the interface §2.4 keeps it
    assert set(block) == set(reference) | {"totalDifficulty"}
    check_format(reference)  # the checker agrees with geth itself
    check_format(block)
    assert all(v is not None for v in block.values())
    # the block's transaction hashes: none in an empty block
    assert all(re.fullmatch(r"0x[0-9a-f]{64}", h) for h in block["transactions"])
    assert (block["transactions"] == []) == (block["gasUsed"] == "0x0")


def test_reference_hashes_recompute():
    """The independent header encoder reproduces real geth and mainnet hashes."""
    for fixture in ["get-genesis.io", "get-block-london-fork.io", "get-block-merge-fork.io"]:
        ref = geth_result(GETH_TESTS / "eth_getBlockByNumber" / fixture)
        assert "0x" + keccak(header_rlp(ref)).hex() == ref["hash"]
    for path in UNCLES.glob("geth_infura_*.json"):
        ref = json.loads(path.read_text())["response"]["result"]
        assert "0x" + keccak(header_rlp(ref)).hex() == ref["hash"]
        assert int(ref["size"], 16) == len(header_rlp(ref)) + 5


@pytest.mark.parametrize("number", [0, 1, 777, LONDON - 1, LONDON, LONDON + 1, MERGE, 200_000])
def test_block_hash_is_keccak_of_rlp(mainnet, number):
    block = call(mainnet, "eth_getBlockByNumber", [hex(number), False])
    assert "0x" + keccak(header_rlp(block)).hex() == block["hash"]
    assert ("baseFeePerGas" in block) == (number >= LONDON)
    if number == LONDON:
        assert block["baseFeePerGas"] == hex(10**9)  # EIP-1559 INITIAL_BASE_FEE
    if number >= MERGE:
        assert block["difficulty"] == "0x0"
        assert block["nonce"] == "0x0000000000000000"
        assert block["sha3Uncles"] == EMPTY_UNCLES


def test_block_links_sizes_and_total_difficulty(mainnet, uncle_block):
    for number in (uncle_block, MERGE + 3):
        block = call(mainnet, "eth_getBlockByNumber", [hex(number), False])
        parent = call(mainnet, "eth_getBlockByNumber", [hex(number - 1), False])
        assert block["parentHash"] == parent["hash"]
        assert int(block["totalDifficulty"], 16) == int(parent["totalDifficulty"], 16) + int(
            block["difficulty"], 16
        )
        uncles = [
            call(mainnet, "eth_getUncleByBlockNumberAndIndex", [hex(number), hex(i)])
            for i in range(len(block["uncles"]))
        ]
        assert [u["hash"] for u in uncles] == block["uncles"]
        # size = len(rlp([header, transactions, uncles])), recomputed with rlp (a typed
        # transaction is an RLP string in the body)
        uncle_items = [rlp.decode(header_rlp(u)) for u in uncles]
        with_txs = call(mainnet, "eth_getBlockByNumber", [hex(number), True])
        txs = [encode_transaction(tx) for tx in with_txs["transactions"]]
        tx_items = [rlp.decode(tx) if tx[0] >= 0xC0 else tx for tx in txs]
        full = rlp.encode([rlp.decode(header_rlp(block)), tx_items, uncle_items])
        assert int(block["size"], 16) == len(full)
        if uncles:
            assert block["sha3Uncles"] == "0x" + keccak(rlp.encode(uncle_items)).hex()


def test_block_by_hash_equals_block_by_number(mainnet, uncle_block):
    by_number = call(mainnet, "eth_getBlockByNumber", [hex(uncle_block), True])
    hashes = call(mainnet, "eth_getBlockByNumber", [hex(uncle_block), False])
    assert call(mainnet, "eth_getBlockByHash", [by_number["hash"], False]) == hashes
    assert call(mainnet, "eth_getBlockByHash", [by_number["hash"].upper().replace("0X", "0x"),
                                                 True]) == by_number
    # fullTx changes the transactions only: their objects or their hashes
    assert [tx["hash"] for tx in by_number["transactions"]] == hashes["transactions"] != []
    assert {**by_number, "transactions": None} == {**hashes, "transactions": None}


def test_unknown_hash_and_beyond_head_are_null(mainnet):
    for fixture in ["get-block-by-empty-hash.io", "get-block-by-notfound-hash.io"]:
        request = (GETH_TESTS / "eth_getBlockByHash" / fixture).read_text().split(">>")[1]
        params = json.loads(request.split("\n")[0])["params"]
        assert call(mainnet, "eth_getBlockByHash", params) is None
    head = mainnet.head()
    assert call(mainnet, "eth_getBlockByNumber", [hex(head + 1), False]) is None
    assert call(mainnet, "eth_getBlockByNumber", [hex(head + 1000), True]) is None
    assert call(mainnet, "eth_getUncleCountByBlockNumber", [hex(head + 5)]) is None
    assert call(mainnet, "eth_getUncleByBlockNumberAndIndex", [hex(head + 5), "0x0"]) is None
    assert call(mainnet, "eth_getUncleCountByBlockHash", ["0x" + "11" * 32]) is None
    assert call(mainnet, "eth_getUncleByBlockHashAndIndex", ["0x" + "11" * 32, "0x0"]) is None


def test_tags(mainnet):
    head = int(call(mainnet, "eth_blockNumber"), 16)
    assert head == mainnet.head()
    latest = call(mainnet, "eth_getBlockByNumber", ["latest", False])
    assert latest["number"] == hex(head)
    assert call(mainnet, "eth_getBlockByNumber", ["earliest", False])["number"] == "0x0"
    safe = int(call(mainnet, "eth_getBlockByNumber", ["safe", False])["number"], 16)
    final = int(call(mainnet, "eth_getBlockByNumber", ["finalized", False])["number"], 16)
    assert MERGE <= final <= safe <= head
    assert safe == mainnet.safe() and final == mainnet.finalized()


def test_pending_block(mainnet):
    latest = call(mainnet, "eth_getBlockByNumber", ["latest", False])
    pending = call(mainnet, "eth_getBlockByNumber", ["pending", False])
    assert set(pending) == set(latest)
    # as geth answers today (internal/ethapi GetBlockByNumber): the number is the head's
    # next, the bloom is filled, and only hash, nonce and miner are null
    assert pending["number"] == hex(int(latest["number"], 16) + 1)
    assert pending["logsBloom"] is not None  # 256 bytes: check_format below
    for key in ("hash", "nonce", "miner"):
        assert pending[key] is None, key
    check_format(pending)
    assert pending["parentHash"] == latest["hash"]
    assert int(pending["timestamp"], 16) > int(latest["timestamp"], 16)
    expected = eip1559(
        int(latest["baseFeePerGas"], 16), int(latest["gasUsed"], 16), int(latest["gasLimit"], 16)
    )
    assert int(pending["baseFeePerGas"], 16) == expected


def test_safe_and_finalized_missing_before_the_merge(short_pow_chain):
    for tag in ("safe", "finalized"):
        assert error_of(short_pow_chain, "eth_getBlockByNumber", [tag, False]) == (
            -32000,
            f"{tag} block not found",
        )
        code, message = error_of(short_pow_chain, "eth_getUncleByBlockNumberAndIndex", [tag, "0x0"])
        assert (code, message) == (-32000, f"{tag} block not found")
        assert call(short_pow_chain, "eth_getUncleCountByBlockNumber", [tag]) is None  # as geth
        code, message = error_of(short_pow_chain, "eth_feeHistory", [4, tag])
        assert (code, message) == (-32000, f"{tag} block not found")


# -- uncles ------------------------------------------------------------------------------------


def test_uncle_fields_match_geth(mainnet, uncle_block, london_uncle_block):
    reference = json.loads((UNCLES / "geth_infura_byHash_0x5bad55_0x0.json").read_text())
    ref = reference["response"]["result"]
    for number, london in ((uncle_block, False), (london_uncle_block, True)):
        block = mainnet.block(number)
        block_hash = "0x" + block.hash.hex()
        by_number = call(mainnet, "eth_getUncleByBlockNumberAndIndex", [hex(number), "0x0"])
        by_hash = call(mainnet, "eth_getUncleByBlockHashAndIndex", [block_hash, "0x0"])
        assert by_number == by_hash
        expected_keys = set(ref) | ({"baseFeePerGas"} if london else set())
        assert set(by_number) == expected_keys
        assert "transactions" not in by_number
        assert by_number["totalDifficulty"] is None
        assert by_number["uncles"] == []
        check_format(by_number)
        rlp_bytes = header_rlp(by_number)
        assert "0x" + keccak(rlp_bytes).hex() == by_number["hash"]
        assert int(by_number["size"], 16) == len(rlp_bytes) + 5
        assert int(by_number["number"], 16) < number
        if london:
            # EIP-3045: a post-London uncle carries its own base fee (its parent's child fee)
            parent = mainnet.block(int(by_number["number"], 16) - 1).header
            if parent.base_fee_per_gas is None:  # an uncle of the fork block itself
                expected = 10**9
            else:
                expected = eip1559(parent.base_fee_per_gas, parent.gas_used, parent.gas_limit)
            assert by_number["baseFeePerGas"] == hex(expected)


def test_uncle_counts_and_out_of_range(mainnet, uncle_block):
    block = mainnet.block(uncle_block)
    count = len(block.uncles)
    block_hash = "0x" + block.hash.hex()
    assert call(mainnet, "eth_getUncleCountByBlockNumber", [hex(uncle_block)]) == hex(count)
    assert call(mainnet, "eth_getUncleCountByBlockHash", [block_hash]) == hex(count)
    assert (
        call(mainnet, "eth_getUncleByBlockNumberAndIndex", [hex(uncle_block), hex(count)]) is None
    )
    assert call(mainnet, "eth_getUncleByBlockHashAndIndex", [block_hash, hex(count + 1)]) is None
    assert call(mainnet, "eth_getUncleCountByBlockNumber", ["latest"]) == "0x0"  # proof of stake
    assert call(mainnet, "eth_getUncleByBlockNumberAndIndex", ["latest", "0x0"]) is None


# -- simple methods ----------------------------------------------------------------------------


def test_identity_methods(chains):
    for chain in chains:
        assert call(chain, "eth_chainId") == hex(chain.chain_id)
        assert call(chain, "net_version", []) == str(chain.chain_id)
        assert call(chain, "eth_blockNumber", []) == hex(chain.head())
    version = call(chains.by_id[1], "web3_clientVersion")
    assert version.startswith("feeslab-devnet/")


def test_new_head_shape(mainnet):
    head = mainnet.block(mainnet.head())
    payload = format_new_head(head)
    block = call(mainnet, "eth_getBlockByNumber", ["latest", False])
    dropped = {"size", "totalDifficulty", "transactions", "uncles", "withdrawals"}
    assert set(payload) == set(block) - dropped
    assert payload == {k: v for k, v in block.items() if k not in dropped}
    assert "0x" + keccak(header_rlp(payload)).hex() == payload["hash"]


# -- eth_feeHistory ----------------------------------------------------------------------------


def headers(chain: Chain, start: int, stop: int) -> list[Any]:
    return [chain.block(n).header for n in range(start, stop)]


def test_fee_history_recomputes(mainnet):
    head = mainnet.head()
    result = call(mainnet, "eth_feeHistory", [20, "latest", [10, 50, 90]])
    assert result["oldestBlock"] == hex(head - 19)
    fees = [int(f, 16) for f in result["baseFeePerGas"]]
    assert len(fees) == 21 and len(result["gasUsedRatio"]) == 20
    hs = headers(mainnet, head - 19, head + 1)
    assert fees[:-1] == [h.base_fee_per_gas for h in hs]
    for i, h in enumerate(hs):
        assert fees[i + 1] == eip1559(fees[i], h.gas_used, h.gas_limit)
        assert result["gasUsedRatio"][i] == h.gas_used / h.gas_limit
    assert len(result["reward"]) == 20
    for row in result["reward"]:
        values = [int(v, 16) for v in row]
        assert len(values) == 3 and values == sorted(values)
        assert all(QUANTITY.match(v) for v in row)
    # the head is in the devnet's BPO2 era (data/chains.json): max 21 blobs, fraction 11684671
    blob_fees = [int(f, 16) for f in result["baseFeePerBlobGas"]]
    assert blob_fees[:-1] == [fake_exponential(1, h.excess_blob_gas, 11684671) for h in hs]
    assert result["blobGasUsedRatio"] == [h.blob_gas_used / (21 * 2**17) for h in hs]


def test_fee_history_across_london(mainnet):
    result = call(mainnet, "eth_feeHistory", ["0x5", hex(LONDON + 2), []])
    assert "reward" not in result
    assert result["oldestBlock"] == hex(LONDON - 2)
    fees = [int(f, 16) for f in result["baseFeePerGas"]]
    assert fees[:3] == [0, 0, 10**9]  # zeros before London, INITIAL_BASE_FEE at the fork
    for i, h in enumerate(headers(mainnet, LONDON, LONDON + 3), start=2):
        assert fees[i + 1] == eip1559(fees[i], h.gas_used, h.gas_limit)


def test_fee_history_other_rules(chains):
    """Base: elasticity 6, denominator 50 then 250 from block 50,000 (data/chains.json)."""
    base = chains.by_id[8453]
    fork = 50_000
    result = call(base, "eth_feeHistory", [6, hex(fork + 2)])
    fees = [int(f, 16) for f in result["baseFeePerGas"]]
    for i, h in enumerate(headers(base, fork - 3, fork + 3)):
        denominator = 250 if h.number + 1 >= fork else 50
        assert fees[i + 1] == eip1559(fees[i], h.gas_used, h.gas_limit, 6, denominator)


def test_fee_history_block_count_forms_and_limits(mainnet):
    same = [call(mainnet, "eth_feeHistory", [c, "0x3e8"]) for c in (4, "4", "0x4", "0x04")]
    assert all(r == same[0] for r in same)
    assert len(same[0]["gasUsedRatio"]) == 4
    big = call(mainnet, "eth_feeHistory", [5000, "latest"])
    assert len(big["gasUsedRatio"]) == 1024  # geth's limit, applied silently
    early = call(mainnet, "eth_feeHistory", [10, "0x2"])
    assert early["oldestBlock"] == "0x0" and len(early["gasUsedRatio"]) == 3
    assert call(mainnet, "eth_feeHistory", [0, "latest"]) == {
        "oldestBlock": "0x0",
        "gasUsedRatio": None,
    }


def test_fee_history_pending(mainnet):
    head = mainnet.head()
    result = call(mainnet, "eth_feeHistory", [2, "pending", [50]])
    assert result["oldestBlock"] == hex(head)
    fees = [int(f, 16) for f in result["baseFeePerGas"]]
    latest = mainnet.block(head).header
    pending = call(mainnet, "eth_getBlockByNumber", ["pending", False])
    assert fees[0] == latest.base_fee_per_gas
    assert fees[1] == eip1559(fees[0], latest.gas_used, latest.gas_limit)
    assert fees[1] == int(pending["baseFeePerGas"], 16)
    assert fees[2] == eip1559(fees[1], int(pending["gasUsed"], 16), int(pending["gasLimit"], 16))
    assert len(result["reward"]) == 2


# -- errors ------------------------------------------------------------------------------------

BAD = "invalid argument"
UINT = "into Go value of type hexutil.Uint"
HASH = "into Go value of type common.Hash"
H64 = "0x" + "ab" * 32

ERRORS = [
    ("eth_nosuch", [], -32601, "the method eth_nosuch does not exist/is not available"),
    ("eth_getBlockByNumber", {"a": 1}, -32602, "non-array args"),
    ("eth_getBlockByNumber", [], -32602, "missing value for required argument 0"),
    ("eth_getBlockByNumber", ["latest"], -32602, "missing value for required argument 1"),
    ("eth_getBlockByNumber", ["latest", False, 1], -32602, "too many arguments, want at most 2"),
    ("eth_chainId", [1], -32602, "too many arguments, want at most 0"),
    ("eth_getBlockByNumber", ["12", False], -32602, f"{BAD} 0: hex string without 0x prefix"),
    ("eth_getBlockByNumber", [12, False], -32602, f"{BAD} 0: hex string without 0x prefix"),
    ("eth_getBlockByNumber", [None, False], -32602, f"{BAD} 0: hex string without 0x prefix"),
    ("eth_getBlockByNumber", ["Latest", False], -32602, f"{BAD} 0: hex string without 0x prefix"),
    ("eth_getBlockByNumber", ["0x0c", False], -32602,
     f"{BAD} 0: hex number with leading zero digits"),
    ("eth_getBlockByNumber", ["0x", False], -32602, f'{BAD} 0: hex string "0x"'),
    ("eth_getBlockByNumber", ["", False], -32602, f"{BAD} 0: empty hex string"),
    ("eth_getBlockByNumber", ["0xfg", False], -32602, f"{BAD} 0: invalid hex string"),
    ("eth_getBlockByNumber", ["0x1" + "0" * 16, False], -32602, f"{BAD} 0: hex number > 64 bits"),
    ("eth_getBlockByNumber", ["0x8000000000000000", False], -32602,
     f"{BAD} 0: block number larger than int64"),
    ("eth_getBlockByNumber", ["latest", "true"], -32602,
     f"{BAD} 1: json: cannot unmarshal string into Go value of type bool"),
    ("eth_getBlockByNumber", ["latest", 1], -32602,
     f"{BAD} 1: json: cannot unmarshal number into Go value of type bool"),
    ("eth_getBlockByHash", ["0x" + "ab" * 31, False], -32602,
     f"{BAD} 0: hex string has length 62, want 64 for common.Hash"),
    ("eth_getBlockByHash", ["ab" * 32, False], -32602,
     f"{BAD} 0: json: cannot unmarshal hex string without 0x prefix {HASH}"),
    ("eth_getBlockByHash", ["0x" + "a" * 63, False], -32602,
     f"{BAD} 0: json: cannot unmarshal hex string of odd length {HASH}"),
    ("eth_getBlockByHash", ["0x" + "zz" * 32, False], -32602,
     f"{BAD} 0: json: cannot unmarshal invalid hex string {HASH}"),
    ("eth_getBlockByHash", [7, False], -32602,
     f"{BAD} 0: json: cannot unmarshal non-string {HASH}"),
    ("eth_getBlockByHash", [H64], -32602, "missing value for required argument 1"),
    ("eth_getUncleByBlockNumberAndIndex", ["latest", "0x00"], -32602,
     f"{BAD} 1: json: cannot unmarshal hex number with leading zero digits {UINT}"),
    ("eth_getUncleByBlockNumberAndIndex", ["latest", 0], -32602,
     f"{BAD} 1: json: cannot unmarshal non-string {UINT}"),
    ("eth_getUncleByBlockNumberAndIndex", ["latest", "1"], -32602,
     f"{BAD} 1: json: cannot unmarshal hex string without 0x prefix {UINT}"),
    ("eth_getUncleByBlockNumberAndIndex", ["latest", "0x" + "1" * 17], -32602,
     f"{BAD} 1: json: cannot unmarshal hex number > 64 bits {UINT}"),
    ("eth_getUncleByBlockHashAndIndex", ["0x1234", "0x0"], -32602,
     f"{BAD} 0: hex string has length 4, want 64 for common.Hash"),
    ("eth_getUncleByBlockHashAndIndex", [H64], -32602, "missing value for required argument 1"),
    ("eth_getUncleCountByBlockNumber", ["0x01"], -32602,
     f"{BAD} 0: hex number with leading zero digits"),
    ("eth_getUncleCountByBlockHash", [H64, 1], -32602, "too many arguments, want at most 1"),
    ("eth_feeHistory", [4], -32602, "missing value for required argument 1"),
    ("eth_feeHistory", ["abc", "latest"], -32602, f'{BAD} 0: invalid hex or decimal integer "abc"'),
    ("eth_feeHistory", [-1, "latest"], -32602, f'{BAD} 0: invalid hex or decimal integer "-1"'),
    ("eth_feeHistory", [4, "latest", "x"], -32602,
     f"{BAD} 2: json: cannot unmarshal string into Go value of type []float64"),
    ("eth_feeHistory", [4, "latest", ["a"]], -32602,
     f"{BAD} 2: json: cannot unmarshal string into Go value of type float64"),
    # geth answers percentile problems as plain errors: -32000
    ("eth_feeHistory", [4, "latest", [101]], -32000, "invalid reward percentile: 101.000000"),
    ("eth_feeHistory", [4, "latest", [-1]], -32000, "invalid reward percentile: -1.000000"),
    ("eth_feeHistory", [4, "latest", [50, 40]], -32000,
     "invalid reward percentile: #0:50.000000 >= #1:40.000000"),
    ("eth_feeHistory", [4, "latest", [50, 50]], -32000,
     "invalid reward percentile: #0:50.000000 >= #1:50.000000"),
    ("eth_feeHistory", [4, "latest", list(range(101))], -32000,
     "invalid reward percentile: over the query limit 100"),
    ("eth_feeHistory", [4, "latest", [], 1], -32602, "too many arguments, want at most 3"),
]


@pytest.mark.parametrize(("method", "params", "code", "message"), ERRORS)
def test_errors(mainnet, method, params, code, message):
    assert error_of(mainnet, method, params) == (code, message)


def test_fee_history_beyond_head(mainnet):
    head = mainnet.head()
    assert error_of(mainnet, "eth_feeHistory", [4, hex(head + 1)]) == (
        -32000,
        f"request beyond head block: requested {head + 1}, head {head}",
    )


def test_lenient_forms(mainnet):
    """What geth accepts: missing or null params, null flags, "" index."""
    assert call(mainnet, "eth_chainId", None) == "0x1"
    latest = call(mainnet, "eth_getBlockByNumber", ["latest", None])
    assert latest["number"] == hex(mainnet.head())
    assert call(mainnet, "eth_getBlockByNumber", ["0X1", False])["number"] == "0x1"
    result = call(mainnet, "eth_feeHistory", [1, "latest", [50, 50.5]])
    low, high = (int(tip, 16) for tip in result["reward"][0])
    assert 0 < low <= high
    assert call(mainnet, "eth_feeHistory", [1, "latest", None]).get("reward") is None


# -- over HTTP ---------------------------------------------------------------------------------


def post(devnet, body: Any, network: str = "mainnet") -> Any:
    prefix = "" if network == "mainnet" else f"/{network}"
    response = httpx.post(f"{devnet.url}{prefix}/v3/{devnet.api_key}", json=body, timeout=60)
    assert response.status_code == 200
    return response.json()


def test_http_blocks_match_in_process(devnet, mainnet, uncle_block):
    params = [[hex(uncle_block), False], [hex(LONDON + 1), True], ["latest", False]]
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "eth_getBlockByNumber", "params": p}
        for i, p in enumerate(params)
    ]
    answers = sorted(post(devnet, batch), key=lambda a: a["id"])
    for answer, p in zip(answers, params, strict=True):
        block = answer["result"]
        assert block == call(mainnet, "eth_getBlockByNumber", p)
        assert "0x" + keccak(header_rlp(block)).hex() == block["hash"]


def test_http_uncle_and_fee_history(devnet, mainnet, london_uncle_block, rpc):
    uncle = rpc("eth_getUncleByBlockNumberAndIndex", hex(london_uncle_block), "0x0")
    rlp_bytes = header_rlp(uncle)
    assert "0x" + keccak(rlp_bytes).hex() == uncle["hash"]
    assert int(uncle["size"], 16) == len(rlp_bytes) + 5
    assert uncle["totalDifficulty"] is None and "transactions" not in uncle
    history = rpc("eth_feeHistory", "0xa", "latest", [25, 75])
    fees = [int(f, 16) for f in history["baseFeePerGas"]]
    for i, h in enumerate(headers(mainnet, int(history["oldestBlock"], 16), mainnet.head() + 1)):
        assert fees[i] == h.base_fee_per_gas
        assert fees[i + 1] == eip1559(fees[i], h.gas_used, h.gas_limit)


def test_http_errors(devnet):
    answer = post(devnet, {"jsonrpc": "2.0", "id": 3, "method": "eth_getBlockByNumber",
                           "params": ["latest", "true"]})
    assert answer["error"] == {
        "code": -32602,
        "message": "invalid argument 1: json: cannot unmarshal string into Go value of type bool",
    }
    answer = post(devnet, {"jsonrpc": "2.0", "id": 4, "method": "eth_foo", "params": []})
    assert answer["error"]["code"] == -32601
    assert answer["error"]["message"] == "the method eth_foo does not exist/is not available"
    answer = post(devnet, {"jsonrpc": "2.0", "id": 5, "method": "eth_chainId"}, "sepolia")
    assert answer["result"] == hex(11155111)


def test_encoded_fast_path_answers_exactly_as_dispatch(chains):
    from feeslab.devnet._encoded import Encoded
    from feeslab.devnet.rpc import dispatch_encoded

    ctx = CallContext(chain=chains.by_id[1], chains=chains, transport="http")
    head = ctx.chain.head()
    cases = (
        [("eth_getBlockByNumber", [hex(n), False]) for n in (0, 1, 100_000, head)]
        + [("eth_getBlockByNumber", [tag, True]) for tag in ("latest", "earliest", "pending")]
        + [
            ("eth_getBlockByNumber", [hex(head + 1), False]),
            ("eth_getBlockByNumber", ["0X1", False]),  # geth takes an upper-case prefix too
            ("eth_getUncleByBlockNumberAndIndex", [hex(100_000), "0x0"]),
            ("eth_getUncleByBlockNumberAndIndex", [hex(100_000), "0x5"]),
            ("eth_chainId", []),
        ]
    )
    for n in range(100_000, 100_200):
        cases.append(("eth_getUncleByBlockNumberAndIndex", [hex(n), "0x0"]))
    for method, params in cases:
        for _ in range(2):  # a miss, then a hit
            fast = dispatch_encoded(ctx, method, params)
            plain = dispatch(ctx, method, params)
            got = json.loads(fast) if isinstance(fast, Encoded) else fast
            assert got == plain, (method, params)
    for bad in (["0x01", False], [hex(2**64), False], ["0x", False], ["latest"]):
        with pytest.raises(RpcError) as fast_error:
            dispatch_encoded(ctx, "eth_getBlockByNumber", bad)
        with pytest.raises(RpcError) as plain_error:
            dispatch(ctx, "eth_getBlockByNumber", bad)
        assert fast_error.value.to_json() == plain_error.value.to_json()


def test_encoded_cache_stays_within_its_byte_bound():
    from feeslab.devnet._encoded import EncodedCache

    cache = EncodedCache(max_bytes=100)
    for i in range(50):
        assert cache.get(i, lambda i=i: {"n": i}) == f'{{"n":{i}}}'.encode()
        assert cache.size <= 100
    assert 0 < len(cache) < 50
    assert cache.get("missing", lambda: None) is None
    assert "missing" not in cache._items  # a block above the head may exist later


def test_encoded_headers_match_dispatch_across_chunks_and_evictions(mainnet, chains) -> None:
    """The servers' compressed header chunks give dispatch's answers, at chunk edges, near the
    head (a partial chunk), after the decompressed chunks were dropped, and after eviction."""
    from feeslab.devnet import _encoded, rpc

    ctx = CallContext(chain=mainnet, chains=chains, transport="http")
    head = mainnet.head()
    numbers = [0, 1, _encoded.CHUNK - 1, _encoded.CHUNK, 5 * _encoded.CHUNK + 7, head - 70,
               head - _encoded.CHUNK, head - 1, head]
    # every chunk evicted, compressed and open, as soon as the next comes
    small = _encoded.ChunkedCache(max_bytes=1, open_bytes=1)
    saved, rpc.HEADERS = rpc.HEADERS, small
    try:
        for _ in range(2):
            for number in numbers + numbers[::-1]:
                got = rpc.dispatch_encoded(ctx, "eth_getBlockByNumber", [hex(number), False])
                assert json.loads(bytes(got)) == call(
                    mainnet, "eth_getBlockByNumber", [hex(number), False]), number
        assert len(small._packed) <= 1 and len(small._open) <= 1  # bounded by their bytes
    finally:
        rpc.HEADERS = saved
    full = _encoded.ChunkedCache()
    for number in range(0, 3 * _encoded.CHUNK):
        full.get("k", number, lambda a, b: [{"n": n} for n in range(a, b)])
    full._open.clear()  # served from the compressed chunks again
    assert [json.loads(bytes(full.get("k", n, lambda a, b: 1 / 0))) for n in range(96)] == [
        {"n": n} for n in range(96)]
    assert 0 < full.size < 96 * len(b'{"n":95}')
    # a chunk opened from its compressed bytes, then dropped from the open tier, answers again
    tight = _encoded.ChunkedCache(open_bytes=3 * len(b'{"n":95}') * _encoded.CHUNK)
    for make in (lambda a, b: [{"n": n} for n in range(a, b)], lambda a, b: 1 / 0):
        for number in [*range(0, 6 * _encoded.CHUNK, 5), 1, 2 * _encoded.CHUNK + 1]:
            assert json.loads(bytes(tight.get("k", number, make))) == {"n": number}
    assert len(tight._packed) == 6 and len(tight._open) <= 3


def test_header_chunks_fill_slabs_dropped_oldest_first_with_a_second_chance() -> None:
    """The compressed tier appends chunks to slabs and, full, drops the oldest slab whole; a
    chunk asked for from the oldest slab of a full tier moves to the newest and stays."""
    from feeslab.devnet import _encoded

    made: list[int] = []

    def make(start: int, stop: int) -> list[dict[str, int]]:
        made.append(start // _encoded.CHUNK)
        return [{"n": n} for n in range(start, stop)]

    def answer(cache: _encoded.ChunkedCache, chunk: int) -> dict[str, int]:
        number = chunk * _encoded.CHUNK + 3
        cache._last = (None, -1, ())  # each ask past the last-chunk shortcut
        value: dict[str, int] = json.loads(bytes(cache.get("k", number, make)))
        return value

    probe = _encoded.ChunkedCache(open_bytes=1)
    answer(probe, 100)
    one = probe.size  # a chunk's compressed bytes (chunks 0-5 compress alike, within a few)
    cache = _encoded.ChunkedCache(max_bytes=3 * (2 * one + 8), open_bytes=1,
                                  slab_bytes=2 * one + 8)  # fmt: skip
    made.clear()
    for chunk in range(6):  # three slabs of two chunks: the tier is full
        assert answer(cache, chunk) == {"n": chunk * _encoded.CHUNK + 3}
    assert made == list(range(6)) and len(cache._slabs) == 3
    assert answer(cache, 0)["n"] == 3 and made == list(range(6))  # moved, not rebuilt
    # moving it needed a slab: the oldest went, and chunk 1 with it; chunk 0 lives on
    assert len(cache._slabs) == 3 and ("k", 0) in cache._packed
    assert ("k", _encoded.CHUNK) not in cache._packed
    assert answer(cache, 1)["n"] == _encoded.CHUNK + 3 and made[-1] == 1  # built anew
    assert answer(cache, 0)["n"] == 3 and made.count(0) == 1
    held = sum(stop - start for _, start, stop, _ in cache._packed.values())
    assert cache.size == held <= cache.max_bytes
