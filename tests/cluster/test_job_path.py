"""The job path's own costs: a task hands back the rows it wrote (the driver reads no file it
need not), and a worker a dask nanny started allocates as a plain process while a partition
runs (dask's MALLOC_TRIM_THRESHOLD_ made every large buffer a fresh mapping)."""

from __future__ import annotations

import ctypes
import json
from dataclasses import replace

import pandas as pd

from feeslab import cluster
from feeslab.cluster._heap import _glibc, _nanny_worker, process_heap
from feeslab.cluster.executor import Dask
from feeslab.frames.partitions import read_partition
from feeslab.jobs import DatasetJob, Task, run_partition
from feeslab.sources.era1 import Era1Source

MIB = 2**20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]  # fmt: skip


def _mapped() -> int:
    """Bytes glibc holds in chunks of their own mapping (``mallinfo2().hblkhd``)."""
    call = _glibc().mallinfo2
    call.restype = _Mallinfo2
    return call().hblkhd


def _maps(size: int) -> bool:
    """Whether a buffer of ``size`` bytes gets a mapping of its own (glibc's mmap threshold
    below it, and the heap's free top too small for it)."""
    before = _mapped()
    buffer = bytearray(size)
    grew = _mapped() - before
    del buffer
    return grew >= size


def _probe(tune: bool) -> dict:
    """On a worker: whether a 1 MiB buffer is mapped before and inside a partition's
    ``process_heap``, and a 16 MiB one after (more than the heap kept of the MiB)."""
    import os

    if _glibc() is None:
        return {"glibc": False}
    outside = _maps(MIB)
    with process_heap(tune):
        inside = _maps(MIB)
    return {"glibc": True, "env": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
            "nanny": _nanny_worker(), "outside": outside, "inside": inside,
            "after": _maps(16 * MIB)}  # fmt: skip


def test_a_nanny_worker_allocates_as_a_plain_process_while_a_partition_runs(client):
    """Dask's nanny fixes glibc's mmap threshold at 128 KiB; while a partition runs the
    worker's thresholds are a plain process's (a MiB from the heap), then dask's again."""
    tuned = client.submit(_probe, True, pure=False).result()
    if not tuned["glibc"]:  # another C library: nothing is changed, nothing to see
        assert _glibc() is None
        return
    assert tuned["env"] == "65536"  # the nanny's setting, as the workers started
    assert tuned == {"glibc": True, "env": "65536", "nanny": True, "outside": True,
                     "inside": False, "after": True}  # fmt: skip
    untouched = client.submit(_probe, False, pure=False).result()
    assert untouched["inside"] is True  # tune_malloc=False: dask's thresholds kept


def test_the_driver_keeps_its_own_allocator(client):
    """The driver is no nanny's worker, though a LocalCluster's nanny set
    MALLOC_TRIM_THRESHOLD_ in its environment after it started (its glibc never read it):
    its allocator is left alone."""
    import os

    assert os.environ.get("MALLOC_TRIM_THRESHOLD_") == "65536"
    assert not _nanny_worker()


def test_a_task_hands_back_the_rows_it_wrote(exported, tmp_path):
    """The rows a task computed come back with its answer, the same as its file holds, so
    the driver reads no file a task of this run wrote; the answer times the whole task."""
    source = Era1Source(exported)
    job = cluster.plan("uncles", source, 0, 16_384, out=tmp_path)
    tmp_path.mkdir(exist_ok=True)
    spec, _ = DatasetJob.of("uncles", 0, 16_384)
    task = Task(spec, str(tmp_path), "", 1, run="run-1")
    part = job.partitions[1]
    answer = run_partition(task, part, None)
    frame = answer.pop("frame")
    assert len(frame) == answer["rows"] > 0
    assert frame.attrs == {}
    pd.testing.assert_frame_equal(frame, read_partition(tmp_path / part.name), check_exact=True)
    assert answer["cpu_seconds"] > 0 and answer["seconds"] > 0
    assert answer["first_parent"].startswith("0x") and answer["last_hash"].startswith("0x")
    json.dumps(answer)  # what the manifest notes is plain data


def test_an_era1_job_books_nothing_on_the_scheduler(client, exported, tmp_path):
    """Era1 files cost no credits: the job opens no bucket (no scheduler round trips) and
    its report has no API key's ledger; the result is the one-process scan's."""
    from feeslab import datasets

    source = Era1Source(exported)
    result = cluster.run("uncles", source, 0, 16_384, client=client, out=tmp_path / "job",
                         progress=False)  # fmt: skip
    assert result.report.keys == () and result.report.credits == 0
    assert len(result.report.computed) == 2

    def buckets(dask_scheduler) -> list[str]:
        plugin = dask_scheduler.plugins.get("feeslab-credits")
        return [] if plugin is None else list(plugin.buckets)

    assert not [b for b in client.run_on_scheduler(buckets) if "uncles" in b]
    one = datasets.get("uncles", source, 0, 16_384, progress=False)
    pd.testing.assert_frame_equal(result.value.uncles, one.uncles, check_exact=True)


def test_a_read_notes_the_hash_links_at_the_files_ends(exported):
    """What a partition hands the driver to check across files comes from its read: the first
    block's parentHash and the last block's hash, only at the ends the read reached."""
    from feeslab.sources.era1 import Era1File

    source = Era1Source(exported[1])
    source.uncles(8_192, 16_384, progress=False)
    with Era1File(exported[1]) as handle:
        whole = {"first_parent": "0x" + handle.first_parent_hash().hex(),
                 "last_hash": "0x" + handle.last_hash().hex()}  # fmt: skip
    assert source.ends == {exported[1]: whole}
    source.uncles(8_200, 9_000, progress=False)  # neither end: nothing to hand on
    assert source.ends[exported[1]] == {}
    source.uncles(8_192, 9_000, progress=False)
    assert source.ends[exported[1]] == {"first_parent": whole["first_parent"]}
    both = Era1Source(exported)
    both.uncles(0, 16_384, progress=False)
    assert both.ends[exported[0]]["last_hash"] == whole["first_parent"]  # one chain


def test_an_era1_partition_written_by_a_killed_attempt_keeps_its_links(exported, tmp_path):
    """A retried task that finds its own run's file gives the links its file holds (no read
    of the era1 file again), so the driver still checks the files' ends."""
    source = Era1Source(exported)
    job = cluster.plan("uncles", source, 0, 16_384, out=tmp_path)
    spec, _ = DatasetJob.of("uncles", 0, 16_384)
    task = Task(spec, str(tmp_path), "", 1, run="run-1")
    part = job.partitions[1]
    first = run_partition(task, part, None)
    again = run_partition(task, part, None)
    assert again == {"file": part.name, "rows": first["rows"], "credits": 0,
                     "first_parent": first["first_parent"], "last_hash": first["last_hash"],
                     "earlier_attempt": True}  # fmt: skip


def test_a_workers_writes_land_behind_its_tasks_and_the_driver_settles_them(
        client, exported, tmp_path):  # fmt: skip
    """Write-behind: a task hands its file to its worker's writer thread and answers; settling
    the run waits for the file (whole, under its name) and gives the write's CPU. A file no
    worker wrote (its worker gone) is written by the driver from the rows it holds."""
    from feeslab.jobs import _settle

    source = Era1Source(exported)
    job = cluster.plan("uncles", source, 0, 16_384, out=tmp_path)
    spec, _ = DatasetJob.of("uncles", 0, 16_384)
    task = Task(spec, str(tmp_path), "", 1, run="run-w", write_behind=True)
    part = job.partitions[0]

    def on_a_worker() -> tuple[dict, dict]:
        from feeslab.jobs import _WRITES  # the worker's own (not pickled from here)

        answer = run_partition(task, part, None)
        answer.pop("frame")
        return answer, _WRITES.settle("run-w")

    answer, settled = client.submit(on_a_worker, pure=False).result()
    assert settled["cpu"][part.name] > 0
    assert read_partition(tmp_path / part.name).shape[0] == answer["rows"] > 0
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left
    # the second partition's rows, as a task handed them back, its file never written
    other = job.partitions[1]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rows = run_partition(replace(task, write_behind=False, out=str(elsewhere)), other, None)
    frame = rows.pop("frame")
    written = {other.name: {**rows, "cpu_seconds": 0.5}}
    _settle(Dask(client), job, "run-w", written, {other.name: frame})
    pd.testing.assert_frame_equal(read_partition(tmp_path / other.name), frame,
                                  check_exact=True)  # fmt: skip
    attrs = pd.read_parquet(tmp_path / other.name).attrs
    links = {"first_parent": rows["first_parent"], "last_hash": rows["last_hash"]}
    assert attrs["feeslab_run"] == "run-w" and attrs["feeslab_links"] == links
    assert written[other.name]["cpu_seconds"] == 0.5  # no worker wrote it: nothing added
