"""The devnet's transactions as encoded a chunk at a time with numpy (``transactions._chunk``).

In process, against chain 1's real history (seed 7). Each encoding is decoded here with the
``rlp`` package and compared field by field with the transaction it stands for (go-ethereum's
``core/types`` ``tx_legacy.go``, ``tx_dynamic_fee.go``, ``tx_blob.go``), its hash recomputed
with ``eth_hash``; the body's list length and the block's size are recomputed with ``rlp``;
and the wide path (fees beyond int64, as Python integers) encodes what the int64 path does.
"""

from __future__ import annotations

import pytest
import rlp
from eth_hash.auto import keccak

from feeslab.devnet import transactions
from feeslab.devnet.chain import history

# chain 1 (data/chains.json): byzantium 30,000, london 120,000, shanghai 170,000, cancun 175,000
PRE_BYZANTIUM, PRE_LONDON, LONDON, CANCUN, OSAKA = 5, 100_000, 130_000, 180_000, 205_000


@pytest.fixture(scope="module")
def chain():
    from feeslab.devnet.chain import devnet_params

    return history(devnet_params()[1], 7)


def _decoded_fields(tx: transactions.Transaction) -> list:
    """The fields the encoding must hold, in go-ethereum's order, as ``rlp`` decodes them."""
    def num(value: int) -> bytes:
        return value.to_bytes((value.bit_length() + 7) // 8, "big")

    tail = [num(tx.v), num(tx.r), num(tx.s)]
    if tx.type == 0:
        return [num(tx.nonce), num(tx.gas_price), num(tx.gas), tx.to, num(tx.value), tx.input,
                *tail]  # fmt: skip
    fields = [num(tx.chain_id), num(tx.nonce), num(tx.max_priority_fee_per_gas),
              num(tx.max_fee_per_gas), num(tx.gas), tx.to, num(tx.value), tx.input, []]  # fmt: skip
    if tx.type == 3:
        fields += [num(tx.max_fee_per_blob_gas), list(tx.blob_versioned_hashes)]
    return fields + tail


@pytest.mark.parametrize("number", [PRE_BYZANTIUM, PRE_LONDON, LONDON, CANCUN, OSAKA])
def test_each_encoding_decodes_to_its_transaction_and_hashes_to_its_hash(chain, number):
    body = transactions.block_body(chain, number)
    assert len(body.transactions) == len(body.hashes) == len(body.encoded) > 0
    kinds = set()
    for tx, encoded, tx_hash in zip(body.transactions, body.encoded, body.hashes, strict=True):
        kinds.add(tx.type)
        assert tx.encoded == encoded and tx.hash == tx_hash == keccak(encoded)
        payload = encoded if tx.type == 0 else encoded[1:]
        if tx.type:
            assert encoded[0] == tx.type
        assert rlp.decode(payload) == _decoded_fields(tx)
        assert rlp.encode(rlp.decode(payload)) == payload  # canonical: no leading zeros
    expected = {PRE_BYZANTIUM: {0}, PRE_LONDON: {0}, LONDON: {0, 2}}.get(number, {0, 2, 3})
    assert kinds <= expected and (2 in kinds or number < LONDON)


@pytest.mark.parametrize("number", [PRE_BYZANTIUM, LONDON, CANCUN, OSAKA])
def test_the_list_length_and_size_are_the_bodys(chain, number):
    body = transactions.block_body(chain, number)
    block = chain.block(number)
    items = body.block_items()
    assert body.items_length == len(b"".join(items))
    # typed transactions sit in the body's list as RLP strings of their encoding
    assert items == [rlp.encode(e) if e[0] < 0xC0 else e for e in body.encoded]
    # geth's size: len(rlp([header, transactions, uncles(, withdrawals)])), rebuilt with rlp
    whole = [rlp.decode(block.header.encode()), [rlp.decode(item) for item in items],
             [rlp.decode(u.encode()) for u in block.uncles]]  # fmt: skip
    if block.header.withdrawals_root is not None:
        whole.append([rlp.decode(w.encode()) for w in block.withdrawals])
    assert body.size(block) == len(rlp.encode(whole)) > block.size


def test_an_empty_block_has_no_transactions(chain):
    empty = next(n for n in range(1, 50_000) if chain.gas_used(n) == 0)
    body = transactions.block_body(chain, empty)
    assert body.transactions == body.hashes == body.encoded == () and body.items_length == 0
    assert body.size(chain.block(empty)) == chain.block(empty).size


def test_fees_beyond_int64_take_the_python_integer_path_with_the_same_bytes(chain, monkeypatch):
    chunk = CANCUN // transactions._CHUNK
    narrow = transactions._chunk.__wrapped__(chain, chunk)
    monkeypatch.setattr(transactions, "_INT64_SAFE", 0)  # every base fee counts as wide
    wide = transactions._chunk.__wrapped__(chain, chunk)
    assert wide.encoding == narrow.encoding and wide.at == narrow.at
    assert wide.items_length == narrow.items_length and wide.fields == narrow.fields
