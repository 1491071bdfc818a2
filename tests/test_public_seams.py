"""The public seams the cluster code uses instead of other modules' private names: an era1
file's header bytes and end hashes, an era1 source's coverage and tags, the uncle scan's
plan with its sample, a node client's answers known in advance, and a transport's endpoint,
limits and governor."""

from __future__ import annotations

from pathlib import Path

import pytest
import rlp
from eth_hash.auto import keccak

import feeslab
from feeslab.datasets import uncles as uncles_dataset
from feeslab.errors import ConfigError
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import CreditGovernor, HTTPTransport, RpcCall
from feeslab.protocol.costs import method_cost
from feeslab.sources.era1 import Era1Error, Era1File, Era1Source

REAL = Path(__file__).parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"
GENESIS = "d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"


def test_an_era1_files_headers_and_end_hashes():
    with Era1File(REAL) as handle:
        headers = handle.headers()  # the checked walk
        for i in (0, 1, 4_000, handle.count - 1):
            assert handle.header_bytes(i) == headers.raw[i]
        assert rlp.decode(handle.header_bytes(1))[0] == bytes.fromhex(GENESIS)  # block 1's parent
        assert handle.first_parent_hash() == bytes(32)  # the genesis block has none
        assert handle.last_hash() == keccak(headers.raw[-1]) == headers.hashes[-1]
        for index in (-1, handle.count):
            with pytest.raises(IndexError, match="8,192 headers"):
                handle.header_bytes(index)


def test_an_era1_sources_coverage_and_tags():
    source = Era1Source(REAL)
    assert source.covering(100, 200) == [(REAL, 100, 200)]
    with pytest.raises(Era1Error, match="no era1 file covers block 8,192"):
        source.covering(8_000, 9_000)
    frame = source.tag(source.blocks(0, 3))
    assert frame.attrs == {"chain_id": 1, "chain_spec": "mainnet", "source": "era1",
                           "network": "mainnet"}  # fmt: skip


def test_the_uncle_scans_plan_and_its_sample(devnet):
    def connect():
        return feeslab.connect(url=devnet.url, api_key=devnet.api_key, cache=False,
                               progress=False)  # fmt: skip

    with connect() as lab, connect() as alone:
        plan, sampled = uncles_dataset.plan_and_sample(lab.data_source, 1_000, 3_000, sample=50)
        assert plan == uncles_dataset.plan(alone.data_source, 1_000, 3_000, sample=50)
        assert len(sampled) == 50 and set(sampled) <= set(range(1_000, 3_000))
        # the counts are the blocks' own
        scan = alone.uncles(1_000, 3_000, progress=False).blocks.set_index("block_number")
        assert {n: int(scan.loc[n, "uncle_count"]) for n in sampled} == sampled


def test_a_node_clients_known_answers_are_not_sent(devnet):
    ledger = CreditLedger()
    transport = HTTPTransport(url=f"{devnet.url}/v3/{devnet.api_key}",
                              on_response=ledger.on_response)  # fmt: skip
    node = NodeClient(transport, ledger=ledger, cache=False, progress=False, head=123_456,
                      known={("eth_chainId", "[]"): "0x2a"})  # fmt: skip
    try:
        assert node.head() == 123_456 and transport.attempts == 0  # neither asked
        answers = node.run([RpcCall("eth_chainId", []), RpcCall("eth_blockNumber", []),
                            RpcCall("eth_chainId", [])], progress=False)  # fmt: skip
        # the known answer given twice in place; the other one sent, in one request
        assert answers[0].unwrap() == answers[2].unwrap() == "0x2a"
        assert int(answers[1].unwrap(), 16) > 0
        assert transport.attempts == 1 and set(ledger.by_method) == {"eth_blockNumber"}
    finally:
        node.close()
        transport.close()


class _Booking(CreditGovernor):
    """A governor that notes what it is asked to book [credits]."""

    def __init__(self, credits_per_second: float) -> None:
        super().__init__(credits_per_second)
        self.booked: list[float] = []

    def reserve(self, cost: float) -> float:
        self.booked.append(cost)
        return super().reserve(cost)


def test_a_transports_endpoint_limits_and_governor(devnet):
    url = f"{devnet.url}/v3/{devnet.api_key}"
    shared = _Booking(1e9)  # another governor paces it: its bookings go there
    with pytest.raises(ConfigError, match="not both"):
        HTTPTransport(url=url, credits_per_second=1e9, governor=shared)
    transport = HTTPTransport(url=url, max_batch=7, max_concurrency=3, governor=shared)
    try:
        assert transport.url == url and devnet.api_key not in transport.where()
        assert (transport.limits.max_batch, transport.limits.max_concurrency) == (7, 3)
        assert transport.governor is shared
        transport.handle_request([RpcCall("eth_blockNumber", [])] * 2)
        assert shared.booked == [2 * method_cost("eth_blockNumber")]
    finally:
        transport.close()


def test_lab_stays_a_thin_shell_over_the_registry():
    # issue 27: Lab holds no dataset logic (its methods are made from REGISTRY), under 250 lines
    lab = Path(feeslab.__file__).parent / "lab.py"
    assert len(lab.read_text().splitlines()) < 250
    text = lab.read_text()
    assert all(f'"{name}"' not in text for name in feeslab.datasets.REGISTRY)
