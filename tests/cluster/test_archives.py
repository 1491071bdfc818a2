"""Jobs over the post-merge archive files on a real dask LocalCluster of two worker processes:
one partition per file, each worker opening the file's source by its format, the frame equal to
one process's; across the devnet's merge from era1 + Ere files with no node."""

from __future__ import annotations

import pandas as pd
import pytest

import feeslab
from feeslab import cluster, datasets
from feeslab.devnet.era1 import export_era1
from feeslab.devnet.ere import export_ere
from feeslab.sources.combined import CombinedSource
from feeslab.sources.era1 import Era1Source
from feeslab.sources.ere import EreSource

pytestmark = pytest.mark.slow

SEED = 7
MERGE = 165_000


@pytest.fixture(scope="module")
def ere_dir(tmp_path_factory):
    """Epochs 19 and 20 of chain 1 as Ere files (blocks 155,648 .. 172,031)."""
    out = tmp_path_factory.mktemp("ere")
    export_ere(out, start_epoch=19, epochs=2, seed=SEED)
    return out


@pytest.fixture(scope="module")
def era1_dir(tmp_path_factory):
    """Epoch 20 of chain 1 as an era1 file (blocks 163,840 .. 164,999)."""
    out = tmp_path_factory.mktemp("era1")
    export_era1(out, start_epoch=20, seed=SEED)
    return out


def _same(frame, reference):
    pd.testing.assert_frame_equal(frame, reference, check_exact=True)
    assert frame.attrs == reference.attrs


def test_blocks_of_ere_files_run_one_partition_per_file(client, ere_dir, tmp_path):
    source = EreSource(ere_dir)
    reference = datasets.get("blocks", source, 160_000, 167_000, progress=False)
    result = cluster.run("blocks", source, 160_000, 167_000, client=client, out=tmp_path / "job",
                         progress=False)  # fmt: skip
    _same(result.frame, reference)
    assert result.report.computed == ("part-000160000-000163839.parquet",
                                      "part-000163840-000166999.parquet")  # a file each
    assert result.plan.total == 0 and result.report.credits == 0


def test_fee_history_of_ere_files_matches_one_process(client, ere_dir, tmp_path):
    source = EreSource(ere_dir)
    reference = datasets.get("fee_history", source, 163_000, 167_000, percentiles=(25, 75),
                             progress=False)  # fmt: skip
    result = cluster.run("fee_history", source, 163_000, 167_000, percentiles=(25, 75),
                         client=client, out=tmp_path / "job", progress=False)  # fmt: skip
    _same(result.frame, reference)
    assert len(result.report.computed) == 2


def test_blocks_across_the_merge_from_era1_and_ere_on_the_cluster(client, era1_dir, ere_dir,
                                                                  tmp_path):  # fmt: skip
    source = CombinedSource([Era1Source(era1_dir), EreSource(ere_dir)])
    with feeslab.connect(era1=era1_dir, ere=ere_dir, progress=False) as lab:
        reference = lab.blocks(163_000, 167_000)
        on_cluster = lab.blocks(163_000, 167_000, client=client, out=tmp_path / "lab")
    result = cluster.run("blocks", source, 163_000, 167_000, client=client, out=tmp_path / "job",
                         progress=False)  # fmt: skip
    assert result.report.computed == ("part-000163000-000163839.parquet",  # Ere: epoch 19
                                      "part-000163840-000164999.parquet",  # era1: epoch 20
                                      "part-000165000-000166999.parquet")  # Ere: epoch 20
    assert reference.attrs["sources"] == {"ere": [163_000, 166_999], "era1": [163_840, 164_999]}
    _same(result.frame, reference)
    _same(on_cluster, reference)
