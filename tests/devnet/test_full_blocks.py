"""The devnet's full blocks and receipts agree with its headers and its fee history.

Over real HTTP against the session devnet. What is checked is recomputed here from the JSON
alone, independently of feeslab: the transactions' encodings (go-ethereum's ``core/types``
``tx_legacy.go``, ``tx_dynamic_fee.go``, ``tx_blob.go``) with the ``rlp`` package and their
hashes with ``eth_hash``; the effective gas price (``internal/ethapi/api.go``
``effectiveGasPrice``); and ``eth_feeHistory``'s rewards with geth's ``processBlock``
(``eth/gasprice/feehistory.go``, go-ethereum commit
02b73d4ea7181464175e0a6cbecc0a3a2655a562), transcribed below.
"""

from __future__ import annotations

import itertools

import httpx
import pytest
import rlp
from eth_hash.auto import keccak
from protocol_reference import GAS_PER_BLOB, geth_rewards, header_rlp

from feeslab.devnet import start

# chain 1 of the devnet (data/chains.json): homestead 0, byzantium 30,000, london 120,000,
# merge 165,000, shanghai 170,000, cancun 175,000, prague 190,000, osaka 199,000
PRE_BYZANTIUM, PRE_LONDON, LONDON, SHANGHAI = 5, 100_000, 130_000, 172_000
CANCUN, OSAKA = 180_000, 205_000
ERAS = (PRE_BYZANTIUM, PRE_LONDON, LONDON, SHANGHAI, CANCUN, OSAKA)
PERCENTILES = [0, 1, 10, 25, 33.3, 50, 75, 90, 99, 100]


@pytest.fixture(scope="module")
def batch(devnet_batch):
    """``batch([(method, params), ...], network=...)`` -> results, one HTTP request."""
    return devnet_batch


@pytest.fixture(scope="module")
def blocks(batch):
    """number -> (full block, hashes-only block, receipts) for the eras' blocks."""
    out = {}
    for n in ERAS:
        full, light, receipts = batch([("eth_getBlockByNumber", [hex(n), True]),
                                       ("eth_getBlockByNumber", [hex(n), False]),
                                       ("eth_getBlockReceipts", [hex(n)])])  # fmt: skip
        out[n] = full, light, receipts
    return out


def _int(text):
    return int(text, 16)


def _bytes(text):
    return bytes.fromhex(text[2:])


def encode_transaction(tx) -> bytes:
    """The canonical encoding a JSON transaction describes: legacy ``rlp([nonce, gasPrice,
    gas, to, value, data, v, r, s])``; EIP-1559 ``0x02 || rlp([chainId, nonce, tipCap, feeCap,
    gas, to, value, data, accessList, yParity, r, s])``; EIP-4844 ``0x03 || rlp([...,
    accessList, maxFeePerBlobGas, blobVersionedHashes, yParity, r, s])``."""
    kind = _int(tx["type"])
    tail = [_int(tx["v"] if kind == 0 else tx["yParity"]), _int(tx["r"]), _int(tx["s"])]
    if kind == 0:
        return rlp.encode([_int(tx["nonce"]), _int(tx["gasPrice"]), _int(tx["gas"]),
                           _bytes(tx["to"]), _int(tx["value"]), _bytes(tx["input"]), *tail])
    items = [_int(tx["chainId"]), _int(tx["nonce"]), _int(tx["maxPriorityFeePerGas"]),
             _int(tx["maxFeePerGas"]), _int(tx["gas"]), _bytes(tx["to"]), _int(tx["value"]),
             _bytes(tx["input"]), tx["accessList"]]  # fmt: skip
    if kind == 3:
        items += [_int(tx["maxFeePerBlobGas"]), [_bytes(h) for h in tx["blobVersionedHashes"]]]
    return bytes((kind,)) + rlp.encode(items + tail)


def test_receipts_gas_adds_up_to_the_headers_and_cumulative_gas_rises(blocks):
    for n, (full, _, receipts) in blocks.items():
        assert len(receipts) == len(full["transactions"]) > 0, n
        used = [_int(r["gasUsed"]) for r in receipts]
        cumulative = [_int(r["cumulativeGasUsed"]) for r in receipts]
        assert sum(used) == _int(full["gasUsed"]), n
        assert cumulative == list(itertools.accumulate(used)), n
        assert all(b > a for a, b in itertools.pairwise(cumulative)), n
        assert all(u >= 21_000 for u in used), n
        for i, (tx, r) in enumerate(zip(full["transactions"], receipts, strict=True)):
            assert _int(tx["gas"]) >= _int(r["gasUsed"]), (n, i)
            assert (r["transactionIndex"], tx["transactionIndex"]) == (hex(i), hex(i))
            assert r["transactionHash"] == tx["hash"] and r["from"] == tx["from"]
            assert r["to"] == tx["to"] and r["type"] == tx["type"]
            assert r["blockHash"] == tx["blockHash"] == full["hash"]
            assert r["blockNumber"] == tx["blockNumber"] == full["number"]


def test_effective_gas_price_and_fee_caps(blocks):
    for n, (full, _, receipts) in blocks.items():
        base_fee = _int(full["baseFeePerGas"]) if "baseFeePerGas" in full else None
        for tx, r in zip(full["transactions"], receipts, strict=True):
            if tx["type"] == "0x0":
                want = _int(tx["gasPrice"])
                assert "maxFeePerGas" not in tx
            else:
                want = min(_int(tx["maxFeePerGas"]),
                           base_fee + _int(tx["maxPriorityFeePerGas"]))  # fmt: skip
                assert _int(tx["maxFeePerGas"]) >= base_fee
            assert _int(r["effectiveGasPrice"]) == _int(tx["gasPrice"]) == want, n
            if base_fee is not None:
                assert want >= base_fee


def test_types_per_fork_and_blob_gas_adds_up_to_blob_gas_used(blocks, batch):
    kinds = {n: {tx["type"] for tx in full["transactions"]} for n, (full, _, _) in blocks.items()}
    assert kinds[PRE_BYZANTIUM] == kinds[PRE_LONDON] == {"0x0"}
    assert kinds[LONDON] == kinds[SHANGHAI] == {"0x0", "0x2"}
    for n in (CANCUN, OSAKA):
        full, _, receipts = blocks[n]
        assert "0x3" in kinds[n] and kinds[n] <= {"0x0", "0x2", "0x3"}
        (history,) = batch([("eth_feeHistory", [1, hex(n), []])])
        blob_fee = _int(history["baseFeePerBlobGas"][0])
        carriers = [(tx, r) for tx, r in zip(full["transactions"], receipts, strict=True)
                    if tx["type"] == "0x3"]  # fmt: skip
        blob_gas = [_int(r["blobGasUsed"]) for _, r in carriers]
        assert sum(blob_gas) == _int(full["blobGasUsed"]) > 0
        for tx, r in carriers:
            assert _int(r["blobGasUsed"]) == GAS_PER_BLOB * len(tx["blobVersionedHashes"])
            assert 1 <= len(tx["blobVersionedHashes"]) <= 6
            assert all(h.startswith("0x01") and len(h) == 66 for h in tx["blobVersionedHashes"])
            assert _int(tx["maxFeePerBlobGas"]) >= blob_fee == _int(r["blobGasPrice"])
        assert all("blobGasUsed" not in r for tx, r in zip(full["transactions"], receipts,
                                                             strict=True) if tx["type"] != "0x3")


def test_hashes_are_keccak_of_the_real_encoding_and_false_lists_them(blocks):
    for n, (full, light, _) in blocks.items():
        for tx in full["transactions"]:
            assert tx["hash"] == "0x" + keccak(encode_transaction(tx)).hex(), n
        assert light["transactions"] == [tx["hash"] for tx in full["transactions"]]
        assert {k: v for k, v in light.items() if k != "transactions"} == {
            k: v for k, v in full.items() if k != "transactions"}
        assert light["hash"] == "0x" + keccak(header_rlp(light)).hex()


def test_geth_field_sets_per_type(blocks):
    common = ["blockHash", "blockNumber", "blockTimestamp", "from", "gas", "gasPrice"]
    middle = ["hash", "input", "nonce", "to", "transactionIndex", "value", "type"]
    legacy = blocks[PRE_BYZANTIUM][0]["transactions"][0]
    assert list(legacy) == [*common, *middle, "v", "r", "s"]  # not EIP-155: no chainId
    assert _int(legacy["v"]) in (27, 28)
    protected = blocks[PRE_LONDON][0]["transactions"][0]
    assert list(protected) == [*common, *middle, "chainId", "v", "r", "s"]
    assert _int(protected["v"]) in (37, 38)
    by_type = {tx["type"]: tx for tx in blocks[OSAKA][0]["transactions"]}
    fees = ["maxFeePerGas", "maxPriorityFeePerGas"]
    assert list(by_type["0x2"]) == [*common, *fees, *middle, "accessList", "chainId", "v", "r",
                                    "s", "yParity"]  # fmt: skip
    assert list(by_type["0x3"]) == [*common, *fees, "maxFeePerBlobGas", *middle, "accessList",
                                    "chainId", "blobVersionedHashes", "v", "r", "s", "yParity"]
    assert by_type["0x2"]["v"] == by_type["0x2"]["yParity"] in ("0x0", "0x1")
    receipt = blocks[OSAKA][2][0]
    assert list(receipt) == sorted(receipt)  # a Go map: keys sorted
    assert receipt["logs"] == [] and receipt["contractAddress"] is None
    assert receipt["status"] == "0x1" and "root" not in receipt
    old = blocks[PRE_BYZANTIUM][2][0]
    assert "status" not in old and len(old["root"]) == 66


def test_receipt_blooms_or_to_the_header_bloom(blocks):
    for n, (full, _, receipts) in blocks.items():
        combined = 0
        for r in receipts:
            combined |= _int(r["logsBloom"])
        assert combined == _int(full["logsBloom"]), n


def test_size_counts_the_transactions(blocks):
    full, _, _ = blocks[OSAKA]  # after the merge: no uncles, withdrawals from Shanghai
    txs = [encode_transaction(tx) for tx in full["transactions"]]
    items = [tx if tx[0] >= 0xC0 else rlp.encode(tx) for tx in txs]  # typed: an RLP string
    withdrawals = [[_int(w["index"]), _int(w["validatorIndex"]), _bytes(w["address"]),
                    _int(w["amount"])] for w in full["withdrawals"]]  # fmt: skip
    body = b"".join([header_rlp(full), _rlp_list(items), _rlp_list([]),
                     rlp.encode(withdrawals)])  # fmt: skip
    assert _int(full["size"]) == len(_rlp_list([body], raw=True))


def _rlp_list(items, raw=False):
    payload = items[0] if raw else b"".join(items)
    if len(payload) < 56:
        return bytes((0xC0 + len(payload),)) + payload
    length = len(payload).to_bytes((len(payload).bit_length() + 7) // 8, "big")
    return bytes((0xF7 + len(length),)) + length + payload


def test_fee_history_rewards_are_geths_algorithm_over_the_blocks(batch):
    """Before London, after London, after Cancun, an empty block, and on two other chains."""
    cases = [("mainnet", 99_990, 10), ("mainnet", 130_000, 10), ("mainnet", 180_000, 10),
             ("mainnet", 205_000, 10), ("sepolia", 30_000, 5), ("base-mainnet", 60_000, 5)]
    (window,) = batch([("eth_feeHistory", [1024, hex(160_000), []])])
    empty = int(window["oldestBlock"], 16) + window["gasUsedRatio"].index(0)
    cases.append(("mainnet", empty, 1))
    for network, newest, count in cases:
        oldest = newest - count + 1
        calls = [("eth_feeHistory", [count, hex(newest), PERCENTILES])]
        for n in range(oldest, newest + 1):
            calls += [("eth_getBlockByNumber", [hex(n), True]), ("eth_getBlockReceipts", [hex(n)])]
        history, *rest = batch(calls, network=network)
        assert _int(history["oldestBlock"]) == oldest
        for k, row in enumerate(history["reward"]):
            block, receipts = rest[2 * k], rest[2 * k + 1]
            assert [_int(x) for x in row] == geth_rewards(block, receipts, PERCENTILES), (
                network, oldest + k)
    (row,) = batch([("eth_feeHistory", [1, hex(empty), [10, 90]])])[0]["reward"]
    assert row == ["0x0", "0x0"]


def test_block_by_hash_and_receipts_by_hash_tag_and_object(batch, blocks):
    full, _, receipts = blocks[SHANGHAI]
    by_hash, by_hash_receipts, by_object, head = batch([
        ("eth_getBlockByHash", [full["hash"], True]),
        ("eth_getBlockReceipts", [full["hash"]]),
        ("eth_getBlockReceipts", [{"blockHash": full["hash"]}]),
        ("eth_getBlockByNumber", ["latest", False]),
    ])  # fmt: skip
    assert by_hash == full and by_hash_receipts == by_object == receipts
    latest, unknown, beyond = batch([
        ("eth_getBlockReceipts", ["latest"]),
        ("eth_getBlockReceipts", ["0x" + "ab" * 32]),
        ("eth_getBlockReceipts", [hex(_int(head["number"]) + 10)]),
    ])  # fmt: skip
    assert [r["transactionHash"] for r in latest] == head["transactions"]
    assert unknown is None and beyond is None


def test_block_receipts_cost_80_credits():
    with start(seed=7, daily_credits=100, credits_per_second=10**6) as small:
        url = f"{small.url}/v3/{small.api_key}"
        call = {"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockReceipts", "params": ["0x5"]}
        first = httpx.post(url, json=call, timeout=60)
        assert first.status_code == 200 and len(first.json()["result"]) > 0
        assert httpx.post(url, json=call, timeout=60).status_code == 402  # 80 + 80 > 100
