"""connect() and the Lab's frames, against the devnet over real HTTP, checked against its chain."""

from __future__ import annotations

import pandas as pd
import pytest

import feeslab
from feeslab.datasets.blocks import headers as headers_of
from feeslab.devnet import start
from feeslab.devnet.chain import build_chains
from feeslab.sources.rpc import DEVNET_CLIENT

SEED = 7  # the session devnet's seed


def test_connect_validates_its_options(monkeypatch):
    monkeypatch.delenv("INFURA_API_KEY", raising=False)
    with pytest.raises(feeslab.ConfigError, match="not both"):
        feeslab.connect(url="http://127.0.0.1:1", rpc_url="http://127.0.0.1:2")
    with pytest.raises(feeslab.ConfigError, match="api_key"):
        feeslab.connect(url="http://127.0.0.1:1")


def test_repr_never_shows_the_key(lab, devnet):
    for text in (repr(lab), repr(lab.node), repr(lab.node.transport), repr(lab.gas)):
        assert devnet.api_key not in text
        assert devnet.api_key_secret not in text


def test_base_fee_history_is_exact_and_placed_at_blocks(lab, truth):
    frame = lab.base_fee_history()
    head = truth.head()
    assert len(frame) == 500
    assert frame["block_number"].tolist() == list(range(head - 499, head + 1))
    assert frame["base_fee_wei"].tolist() == truth.base_fees(head - 499, head + 1)


def test_fee_history_spans_many_calls_and_matches_the_chain(lab, truth):
    start, stop = 150_000, 153_000  # three eth_feeHistory calls
    frame = lab.fee_history(start, stop)
    assert frame["block_number"].tolist() == list(range(start, stop))
    assert frame["base_fee_wei"].tolist() == truth.base_fees(start, stop)
    used = truth.gas_used_range(start, stop)
    limits = truth.gas_limit_range(start, stop)
    ratios = [u / g for u, g in zip(used, limits, strict=True)]
    assert frame["gas_used_ratio"].tolist() == pytest.approx(ratios)
    assert lab.credits.by_method["eth_feeHistory"] == 3 * 80


def test_uncle_scan_finds_every_uncle_and_costs_what_it_planned(lab, truth):
    start, stop = 40_000, 41_000
    scan = lab.uncles(start, stop)
    expected = [(n, i, "0x" + u.hash.hex()) for n in range(start, stop)
                for i, u in enumerate(truth.block(n).uncles)]
    got = list(zip(scan.uncles["block_number"], scan.uncles["uncle_index"], scan.uncles["hash"],
                   strict=True))
    assert got == expected
    assert len(scan.blocks) == stop - start  # blocks without uncles count too
    assert scan.blocks["uncle_count"].sum() == len(expected)
    spent = lab.credits.by_method
    assert spent["eth_getUncleByBlockNumberAndIndex"] == 150 * len(expected)
    # the plan said so before running (its sample is part of the scan's uncle counts)
    assert scan.plan.total == pytest.approx(80 * (stop - start) + 150 * len(expected), rel=0.2)


def test_uncle_scan_without_a_cache_asks_for_each_uncle_count_once(devnet, truth):
    # the plan's sample is part of the scan: it is not fetched a second time; no header is
    # asked for (a count says as much as a header's uncle list, for the same credits)
    start, stop = 50_000, 52_000
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key, cache=False,
                         progress=False) as lab:
        scan = lab.uncles(start, stop)
        calls = lab.credits.to_frame().set_index("method")["calls"]
    assert calls["eth_getUncleCountByBlockNumber"] == stop - start
    assert calls["eth_getUncleByBlockNumberAndIndex"] == len(scan.uncles)
    assert "eth_getBlockByNumber" not in calls
    assert len(scan.uncles) == sum(len(truth.block(n).uncles) for n in range(start, stop))


def test_a_rerun_of_settled_data_sends_no_request(lab):
    lab.uncles(30_000, 30_500)
    lab.fee_history(100_000, 101_000)
    spent, calls = lab.credits.spent, lab.credits.calls
    again = lab.uncles(30_000, 30_500)
    lab.fee_history(100_000, 101_000)
    assert lab.credits.spent == spent
    assert lab.credits.calls == calls  # nothing sent: all answered from the cache
    assert len(again.blocks) == 500


def test_budget_refuses_before_sending(lab):
    before = lab.credits.calls
    with pytest.raises(feeslab.BudgetExceeded) as refused:
        lab.fee_history(0, 200_000, budget=1_000)
    assert refused.value.planned > 1_000
    assert lab.credits.calls == before


def test_storage_series_matches_the_devnet_state(lab, devnet):
    listing = devnet.contracts
    token = next(c["address"] for c in listing["contracts"] if c["name"] == "FeeslabToken")
    state = build_chains(SEED).by_id[1].state
    blocks = [state.contracts_block + k for k in (0, 1000, 5000, 9000)]
    frame = lab.storage_series(token, 2, blocks)  # _totalSupply
    address = bytes.fromhex(token[2:])
    assert [int(x) for x in frame["word"]] == [state.storage_at(address, 2, b) for b in blocks]
    assert lab.storage(token, 2, blocks[-1]) == state.storage_at(address, 2, blocks[-1])


def test_a_range_past_the_head_is_refused_before_fetching(lab, truth):
    with pytest.raises(ValueError, match="past the chain's head"):
        lab.uncles(truth.head() - 10, truth.head() + 50_000)
    with pytest.raises(ValueError, match="past the chain's head"):
        lab.fee_history(truth.head(), truth.head() + 2)
    # only the one set-up round trip (the head, the cache's identity: chain id and genesis
    # header, the client version), then the head again: no block of either range
    calls = lab.credits.to_frame().set_index("method")["calls"].to_dict()
    assert set(calls) == {"eth_blockNumber", "eth_chainId", "eth_getBlockByNumber",
                          "web3_clientVersion"}
    assert calls["eth_getBlockByNumber"] == 1  # the genesis header


def test_bad_ranges_are_clear_errors(lab):
    with pytest.raises(ValueError, match="stop"):
        lab.uncles(10, 10)
    with pytest.raises(ValueError, match="start"):
        lab.fee_history(-1, 10)


def _lab_on(handle, cache, **options):
    return feeslab.connect(
        url=handle.url, api_key=handle.api_key, api_key_secret=handle.api_key_secret,
        cache=cache, progress=False, **options,
    )


def test_an_interrupted_fetch_keeps_its_work_and_resumes_without_paying_again(devnet, tmp_path):
    blocks = range(60_000, 63_000)
    first = _lab_on(devnet, tmp_path)
    first.node.chunk = 500
    done = []

    def interrupt(count):
        done.append(count)
        if len(done) == 3:
            raise KeyboardInterrupt  # the user's Ctrl-C between two chunks

    with pytest.raises(KeyboardInterrupt):
        headers_of(first.data_source, blocks, on_chunk=interrupt)
    # 1,500 headers, plus the genesis header that names the chain for the cache
    paid = first.credits.by_method["eth_getBlockByNumber"]
    assert paid == 80 * 1500 + 80
    first.close()

    again = _lab_on(devnet, tmp_path)
    headers = headers_of(again.data_source, blocks)
    assert [int(h["number"], 16) for h in headers] == list(blocks)
    assert again.credits.by_method["eth_getBlockByNumber"] == 80 * 1500 + 80  # only the rest
    assert again.credits.cached == 1500
    again.close()


def test_credits_exhausted_mid_fetch_keeps_what_was_fetched(tmp_path):
    from feeslab.devnet import start

    blocks = range(70_000, 72_000)
    # enough for about half of the headers, then HTTP 402
    with start(seed=SEED, daily_credits=80 * 1000 + 500, credits_per_second=10**9) as poor:
        lab = _lab_on(poor, tmp_path, max_batch=100, max_concurrency=1)
        lab.node.chunk = 200
        with pytest.raises(feeslab.CreditsExhausted) as refused:
            headers_of(lab.data_source, blocks)
        assert "resume" in str(refused.value)
        assert poor.api_key not in str(refused.value)
        kept = refused.value.answers_kept
        assert 0 < kept < len(blocks)
        lab.close()
    # the next day (a devnet with the same chain, so the same cache identity)
    with start(seed=SEED, credits_per_second=10**9) as rich:
        lab = _lab_on(rich, tmp_path)
        headers = headers_of(lab.data_source, blocks)
        assert [int(h["number"], 16) for h in headers] == list(blocks)
        assert lab.credits.cached == kept
        assert lab.credits.by_method["eth_getBlockByNumber"] == 80 * (len(blocks) - kept + 1)
        lab.close()


def test_websocket_lab_gives_the_same_frames_and_pushes_new_heads(devnet, truth, tmp_path):
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key, websocket=True,
                         cache=tmp_path, progress=False) as lab:
        assert "WebSocketTransport" in repr(lab.node.transport)
        assert devnet.api_key not in repr(lab.node.transport)
        scan = lab.uncles(40_000, 40_300)
        assert len(scan.uncles) == sum(len(truth.block(n).uncles) for n in range(40_000, 40_300))
    ws = f"{devnet.ws_url}/sepolia/ws/v3/{devnet.api_key}"
    with feeslab.connect(rpc_url=ws, cache=False, progress=False) as lab:
        assert lab.node.chain_id == 11155111
        with pytest.raises(feeslab.ConfigError, match="websocket=True"):
            feeslab.connect(rpc_url="ftp://example.invalid/x", websocket=True)
    http_lab = feeslab.connect(url=devnet.url, api_key=devnet.api_key, cache=False)
    with http_lab, pytest.raises(feeslab.ConfigError, match="WebSocket"):
        http_lab.subscribe()


def test_subscribe_on_a_growing_embedded_devnet(tmp_path):
    # the session devnet's seed: its chains are already built and stored
    with feeslab.connect(seed=SEED, block_time=0.2, websocket=True, cache=tmp_path,
                         progress=False) as lab:
        first = lab.node.head()
        heads = lab.subscribe("newHeads")
        seen = [int(next(heads)["number"], 16) for _ in range(3)]
        heads.close()
    assert seen == sorted(seen) and len(set(seen)) == 3
    assert seen[0] >= first


def test_the_chain_spec_says_whose_fork_heights_the_chain_follows(lab, devnet, monkeypatch):
    from feeslab.devnet.rpc import CLIENT_VERSION

    # a devnet reached by url=: its client version tells, asked once
    assert (lab.chain_spec.label, lab.source) == ("mainnet@devnet", "devnet")
    assert lab.credits.by_method["web3_clientVersion"] == 80
    assert lab.chain_spec.heights == "devnet" and lab.credits.by_method["web3_clientVersion"] == 80
    # another node (its client version stands in for geth's)
    monkeypatch.setattr("feeslab.devnet.rpc.CLIENT_VERSION", "Geth/v1.14.0-stable/linux-amd64")
    with feeslab.connect(rpc_url=f"{devnet.url}/v3/{devnet.api_key}", cache=False) as node:
        assert (node.chain_spec.label, node.source) == ("mainnet", "node")
    assert CLIENT_VERSION.startswith(DEVNET_CLIENT)


def test_storage_plan_less_cached_or_from_scratch(lab, devnet):
    token = next(c["address"] for c in devnet.contracts["contracts"] if c["name"] == "FeeslabToken")
    state = build_chains(SEED).by_id[1].state
    blocks = [state.contracts_block + k for k in range(0, 400, 40)]
    assert lab.plan_storage_series(token, 2, blocks).total == 80 * len(blocks)
    lab.storage_series(token, 2, blocks[:4])
    assert lab.plan_storage_series(token, 2, blocks).total == 80 * (len(blocks) - 4)
    assert lab.plan_storage_series(token, 2, blocks, less_cached=False).total == 80 * len(blocks)


# -- pacing within the plan's credits per second ---------------------------------------------------


def _devnet_spent(handle) -> int:
    import httpx

    answer = httpx.get(f"{handle.url}/devnet/credits", auth=(handle.api_key, handle.api_key_secret))
    answer.raise_for_status()
    return answer.json()["spent"]


def test_the_readme_first_code_runs_verbatim_within_the_default_limits(monkeypatch, tmp_path,
                                                                      capsys):
    """The README's first python block, run as it is written, on connect()'s embedded devnet
    (Team plan: 40,000 credits/s) with an empty answer cache, as on a fresh clone."""
    import re
    from pathlib import Path

    import platformdirs

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    code = re.search(r"^```python\n(.*?)^```", readme, re.M | re.S).group(1)
    monkeypatch.delenv("INFURA_API_KEY", raising=False)
    monkeypatch.delenv("INFURA_API_KEY_SECRET", raising=False)
    # the answer cache is this test's; the devnet's generated chains stay the user's (a devnet
    # generating all four again would take the worker's CPU for a minute)
    chains = Path(platformdirs.user_cache_dir("feeslab")) / "devnet"
    chains.mkdir(parents=True, exist_ok=True)
    (tmp_path / "devnet").symlink_to(chains, target_is_directory=True)
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    namespace: dict = {}
    try:
        exec(compile(code, "README.md", "exec"), namespace)
        lab, scan = namespace["lab"], namespace["scan"]
        transport = lab.node.transport
        transport.governor.settle()
        assert transport.governor.ceiling == pytest.approx(40_000 * 0.95)  # the devnet told it
        assert len(scan.blocks) == 1_000 and len(scan.uncles) == 87
        assert transport.rate_limited == 0  # paced: the service never had to refuse
        assert _devnet_spent(lab.devnet) == lab.credits.spent > 1_000 * 80  # nothing cached
    finally:
        if "lab" in namespace:
            namespace["lab"].close()
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["stop_block", "blocks", "uncles", "rate", "lower", "upper"]
    assert [line.split()[0] for line in printed[2:]] == ["10000", "10250", "10500", "10750"]
    assert sum(int(line.split()[3]) for line in printed[2:]) == 87


def test_credits_per_second_is_honoured(devnet):
    """The session devnet allows 10**12 credits/s: only the client's pacing holds it back."""
    import time

    rate = 20_000
    with _lab_on(devnet, False, credits_per_second=rate) as lab:
        assert lab.node.transport.governor.ceiling == pytest.approx(rate * 0.95)
        before = _devnet_spent(devnet)
        began = time.monotonic()
        lab.blocks(1_000, 2_000)
        elapsed = time.monotonic() - began
        spent = _devnet_spent(devnet) - before
    assert 1_000 * 80 <= spent <= 1_000 * 80 + 200  # the headers, and the head asked first
    # the service's own rule: one second's burst, then the rate
    assert spent <= rate * (elapsed + 1)
    assert elapsed >= (spent - rate) / rate  # unpaced, it takes a tenth of a second


def test_the_pace_comes_from_the_devnet_a_plan_or_the_service(devnet, monkeypatch):
    import math

    from feeslab.fetch.credits import pacing_rate

    with _lab_on(devnet, False) as lab:  # what the session devnet enforces, asked meanwhile
        lab.node.transport.governor.settle()
        assert lab.node.transport.governor.ceiling == pytest.approx(10**12 * 0.95)
    with start(seed=SEED, credits_per_second=12_345, warm=False) as small, _lab_on(
        small, False
    ) as lab:
        lab.node.head()  # the first requests need not wait for the answer
        lab.node.transport.governor.settle()
        assert lab.node.transport.governor.ceiling == pytest.approx(12_345 * 0.95)
    with _lab_on(devnet, False, credits_per_second="developer") as lab:
        assert lab.node.transport.governor.ceiling == pytest.approx(4_000 * 0.95)
    with _lab_on(devnet, False, credits_per_second=math.inf) as lab:
        assert lab.node.transport.governor is None
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key, cache=False) as lab:
        assert lab.node.transport.governor.ceiling == pytest.approx(40_000 * 0.95)  # no secret
    with feeslab.connect(rpc_url=f"{devnet.url}/v3/{devnet.api_key}", cache=False) as lab:
        assert lab.node.transport.governor is None  # a plain node charges no credits
    assert pacing_rate(None, service=True) == 500  # the free plan, on the real service
    assert pacing_rate("Team") == 40_000
    for bad in ("fast", 0, -5, float("nan"), True):
        with pytest.raises(feeslab.ConfigError, match="credits_per_second"):
            _lab_on(devnet, False, credits_per_second=bad)


def test_embedded_devnet_answers_are_cached_apart_per_simulation(tmp_path) -> None:
    """A changed simulator must never read a cache an older one wrote: the embedded devnet's
    identity carries its simulation digest (the sources, chains.json and the seed)."""
    from feeslab.devnet.server import simulation_digest

    with feeslab.connect(cache=tmp_path, progress=False) as lab:
        lab.blocks(1, 3)
        identity = lab.node._identity
    assert identity.endswith(f"-devnet{simulation_digest(0)}")
    assert simulation_digest(0) != simulation_digest(1)
    assert [p.name for p in (tmp_path / "rpc").glob("*.sqlite3")] == [f"{identity}.sqlite3"]


# -- datasets bound to one connection --------------------------------------------------------------


def test_budget_is_checked_before_the_uncle_plan_buys_its_sample(lab):
    # 20,000 uncle counts alone are 1,600,000 credits: refused before the 200-block sample
    for ask in (lambda: lab.uncles(100_000, 120_000, budget=100_000),
                lambda: lab.plan_uncles(100_000, 120_000, budget=100_000)):
        with pytest.raises(feeslab.BudgetExceeded) as refused:
            ask()
        assert refused.value.planned == 80 * 20_000
        assert lab.credits.calls == 0 and lab.credits.spent == 0  # nothing sent, no sample
    # enough for the counts but not for the uncles the sample finds: refused after it
    with pytest.raises(feeslab.BudgetExceeded):
        lab.uncles(100_000, 120_000, budget=80 * 20_000 + 150)
    # the sample (kept in the cache for the scan) and the genesis header naming the cache
    assert lab.credits.by_method["eth_getUncleCountByBlockNumber"] == 80 * 200
    assert lab.credits.by_method["eth_getBlockByNumber"] == 80
    assert "eth_getUncleByBlockNumberAndIndex" not in lab.credits.by_method


def test_uncle_scan_shows_what_it_found(lab, truth):
    scan = lab.uncles(40_000, 41_000)
    found = sum(len(truth.block(n).uncles) for n in range(40_000, 41_000))
    assert repr(scan) == (
        f"<UncleScan of blocks 40,000 to 40,999: {found:,} uncles in 1,000 blocks "
        f"({found / 1000:.4f} a block), planned {scan.plan.total:,} credits>"
    )
    page = scan._repr_html_()
    assert page.startswith("<p><b>UncleScan</b> of blocks 40,000 to 40,999") and "<table" in page
    assert page.count("</tr>") == 1 + min(5, found)  # the header row and the first uncles


def test_on_network_reaches_another_chain_with_the_same_key_and_options(devnet, monkeypatch):
    with _lab_on(devnet, False, credits_per_second=20_000) as lab:
        with lab.on_network("sepolia") as other:
            assert other.network == "sepolia" and other.source == "devnet"
            assert other.node.transport.governor.ceiling == pytest.approx(20_000 * 0.95)
            top = other.node.head()
            history = other.fee_history(top - 9, top + 1)
            assert history.attrs["chain_id"] == 11155111
            assert history.attrs["chain_spec"] == "sepolia@devnet"
        assert lab.chain_spec.chain_id == 1  # this Lab is still on mainnet, still open
        assert len(lab.blocks(1, 3)) == 2
    node = feeslab.connect(rpc_url=f"{devnet.url}/v3/{devnet.api_key}", cache=False)
    with node, pytest.raises(feeslab.ConfigError, match="one chain"):
        node.on_network("sepolia")


def test_on_network_of_the_embedded_devnet_shares_it(monkeypatch, tmp_path):
    monkeypatch.delenv("INFURA_API_KEY", raising=False)
    monkeypatch.delenv("INFURA_API_KEY_SECRET", raising=False)
    with feeslab.connect(cache=tmp_path, progress=False) as lab:
        other = lab.on_network("polygon-mainnet")
        assert other.devnet is lab.devnet and other.chain_spec.label == "polygon-mainnet@devnet"
        other.close()  # leaves the devnet to the Lab that started it
        assert lab.devnet.running and lab.node.head() > 0
    assert not lab.devnet.running


@pytest.mark.parametrize("cache", [False, True])
def test_blocks_streamed_chunk_by_chunk_equal_the_frame_of_every_header(devnet, tmp_path, cache):
    """lab.blocks turns each chunk's headers into frame columns as they arrive (slimmed, the
    JSON freed): the frame is the one parse_blocks makes of all the whole headers at once."""
    from feeslab.frames import parse_blocks

    blocks = range(197_800, 200_300)  # Shanghai's withdrawals in each header
    with _lab_on(devnet, tmp_path if cache else False) as lab:
        whole = headers_of(lab.data_source, blocks[:900])  # some of them cached, whole
        assert all(len(h["withdrawals"]) for h in whole)
        lab.node.chunk = 700  # four chunks, the cached ones among the first two
        frame = lab.blocks(blocks.start, blocks.stop)
    with _lab_on(devnet, False) as plain:
        reference = parse_blocks(headers_of(plain.data_source, blocks))
    assert frame["block_number"].tolist() == list(blocks)
    pd.testing.assert_frame_equal(frame, reference)
    assert frame.attrs["chain_id"] == 1


_PEAK = r"""
import sys
import feeslab
url, key, secret, start, stop = sys.argv[1:6]
with feeslab.connect(url=url, api_key=key, api_key_secret=secret, cache=False,
                     progress=False) as lab:
    assert len(lab.blocks(int(start), int(stop))) == int(stop) - int(start)
print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024)
"""


def test_lab_blocks_peak_memory_grows_with_the_frame_not_with_the_json(devnet):
    """The process's own peak (VmHWM) over two range sizes: 40,000 more rows of frame are
    ~16 MiB; their headers held as decoded JSON (~11 KB each after Shanghai) were 400+ MiB."""
    import subprocess
    import sys

    def peak(blocks: int) -> int:
        args = [sys.executable, "-c", _PEAK, devnet.url, devnet.api_key, devnet.api_key_secret,
                str(200_000 - blocks), "200000"]
        done = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600)
        return int(done.stdout.split()[-1])

    small, large = peak(10_000), peak(50_000)
    assert large - small < 80, (small, large)  # [MiB] a generous margin over the frame's growth
