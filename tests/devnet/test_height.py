"""A lengthened mainnet devnet (``feeslab serve --height N``): the default chain unchanged below
210,000, a valid chain beyond it, and bad heights refused."""

from __future__ import annotations

import httpx
import pytest
import rlp
from eth_hash.auto import keccak

from feeslab.cli import main
from feeslab.devnet import start
from feeslab.devnet.chain import MAX_HEIGHT, build_chains, check_height, devnet_params

SEED = 7
HEIGHT = 250_000
# chain 1's hashes for seed 7, written down from the commit before the option existed
# (fdc145e): blocks of the default chain, and two its history had when grown past its head
# (live mode, then the only way past 210,000), which a lengthened chain must repeat. The
# proof-of-stake ones (209,999 on) re-pinned at 0fcabfd, which re-dated those blocks to 2027
# (their timestamps, so their hashes, changed; nothing else did), from live mode again
BEFORE = {
    1: "0x54e2c2876e14c5da95dfa22eaa6000fbc8a4bdd89c2000ee8dcdf6c4a6dd60fc",
    100_000: "0xa028d3746803c99b8b24cf5c42adb85c2141dad347cd48a62ee8d1d3b833f341",
    209_999: "0x1b262a3ec01e5fbd085b4d99e42d9213fe416f2f47257d9ba076820c0c78e578",
    210_000: "0xc5111dfe6287cf47de09c7fe2b5df384380db876ba39490eabf8c77cfa1cb766",
    212_345: "0x6f082b93e1c4aad70a9ec732a774bd97bf19d03d0e6f972c01ed2c9b0ac54d5e",
    250_000: "0xfad766b3cb634a8a7b0b1ee0c3a1a4e12f5a9a00736f7b940a4403c7f8278020",
}


def _fields(header) -> list:
    values = [
        header.parent_hash, header.uncles_hash, header.coinbase, header.state_root,
        header.transactions_root, header.receipts_root, header.logs_bloom, header.difficulty,
        header.number, header.gas_limit, header.gas_used, header.timestamp, header.extra_data,
        header.mix_hash, header.nonce, header.base_fee_per_gas, header.withdrawals_root,
        header.blob_gas_used, header.excess_blob_gas, header.parent_beacon_block_root,
        header.requests_hash, header.block_access_list_hash, header.slot_number,
    ]  # fmt: skip
    return [v for v in values if v is not None]


@pytest.fixture(scope="module")
def long_chains():
    return build_chains(SEED, height=HEIGHT)


def test_the_default_chain_is_unchanged():
    chain = build_chains(SEED).by_id[1]
    assert chain.head() == 210_000
    for number in (1, 100_000, 209_999, 210_000):
        assert "0x" + chain.block(number).hash.hex() == BEFORE[number]
    assert chain.block(210_001) is None


def test_a_lengthened_chain_keeps_the_default_blocks_and_continues_them(long_chains):
    chain = long_chains.by_id[1]
    assert chain.head() == HEIGHT
    assert chain.block(HEIGHT + 1) is None
    for number, expected in BEFORE.items():
        assert "0x" + chain.block(number).hash.hex() == expected
    # the other chains keep their configured heads
    for other in long_chains:
        if other.chain_id != 1:
            assert other.head() == other.params.height


def test_blocks_past_210000_form_a_valid_chain_in_the_last_fork(long_chains):
    chain = long_chains.by_id[1]
    numbers = [*range(209_990, 210_040), *range(HEIGHT - 20, HEIGHT + 1)]
    for number in numbers:
        block = chain.block(number)
        header = block.header
        assert block.hash == keccak(rlp.encode(_fields(header)))
        assert header.parent_hash == chain.block(number - 1).hash
        assert chain.number_of(block.hash) == number
        assert header.timestamp > chain.block(number - 1).header.timestamp
        # proof of stake with blobs, under the last fork's rules (BPO2, Prague's requests)
        assert header.difficulty == 0 and block.uncles == ()
        assert header.withdrawals_root is not None and len(block.withdrawals) == 16
        assert header.blob_gas_used is not None and header.parent_beacon_block_root is not None
        assert header.requests_hash is not None
        assert chain.params.blob_rule(number).max_blobs == 21
        assert header.blob_gas_used <= 21 * 131_072


def test_same_seed_and_height_same_chain(long_chains):
    again = build_chains(SEED, height=HEIGHT + 1_000).by_id[1]
    for number in (210_500, HEIGHT):
        assert again.block(number).hash == long_chains.by_id[1].block(number).hash


@pytest.mark.parametrize(
    "height, words",
    [
        (205_999, "206,000"),  # below bpo2, the last fork
        (0, "last fork"),
        (-5, "last fork"),
        (MAX_HEIGHT + 1, "10,000,000"),
        (250_000.0, "must be an int"),
        ("250000", "must be an int"),
        (True, "must be an int"),
    ],
)
def test_bad_heights_are_refused_with_the_reason(height, words):
    with pytest.raises(ValueError, match=words):
        check_height(devnet_params()[1], height)
    with pytest.raises(ValueError, match=words):
        build_chains(SEED, height=height)


def test_the_lowest_height_is_the_last_fork():
    assert check_height(devnet_params()[1], 206_000) == 206_000
    chain = build_chains(SEED, height=206_000).by_id[1]
    assert chain.head() == 206_000 and chain.block(206_001) is None


def test_a_served_lengthened_devnet_answers_its_height():
    with start(seed=SEED, height=HEIGHT, warm=False) as devnet:
        url = f"{devnet.url}/v3/{devnet.api_key}"

        def call(method, *params):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
            return httpx.post(url, json=body, timeout=120).json()["result"]

        assert int(call("eth_blockNumber"), 16) == HEIGHT
        block = call("eth_getBlockByNumber", hex(HEIGHT), False)
        assert block["hash"] == BEFORE[HEIGHT]
        parent = call("eth_getBlockByNumber", hex(HEIGHT - 1), False)
        assert block["parentHash"] == parent["hash"]
        assert call("eth_getBlockByNumber", hex(HEIGHT + 1), False) is None
        assert call("eth_getBlockByNumber", "latest", False)["hash"] == BEFORE[HEIGHT]
        info = httpx.get(f"{devnet.url}/devnet/info", timeout=30,
                         auth=(devnet.api_key, devnet.api_key_secret)).json()  # fmt: skip
        heads = {c["chain_id"]: c["head"] for c in info["chains"]}
        assert heads[1] == HEIGHT and heads[11155111] == 60_000
        # the client's answer caches keep a lengthened devnet's answers apart
        with start(seed=SEED, warm=False) as default:
            assert default.simulation != devnet.simulation


def test_serve_refuses_a_height_below_the_last_fork(capsys):
    assert main(["serve", "--port", "0", "--height", "100000"]) == 2
    assert "last fork starts at block 206,000" in capsys.readouterr().err


def test_serve_refuses_a_height_that_is_not_a_number(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "0", "--height", "1e6"])
    assert exited.value.code == 2
    assert "--height: invalid int value" in capsys.readouterr().err


def test_serve_says_what_height_is_for(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "benchmarks and scale tests" in " ".join(capsys.readouterr().out.split())


def test_a_lengthened_history_is_stored_apart_from_the_default_one(tmp_path, monkeypatch):
    from dataclasses import replace

    from feeslab.devnet.chain import History

    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FEESLAB_DEVNET_CACHE", raising=False)
    params = replace(devnet_params()[1], height=30_000)  # short, so the test is quick
    long = History(params, 23)
    long.reach(40_000)
    long.ensure(40_000)
    files = sorted((tmp_path / "devnet").glob("chain-1-*.npz"), key=lambda p: len(p.name))
    assert len(files) == 2 and files[1].name.endswith("-to40000.npz")
    default_bytes = files[0].read_bytes()
    # a default history loads the short file: no more than its chain and a chunk
    short = History(params, 23)
    short.ensure(10)
    assert 30_000 < short.generated() < 40_000
    # a lengthened one loads the long file: nothing left to generate
    again = History(params, 23)
    again.reach(40_000)
    again.ensure(10)
    assert again.generated() > 40_000
    for number in (29_999, 35_000, 40_000):  # long was generated, not loaded: the truth
        assert again.block(number).hash == long.block(number).hash
    again.ensure(again.generated() + 10)  # growing past it leaves the default file alone
    assert files[0].read_bytes() == default_bytes


def test_a_lengthened_chain_grows_live_from_its_height():
    from feeslab.devnet.chain import Chain

    now = [0.0]
    chain = Chain(devnet_params()[1], SEED, block_time=12.0, clock=lambda: now[0], height=HEIGHT)
    assert chain.head() == HEIGHT
    now[0] += 30.0
    assert chain.head() == HEIGHT + 2
