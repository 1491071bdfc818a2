"""The node client: over HTTP and WebSocket it answers alike, caches alike and resumes, against
a devnet on loopback. The calls are the datasets' (``feeslab.datasets``)."""

from __future__ import annotations

import pytest

from feeslab.datasets import blocks as blocks_dataset
from feeslab.datasets import fee_history, storage, uncles
from feeslab.devnet import start
from feeslab.errors import CreditsExhausted
from feeslab.fetch import WebSocketTransport
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import HTTPTransport

SEED = 7  # the session devnet's


def _client(url: str, cache, **options) -> NodeClient:
    ledger = CreditLedger()
    kind = WebSocketTransport if url.startswith("ws") else HTTPTransport
    transport = kind(url=url, on_response=ledger.on_response, **options)
    return NodeClient(transport, ledger=ledger, cache=cache, progress=False)


def _close(client: NodeClient) -> None:
    client.close()
    client.transport.close()


def _results(client: NodeClient, calls) -> list:
    return [answer.unwrap() for answer in client.run(calls)]


def test_over_websocket_the_client_answers_like_over_http_and_caches(devnet, tmp_path):
    http = _client(f"{devnet.url}/v3/{devnet.api_key}", False)
    numbers = range(100_000, 101_200)
    words = storage.calls("0x" + "00" * 20, 0, [100_000, 150_000])
    fees = fee_history.calls(199_991, 200_001, [50])
    expected = [_results(http, c) for c in (blocks_dataset.calls(numbers), words, fees)]
    _close(http)
    client = _client(f"{devnet.ws_url}/ws/v3/{devnet.api_key}", tmp_path)
    try:
        got = [_results(client, c) for c in (blocks_dataset.calls(numbers), words, fees)]
        assert got == expected
        assert client.identity.startswith("1-0x") and client.chain_id == 1
        sent = client.ledger.calls
        assert _results(client, blocks_dataset.calls(numbers)) == expected[0]  # settled: cached
        assert client.ledger.calls == sent  # nothing sent
        assert client.ledger.cached >= len(numbers)
        with_uncles = [(n, 0) for n, h in zip(numbers, expected[0], strict=True) if h["uncles"]]
        assert with_uncles and all(u is not None for u in _results(client,
                                                                   uncles.calls(with_uncles)))
    finally:
        _close(client)


def test_each_batch_is_cached_as_it_arrives_not_at_the_end_of_its_chunk(tmp_path):
    """A 402 inside one 8,000-call chunk: the batches answered before it are kept."""
    blocks = range(70_000, 72_000)  # one chunk (DEFAULT_CHUNK is 8,000 calls)

    def fetch(devnet, **options):
        client = _client(f"{devnet.url}/v3/{devnet.api_key}", tmp_path, **options)
        try:
            return _results(client, blocks_dataset.calls(blocks)), client.ledger
        finally:
            _close(client)

    poor = start(seed=SEED, daily_credits=80 * 1000 + 500, credits_per_second=10**9)
    with poor, pytest.raises(CreditsExhausted) as refused:
        fetch(poor, max_batch=100, max_concurrency=1)
    kept = refused.value.answers_kept
    assert kept == 1_000  # ten batches of 100 paid for (the eleventh did not fit): all kept
    with start(seed=SEED, credits_per_second=10**9) as rich:
        headers, ledger = fetch(rich)
    assert [int(h["number"], 16) for h in headers] == list(blocks)
    assert ledger.cached == kept
    assert ledger.by_method["eth_getBlockByNumber"] == 80 * (len(blocks) - kept + 1)


def test_prepare_asks_the_head_and_identity_in_one_request_with_the_extra_calls(devnet, tmp_path):
    from feeslab.fetch.transport import RpcCall

    client = _client(f"{devnet.url}/v3/{devnet.api_key}", tmp_path)
    try:
        (version,) = client.prepare([RpcCall("web3_clientVersion", [])])
        assert client.transport.attempts == 1  # one round trip for all four calls
        assert str(version.unwrap()).startswith("feeslab-devnet/")
        assert client.identity.startswith("1-0x") and client.head() >= 200_000
        assert client.prepare() == [] and client.transport.attempts == 1  # known: nothing sent
    finally:
        _close(client)
    off = _client(f"{devnet.url}/v3/{devnet.api_key}", False)
    try:
        off.prepare()
        assert off._identity is None  # no cache: no identity asked for
        assert off.ledger.to_frame()["method"].tolist() == ["eth_blockNumber"]
    finally:
        _close(off)


def test_submitted_parts_answer_like_run_and_skip_the_answer_cache(devnet, tmp_path):
    client = _client(f"{devnet.url}/v3/{devnet.api_key}", tmp_path, max_batch=100)
    try:
        parts = [blocks_dataset.calls(range(a, a + 250)) for a in (10_000, 10_250, 10_500)]
        futures = [client.submit(part) for part in parts]
        got = [[answer.unwrap() for answer in future.result()] for future in futures]
        expected = [_results(client, part) for part in parts]  # through the answer cache
        assert got == expected
        assert [int(h["number"], 16) for h in got[1]] == list(range(10_250, 10_500))
        # submit wrote nothing to the answer cache: run fetched every header itself
        assert client.ledger.cached == 0
    finally:
        _close(client)


@pytest.mark.parametrize("over", ["http", "ws"])
def test_reduce_replaces_each_answer_and_the_cache_keeps_it_whole(devnet, tmp_path, over):
    """``reduce`` stands for each answer from its arrival (a header by its uncle count): what
    ``submit`` and ``run`` return; the answer cache still gets the whole header."""
    from feeslab.fetch.transport import RpcResult

    url = (f"{devnet.url}/v3/{devnet.api_key}" if over == "http"
           else f"{devnet.ws_url}/ws/v3/{devnet.api_key}")
    calls = blocks_dataset.calls(range(100_000, 100_700))
    plain = _client(f"{devnet.url}/v3/{devnet.api_key}", False)
    try:
        headers = _results(plain, calls)
    finally:
        _close(plain)
    counts = [len(h["uncles"]) for h in headers]
    assert 0 < sum(counts) < len(counts)  # some blocks with uncles, some without

    def count(answer):
        return RpcResult(answer.call, result=len(answer.result["uncles"]))

    client = _client(url, tmp_path, max_batch=100)
    try:
        seen = []  # on_batch is given each batch as reduced (nothing else kept alive)
        submitted = client.submit(calls, reduce=count,
                                  on_batch=lambda sent, got: seen.extend(got)).result()
        assert [a.unwrap() for a in submitted] == counts
        if over == "http":  # the WebSocket transport sends whole, without on_batch
            assert sorted(a.unwrap() for a in seen) == sorted(counts)
            assert {id(a) for a in seen} == {id(a) for a in submitted}
        else:
            assert seen == []
        half = len(calls) // 2
        client.run(calls[:half])  # half of them cached, whole
        through = client.submit(calls, cached=True, reduce=count).result()
        assert [a.unwrap() for a in through] == counts
        assert [a.unwrap() for a in client.run(calls, reduce=count)] == counts
        sent = client.ledger.calls
        assert _results(client, calls) == headers  # the cache holds the whole headers
        assert client.ledger.calls == sent
    finally:
        _close(client)
