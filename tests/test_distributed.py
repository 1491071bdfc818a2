"""Uncle scans on a real dask LocalCluster of two worker processes (feeslab.cluster).

Against one process: the same frames row for row (era1 files the devnet exported, and a node
scan of a devnet that limits credits per second), the same credits within 1 %, few 429s
under the cluster's one bucket; a worker killed mid-job; a whole job killed and resumed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import dask.dataframe as dd
import pandas as pd
import pyarrow.parquet as pq
import pytest
from cluster_support import uncached_lab, uncles_with_a_worker_killed

import feeslab
from feeslab import cluster, datasets
from feeslab.cli import main
from feeslab.cluster import _governor
from feeslab.datasets import uncles as uncles_dataset
from feeslab.devnet import start
from feeslab.devnet.era1 import export_era1
from feeslab.errors import BudgetExceeded, ConfigError, CreditsExhausted
from feeslab.frames.io import frame_from_bytes
from feeslab.sources.era1 import Era1Error, Era1Source

pytestmark = pytest.mark.slow

RATE = 20_000  # the devnet's credits per second: paced scans take seconds, not minutes
START, STOP = 1_000, 2_000  # blocks of the node scans (about 94,000 credits)
PARTITION = 200
REAL = Path(__file__).parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"


@pytest.fixture(scope="module")
def limited():
    """A devnet holding clients to RATE credits per second (429 beyond it)."""
    with start(seed=7, credits_per_second=RATE) as handle:
        yield handle


_lab = uncached_lab


@pytest.fixture(scope="module")
def single(limited):
    """The node scan in one process, and the credits it spent."""
    with _lab(limited) as lab:
        scan = lab.uncles(START, STOP, progress=False)
        return scan, lab.credits.spent


def _same(scan, reference):
    pd.testing.assert_frame_equal(scan.uncles, reference.uncles, check_exact=True)
    pd.testing.assert_frame_equal(scan.blocks, reference.blocks, check_exact=True)
    assert scan.uncles.attrs == reference.uncles.attrs
    assert scan.blocks.attrs == reference.blocks.attrs


def test_era1_scan_matches_one_process_and_writes_a_parquet_dataset(client, exported, tmp_path,
                                                                     capsys):  # fmt: skip
    source = Era1Source(exported[0].parent)
    reference = datasets.get("uncles", source, 100, 16_000, progress=False)
    assert len(reference.uncles) > 100  # a scan with something to compare
    out = tmp_path / "job"
    scan = cluster.run("uncles", source, 100, 16_000, client=client, out=out).value
    _same(scan, reference)
    # one file per era1 file, each written by a worker process, not this one
    assert scan.report.computed == ("part-000000100-000008191.parquet",
                                    "part-000008192-000015999.parquet")  # fmt: skip
    assert "dask dashboard: http://" in capsys.readouterr().err
    manifest = json.loads((out / cluster.MANIFEST).read_text())
    assert [p["written"] for p in manifest["partitions"]] == [True, True]
    assert sum(p["rows"] for p in manifest["partitions"]) == len(reference.uncles)
    # a dataset pyarrow, pandas and dask.dataframe read (skipping the manifest, temporary names)
    assert pq.read_table(out).num_rows == len(reference.uncles)
    assert len(dd.read_parquet(out).compute()) == len(reference.uncles)
    assert pd.read_parquet(out)["block_number"].tolist() == reference.uncles[
        "block_number"].tolist()  # fmt: skip
    assert not list(out.glob(".*"))  # no temporary file left
    # through the Lab, with its default directory (in the cache): the same frames again
    lab = feeslab.connect(era1=exported[0].parent)
    _same(lab.uncles(100, 16_000, client=client, progress=False), reference)


def test_a_rerun_skips_written_partitions_and_another_job_is_refused(client, exported, tmp_path):
    source = Era1Source(exported[0].parent)
    out = tmp_path / "job"
    first = cluster.run("uncles", source, 0, 16_384, client=client, out=out, progress=False).value
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("part-*")}
    again = cluster.run("uncles", source, 0, 16_384, client=client, out=out, progress=False).value
    assert again.report.computed == () and set(again.report.skipped) == set(stamps)
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("part-*")} == stamps
    _same(again, first)
    with pytest.raises(ConfigError, match="another job"):
        cluster.run("uncles", source, 0, 8_000, client=client, out=out, progress=False)


def test_era1_files_of_two_chains_are_refused_as_one_process_refuses_them(client, tmp_path):
    first = export_era1(tmp_path / "a", epochs=1, seed=7)
    second = export_era1(tmp_path / "b", start_epoch=1, epochs=1, seed=8)  # another chain
    source = Era1Source([*first, *second])
    with pytest.raises(Era1Error, match="parentHash") as alone:
        datasets.get("uncles", source, 0, 16_384, progress=False)
    with pytest.raises(Era1Error, match="parentHash") as spread:
        cluster.run("uncles", source, 0, 16_384, client=client, out=tmp_path / "job",
                    progress=False)
    assert spread.value.block == alone.value.block == 8_192


def test_one_plan_for_the_whole_job_before_anything_runs(limited, tmp_path):
    with _lab(limited) as lab, _lab(limited) as alone:
        job = cluster.plan("uncles", lab.data_source, START, STOP, out=tmp_path / "j",
                           partition_blocks=PARTITION)  # fmt: skip
        sampled = job.context
        assert job.plan == uncles_dataset.plan(alone.data_source, START, STOP)  # one process's
    assert [(p.start, p.stop) for p in job.partitions] == [
        (n, n + PARTITION) for n in range(START, STOP, PARTITION)]  # fmt: skip
    assert set(sampled) <= set(range(START, STOP)) and len(sampled) >= uncles_dataset.SAMPLE
    # the partitions' shares: the plan less its sample, bought while planning
    shares = sum(p.credits for p in job.partitions)
    assert abs(shares - (job.plan.total - 80 * len(sampled))) <= len(job.partitions)
    assert not (tmp_path / "j").exists()  # nothing written, no worker asked


def test_node_scan_matches_one_process_within_the_devnets_rate(client, limited, single):
    reference, spent = single
    with _lab(limited) as lab:
        began = time.monotonic()
        scan = cluster.run("uncles", lab.data_source, START, STOP, client=client,
                              out=None, progress=False, partition_blocks=PARTITION).value
        seconds = time.monotonic() - began
        total = lab.credits.spent
    _same(scan, reference)
    assert len(scan.report.computed) == (STOP - START) // PARTITION
    assert abs(total - spent) <= spent / 100  # the same calls bought, within 1 %
    assert scan.report.credits > 0.8 * spent  # ... and bought by the workers
    # one bucket for the cluster: under the devnet's rate, with hardly a 429
    assert scan.report.rate_limited <= 3, scan.report.keys
    assert scan.report.credits / seconds <= RATE


def test_two_api_keys_each_with_its_own_bucket_and_ledger(client, limited, single, tmp_path):
    """A second key: here a second devnet of the same seed (the same chain, its own key and
    its own 20,000 credits/s), as two keys on one plan each are to the service."""
    reference, spent = single
    with start(seed=7, credits_per_second=RATE) as other, _lab(limited) as lab, \
            _lab(other) as second:  # fmt: skip
        second.data_source.head(), second.data_source.chain_id(), second.source  # asked once
        before = second.credits.spent
        scan = cluster.run("uncles", lab.data_source, START, STOP, client=client, keys=[second],
                              out=tmp_path / "job", progress=False,
                              partition_blocks=PARTITION).value  # fmt: skip
        ledgers = lab.credits.spent, second.credits.spent - before
    _same(scan, reference)
    first_key, second_key = scan.report.keys
    # the partitions dealt in turn: each key bought about half, booked in its own ledger
    assert first_key["spent"] > 0.25 * spent and second_key["spent"] > 0.25 * spent
    assert ledgers[1] == second_key["spent"]
    assert abs(sum(ledgers) - spent) <= spent / 100  # and no more than one key would
    assert first_key["refusals"] + second_key["refusals"] <= 3, scan.report.keys
    with _lab(limited) as lab, lab.on_network("sepolia") as sepolia:
        for wrong, why in ((sepolia, "same chain"), (feeslab.connect(era1=REAL), "on a node")):
            with pytest.raises(ConfigError, match=why):
                cluster.run("uncles", lab.data_source, START, STOP, client=client, progress=False,
                               keys=[wrong])


def test_budget_refused_before_anything_runs(client, limited, tmp_path):
    with _lab(limited) as lab, pytest.raises(BudgetExceeded):
        cluster.run("uncles", lab.data_source, START, STOP, client=client, out=tmp_path / "j",
                       budget=50_000, progress=False, partition_blocks=PARTITION)
    assert not list((tmp_path / "j").glob("part-*"))


def _book(bucket: str, cost: int) -> str:
    """On a worker: book ``cost`` credits in the cluster's bucket ``bucket``."""
    from distributed import get_worker

    from feeslab.cluster._governor import ClusterGovernor

    try:
        ClusterGovernor(get_worker(), bucket, math.inf, 2).reserve(cost)
    except BudgetExceeded as exc:
        return f"refused at {exc.spent}"
    return "booked"


def test_the_budget_holds_across_workers(client):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import it
    _governor.install(client)
    _governor.scheduler_call(client, "open", name="test-budget", budget=1_000)
    workers = list(client.nthreads())
    answers = client.gather([client.submit(_book, "test-budget", 600, workers=[w], pure=False)
                             for w in workers])  # one booking on each worker process
    assert sorted(answers) == ["booked", "refused at 600"]
    report = _governor.scheduler_call(client, "close", name="test-budget")
    assert report["spent"] == 0  # booked, never charged: nothing was sent


def test_a_402_on_a_worker_is_raised_on_the_driver_as_one_process_raises_it(client, tmp_path):
    """The daily balance runs out mid-job: ``CreditsExhausted`` with its attributes, the
    partitions written so far kept for a rerun."""
    with start(seed=7, credits_per_second=RATE, daily_credits=60_000) as poor, _lab(
            poor) as lab, pytest.raises(CreditsExhausted) as raised:  # fmt: skip
        cluster.run("uncles", lab.data_source, START, STOP, client=client, out=tmp_path / "job",
                       progress=False, partition_blocks=PARTITION)  # fmt: skip
    assert "daily credit balance is exhausted (HTTP 402)" in str(raised.value)
    assert isinstance(raised.value.credits_spent, int)  # its attributes came along
    manifest = json.loads((tmp_path / "job" / cluster.MANIFEST).read_text())
    written = [p for p in manifest["partitions"] if p["written"]]
    assert {p["file"] for p in written} == {p.name for p in (tmp_path / "job").glob("part-*")}


def _worker_pids(client):
    return client.run(os.getpid)


def test_a_worker_killed_mid_job_and_the_result_is_the_same(client, limited, single, tmp_path):
    reference, _ = single
    out = tmp_path / "job"
    pids = _worker_pids(client)
    scan, _ = uncles_with_a_worker_killed(client, limited, out, START, STOP,
                                          partition_blocks=PARTITION, timeout=90)
    _same(scan, reference)
    assert len(list(out.glob("part-*.parquet"))) == (STOP - START) // PARTITION
    client.wait_for_workers(2, timeout=30)
    assert set(_worker_pids(client).values()) != set(pids.values())  # one was replaced


def test_a_killed_job_resumes_without_paying_again(client, limited, single, tmp_path):
    reference, spent = single
    output = tmp_path / "uncles.parquet"
    parts = tmp_path / "uncles.parts"
    command = [sys.executable, "-m", "feeslab.cli", "fetch", "uncles", "--url", limited.url,
               "--api-key", limited.api_key, "--api-key-secret", limited.api_key_secret,
               "--start", str(START), "--stop", str(STOP), "--no-cache", "--quiet",
               "--scheduler", client.scheduler.address, "--partition-blocks", str(PARTITION),
               "-o", str(output)]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(list(parts.glob("part-*.parquet"))) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()  # the whole job: its driver, mid-job
    proc.communicate()
    assert not output.exists()
    time.sleep(1.0)  # tasks of the dead driver still running finish their partition
    before = {p.name: p.stat().st_mtime_ns for p in parts.glob("part-*.parquet")}
    assert 2 <= len(before) < (STOP - START) // PARTITION
    with _lab(limited) as lab:
        scan = cluster.run("uncles", lab.data_source, START, STOP, client=client, out=parts,
                              progress=False, partition_blocks=PARTITION).value  # fmt: skip
    _same(scan, reference)
    assert set(scan.report.skipped) >= set(before)
    assert {n: (parts / n).stat().st_mtime_ns for n in before} == before  # not rewritten
    planned = {p["file"]: p["planned_credits"]
               for p in json.loads((parts / cluster.MANIFEST).read_text())["partitions"]}
    left = sum(planned[n] for n in scan.report.computed)
    assert abs(scan.report.credits - left) <= 0.1 * left + 2_000  # only what was missing
    assert scan.report.credits < 0.9 * spent


def test_cli_runs_on_a_local_cluster(exported, tmp_path):
    output = tmp_path / "u.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "feeslab.cli", "fetch", "uncles", "--era1",
         str(exported[0].parent), "--start", "0", "--stop", "16384", "--workers", "1",
         "-o", str(output)], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "dask dashboard: http://" in proc.stderr
    reference = datasets.get("uncles", Era1Source(exported[0].parent), 0, 16_384, progress=False)
    pd.testing.assert_frame_equal(frame_from_bytes(output.read_bytes()), reference.uncles)
    assert len(list((tmp_path / "u.parts").glob("part-*.parquet"))) == 2


def test_cli_refuses_a_cluster_for_the_gas_apis_base_fees(tmp_path, capsys):
    status = main(["fetch", "base-fees", "--workers", "2", "-o", str(tmp_path / "b.parquet")])
    assert status == 2 and "base-fees runs in one process" in capsys.readouterr().err
    assert not (tmp_path / "b.parquet").exists()


def test_dask_is_loaded_only_by_a_cluster_job():
    code = ("import sys, feeslab, feeslab.cluster, feeslab.cli\n"
            "lab = feeslab.connect(era1=sys.argv[1])\n"
            "lab.uncles(0, 100, progress=False)\n"
            "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, str(REAL)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
