"""Concurrency at most two layers (issue 27, item 6): the caller's thread and one event-loop
thread that every blocking client of the process shares; an idle ``Lab`` holds at most three
threads of its own, and closing it leaves none.

Real HTTP on loopback against a ``feeslab serve`` in another process (``feeslab.devnet.spawn``):
every thread this test process gains is the Lab's, none is the server's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

import feeslab
from feeslab.devnet import spawn
from feeslab.fetch.ipfs import IDLE_SECONDS
from feeslab.fetch.loop import LoopThread
from feeslab.fetch.transport import HTTPTransport, RpcCall

MOST_IDLE_THREADS = 3  # the bound for an idle Lab connected to a running service


@pytest.fixture(scope="module")
def served() -> Iterator[object]:
    with spawn(seed=7, daily_credits=10**15, credits_per_second=10**12) as devnet:
        yield devnet


def _new_threads(before: set[int]) -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.ident not in before)


def _settled(before: set[int], at_most: int, within: float,
             only: frozenset[str] | None = None) -> list[str]:  # fmt: skip
    """The threads gained since ``before``, once at most ``at_most`` of them (all named in
    ``only``, if given) or ``within`` s passed: threads let go finish in their own time."""
    deadline = time.monotonic() + within

    def settled(names: list[str]) -> bool:
        return len(names) <= at_most and (only is None or set(names) <= only)

    while not settled(names := _new_threads(before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return names


def test_an_idle_lab_holds_at_most_three_threads_and_closing_it_leaves_none(served, tmp_path):
    before = {t.ident for t in threading.enumerate()}
    lab = feeslab.connect(url=served.url, api_key=served.api_key,
                          api_key_secret=served.api_key_secret, cache=tmp_path,
                          progress=False)  # fmt: skip
    try:
        # every surface used once: the node (a streamed scan and a plain fetch), the Gas API
        # and the storage API, whose clients each used to hold a thread or a pool of their own
        assert len(lab.uncles(100_000, 104_000).blocks) == 4_000
        assert len(lab.blocks(100_000, 100_050)) == 50
        assert len(lab.base_fee_history()) > 0
        assert lab.ipfs is not None
        assert lab.ipfs.cat(lab.ipfs.add(b"idle threads\n")[0].cid) == b"idle threads\n"
        busy = _new_threads(before)
        assert busy, "the Lab did its work on no thread of its own"
        # the storage client lets its pool go after IDLE_SECONDS without I/O: then at most the
        # one loop every blocking client shares is left (none new if an earlier client of this
        # process still holds it)
        idle = _settled(before, 1, within=IDLE_SECONDS + 10, only=frozenset({"feeslab-loop"}))
        assert len(idle) <= MOST_IDLE_THREADS, idle
        assert set(idle) <= {"feeslab-loop"}, idle
    finally:
        lab.close()
    assert _settled(before, 0, within=5) == []


def _loops() -> int:
    return sum(t.name == "feeslab-loop" for t in threading.enumerate())


def test_clients_share_one_loop_thread_stopped_by_the_last_to_close(served):
    url = f"{served.url}/v3/{served.api_key}"
    before = {t.ident for t in threading.enumerate()}
    held = LoopThread._shared  # started by a client still open (one an earlier test left)
    first, second = HTTPTransport(url=url), HTTPTransport(url=url)
    try:
        assert first._loop is second._loop
        assert held is None or first._loop is held
        asked = [RpcCall("eth_blockNumber", [])]
        assert first.handle_request(asked)[0].ok and second.handle_request(asked)[0].ok
        # one thread, whatever sends
        assert _new_threads(before) == ([] if held else ["feeslab-loop"]) and _loops() == 1
        first.close()
        assert not second._loop.closed  # still in use
        assert second.handle_request(asked)[0].ok
    finally:
        first.close()
        second.close()
    assert second._loop.closed is (held is None)  # the last to close stops it
    assert _settled(before, 0, within=5) == []
    third = HTTPTransport(url=url)
    try:
        assert not third._loop.closed
        assert (third._loop is second._loop) is (held is not None)  # else a new one
    finally:
        third.close()


def test_a_scans_parts_in_flight_need_no_thread_of_their_own(served):
    """``NodeClient.submit`` starts a part on the loop and returns: no pool of part threads."""
    url = f"{served.url}/v3/{served.api_key}"
    before = {t.ident for t in threading.enumerate()}
    transport = HTTPTransport(url=url, max_batch=10)
    try:
        calls = [RpcCall("eth_getBlockByNumber", [hex(n), False]) for n in range(1_000, 1_100)]
        futures = [transport.submit(calls[i : i + 25]) for i in range(0, 100, 25)]
        assert not futures[0].cancel()  # running from the start: its batches land
        answers = [r for f in futures for r in f.result(timeout=60)]
        assert [int(r.unwrap()["number"], 16) for r in answers] == list(range(1_000, 1_100))
        assert set(_new_threads(before)) <= {"feeslab-loop"} and _loops() == 1
    finally:
        transport.close()
    assert _settled(before, 0, within=5) == []


def test_a_sync_only_httpx_transport_is_called_off_the_loop(served):
    """A sync-only transport given for fault injection may block: each request goes to a
    worker thread, so one that blocks stalls only its own batch, never the shared loop."""
    seen: list[str] = []

    class Watched(httpx.HTTPTransport):  # real HTTP, sync only
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(threading.current_thread().name)
            return super().handle_request(request)

    url = f"{served.url}/v3/{served.api_key}"
    with HTTPTransport(url=url, transport=Watched(), max_batch=1, max_concurrency=2) as t:
        answers = t.handle_request([RpcCall("eth_chainId", []), RpcCall("eth_blockNumber", [])])
    assert answers[0].unwrap() == "0x1" and int(answers[1].unwrap(), 16) > 0
    assert len(seen) == 2 and "feeslab-loop" not in seen
