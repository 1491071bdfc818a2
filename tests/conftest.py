"""Shared fixtures: one devnet for the whole session, a JSON-RPC helper, tidy matplotlib."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from feeslab.devnet import DevnetHandle, start

# The suite never reads or writes the user's cache (devnet histories, fetched answers):
# one fresh directory per run, shared with the subprocesses the tests start.
if "FEESLAB_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="feeslab-test-cache-")
    os.environ["FEESLAB_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)


class RpcCallError(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and ``data`` as sent."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


@pytest.fixture(scope="session")
def devnet() -> Iterator[DevnetHandle]:
    """A devnet with seed 7 and fixed chains.

    Its limits are far above any plan's so that tests sharing it never meet 402 or 429; tests of
    the limits start their own devnet.
    """
    with start(seed=7, daily_credits=10**15, credits_per_second=10**12) as handle:
        yield handle


@pytest.fixture
def rpc(devnet: DevnetHandle) -> Callable[..., Any]:
    """``rpc(method, *params, network="mainnet")`` -> result; raises ``RpcCallError``."""
    ids = itertools.count(1)

    def call(method: str, *params: Any, network: str = "mainnet") -> Any:
        prefix = "" if network == "mainnet" else f"/{network}"
        url = f"{devnet.url}{prefix}/v3/{devnet.api_key}"
        payload = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": list(params)}
        response = httpx.post(url, json=payload, timeout=60)
        response.raise_for_status()
        body = response.json()
        if "error" in body:
            raise RpcCallError(body["error"])
        return body["result"]

    return call


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")  # only if a test imported it
    if pyplot is not None:
        pyplot.close("all")


@pytest.fixture(autouse=True)
def _seed_randomness() -> None:
    # tests that draw random cases get the same cases every run
    import random

    import numpy as np

    random.seed(20261122)
    np.random.seed(20261122)


@pytest.fixture
def lab(devnet, tmp_path):
    """A Lab on the session devnet, with a cache of its own."""
    import feeslab

    lab = feeslab.connect(
        url=devnet.url,
        api_key=devnet.api_key,
        api_key_secret=devnet.api_key_secret,
        cache=tmp_path,
        progress=False,
    )
    yield lab
    lab.close()


@pytest.fixture(scope="module")
def truth():
    """The session devnet's chain 1, built in-process: ground truth for what it serves."""
    from feeslab.devnet.chain import build_chains

    return build_chains(7).by_id[1]


@pytest.fixture(scope="session")
def ipfs_cid() -> str:
    """Debian's ``ipfs_cid``, the independent CID implementation the UnixFS tests compare
    against: ``make test`` installs it (its ``ipfs-cid`` target), so a test without it fails."""
    found = shutil.which("ipfs_cid")
    if found is None:
        pytest.fail("no ipfs_cid on PATH: apt-get install -y ipfs-cid (make test does it)")
    return found


# -- a real dask LocalCluster (the tests of feeslab.cluster) --------------------------------


@pytest.fixture(scope="module")
def client():
    """A client of a LocalCluster of 2 worker processes, one per test module that asks."""
    from cluster_support import two_workers

    with two_workers() as c:
        yield c


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Two epochs of the devnet's chain 1 (seed 7) as era1 files."""
    from feeslab.devnet.era1 import export_era1

    return export_era1(tmp_path_factory.mktemp("era1"), epochs=2, seed=7)


@pytest.fixture(scope="module")
def devnet_batch(devnet: DevnetHandle) -> Iterator[Callable[..., list[Any]]]:
    """``devnet_batch([(method, params), ...], network=...)`` -> the session devnet's results, in
    one JSON-RPC batch over HTTP (an error answer fails the test)."""
    ids = itertools.count(1)
    client = httpx.Client(timeout=120)

    def call(calls: list[tuple[str, list[Any]]], network: str = "mainnet") -> list[Any]:
        prefix = "" if network == "mainnet" else f"/{network}"
        body = [{"jsonrpc": "2.0", "id": next(ids), "method": m, "params": p} for m, p in calls]
        answer = client.post(f"{devnet.url}{prefix}/v3/{devnet.api_key}", json=body)
        answer.raise_for_status()
        by_id = {item["id"]: item for item in answer.json()}
        out = []
        for request in body:
            item = by_id[request["id"]]
            assert "error" not in item, item
            out.append(item["result"])
        return out

    yield call
    client.close()
