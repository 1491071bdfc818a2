"""A job of partitions run in this process (``feeslab.jobs.InProcess``, ``lab.<dataset>(...,
out=)``): the one process's frame, one Parquet file a partition, a rerun that reads the files
and sends nothing, and a cluster run over the same folder that finds every partition done."""

from __future__ import annotations

import pandas as pd

import feeslab
from feeslab import jobs

START, STOP, SIZE = 30_000, 31_200, 400


def _lab(devnet) -> feeslab.Lab:
    return feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                           api_key_secret=devnet.api_key_secret, cache=False, progress=False)


def test_in_process_partitions_are_the_frame_and_a_rerun_reads_them(devnet, tmp_path):
    with _lab(devnet) as lab:
        expected = lab.blocks(START, STOP)
        first = jobs.run("blocks", lab.data_source, START, STOP, out=tmp_path, progress=False,
                         partition_blocks=SIZE, executor=jobs.InProcess(lab.data_source))
        spent = lab.credits.spent
        again = jobs.run("blocks", lab.data_source, START, STOP, out=tmp_path, progress=False,
                         partition_blocks=SIZE, executor=jobs.InProcess(lab.data_source))
        assert lab.credits.spent == spent  # every partition read from its file
    pd.testing.assert_frame_equal(first.value, expected)
    pd.testing.assert_frame_equal(again.value, expected)
    assert len(first.report.computed) == 3 and first.report.skipped == ()
    assert again.report.computed == () and len(again.report.skipped) == 3
    assert sorted(p.name for p in tmp_path.glob("part-*.parquet")) == [
        "part-000030000-000030399.parquet", "part-000030400-000030799.parquet",
        "part-000030800-000031199.parquet"]


def test_lab_out_runs_the_job_here_and_a_cluster_resumes_from_its_files(devnet, tmp_path):
    from cluster_support import two_workers

    with _lab(devnet) as lab:
        here = lab.blocks(START, STOP, out=tmp_path)  # no client: in this process
        with two_workers() as client:
            there = feeslab.cluster.run("blocks", lab.data_source, START, STOP, client=client,
                                        out=tmp_path, progress=False)  # fmt: skip
    pd.testing.assert_frame_equal(there.value, here)
    assert there.report.computed == () and len(there.report.skipped) == 1
    assert there.report.credits == 0
