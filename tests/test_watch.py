"""``feeslab.watch``: a live watch against real devnets over loopback HTTP and WebSocket,
growing a block every 0.1 s: every block once after the devnet drops every WebSocket twice,
the canonical chain after reorgs (over the WebSocket and by polling), the frame's columns
equal to ``lab.blocks``'s and ``lab.fee_history``'s, 402 stopping it, the drop route's auth."""

from __future__ import annotations

import random
import time

import httpx
import numpy as np
import pandas as pd
import pytest

import feeslab
from feeslab.devnet.server import start
from feeslab.errors import ConfigError, CreditsExhausted
from feeslab.fetch.retry import Retry
from feeslab.frames.base_fees import FEE_HISTORY_DTYPES
from feeslab.frames.blocks import BLOCK_DTYPES
from feeslab.watch import WATCH_DTYPES, watch

BLOCK_TIME = 0.1  # [s]
FAST_RETRY = Retry(backoff=0.05, backoff_cap=0.5, rng=random.Random(3))
LIMITS = {"daily_credits": 10**15, "credits_per_second": 10**12}


@pytest.fixture(scope="module", autouse=True)
def _history():
    """Seed 7's mainnet history generated once (the suite's cache starts empty): the devnets
    of this module then share it, and start at once."""
    from feeslab.devnet.chain import build_chains

    build_chains(7).by_id[1].warm()


def _connect(devnet, **options) -> feeslab.Lab:
    return feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                           api_key_secret=devnet.api_key_secret, cache=False, progress=False,
                           **options)  # fmt: skip


def _canonical_hashes(devnet, numbers) -> list[str]:
    url = f"{devnet.url}/v3/{devnet.api_key}"
    body = [{"jsonrpc": "2.0", "id": i, "method": "eth_getBlockByNumber",
             "params": [hex(int(n)), False]} for i, n in enumerate(numbers)]  # fmt: skip
    answers = sorted(httpx.post(url, json=body, timeout=30).json(), key=lambda a: a["id"])
    return [a["result"]["hash"] for a in answers]


def _freeze(devnet) -> int:
    """Stop the mainnet chain growing (its clock stands still); its head then."""
    chain = devnet.chains.by_id[1]
    inner = getattr(chain, "_chain", chain)
    now = inner._clock()
    inner._clock = lambda: now
    return chain.head()


def _settle(w, head: int, timeout: float = 20.0) -> None:
    """Wait until the watch holds ``head`` as its last row and it is canonical."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = w.frame
        if len(frame) and frame["block_number"].iloc[-1] == head:
            return
        time.sleep(0.05)
    raise AssertionError(f"the watch did not reach block {head}: {w!r}")


def _gapless(frame: pd.DataFrame) -> None:
    numbers = frame["block_number"].tolist()
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), "a gap or a repeat"


def test_two_drops_of_every_websocket_leave_every_block_once_and_columns_as_lab_blocks():
    with start(seed=7, block_time=BLOCK_TIME, **LIMITS) as devnet, _connect(devnet) as lab:
        with watch(lab, blocks=1_000, retry=FAST_RETRY) as w:
            assert w.mode == "websocket"
            assert w.wait_for(10, timeout=30)
            dropped = [devnet.drop_websockets()]
            assert w.wait_for(w.added + 10, timeout=30)
            dropped.append(devnet.drop_websockets())
            assert w.wait_for(w.added + 10, timeout=30)
            head = _freeze(devnet)
            _settle(w, head)
            frame = w.frame
            drops, error = w.drops, w.error
        assert error is None
        assert dropped == [1, 1] and drops == 2  # the one subscription's socket, twice
        _gapless(frame)
        assert frame["block_number"].is_unique and len(frame) >= 30
        assert not frame["reorged"].any()
        first, last = int(frame["block_number"].iloc[0]), int(frame["block_number"].iloc[-1])
        assert frame["hash"].tolist() == _canonical_hashes(devnet, range(first, last + 1))
        # the same values, names and dtypes as lab.blocks and lab.fee_history
        blocks = lab.blocks(first, last + 1)
        fees = lab.fee_history(first, last + 1)
        for column in set(BLOCK_DTYPES) & set(WATCH_DTYPES):
            assert str(frame[column].dtype) == str(blocks[column].dtype), column
            pd.testing.assert_series_equal(frame[column], blocks[column], check_names=False)
        shared = [c for c in fees.columns if c in frame.columns and c != "base_fee_wei"]
        assert "base_fee_per_blob_gas_wei" in shared and "reward_p50_wei" in shared
        fees = fees[fees["block_number"] <= last].reset_index(drop=True)
        for column in shared:
            pd.testing.assert_series_equal(frame[column], fees[column], check_names=False)
        assert set(FEE_HISTORY_DTYPES) - set(frame.columns) == {"blob_gas_used_ratio"}
        assert (frame["gas_target"] * 2 == frame["gas_limit"]).all()
        assert np.allclose(frame["gas_target_ratio"], frame["gas_used"] / frame["gas_target"])
        assert (frame["blob_count"] * 2**17 == frame["blob_gas_used"]).all()
        assert frame.attrs["chain_id"] == 1 and frame.attrs["source"] == "devnet"
        assert frame.attrs["chain_spec"] == blocks.attrs["chain_spec"]


@pytest.mark.parametrize("websocket", [None, False], ids=["newHeads", "polling"])
def test_with_reorgs_the_frame_is_the_canonical_chain_and_marks_the_replaced_blocks(websocket):
    with (
        start(seed=7, block_time=BLOCK_TIME, reorgs=0.3, **LIMITS) as devnet,
        _connect(devnet) as lab,
        watch(lab, blocks=1_000, websocket=websocket, poll=0.05, retry=FAST_RETRY) as w,
    ):
        chain = devnet.chains.by_id[1]
        assert w.mode == ("websocket" if websocket is None else "polling")
        deadline = time.monotonic() + 60
        while len(w.reorgs) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        head = _freeze(devnet)
        _settle(w, head)
        frame, reorgs = w.frame, list(w.reorgs)
        first = int(frame["block_number"].iloc[0])
        canonical = _canonical_hashes(devnet, range(first, head + 1))
        originals = {r.block_number: "0x" + chain._chain.block(r.block_number).hash.hex()
                     for r in reorgs}  # fmt: skip
    assert len(chain.events) >= 3 and len(reorgs) >= 3, (chain.events, reorgs)
    _gapless(frame)
    assert frame["hash"].tolist() == canonical
    # each block's parent is the row before: one branch throughout
    assert frame["parent_hash"].iloc[1:].tolist() == frame["hash"].iloc[:-1].tolist()
    marked = frame.loc[frame["reorged"], "block_number"].tolist()
    assert marked and set(marked) <= {r.block_number for r in reorgs}
    for r in reorgs:  # each replaced a block the watch had held with another hash
        assert r.old_hash != r.new_hash
    # the first replaced block of each reorg is no longer the seeded history's
    assert any(originals[n] != canonical[n - first] for n in marked)


def test_a_402_stops_the_watch_with_credits_exhausted():
    with (
        start(seed=7, block_time=BLOCK_TIME, daily_credits=3_000) as devnet,
        _connect(devnet) as lab,
        watch(lab, retry=FAST_RETRY) as w,
    ):
        assert w.wait(30), "the watch did not stop"
        assert isinstance(w.error, CreditsExhausted)
        assert not w.running and "CreditsExhausted" in w.status()


def test_the_drop_route_needs_the_key_and_secret_and_drops_the_sockets():
    with start(seed=7, block_time=BLOCK_TIME, **LIMITS) as devnet, _connect(devnet) as lab:
        route = f"{devnet.url}/devnet/websockets/drop"
        assert httpx.post(route).status_code == 401
        with watch(lab, retry=FAST_RETRY) as w:
            assert w.wait_for(3, timeout=30)
            answer = httpx.post(route, auth=(devnet.api_key, devnet.api_key_secret))
            assert answer.json() == {"dropped": 1}
            assert w.wait_for(w.added + 3, timeout=30) and w.drops == 1


@pytest.mark.parametrize("how", ["newHeads", "polling", "url", "lab-websocket"])
def test_a_new_watch_holds_the_last_blocks_before_any_new_head(devnet, how):
    # the session devnet's heads stand still: every row held came from the prefill
    websocket = {"newHeads": None, "polling": False, "lab-websocket": None,
                 "url": f"{devnet.ws_url}/ws/v3/{devnet.api_key}"}[how]  # fmt: skip
    with _connect(devnet, websocket=how == "lab-websocket") as lab:
        head = int(httpx.post(f"{devnet.url}/v3/{devnet.api_key}", timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}).json()["result"],
            16)  # fmt: skip
        spent = lab.credits.spent
        with watch(lab, blocks=300, websocket=websocket, poll=0.05) as w:
            frame = w.frame  # as watch() returns
            added = w.added
            time.sleep(0.3)  # a poll or a subscription later, still the same rows
            again = w.frame
        assert w.mode == ("polling" if how == "polling" else "websocket")
        assert not w.running and (w._ws is lab.node.transport) == (how == "lab-websocket")
        blocks = lab.blocks(head - 299, head + 1)
    assert added == 0 and w.error is None
    assert frame["block_number"].tolist() == list(range(head - 299, head + 1))
    assert frame["hash"].tolist() == _canonical_hashes(devnet, range(head - 299, head + 1))
    pd.testing.assert_frame_equal(again, frame)
    for column in set(BLOCK_DTYPES) & set(WATCH_DTYPES):
        pd.testing.assert_series_equal(frame[column], blocks[column], check_names=False)
    assert frame["reward_p50_wei"].notna().all() and not frame["reorged"].any()
    assert {c: str(frame[c].dtype) for c in WATCH_DTYPES} == WATCH_DTYPES
    # paid like any fetch: the head, 300 headers and one fee history at 80 credits each
    assert w.credits_spent >= 302 * 80 and lab.credits.spent - spent >= 302 * 80


def test_the_watch_never_imports_the_lab_even_for_type_checking():
    # lab.watch imports the watch; the other way round (a TYPE_CHECKING import included)
    # would make a cycle: the watch names what it reads of a Lab (Watched) instead
    import grimp

    graph = grimp.build_graph("feeslab", exclude_type_checking_imports=False)
    assert graph.find_shortest_chain(importer="feeslab.lab", imported="feeslab.watch")
    for module in ("feeslab.watch", "feeslab.fetch.heads", "feeslab.frames.watch",
                   "feeslab.plots.watch"):  # fmt: skip
        assert graph.find_shortest_chain(importer=module, imported="feeslab.lab") is None, module


def test_options_out_of_range_are_config_errors(devnet):
    with _connect(devnet) as lab:
        for options in ({"blocks": 0}, {"columns": ["no_such_column"]}, {"columns": "base_fee"},
                        {"percentiles": [50, 10]}, {"poll": 0}, {"stop_after": 0}):  # fmt: skip
            with pytest.raises(ConfigError):
                watch(lab, **options)


def test_the_window_is_bounded_and_stop_after_ends_it():
    with start(seed=7, block_time=0.02, **LIMITS) as devnet, _connect(devnet) as lab:
        w = watch(lab, blocks=5, stop_after=40, retry=FAST_RETRY)
        assert w.wait(60) and w.error is None
        frame = w.frame
        assert len(frame) == 5 and w.added == 40
        _gapless(frame)
        assert not w.running
        w.stop()


def test_the_figure_redraws_in_place_with_new_blocks():
    # the widget the notebook shows: one Image whose PNG is replaced, never a growing output
    from feeslab.watch import _View

    with (
        start(seed=7, block_time=BLOCK_TIME, **LIMITS) as live,
        _connect(live) as lab,
        watch(lab, redraw=0.05, columns=["base_fee_gwei", "reward_p50_wei"]) as w,
    ):
        view = _View(w)
        seen = {bytes(view.image.value)}
        deadline = time.monotonic() + 30
        while len(seen) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
            seen.add(bytes(view.image.value))
        assert len(seen) >= 6, f"{len(seen)} distinct figures"
        assert all(png.startswith(b"\x89PNG") for png in seen)
        assert len(view.widget.children) == 2 and view.draws >= 5
        assert "credits spent" in view.status.value and "devnet" not in view.status.value
    view.close()


def test_the_cli_prints_a_line_per_block_and_writes_the_frame(tmp_path):
    import io

    from feeslab.cli import run_watch
    from feeslab.frames.io import frame_from_bytes

    out = tmp_path / "watch.parquet"
    stream = io.StringIO()
    with start(seed=7, block_time=BLOCK_TIME, **LIMITS) as devnet, _connect(devnet) as lab:
        status = run_watch(lab, stop_after=8, out=str(out), stream=stream)
    assert status == 0
    lines = stream.getvalue().splitlines()
    assert lines[0].split()[:2] == ["block", "base[gwei]"]
    rows = [line for line in lines[1:] if line.split()[0].isdigit()]
    assert len(rows) >= 8
    numbers = [int(line.split()[0]) for line in rows]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    frame = frame_from_bytes(out.read_bytes())
    assert frame["block_number"].tolist()[-len(numbers):] == numbers
    assert frame.attrs["source"] == "devnet" and str(frame["base_fee_wei"].dtype) == "Int64"


def test_the_display_carries_a_still_of_the_figure_for_a_static_page(monkeypatch):
    # one output: the widget where a kernel runs it, and a PNG and the status line that a
    # static page (nbconvert's HTML) shows instead of a blank space
    import base64

    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda obj, raw=False: shown.append((obj, raw)))  # fmt: skip
    with (
        start(seed=7, **LIMITS) as fixed,
        _connect(fixed) as lab,
        watch(lab, blocks=16, columns=["base_fee_gwei"], title="Figure 2. Sixteen blocks") as w,
    ):
        w._ipython_display_()
        still = w.still()
    [(bundle, raw)] = shown
    assert raw and bundle["text/plain"].startswith("<Watch running, websocket: 16 of 16 rows")
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(b"\x89PNG") and still.startswith(b"\x89PNG")
    head = fixed.chains.by_id[1].head()
    assert f"blocks {head - 15:,}-{head:,}" in bundle["text/plain"]


def test_the_still_is_titled_and_names_its_source():
    from feeslab.watch import _Chart

    columns = ["base_fee_gwei", "blob_count"]
    with (
        start(seed=7, **LIMITS) as fixed,
        _connect(fixed) as lab,
        watch(lab, blocks=8, columns=columns, title="Figure 3. Eight blocks") as w,
    ):
        chart = _Chart(w.columns)
        chart.png(w.frame, w.title)
        head = fixed.chains.by_id[1].head()
    assert chart.figure.get_suptitle() == "Figure 3. Eight blocks"
    source = f"Source: devnet (simulated), blocks {head - 7:,}-{head:,}"
    assert chart.figure.get_supxlabel() == source
