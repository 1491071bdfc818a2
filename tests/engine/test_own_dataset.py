"""A dataset defined here, in this file, runs through ``Lab``, ``feeslab fetch`` (killed part
way and resumed) and a 2-worker LocalCluster with no change anywhere else, and all three give
equal frames. The first block below is the whole dataset: a plan, an extract, a transform."""

from __future__ import annotations

import numpy as np
import pandas as pd

from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset
from feeslab.engine import Chunked, check_range, fetcher, planner
from feeslab.fetch.transport import RpcCall

COLUMNS = {"block_number": "int64", "gas_used": "int64", "gas_limit": "int64", "miner": "str"}


def _extract(chunk, params):
    return [RpcCall("eth_getBlockByNumber", [hex(n), False]) for n in chunk.blocks]


def _transform(answers, chunk, params):
    heads = [answer.unwrap() for answer in answers]
    return pd.DataFrame({
        "block_number": np.array([int(h["number"], 16) for h in heads], dtype=np.int64),
        "gas_used": np.array([int(h["gasUsed"], 16) for h in heads], dtype=np.int64),
        "gas_limit": np.array([int(h["gasLimit"], 16) for h in heads], dtype=np.int64),
        "miner": pd.Series([h["miner"] for h in heads], dtype="str"),
    })


def _empty(params):
    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in COLUMNS.items()})


CHUNKS = Chunked("gas_fill", _extract, _transform, _empty, size=100, ahead=2,
                 store="tests_gas_fill/v1")


def gas_fill(start: int, stop: int) -> None:
    """Gas used, gas limit and miner of each block of ``start`` .. ``stop - 1``.

    Parameters
    ----------
    start, stop : int
        The blocks, as ``range(start, stop)``.
    """
    check_range(start, stop)


DATASETS = (Dataset("gas_fill", fetcher(gas_fill, CHUNKS), plan=planner(gas_fill, CHUNKS),
                    cli="gas-fill", options=(START, STOP), partitions=BY_RANGE,
                    summary="gas used and limit of --start .. --stop - 1"),)
# -- the dataset ends here (lines 5-52: 48 lines); the tests follow ------------------------------

import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import httpx  # noqa: E402
import pytest  # noqa: E402

import feeslab  # noqa: E402
import feeslab.cluster  # noqa: E402
from feeslab.datasets import PLUGINS, REGISTRY  # noqa: E402
from feeslab.frames.io import frame_from_bytes  # noqa: E402

HERE = Path(__file__).resolve().parent
START_BLOCK, STOP_BLOCK = 30_000, 31_200
PER_CALL = 80  # [credits] eth_getBlockByNumber


@pytest.fixture(scope="module", autouse=True)
def registered():
    """This file's dataset in the registry, and named for other processes (the CLI's, the
    workers') in FEESLAB_DATASETS with this folder on their path."""
    REGISTRY.register(*DATASETS)
    saved = {k: os.environ.get(k) for k in (PLUGINS, "PYTHONPATH")}
    os.environ[PLUGINS] = Path(__file__).stem
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), saved["PYTHONPATH"]]))
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def in_process(devnet, tmp_path_factory):
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret,
                         cache=tmp_path_factory.mktemp("cache"), progress=False) as lab:
        return lab.fetch("gas_fill", START_BLOCK, STOP_BLOCK)


def _spent(devnet) -> int:
    auth = (devnet.api_key, devnet.api_key_secret)
    return int(httpx.get(f"{devnet.url}/devnet/credits", auth=auth, timeout=30).json()["spent"])


def _cli(devnet, out: Path, cache: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "INFURA_API_KEY": devnet.api_key, "FEESLAB_CACHE_DIR": str(cache),
           "INFURA_API_KEY_SECRET": devnet.api_key_secret}
    command = [sys.executable, "-m", "feeslab.cli", "fetch", "gas-fill", "--start",
               str(START_BLOCK), "--stop", str(STOP_BLOCK), "-o", str(out), "--url", devnet.url,
               "--credits-per-second", "8000", "--quiet"]
    return subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_through_lab_the_frame_has_every_block_typed(in_process, devnet):
    assert in_process["block_number"].tolist() == list(range(START_BLOCK, STOP_BLOCK))
    assert dict(in_process.dtypes.astype(str)) == COLUMNS
    assert (in_process["gas_used"] <= in_process["gas_limit"]).all()
    assert in_process.attrs["source"] == "devnet" and in_process.attrs["chain_id"] == 1


def test_through_feeslab_fetch_killed_and_resumed_it_pays_again_only_what_was_in_flight(
        in_process, devnet, tmp_path):
    out, cache = tmp_path / "fill.parquet", tmp_path / "cache"
    whole = (STOP_BLOCK - START_BLOCK) * PER_CALL
    before = _spent(devnet)
    first = _cli(devnet, out, cache)
    deadline = time.monotonic() + 120
    while _spent(devnet) - before < whole * 0.4 and time.monotonic() < deadline:
        time.sleep(0.05)  # paced at 8,000 credits/s: about 100 blocks a second
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    time.sleep(1)  # what was sent lands (and is charged) on the devnet
    killed = _spent(devnet) - before
    assert PER_CALL * CHUNKS.size <= killed < whole, "not killed part way"
    again = _cli(devnet, out, cache)
    _, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    resumed = _spent(devnet) - before - killed
    in_flight = (CHUNKS.ahead + 1) * CHUNKS.size * PER_CALL  # and one being written
    setup = 4 * PER_CALL  # the head, the cache's identity (genesis) and the version
    assert killed + resumed - whole <= in_flight + 2 * setup
    pd.testing.assert_frame_equal(frame_from_bytes(out.read_bytes()), in_process)


def test_on_a_two_worker_cluster_the_frame_is_the_same(in_process, devnet, tmp_path):
    from cluster_support import two_workers

    with two_workers() as client, feeslab.connect(
            url=devnet.url, api_key=devnet.api_key, api_key_secret=devnet.api_key_secret,
            cache=False, progress=False) as lab:  # fmt: skip
        job = feeslab.cluster.run("gas_fill", lab.data_source, START_BLOCK, STOP_BLOCK,
                                  client=client, out=tmp_path / "job", partition_blocks=300)
    assert len(job.report.computed) == 4  # of 300 blocks, on the two workers
    pd.testing.assert_frame_equal(job.value, in_process)
