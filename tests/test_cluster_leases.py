"""The cluster's credit bookings are leases: freed when their worker leaves or they expire.

A worker books a batch's credits on the scheduler before sending it and frees them when the
answer is charged; one killed in between never charges. Unit tests drive the plugin's
handlers directly; the rest kill real worker processes of a LocalCluster, once while it holds
a booking, once in the middle of a node scan against a devnet.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sys
import time

import cloudpickle
import pandas as pd
import pytest
from cluster_support import two_workers, uncached_lab, uncles_with_a_worker_killed

from feeslab import cluster
from feeslab.cluster import _governor
from feeslab.cluster._governor import CreditsPlugin
from feeslab.devnet import start

RATE = 20_000  # the devnet's credits per second
START, STOP = 1_000, 2_000
PARTITION = 200


class _Host:
    """What a plugin needs of its scheduler to start: the handlers table."""

    def __init__(self) -> None:
        self.handlers: dict = {}


def _plugin(lease_seconds: float = 60.0):
    now = [0.0]
    plugin = CreditsPlugin(lease_seconds=lease_seconds, clock=lambda: now[0])
    host = _Host()
    asyncio.run(plugin.start(host))
    return plugin, host.handlers, now


def test_a_workers_leases_are_freed_when_it_leaves():
    plugin, handle, _ = _plugin()
    handle["feeslab_credits_open"](name="job-key0", budget=1_000)
    handle["feeslab_credits_open"](name="job-key1", group="job-key0")  # a second API key
    assert "wait" in handle["feeslab_credits_reserve"](name="job-key0", cost=400, worker="tcp://a")
    assert "wait" in handle["feeslab_credits_reserve"](name="job-key1", cost=300, worker="tcp://a")
    assert "wait" in handle["feeslab_credits_reserve"](name="job-key0", cost=200, worker="tcp://b")
    refused = handle["feeslab_credits_reserve"](name="job-key1", cost=200, worker="tcp://b")
    assert refused == {"refused": True, "spent": 900, "budget": 1_000}
    plugin.remove_worker(None, "tcp://a", stimulus_id="test")  # killed: it never charges
    report = handle["feeslab_credits_report"](name="job-key0")
    assert (report["booked"], report["released"]) == (200, 700)
    # its task, retried on b, books again and now fits the budget
    assert "wait" in handle["feeslab_credits_reserve"](name="job-key1", cost=700, worker="tcp://b")
    for cost in (200, 700):
        handle["feeslab_credits_charge"](name="job-key0", credits=cost, booked=cost, status=200,
                                         calls={"eth_getBlockByNumber": 1}, worker="tcp://b")
    report = handle["feeslab_credits_close"](name="job-key0")
    assert (report["spent"], report["booked"], report["released"]) == (900, 0, 700)


def test_a_charge_frees_only_its_own_workers_leases():
    plugin, handle, _ = _plugin()
    handle["feeslab_credits_open"](name="job", budget=None)
    handle["feeslab_credits_reserve"](name="job", cost=500, worker="tcp://a")
    handle["feeslab_credits_reserve"](name="job", cost=500, worker="tcp://b")
    plugin.remove_worker(None, "tcp://a", stimulus_id="test")
    # a late answer for a's booking (nothing of a's is left to free): b's lease stays
    handle["feeslab_credits_charge"](name="job", credits=500, booked=500, status=200,
                                     calls={}, worker="tcp://a")  # fmt: skip
    assert handle["feeslab_credits_report"](name="job")["booked"] == 500
    # an answer frees the worker's oldest leases, across several if need be
    handle["feeslab_credits_reserve"](name="job", cost=300, worker="tcp://b")
    handle["feeslab_credits_charge"](name="job", credits=600, booked=600, status=200,
                                     calls={}, worker="tcp://b")  # fmt: skip
    assert handle["feeslab_credits_report"](name="job")["booked"] == 200


def test_a_lease_nobody_answers_expires():
    """A request that got no answer (a connection error its live worker retried)."""
    _, handle, now = _plugin(lease_seconds=30.0)
    handle["feeslab_credits_open"](name="job", budget=1_000)
    handle["feeslab_credits_reserve"](name="job", cost=800, worker="tcp://a")
    now[0] = 29.0
    assert handle["feeslab_credits_reserve"](name="job", cost=800, worker="tcp://a")["refused"]
    now[0] = 30.0
    assert "wait" in handle["feeslab_credits_reserve"](name="job", cost=800, worker="tcp://a")
    report = handle["feeslab_credits_report"](name="job")
    assert (report["booked"], report["released"]) == (800, 800)


def test_lease_seconds_must_be_positive():
    with pytest.raises(ValueError, match="lease_seconds"):
        CreditsPlugin(lease_seconds=0)


# -- real worker processes ---------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    with two_workers() as c:
        cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import it
        yield c


def _hold(bucket: str, cost: int, marker: str) -> str:
    """On a worker: book ``cost`` and hang before sending (the first attempt, which the test
    kills); a retried attempt books, is answered and charges."""
    from distributed import get_worker

    from feeslab.cluster._governor import ClusterGovernor

    governor = ClusterGovernor(get_worker(), bucket, math.inf, 2)
    if not os.path.exists(marker):
        open(marker, "w").close()
        governor.reserve(cost)
        time.sleep(120)
        return "not killed"
    governor.reserve(cost)
    governor.charge(cost, cost, 200, {"eth_getBlockByNumber": 1})
    return "retried"


def _report(client, bucket):
    return _governor.scheduler_call(client, "report", name=bucket)


@pytest.mark.slow
def test_a_killed_workers_booking_returns_and_its_retry_books_again(client, tmp_path):
    _governor.install(client)
    _governor.scheduler_call(client, "open", name="test-lease", budget=1_000)
    pids = client.run(os.getpid)
    future = client.submit(_hold, "test-lease", 600, str(tmp_path / "began"), pure=False)
    deadline = time.monotonic() + 30
    while _report(client, "test-lease")["booked"] != 600:
        assert time.monotonic() < deadline, "the task never booked"
        time.sleep(0.05)
    # while the lease is held, no other booking fits the budget
    assert _governor.scheduler_call(client, "reserve", name="test-lease", cost=600)["refused"]
    holder = [w for w, keys in client.processing().items() if keys]
    assert len(holder) == 1
    os.kill(pids[holder[0]], signal.SIGKILL)
    assert future.result(timeout=60) == "retried"
    report = _governor.scheduler_call(client, "close", name="test-lease")
    assert (report["booked"], report["spent"], report["released"]) == (0, 600, 600)
    client.wait_for_workers(2, timeout=30)


@pytest.fixture(scope="module")
def limited():
    with start(seed=7, credits_per_second=RATE) as handle:
        yield handle


_lab = uncached_lab


@pytest.mark.slow
def test_a_worker_killed_mid_scan_leaves_no_booking(client, limited, tmp_path, monkeypatch):
    with _lab(limited) as lab:
        reference = lab.uncles(START, STOP, progress=False)
        spent = lab.credits.spent
    closed: list[dict] = []
    call = _governor.scheduler_call

    def keep(client, op, **options):  # the buckets' last reports, as the job closes them
        answer = call(client, op, **options)
        if op == "close":
            closed.append(answer)
        return answer

    monkeypatch.setattr(_governor, "scheduler_call", keep)
    out = tmp_path / "job"
    scan, job_spent = uncles_with_a_worker_killed(client, limited, out, START, STOP,
                                                  partition_blocks=PARTITION, timeout=120)
    pd.testing.assert_frame_equal(scan.uncles, reference.uncles, check_exact=True)
    pd.testing.assert_frame_equal(scan.blocks, reference.blocks, check_exact=True)
    report = closed[0]
    assert (len(closed), report["booked"]) == (1, 0)  # the dead worker's leases were freed
    # what the finished partitions bought, with the driver's plan, is one process's spending
    manifest = json.loads((out / cluster.MANIFEST).read_text())["partitions"]
    useful = sum(p["credits"] for p in manifest)
    driver = job_spent - scan.report.credits
    assert abs(driver + useful - spent) <= spent / 100
    # and the ledger shows the killed attempt's requests too (the service charged them), no
    # more than its partition's worth
    lost = scan.report.credits - useful
    assert 0 <= lost <= 1.1 * max(p["planned_credits"] for p in manifest)
    client.wait_for_workers(2, timeout=30)
