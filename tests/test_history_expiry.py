"""History expiry (EIP-4444): a devnet pruned as geth's ``--history.chain postmerge`` answers
4444 as geth does, a plan or fetch below its cutoff raises ``HistoryPruned`` before any of its
calls is sent, and era1 files beside the node give the frame the unpruned devnet gives.

Real HTTP (and one WebSocket) on loopback against real devnets: the session's (seed 7, all
history) and one pruned like geth, with the same seed and so the same chain.
"""

from __future__ import annotations

import httpx
import pandas as pd
import pytest

import feeslab
from feeslab.datasets import REGISTRY, registry
from feeslab.devnet.era1 import export_era1
from feeslab.devnet.server import start
from feeslab.errors import ConfigError, HistoryPruned, RpcError
from feeslab.fetch.retry import status_error
from feeslab.sources.rpc import NodeSpec, open_node
from tests.test_connect_options import REAL

SEED = 7  # the session devnet's (tests/conftest.py): the same chains, generated once
CUTOFF = 164_999  # geth's prune point on mainnet is its terminal PoW block: the merge - 1
MERGE = 165_000  # the devnet's chain 1: its first proof-of-stake block
SCAN = (164_000, 166_000)  # a pre-merge scan reaching past the merge
SET_UP = {"eth_blockNumber", "eth_chainId", "web3_clientVersion"}  # what any fetch asks first
GETH_4444 = {"code": 4444, "message": "pruned history unavailable"}


@pytest.fixture(scope="module")
def pruned():
    """A devnet serving history as geth run with ``--history.chain postmerge``."""
    with start(seed=SEED, daily_credits=10**15, credits_per_second=10**12) as handle:
        handle.devnet.set_history("postmerge")
        yield handle


@pytest.fixture(scope="module")
def era1_dir(tmp_path_factory):
    """The devnet's last pre-merge era1 file (blocks 163,840-164,999), as its export writes."""
    out = tmp_path_factory.mktemp("era1")
    export_era1(out, start_epoch=20, seed=SEED)
    return out


def _call(handle, method, *params):
    reply = httpx.post(f"{handle.url}/v3/{handle.api_key}", timeout=120,
                       json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
    return reply.json()


def _lab(handle, **options):
    return feeslab.connect(url=handle.url, api_key=handle.api_key,
                           api_key_secret=handle.api_key_secret, cache=False, progress=False,
                           **options)  # fmt: skip


# -- the devnet answers as geth does -------------------------------------------------------------


BELOW = hex(CUTOFF - 1)


@pytest.mark.parametrize(("method", "params"), [
    ("eth_getBlockByNumber", [BELOW, False]),
    ("eth_getBlockByNumber", ["0x0", True]),  # geth truncates the genesis body too
    ("eth_getUncleByBlockNumberAndIndex", [BELOW, "0x0"]),
    ("eth_getUncleCountByBlockNumber", [BELOW]),
    ("eth_getBlockReceipts", [BELOW]),
    ("eth_feeHistory", ["0x4", BELOW, [10, 90]]),  # rewards read bodies and receipts
])  # fmt: skip
def test_bodies_uncles_receipts_below_the_cutoff_answer_geths_4444(pruned, method, params):
    assert _call(pruned, method, *params) == {"jsonrpc": "2.0", "id": 1, "error": GETH_4444}


def test_by_hash_too_and_headers_state_and_the_cutoff_block_stay_served(pruned, devnet):
    old = _call(devnet, "eth_getBlockByNumber", BELOW, False)["result"]
    assert _call(pruned, "eth_getBlockByHash", old["hash"], False)["error"] == GETH_4444
    assert _call(pruned, "eth_getUncleCountByBlockHash", old["hash"])["error"] == GETH_4444
    assert _call(pruned, "eth_getBlockReceipts", old["hash"])["error"] == GETH_4444
    # headers: base fees and gas without rewards come from them, as geth's feeHistory reads
    fees = _call(pruned, "eth_feeHistory", "0x4", BELOW, [])["result"]
    assert fees == _call(devnet, "eth_feeHistory", "0x4", BELOW, [])["result"]
    # geth's "earliest" is the cutoff block, served whole
    earliest = _call(pruned, "eth_getBlockByNumber", "earliest", False)["result"]
    assert int(earliest["number"], 16) == CUTOFF
    assert earliest == _call(devnet, "eth_getBlockByNumber", hex(CUTOFF), False)["result"]
    assert _call(devnet, "eth_getBlockByNumber", "earliest", False)["result"]["number"] == "0x0"
    info = httpx.get(f"{pruned.url}/devnet/info", auth=(pruned.api_key, pruned.api_key_secret),
                     timeout=60).json()  # fmt: skip
    assert info["history"] == "postmerge"
    cutoffs = {c["network"]: c["history_cutoff"] for c in info["chains"]}
    # Sepolia's prune point is its first proof-of-stake block; chains without a merge keep all
    assert cutoffs == {"mainnet": CUTOFF, "sepolia": 15_000, "polygon-mainnet": 0,
                       "base-mainnet": 0}  # fmt: skip


# geth's RPCMarshalHeader (internal/ethapi/api.go at 02b73d4): a block's fields without these
BLOCK_ONLY = {"size", "totalDifficulty", "transactions", "uncles", "withdrawals"}


@pytest.mark.parametrize("number", [0, 1, CUTOFF - 1, CUTOFF, MERGE, 175_000, 210_000])
def test_headers_are_geths_on_a_pruned_node_as_on_a_whole_one(pruned, devnet, number):
    block = _call(devnet, "eth_getBlockByNumber", hex(number), False)["result"]
    header = {key: value for key, value in block.items() if key not in BLOCK_ONLY}
    for node in (pruned, devnet):  # pruned: the body is gone below the cutoff, not the header
        assert _call(node, "eth_getHeaderByNumber", hex(number))["result"] == header
        assert _call(node, "eth_getHeaderByHash", block["hash"])["result"] == header
    assert ("baseFeePerGas" in header) == (number >= 120_000)  # the devnet's London


def test_header_tags_unknown_blocks_and_bad_params_answer_as_geth(pruned, devnet):
    # "earliest": the cutoff's header on the pruned node (geth's HeaderByNumber), genesis else
    assert _call(pruned, "eth_getHeaderByNumber", "earliest")["result"]["number"] == hex(CUTOFF)
    assert _call(devnet, "eth_getHeaderByNumber", "earliest")["result"]["number"] == "0x0"
    latest = _call(pruned, "eth_getHeaderByNumber", "latest")["result"]
    assert latest == _call(devnet, "eth_getHeaderByNumber", hex(int(latest["number"], 16)))[
        "result"]  # fmt: skip
    # the pending header: its number and fields, with hash, nonce and miner nulled
    pending = _call(pruned, "eth_getHeaderByNumber", "pending")["result"]
    assert int(pending["number"], 16) == int(latest["number"], 16) + 1
    assert pending["hash"] is pending["nonce"] is pending["miner"] is None
    assert pending["parentHash"] == latest["hash"]
    # none beyond the head, none for an unknown hash; geth's parameter errors
    assert _call(pruned, "eth_getHeaderByNumber", hex(10**9))["result"] is None
    assert _call(pruned, "eth_getHeaderByHash", "0x" + "ab" * 32)["result"] is None
    assert _call(pruned, "eth_getHeaderByNumber")["error"]["message"] == (
        "missing value for required argument 0")
    assert _call(pruned, "eth_getHeaderByHash", "0x12")["error"]["code"] == -32602


@pytest.mark.parametrize("websocket", [False, True])
def test_a_4444_is_history_pruned_over_http_batches_and_websocket(pruned, websocket):
    with _lab(pruned, websocket=websocket) as lab:
        with pytest.raises(HistoryPruned) as caught:
            lab.data_source.results([_block_call(CUTOFF - 5)])
        error = caught.value
        assert (error.code, error.message) == (4444, "pruned history unavailable")
        assert (error.first, error.stop, error.earliest) == (CUTOFF - 5, CUTOFF - 4, None)
        assert error.method == "eth_getBlockByNumber" and "era1=" in str(error)
        assert isinstance(error, RpcError)


def _block_call(number):
    from feeslab.fetch.transport import RpcCall

    return RpcCall("eth_getBlockByNumber", [hex(number), False])


def test_reths_form_names_the_block_and_the_earliest_served():
    said = "pruned history unavailable: requested 5, earliest available 100"
    error = RpcError.from_object({"code": 4444, "message": said})
    assert isinstance(error, HistoryPruned)
    assert (error.first, error.stop, error.earliest) == (5, 6, 100)
    assert "earliest block whose body it serves is 100" in str(error)
    refused = status_error(4444, said, label="WebSocket")  # a refused message, mapped once
    assert isinstance(refused, HistoryPruned) and refused.earliest == 100


# -- the plan refuses before any credit is spent on the range (the "done when") ----------


@pytest.mark.parametrize("how", ["plan", "fetch"])
def test_a_premerge_uncle_scan_raises_before_spending_credits(pruned, how):
    with _lab(pruned) as lab:
        with pytest.raises(HistoryPruned) as caught:
            (lab.plan_uncles if how == "plan" else lab.uncles)(*SCAN)
        error = caught.value
        assert (error.first, error.stop, error.earliest) == (*SCAN, CUTOFF)
        assert "blocks 164,000 .. 165,999" in str(error) and "era1=DIR" in str(error)
        # only set-up calls went (the devnet's version says its cutoff): no uncle count, no
        # uncle, no probe; at most the set-up's 165 credits
        assert set(lab.credits.by_method) <= SET_UP
        assert "web3_clientVersion" in lab.credits.by_method
        assert lab.credits.spent <= 80 + 5 + 80


@pytest.mark.parametrize("dataset", ["blocks", "transactions"])
def test_blocks_and_transactions_below_the_cutoff_are_refused_too(pruned, dataset):
    with _lab(pruned) as lab:
        with pytest.raises(HistoryPruned, match=r"blocks 164,000 \.\. 165,999"):
            getattr(lab, dataset)(*SCAN)
        assert set(lab.credits.by_method) <= SET_UP


def test_ranges_from_the_cutoff_on_and_datasets_of_headers_run_as_before(pruned, devnet):
    with _lab(pruned) as lab, _lab(devnet) as whole:
        scan, reference = lab.uncles(CUTOFF, MERGE + 100), whole.uncles(CUTOFF, MERGE + 100)
        pd.testing.assert_frame_equal(scan.blocks, reference.blocks)
        # fee history without rewards reads headers, which stay served
        pd.testing.assert_frame_equal(lab.fee_history(150_000, 150_100, percentiles=()),
                                      whole.fee_history(150_000, 150_100, percentiles=()))
        # its rewards read bodies and receipts (fee_history declares so): refused before any
        # eth_feeHistory is sent, naming the range; its plan, percentiles left to their
        # default, is refused the same way
        sent = dict(lab.credits.by_method)
        with pytest.raises(HistoryPruned, match=r"blocks 150,000 \.\. 150,099 \(fee_history\)"):
            lab.fee_history(150_000, 150_100)
        with pytest.raises(HistoryPruned, match=r"blocks 150,000 \.\. 150,099"):
            lab.plan_fee_history(150_000, 150_100)
        assert lab.credits.by_method.get("eth_feeHistory") == sent.get("eth_feeHistory")
        assert lab.plan_fee_history(CUTOFF, CUTOFF + 100).total > 0  # above it: planned


def test_another_node_is_asked_its_cutoff_once_and_the_plan_counts_it(pruned):
    """A node that is not known to be a devnet: one eth_getBlockByNumber("earliest") learns the
    cutoff (geth answers it with its cutoff block), priced in the plan, asked once."""
    spec = NodeSpec(url=f"{pruned.url}/v3/{pruned.api_key}", devnet=False, progress=False)
    source = open_node(spec)
    try:
        blocks = REGISTRY["blocks"]
        planned = registry.plan(blocks, source, blocks.bind(MERGE, MERGE + 10))
        probe = [line for line in planned.lines if "cutoff" in line.note]
        assert [(line.method, line.count) for line in probe] == [("eth_getBlockByNumber", 1)]
        assert source.credits.by_method["eth_getBlockByNumber"] == 80  # the probe alone
        assert source.history_cutoff() == CUTOFF
        with pytest.raises(HistoryPruned) as caught:
            registry.plan(blocks, source, blocks.bind(0, 10))
        assert caught.value.earliest == CUTOFF
        assert source.credits.by_method["eth_getBlockByNumber"] == 80  # asked once
    finally:
        source.close()


def test_the_embedded_devnet_prunes_with_connect_history(tmp_path):
    with feeslab.connect(seed=SEED, history="postmerge", cache=tmp_path, progress=False) as lab:
        assert lab.devnet.devnet.history == "postmerge"
        assert lab.data_source.history_cutoff() == CUTOFF  # known: nothing asked
        assert lab.credits.calls == 0
        with pytest.raises(HistoryPruned):
            lab.uncles(*SCAN)
        assert set(lab.credits.by_method) <= SET_UP
        # the cache's identity is not asked of the node, which refuses the genesis body
        # (4444): its genesis hash is known, so a cached fetch past the cutoff works
        assert len(lab.blocks(MERGE, MERGE + 10)) == 10
        assert lab.credits.by_method["eth_getBlockByNumber"] == 80 * 10
        with lab.on_network("sepolia") as sepolia:
            assert sepolia.data_source.history_cutoff() == 15_000


# -- era1 files beside the node -------------------------------------------------------------------


def test_the_same_scan_with_era1_beside_the_node_is_the_unpruned_devnets(pruned, devnet,
                                                                         era1_dir):  # fmt: skip
    with _lab(pruned, era1=era1_dir) as lab, _lab(devnet) as whole:
        scan, reference = lab.uncles(*SCAN), whole.uncles(*SCAN)
        assert len(reference.uncles) > 0
        pd.testing.assert_frame_equal(scan.uncles, reference.uncles)
        pd.testing.assert_frame_equal(scan.blocks, reference.blocks)
        # the node sent only what lies past the files: no call below the merge
        assert lab.credits.by_method["eth_getUncleCountByBlockNumber"] == 80 * (SCAN[1] - MERGE)
        attrs = scan.blocks.attrs
        assert attrs["sources"] == {"era1": [SCAN[0], MERGE - 1], "devnet": [MERGE, SCAN[1] - 1]}
        assert {k: attrs[k] for k in ("chain_id", "chain_spec", "source")} == reference.blocks.attrs
        assert scan.uncles.attrs["sources"]["era1"][1] <= MERGE - 1
        planned = lab.plan_uncles(*SCAN)
        assert planned.count("eth_getUncleCountByBlockNumber") <= SCAN[1] - MERGE
        # blocks too: the files' bodies below their end, the node's above
        pd.testing.assert_frame_equal(lab.blocks(*SCAN), whole.blocks(*SCAN))


def test_era1_beside_a_node_of_another_chain_is_refused(devnet):
    refused = pytest.raises(ConfigError, match="era1 files hold mainnet but the node serves "
                                               "mainnet@devnet")  # fmt: skip
    with _lab(devnet, era1=REAL) as lab, refused:  # mainnet's real files beside the devnet's
        lab.uncles(0, 100)
