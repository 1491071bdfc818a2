"""Streaming scans and their chunk cache, against the session devnet over real HTTP: uncle
scans in aligned pieces (each piece's uncles frame cached as Parquet), fee history in groups
of calls sent at once; checked against the devnet's chain."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import feeslab
from feeslab.datasets.uncles import PIECE

SETUP = {"eth_blockNumber", "eth_chainId", "web3_clientVersion"}
COUNTS = "eth_getUncleCountByBlockNumber"


def _lab(devnet, cache) -> feeslab.Lab:
    return feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                           api_key_secret=devnet.api_key_secret, cache=cache, progress=False)


def _calls(lab: feeslab.Lab) -> dict[str, int]:
    """Calls sent, by method (methods answered only from the cache left out)."""
    sent = lab.credits.to_frame().set_index("method")["calls"]
    return sent[sent > 0].to_dict()


def _expected(truth, start: int, stop: int) -> list[tuple[int, int, str]]:
    return [(n, i, "0x" + u.hash.hex()) for n in range(start, stop)
            for i, u in enumerate(truth.block(n).uncles)]


def _found(scan) -> list[tuple[int, int, str]]:
    frame = scan.uncles
    return list(zip(frame["block_number"], frame["uncle_index"], frame["hash"], strict=True))


def test_a_scan_over_many_pieces_finds_every_uncle_and_a_new_lab_reads_it_back(
    devnet, truth, tmp_path
):
    start, stop = 3 * PIECE - 100, 6 * PIECE + 50  # two edge pieces and three whole ones
    with _lab(devnet, tmp_path) as first:
        scan = first.uncles(start, stop)
        counts, headers = _calls(first)[COUNTS], _calls(first)["eth_getBlockByNumber"]
    assert _found(scan) == _expected(truth, start, stop)
    assert scan.blocks["block_number"].tolist() == list(range(start, stop))
    assert counts == stop - start  # each block's count once (the plan's sample among them)
    assert headers == 1  # the genesis header naming the cache
    with _lab(devnet, tmp_path) as again:  # a restarted kernel: the pieces come back as frames
        rerun = again.uncles(start, stop)
        calls = _calls(again)
        booked = again.credits.to_frame().set_index("method")["cached"].to_dict()
        # inside one whole piece the first scan cached: a frame sliced, nothing asked
        inner = again.uncles(4 * PIECE + 10, 5 * PIECE - 10)
        assert _calls(again) == calls
    assert set(calls) == SETUP | {"eth_getBlockByNumber"} and calls["eth_getBlockByNumber"] == 1
    pd.testing.assert_frame_equal(rerun.uncles, scan.uncles)
    pd.testing.assert_frame_equal(rerun.blocks, scan.blocks)
    assert rerun.uncles.attrs == scan.uncles.attrs and rerun.uncles.attrs["chain_id"] == 1
    assert rerun.plan.total == 0  # everything came from the cache
    # and the ledger says so: each piece stands for its counts' and its uncles' answers
    assert booked[COUNTS] == stop - start
    assert booked["eth_getUncleByBlockNumberAndIndex"] == len(scan.uncles) > 0
    assert _found(inner) == _expected(truth, 4 * PIECE + 10, 5 * PIECE - 10)


def test_blocks_near_the_head_are_fetched_again_and_settled_ones_are_not(devnet, truth, lab):
    head = truth.head()
    start = head - 300
    lab.uncles(start, head + 1)
    before = _calls(lab)[COUNTS]
    again = lab.uncles(start, head + 1)
    fetched = _calls(lab)[COUNTS] - before
    assert fetched == lab.node.settled_depth  # only the blocks not yet settled
    assert _found(again) == _expected(truth, start, head + 1)


def test_without_a_cache_nothing_is_written_and_each_scan_asks_again(devnet, truth, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("FEESLAB_CACHE_DIR", str(tmp_path))
    with _lab(devnet, False) as lab:
        first = lab.uncles(20_000, 21_000)
        second = lab.uncles(20_000, 21_000)
        assert _calls(lab)[COUNTS] == 2_000
    assert _found(first) == _found(second) == _expected(truth, 20_000, 21_000)
    assert not list(tmp_path.rglob("*.chunk"))


def test_fee_history_comes_back_from_the_cache_with_the_same_dtypes(devnet, truth, tmp_path):
    start, stop = 120_000, 160_000  # 40 calls: five groups, all sent at once
    with _lab(devnet, tmp_path) as first:
        frame = first.fee_history(start, stop)
        assert _calls(first)["eth_feeHistory"] == 40
        assert first.node.transport.attempts <= 1 + 5  # the set-up, then a request a group
    assert frame["block_number"].tolist() == list(range(start, stop))
    assert frame["base_fee_wei"].tolist() == truth.base_fees(start, stop)
    with _lab(devnet, tmp_path) as again:
        rerun = again.fee_history(start, stop)
        assert "eth_feeHistory" not in _calls(again)
    pd.testing.assert_frame_equal(rerun, frame)
    assert rerun.attrs == frame.attrs


@pytest.mark.parametrize("percentiles", [(25, 75), ()])
def test_fee_history_groups_are_cached_per_percentiles(lab, truth, percentiles):
    frame = lab.fee_history(100_000, 102_000, percentiles=(10, 50, 90))
    other = lab.fee_history(100_000, 102_000, percentiles=percentiles)
    assert _calls(lab)["eth_feeHistory"] == 4  # the second set of percentiles asked anew
    assert [c for c in other.columns if c.startswith("reward")] == [
        f"reward_p{p}_wei" for p in percentiles]
    assert other["base_fee_wei"].tolist() == frame["base_fee_wei"].tolist()


def test_an_interrupted_scan_keeps_the_pieces_it_finished(truth, tmp_path):
    from feeslab.devnet import start

    stop = 3 * PIECE
    # enough for two pieces of counts and the first piece's uncles, not for the third piece
    poor = start(seed=7, daily_credits=80 * 2 * PIECE + 150 * 2_000, credits_per_second=10**9)
    with poor, _lab(poor, tmp_path) as lab, pytest.raises(feeslab.CreditsExhausted):
        lab.uncles(0, stop)
    with start(seed=7, credits_per_second=10**9) as rich, _lab(rich, tmp_path) as lab:
        scan = lab.uncles(0, stop)
        counts = _calls(lab)[COUNTS]
    assert _found(scan) == _expected(truth, 0, stop)
    assert counts <= 2 * PIECE  # at least the first piece came from the cache


def test_a_plan_from_scratch_ignores_the_cache_and_is_the_same_on_every_run(devnet, tmp_path):
    start, stop = 2 * PIECE, 3 * PIECE  # one whole settled piece
    with _lab(devnet, tmp_path) as lab:
        cold = lab.plan_uncles(start, stop)
        lab.uncles(start, stop)
        warm = lab.plan_uncles(start, stop)
        scratch = lab.plan_uncles(start, stop, less_cached=False)
    assert cold.total > 0 and warm.total == 0  # the cache holds the whole piece now
    assert scratch.total == cold.total  # the same sample, so the same estimate
    assert scratch.count(COUNTS) == stop - start


def test_every_request_is_charged_against_the_budget_before_it_goes(devnet):
    from feeslab.datasets import blocks
    from feeslab.errors import BudgetExceeded
    from feeslab.fetch.credits import Budget

    with _lab(devnet, False) as lab:
        source = lab.data_source
        outer, inner = Budget(80 * 15), Budget(80 * 10)
        with source.budgeted(outer):
            with source.budgeted(inner):
                source.node.run(blocks.calls(range(100, 110)))  # exactly the inner budget
                spent = lab.credits.spent
                with pytest.raises(BudgetExceeded):
                    source.node.run(blocks.calls([110]))
                assert lab.credits.spent == spent  # refused before it was sent
            source.node.run(blocks.calls(range(110, 115)))  # the outer one has room for 5
            with pytest.raises(BudgetExceeded):
                source.node.run(blocks.calls([115]))
        assert (inner.spent, outer.spent) == (800, 1200)  # nested: both charged, refusals not
        source.node.run(blocks.calls([115]))  # outside: no budget
        assert _calls(lab)["eth_getBlockByNumber"] == 16


def test_a_scan_past_its_budget_is_refused_having_spent_at_most_the_budget(devnet, tmp_path):
    from feeslab.errors import BudgetExceeded

    start, stop = 2 * PIECE, 2 * PIECE + 3000
    with _lab(devnet, tmp_path) as lab:
        counts_only = 80 * (stop - start)  # passes the counts' check, not the uncles
        with pytest.raises(BudgetExceeded):
            lab.uncles(start, stop, budget=counts_only + 150)
        assert lab.credits.spent <= counts_only + 150


def test_a_paced_scan_moves_its_bar_with_each_batch_of_counts(capfd, monkeypatch):
    """Paced, a piece's uncle call waits behind the next pieces' counts: a bar moved by
    whole pieces stood still for half the scan. It moves as the counts arrive, so it
    shows counts inside the first piece, and ends at the range's size."""
    import re

    from feeslab import _progress
    from feeslab.devnet import start

    bars = []

    def kept(**options):
        bars.append(made(**options))
        return bars[-1]

    made = _progress.progress_bar
    monkeypatch.setattr(_progress, "progress_bar", kept)
    with start(seed=7, credits_per_second=400_000) as paced, feeslab.connect(
        url=paced.url, api_key=paced.api_key, api_key_secret=paced.api_key_secret, cache=False,
        progress=True,
    ) as lab:
        lab.uncles(0, 2 * PIECE)
    shown = {int(n) for n in re.findall(rf"\|\s*(\d+)/{2 * PIECE} \[", capfd.readouterr().err)}
    assert [bar.n for bar in bars] == [2 * PIECE]  # closed at the end (the last view cleared)
    assert any(0 < n < PIECE for n in shown), shown


@pytest.mark.parametrize(("bad", "error", "says"), [
    ("three", "ProtocolError", "answered 'three', not a hex quantity"),
    (None, "ConfigError", "the node has no block 4,321"),
])
def test_a_count_that_is_not_a_quantity_stops_the_scan_naming_its_block(devnet, bad, error,
                                                                        says):
    """Fault injection (httpx.MockTransport in front of the real devnet): one block's uncle
    count answered wrong; the scan raises a typed error naming the block, no traceback of
    int() or a wrong count."""
    import httpx
    import orjson

    from feeslab import errors
    from feeslab.datasets import uncles
    from feeslab.fetch.credits import CreditLedger
    from feeslab.fetch.node import NodeClient
    from feeslab.fetch.transport import HTTPTransport
    from feeslab.sources.rpc import RpcSource

    real = httpx.Client()

    def spoil(request: httpx.Request) -> httpx.Response:
        answer = real.post(str(request.url), content=request.content, headers=request.headers)
        sent, items = orjson.loads(request.content), orjson.loads(answer.content)
        if isinstance(sent, list):
            asked = {item["id"]: item for item in sent}
            for item in items:
                call = asked[item["id"]]
                if call["method"] == uncles.COUNT_METHOD and call["params"] == [hex(4_321)]:
                    item["result"] = bad
        return httpx.Response(answer.status_code, content=orjson.dumps(items),
                              headers={"Content-Type": "application/json"})

    ledger = CreditLedger()
    transport = HTTPTransport(url=f"{devnet.url}/v3/{devnet.api_key}", max_batch=1_000,
                              transport=httpx.MockTransport(spoil),
                              on_response=ledger.on_response)  # fmt: skip
    node = NodeClient(transport, ledger=ledger, cache=False, progress=False)
    try:
        with pytest.raises(getattr(errors, error), match=says):
            uncles.get(RpcSource(node), 4_000, 8_000, progress=False)
    finally:
        node.close()
        transport.close()
        real.close()


def test_counts_of_unfinished_pieces_are_noted_when_the_scan_stops_and_not_bought_again(
    truth, tmp_path
):
    """Out of credits with counts arrived but their pieces' uncles not fetched: the counts
    held back (a piece younger than ``run_seconds`` is not noted yet) are noted as the scan
    stops, and the rerun asks for exactly the counts that were refused."""
    from feeslab.devnet import start

    stop = 3 * PIECE
    # the set-up and the three pieces' counts (12 batches of 1,000); the uncles run out
    poor = start(seed=7, daily_credits=245 + 80 * stop + 100, credits_per_second=10**9)
    with poor, _lab(poor, tmp_path) as lab:
        with pytest.raises(feeslab.CreditsExhausted):
            lab.uncles(0, stop)
        paid = lab.credits.by_method[COUNTS] // 80
    with start(seed=7, credits_per_second=10**9) as rich, _lab(rich, tmp_path) as lab:
        scan = lab.uncles(0, stop)
        counts = _calls(lab).get(COUNTS, 0)
    assert _found(scan) == _expected(truth, 0, stop)
    assert paid >= 2 * PIECE  # most counts came before the credits ran out (12 batches, 2 refused
    # at most, as the first pieces' uncle calls went between them) ...
    assert counts == stop - paid  # ... and none is bought twice: without the notes, the counts
    # of every piece not finished (two or three of them) were asked again


def test_a_scan_that_ends_writes_no_notes_and_a_slow_one_keeps_its_runs_as_it_goes(
    devnet, tmp_path, monkeypatch
):
    """Notes are for scans that stop early: a finished piece is kept whole, and its notes
    would be dropped unread (writing them all made a first scan 1.25x slower). A fast scan
    keeps its pieces a run to a file; a run held ``run_seconds`` is written as it stands,
    and a piece in flight that long has its notes written."""
    from feeslab.datasets import uncles
    from feeslab.fetch.cache import Cache

    written = []
    put = Cache.put_chunks

    def spy(self, dataset, items, **options):
        items = list(items)
        written.extend(dataset for _ in items)
        return put(self, dataset, items, **options)

    monkeypatch.setattr(Cache, "put_chunks", spy)
    def chunks(**changes):  # the scan's declaration, changed for this test
        monkeypatch.setattr(uncles, "CHUNKS", dataclasses.replace(uncles.CHUNKS, **changes))

    chunks(run_seconds=600.0)  # fast, even on a loaded machine
    with _lab(devnet, tmp_path / "fast") as lab:
        lab.uncles(2 * PIECE, 4 * PIECE)
    assert written == [uncles.DATASET]  # both pieces in one file, no notes
    written.clear()
    chunks(run_seconds=0.0)  # every run is old enough at once
    with _lab(devnet, tmp_path / "slow") as lab:
        scan = lab.uncles(2 * PIECE, 4 * PIECE)
    assert written.count(uncles.DATASET) == 2 and written.count(uncles.NOTES) >= 1
    assert len(scan.blocks) == 2 * PIECE


def test_runs_of_pieces_are_read_back_by_any_scan_they_cover(devnet, truth, tmp_path,
                                                             monkeypatch):
    """Finished pieces are cached a run to a file (at most ``run`` pieces): a later scan of any
    range takes each piece it needs from whichever file holds it, reading that file once;
    a file of one piece (as earlier versions wrote, as a slow scan writes) serves too."""
    from feeslab.datasets import uncles
    from feeslab.fetch.cache import Cache

    read = []
    get_chunks = Cache.get_chunks

    def spy(self, dataset, keys):
        keys = list(keys)
        read.extend(keys if dataset == uncles.DATASET else [])
        return get_chunks(self, dataset, keys)

    monkeypatch.setattr(Cache, "get_chunks", spy)
    def chunks(**changes):  # the scan's declaration, changed for this test
        monkeypatch.setattr(uncles, "CHUNKS", dataclasses.replace(uncles.CHUNKS, **changes))

    chunks(run=2, run_seconds=600.0)  # runs end by their length, even on a loaded machine
    with _lab(devnet, tmp_path) as lab:
        lab.uncles(PIECE + 7, 6 * PIECE)  # an edge piece, then 5 whole ones: runs of 2, 2, 2
        cache = lab.node.cache
        assert cache.chunk_keys(uncles.DATASET, 0, 10**9) == [
            f"{PIECE + 7}-{3 * PIECE}", f"{3 * PIECE}-{5 * PIECE}", f"{5 * PIECE}-{6 * PIECE}"]
        chunks(run=1)
        lab.uncles(6 * PIECE, 8 * PIECE)  # one file a piece, as earlier versions wrote
    chunks(run=25)
    with _lab(devnet, tmp_path) as again:
        read.clear()
        start, stop = 2 * PIECE + 11, 8 * PIECE - 5  # inside runs, across their edges
        scan = again.uncles(start, stop)
        assert COUNTS not in _calls(again)  # every piece from the cache
        assert sorted(read) == sorted([f"{PIECE + 7}-{3 * PIECE}", f"{3 * PIECE}-{5 * PIECE}",
                                       f"{5 * PIECE}-{6 * PIECE}", f"{6 * PIECE}-{7 * PIECE}",
                                       f"{7 * PIECE}-{8 * PIECE}"])  # each file once
        wider = again.uncles(PIECE, 9 * PIECE)  # past both ends: only those blocks asked for
        asked = _calls(again)[COUNTS]
    assert _found(scan) == _expected(truth, start, stop)
    assert scan.blocks["block_number"].tolist() == list(range(start, stop))
    assert _found(wider) == _expected(truth, PIECE, 9 * PIECE)
    # of the first piece only the blocks the edge file lacks, then the last piece
    assert asked == 7 + PIECE


def test_covering_takes_for_each_piece_the_run_reaching_furthest():
    from feeslab.engine.keep import covering, run_of

    assert [run_of(k) for k in ("0-4000", "8000-4000", "a-b", "12", "-5", "4000-4000")] == [
        (0, 4000), None, None, None, None, None]
    runs = [(0, 8), (4, 12), (4, 6), (14, 20)]
    wanted = [(0, 4), (4, 8), (8, 12), (12, 14), (14, 16), (16, 20), (20, 24)]
    assert covering(runs, wanted) == {(0, 4): (0, 8), (4, 8): (4, 12), (8, 12): (4, 12),
                                       (14, 16): (14, 20), (16, 20): (14, 20)}
    assert covering([], wanted) == {}


def test_notes_keep_each_counts_block_number_around_counts_already_known(devnet, tmp_path):
    """A batch's numbers skip the counts known before the scan (the plan's sample): a note
    is made of its own numbers, not of the range from its first to its last."""
    from feeslab.datasets import uncles
    from feeslab.engine import keep
    from feeslab.fetch.transport import RpcResult

    def batch(numbers, counts):
        sent = uncles.count_calls(numbers)
        return sent, [RpcResult(c, result=n) for c, n in zip(sent, counts, strict=True)]

    with _lab(devnet, tmp_path) as lab:
        source = lab.data_source
        source.prepare()
        keeper = keep.Keeper(uncles.CHUNKS, source, [(0, PIECE), (PIECE, 2 * PIECE)], None)
        keeper.asking((0, PIECE))
        keeper.on_batch(*batch([10, 12, 13], [1, 0, 2]))  # 11 was known: not asked
        keeper.on_batch(*batch([20, 21, 22], [0, 2, 1]))
        sent, results = batch([30, 31], [1, 0])
        keeper.on_batch(sent, [results[0], RpcResult(sent[1], result="0xzz")])  # the scan raises
        assert keep.noted(uncles.CHUNKS, source, 0, PIECE) == {}  # held while the piece runs
        keeper.stop_early()  # the scan stopped early: what is held is written
        keeper.close()
        noted = keep.noted(uncles.CHUNKS, source, 0, PIECE)
    assert noted == {10: 1, 12: 0, 13: 2, 20: 0, 21: 2, 22: 1}
