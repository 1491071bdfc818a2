"""The devnet's Sepolia chain forks to Amsterdam (issue 31, item 6 and Done-when 2).

Over real HTTP against the session devnet (seed 7). What is checked is recomputed here from
the JSON alone, independently of feeslab's encoders: the header's RLP in go-ethereum's field
order (``core/types/block.go`` ``Header``, ``gen_header_rlp.go``: ``requestsHash`` then
``blockAccessListHash`` then ``slotNumber``) with the ``rlp`` package, and the block access
list's RLP as go-ethereum's ``core/types/bal/bal_encoding_rlp_generated.go`` lays out
``AccountAccess``, both at go-ethereum commit 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
EIP-7778's accounting is checked against go-ethereum's ``core/state_transition.go``
``settleGas`` and ``core/state_processor.go`` ``MakeReceipt`` (receipts keep what users pay,
``cumulativeGasUsed`` their running sum; the header counts gas before refunds).

No public fixture read for this holds a real Sepolia or Hoodi Amsterdam header (the
eth-clients/sepolia and go-ethereum snapshots predate the fork; execution-spec-tests'
fixtures are release artefacts, not in its repository), so the devnet's headers are the ones
hash-checked here, against feeslab's field list and against the independent encoding.
"""

from __future__ import annotations

import itertools

import pytest
import rlp
from eth_hash.auto import keccak
from protocol_reference import geth_rewards

from feeslab.analysis.fees import next_base_fee
from feeslab.frames.blocks import BLOCK_DTYPES, parse_header_fields
from feeslab.protocol.headers import HEADER_FIELDS, header_hash

SEPOLIA = "sepolia"
FORK = 58_000  # data/chains.json: chain 11155111's devnet "forks" -> "amsterdam"
MERGE = 15_000  # its first proof-of-stake block: slot 0 of the devnet's slot clock
SLOT_TIME = 12  # [s]
HEAD = 60_000
# blocks below the fork, hashed before Amsterdam was added to the devnet (seed 7): unchanged
BEFORE_AMSTERDAM = {
    15_000: "0x80e98a8de5c2f50aa34ac891c8e274901883db78791ee5236acb171bb659aa29",
    38_000: "0x9b9a27a472ca3564af4ce62eb62f7afb23adc9696ba85f14c178e3a44d812ef4",
    56_000: "0x6b323da033cf8f3ac0cc1a87cdd589866ea9381d909040bced7bf8af08fff369",
    57_998: "0xf75116b08fe21255eb2eb38f96e6484de5166632420ac51c9a5675a66720e955",
    57_999: "0x8159710fb26d0a4fdb39aaf8a61c70948653533ca61ca19b9e29c7f0f3f7bf7c",
}
AMSTERDAM_BLOCKS = (FORK, FORK + 1, FORK + 2, 58_777, 59_500, HEAD)

# go-ethereum 02b73d4 core/types/block.go Header, in RLP order: (JSON name, is an integer)
GETH_HEADER = (
    ("parentHash", False), ("sha3Uncles", False), ("miner", False), ("stateRoot", False),
    ("transactionsRoot", False), ("receiptsRoot", False), ("logsBloom", False),
    ("difficulty", True), ("number", True), ("gasLimit", True), ("gasUsed", True),
    ("timestamp", True), ("extraData", False), ("mixHash", False), ("nonce", False),
    ("baseFeePerGas", True), ("withdrawalsRoot", False), ("blobGasUsed", True),
    ("excessBlobGas", True), ("parentBeaconBlockRoot", False), ("requestsHash", False),
    ("blockAccessListHash", False), ("slotNumber", True),
)  # fmt: skip
# go-ethereum 02b73d4 params/protocol_params.go; EIP-4788, EIP-2935
BEACON_ROOTS = bytes.fromhex("000f3df6d732807ef1319fb7b8bb8522d0beac02")
HISTORY_STORAGE = bytes.fromhex("0000f90827f1c53a10cb7a02335b175320002935")
RING = 8191  # EIP-4788's HISTORY_BUFFER_LENGTH and EIP-2935's HISTORY_SERVE_WINDOW
# go-ethereum 02b73d4 core/types/hashes.go EmptyBlockAccessListHash
EMPTY_BAL_HASH = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"


@pytest.fixture(scope="module")
def batch(devnet_batch):
    """``batch([(method, params), ...])`` -> results on the devnet's Sepolia, one request."""
    return lambda calls: devnet_batch(calls, network=SEPOLIA)


@pytest.fixture(scope="module")
def headers(batch):
    """number -> header JSON (transaction hashes only) around and after the fork."""
    numbers = [MERGE, *BEFORE_AMSTERDAM, *AMSTERDAM_BLOCKS]
    answers = batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
    return dict(zip(numbers, answers, strict=True))


def _int(text: str) -> int:
    return int(text, 16)


def _bytes(text: str) -> bytes:
    return bytes.fromhex(text[2:])


def independent_header_hash(block: dict) -> str:
    """keccak(rlp(header)) from the JSON, in geth's order, with the ``rlp`` package only."""
    items = []
    for name, is_int in GETH_HEADER:
        if name not in block:  # optional fields end the list (geth's rlp:"optional")
            break
        items.append(_int(block[name]) if is_int else _bytes(block[name]))
    return "0x" + keccak(rlp.encode(items)).hex()


def independent_access_list_hash(block: dict) -> str:
    """The block access list the devnet derives, rebuilt from the full block's JSON and
    encoded as geth's ``AccountAccess``: ``[address, [[slot, [[index, value]]]], [reads],
    [[index, balance]], [[index, nonce]], [[index, code]]]``, accounts sorted by address."""
    writes: dict[bytes, dict[int, list]] = {}
    nonces: dict[bytes, list] = {}
    touched: set[bytes] = set()
    timestamp, number = _int(block["timestamp"]), _int(block["number"])
    ring = timestamp % RING  # EIP-4788: the timestamp and the beacon root, at index 0
    writes[BEACON_ROOTS] = {ring: [[0, timestamp]],
                            ring + RING: [[0, _int(block["parentBeaconBlockRoot"])]]}
    writes[HISTORY_STORAGE] = {(number - 1) % RING: [[0, _int(block["parentHash"])]]}
    for i, tx in enumerate(block["transactions"]):  # transaction i is index i + 1
        nonces.setdefault(_bytes(tx["from"]), []).append([i + 1, _int(tx["nonce"]) + 1])
        touched.add(_bytes(tx["to"]))
    if block["transactions"]:
        touched.add(_bytes(block["miner"]))
    touched.update(_bytes(w["address"]) for w in block["withdrawals"])
    accounts = sorted(set(writes) | set(nonces) | touched)
    encoded = [[a, [[slot, changes] for slot, changes in sorted(writes.get(a, {}).items())],
                [], [], nonces.get(a, []), []] for a in accounts]  # fmt: skip
    return "0x" + keccak(rlp.encode(encoded)).hex()


def test_blocks_below_the_fork_are_unchanged_and_carry_no_amsterdam_field(headers):
    for number, known in BEFORE_AMSTERDAM.items():
        block = headers[number]
        assert block["hash"] == known, number  # byte-identical to the chain before Amsterdam
        assert "blockAccessListHash" not in block and "slotNumber" not in block, number
    assert "requestsHash" in headers[FORK - 1]  # Prague's last field is there


def test_every_header_from_the_fork_on_carries_amsterdams_fields_as_geth_prints_them(batch):
    numbers = [*range(FORK - 3, FORK + 40), HEAD]
    blocks = batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
    for number, block in zip(numbers, blocks, strict=True):
        amsterdam = number >= FORK
        assert ("blockAccessListHash" in block) == amsterdam == ("slotNumber" in block), number
        if amsterdam:
            assert len(_bytes(block["blockAccessListHash"])) == 32
            assert block["slotNumber"] == hex(_int(block["slotNumber"]))  # a QUANTITY
            assert block["blockAccessListHash"] != EMPTY_BAL_HASH  # system calls at least
        # keys sorted as geth's map prints them, the new ones among them
        assert list(block) == sorted(block)


def test_done_when_2_amsterdam_headers_hash_verify_with_feeslab_and_an_independent_rlp(headers):
    blocks = [headers[n] for n in AMSTERDAM_BLOCKS]
    for block in blocks:
        assert list(HEADER_FIELDS[-2:]) == ["blockAccessListHash", "slotNumber"]
        assert header_hash(block) == block["hash"]  # feeslab's field list
        assert independent_header_hash(block) == block["hash"]  # the rlp package, geth's order
        # a changed field no longer hashes to the block's hash, in either check
        forged = {**block, "slotNumber": hex(_int(block["slotNumber"]) + 1)}
        assert header_hash(forged) != block["hash"] != independent_header_hash(forged)
        dropped = {k: v for k, v in block.items() if k != "slotNumber"}
        assert independent_header_hash(dropped) != block["hash"]
    frame = parse_header_fields([*blocks, headers[FORK - 1]])
    assert frame["hash_verified"].all()
    assert frame["slot_number"].isna().tolist() == [False] * len(blocks) + [True]
    assert frame["block_access_list_hash"].tolist()[:-1] == [b["blockAccessListHash"]
                                                             for b in blocks]  # fmt: skip


def test_the_block_access_list_hash_commits_to_the_blocks_transactions_and_withdrawals(batch):
    numbers = [FORK, FORK + 1, 59_321]
    fulls = batch([("eth_getBlockByNumber", [hex(n), True]) for n in numbers])
    for full in fulls:
        assert full["transactions"] and len(full["withdrawals"]) == 16
        assert independent_access_list_hash(full) == full["blockAccessListHash"]
        # a transaction's nonce is part of it: another nonce, another hash
        changed = [{**full["transactions"][0], "nonce": hex(_int(full["transactions"][0]
                                                                 ["nonce"]) + 1)}]  # fmt: skip
        other = {**full, "transactions": changed + full["transactions"][1:]}
        assert independent_access_list_hash(other) != full["blockAccessListHash"]
    # EIP-7928: an empty block access list hashes to keccak(rlp([]))
    assert "0x" + keccak(rlp.encode([])).hex() == EMPTY_BAL_HASH


def test_slot_numbers_count_slots_from_the_first_proof_of_stake_block(headers, batch):
    start = _int(headers[MERGE]["timestamp"])
    numbers = list(range(FORK, FORK + 200))
    blocks = batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
    slots = [_int(b["slotNumber"]) for b in blocks]
    for block, slot in zip(blocks, slots, strict=True):
        assert slot == (_int(block["timestamp"]) - start) // SLOT_TIME
    steps = [b - a for a, b in itertools.pairwise(slots)]
    assert min(steps) >= 1 and max(steps) > 1  # missed slots skip numbers
    assert _int(headers[HEAD]["slotNumber"]) > slots[-1]


def test_eip7778_header_gas_counts_refunds_receipts_do_not_and_the_base_fee_follows_it(batch):
    numbers = list(range(FORK - 2, FORK + 8))
    answers = batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
                    + [("eth_getBlockReceipts", [hex(n)]) for n in numbers])  # fmt: skip
    blocks, receipts = answers[: len(numbers)], answers[len(numbers) :]
    refunded = 0
    for number, block, rows in zip(numbers, blocks, receipts, strict=True):
        header_gas = _int(block["gasUsed"])
        used = [_int(r["gasUsed"]) for r in rows]
        # geth's MakeReceipt: cumulativeGasUsed is the running sum of what users pay
        assert [_int(r["cumulativeGasUsed"]) for r in rows] == list(itertools.accumulate(used))
        if number < FORK:
            assert sum(used) == header_gas, number  # refunds already inside the header's
        else:
            assert sum(used) <= header_gas, number  # EIP-7778: the header's before refunds
            refunded += header_gas - sum(used)
    assert refunded > 0  # the refunds are visible
    for parent, child in itertools.pairwise(blocks):
        by_header = next_base_fee(_int(parent["baseFeePerGas"]), _int(parent["gasUsed"]),
                                  _int(parent["gasLimit"]))  # fmt: skip
        assert by_header == _int(child["baseFeePerGas"])
    # were the receipts' sum the block's gas, a fork block's child would pay another fee
    parent, child = blocks[numbers.index(FORK + 1)], blocks[numbers.index(FORK + 2)]
    paid = sum(_int(r["gasUsed"]) for r in receipts[numbers.index(FORK + 1)])
    assert paid < _int(parent["gasUsed"])
    assert next_base_fee(_int(parent["baseFeePerGas"]), paid, _int(parent["gasLimit"])) != _int(
        child["baseFeePerGas"])  # fmt: skip


def test_lab_blocks_across_the_fork_and_the_header_fields_of_the_same_blocks(lab, headers):
    numbers = range(FORK - 10, FORK + 10)
    with lab.on_network(SEPOLIA) as sepolia:
        sepolia.node.chunk = 7  # chunks of blocks before and after the fork, concatenated
        frame = sepolia.blocks(numbers.start, numbers.stop)
        raw = [sepolia.node.request("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
    assert frame["block_number"].tolist() == list(numbers)
    assert frame.attrs["chain_id"] == 11155111
    # the fee frame: a known fork adds no column (tests/frames/test_blocks_fork_fields.py);
    # its gas_used is the header's, before refunds from Amsterdam on: what the base fee follows
    assert list(frame.columns) == list(BLOCK_DTYPES)
    assert frame["gas_used"].tolist() == [_int(b["gasUsed"]) for b in raw]
    # every header field, Amsterdam's among them, from the same answers
    fields = parse_header_fields(raw)
    after = fields["block_number"] >= FORK
    assert fields["hash_verified"].all()
    assert fields.loc[~after, "block_access_list_hash"].isna().all()
    assert fields.loc[~after, "slot_number"].isna().all()
    assert fields.loc[after, "block_access_list_hash"].notna().all()
    assert fields.loc[after, "slot_number"].notna().all()
    first = fields.loc[fields["block_number"] == FORK].iloc[0]
    assert first["block_access_list_hash"] == headers[FORK]["blockAccessListHash"]
    assert first["slot_number"] == _int(headers[FORK]["slotNumber"])


def test_fee_history_rewards_walk_the_receipts_gas_against_the_headers(batch):
    percentiles = [0, 10, 25, 50, 75, 90, 99, 100]
    numbers = [FORK, FORK + 1, 59_321]
    answers = batch([("eth_getBlockByNumber", [hex(n), True]) for n in numbers]
                    + [("eth_getBlockReceipts", [hex(n)]) for n in numbers]
                    + [("eth_feeHistory", [1, hex(n), percentiles]) for n in numbers])  # fmt: skip
    k = len(numbers)
    for block, receipts, history in zip(answers[:k], answers[k : 2 * k], answers[2 * k :],
                                        strict=True):  # fmt: skip
        assert [_int(x) for x in history["reward"][0]] == geth_rewards(block, receipts,
                                                                          percentiles)
        assert history["gasUsedRatio"][0] == _int(block["gasUsed"]) / _int(block["gasLimit"])


def test_the_devnets_encoders_agree_with_the_rlp_package():
    """The chain's flat header encoder and the access list's fast path, against ``rlp``."""
    import random

    from feeslab.devnet import _bal
    from feeslab.devnet.chain import build_chains

    chain = build_chains(7).by_id[11155111]
    for number in (FORK - 1, FORK, HEAD):
        header = chain.block(number).header
        assert header.encode() == rlp.encode(header.fields())
        assert (header.slot_number is None) == (number < FORK)
    rng = random.Random(7928)
    for count in (0, 1, 3, 40):
        senders = [rng.randbytes(20) for _ in range(count)]
        senders += senders[: count // 3]  # a sender twice: two nonce changes
        kwargs = {
            "number": FORK + count, "timestamp": 1_799_739_318 + 12 * count,
            "parent_hash": rng.randbytes(32), "parent_beacon_block_root": rng.randbytes(32),
            "coinbase": rng.randbytes(20), "senders": senders,
            "nonces": [rng.randrange(5000) for _ in senders],
            "recipients": [rng.randbytes(20) for _ in senders],
            "withdrawal_addresses": [rng.randbytes(20) for _ in range(16)],
        }  # fmt: skip
        entries = _bal.block_access_list(**kwargs)
        assert [e.address for e in entries] == sorted(e.address for e in entries)
        reference = rlp.encode([
            [e.address, [[slot, [[i, v] for i, v in sorted(by.items())]]
                         for slot, by in sorted(e.storage_writes.items())],
             sorted(e.storage_reads), sorted(e.balance_changes.items()),
             [list(pair) for pair in sorted(e.nonce_changes.items())],
             [list(pair) for pair in sorted(e.code_changes.items())]]
            for e in entries
        ])  # fmt: skip
        assert _bal.encode_block_access_list(entries) == reference
        assert _bal.devnet_access_list_hash(**kwargs) == keccak(reference)
    assert _bal.block_access_list_hash([]).hex() == EMPTY_BAL_HASH[2:]
