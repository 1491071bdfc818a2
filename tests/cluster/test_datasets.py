"""Blocks, fee history, storage and calls on a real dask LocalCluster of two worker processes.

Each against the same fetch in one process: the same frame row for row (dtypes and attrs),
the same credits within 1 % (the session devnet, which limits nothing), and a rerun that
finds every partition written and sends nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from cluster_support import uncached_lab

import feeslab
from feeslab import cluster, datasets
from feeslab.datasets import blocks as blocks_dataset
from feeslab.datasets import fee_history as fee_history_dataset
from feeslab.errors import BudgetExceeded, ConfigError
from feeslab.frames.io import frame_from_bytes
from feeslab.slots import mapping_slot
from feeslab.sources.era1 import Era1Source

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def contracts(devnet):
    info = devnet.contracts
    (chain,) = [c for c in info["chains"] if c["chain_id"] == 1]
    return {c["name"]: c for c in info["contracts"]}, info["accounts"], chain


_lab = uncached_lab


def _same(frame, reference):
    pd.testing.assert_frame_equal(frame, reference, check_exact=True)
    assert frame.attrs == reference.attrs
    assert frame.dtypes.to_dict() == reference.dtypes.to_dict()


def _one_process(devnet, fetch):
    """``fetch(lab)`` in one process, and the credits it spent."""
    with _lab(devnet) as lab:
        return fetch(lab), lab.credits.spent


def _on_cluster(devnet, run):
    """``run(source)`` on the cluster, and the credits the driver and workers spent."""
    with _lab(devnet) as lab:
        return run(lab.data_source), lab.credits.spent


def _rerun_sends_nothing(first, again, out):
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("part-*.parquet")}
    assert set(stamps) == set(first.report.computed)
    assert again.report.computed == () and set(again.report.skipped) == set(stamps)
    assert again.report.credits == 0 and again.report.calls == {} and again.report.keys == ()
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("part-*.parquet")} == stamps
    _same(again.frame, first.frame)


def _same_as_one_process(devnet, run, reference, spent, out, *, partitions, calls):
    """``run`` on the cluster gives ``reference`` in ``partitions`` files, sending ``calls``
    (per method) for the credits one process ``spent``, within 1 %; a rerun sends nothing."""
    first, total = _on_cluster(devnet, run)
    _same(first.frame, reference)
    assert len(first.report.computed) == partitions
    assert first.report.calls == calls
    assert abs(total - spent) <= spent / 100
    again, _ = _on_cluster(devnet, run)
    _rerun_sends_nothing(first, again, out)


def test_blocks_of_era1_files_match_one_process(client, exported, tmp_path):
    source = Era1Source(exported[0].parent)
    reference = datasets.get("blocks", source, 100, 16_000, progress=False)
    assert reference["uncle_hashes"].map(len).sum() > 100  # tuples in an object column
    out = tmp_path / "job"
    result = cluster.run("blocks", source, 100, 16_000, client=client, out=out, progress=False)
    _same(result.frame, reference)
    assert result.report.computed == ("part-000000100-000008191.parquet",
                                      "part-000008192-000015999.parquet")  # a file each
    assert result.plan.total == 0
    # the files hold the hashes as Parquet lists, for pandas, dask and pyarrow alike
    assert pd.read_parquet(out)["uncle_hashes"].map(len).sum() == reference[
        "uncle_hashes"].map(len).sum()  # fmt: skip
    _same(cluster.read_partitions(out), _no_attrs(reference.copy()))
    # through the Lab, in its default directory
    lab = feeslab.connect(era1=exported[0].parent)
    _same(lab.blocks(100, 16_000, client=client, progress=False), reference)


def _no_attrs(frame):
    frame.attrs = {}
    return frame


def test_fee_history_of_era1_files_matches_one_process(client, exported, tmp_path):
    source = Era1Source(exported[0].parent)
    reference = datasets.get("fee_history", source, 8_000, 16_384, percentiles=(25, 75),
                                        progress=False)  # fmt: skip
    result = cluster.run("fee_history", source, 8_000, 16_384, percentiles=(25, 75), client=client,
                                 out=tmp_path / "job", progress=False)  # fmt: skip
    _same(result.frame, reference)
    assert len(result.report.computed) == 2
    lab = feeslab.connect(era1=exported[0].parent)  # through the Lab
    _same(lab.fee_history(8_000, 16_384, percentiles=(25, 75), client=client, progress=False,
                          out=tmp_path / "lab"), reference)  # fmt: skip


def test_blocks_on_a_node_match_one_process_and_a_rerun_sends_nothing(client, devnet,
                                                                      tmp_path):  # fmt: skip
    reference, spent = _one_process(devnet, lambda lab: lab.blocks(1_000, 1_400))
    out = tmp_path / "job"

    def run(source):
        return cluster.run("blocks", source, 1_000, 1_400, client=client, out=out, progress=False,
                              partition_blocks=100)  # fmt: skip

    first, total = _on_cluster(devnet, run)
    _same(first.frame, reference)
    assert len(first.report.computed) == 4
    assert abs(total - spent) <= spent / 100  # the same calls bought, within 1 %
    assert first.report.calls == {blocks_dataset.METHOD: 400}  # ... by the workers
    again, _ = _on_cluster(devnet, run)
    _rerun_sends_nothing(first, again, out)
    manifest = json.loads((out / cluster.MANIFEST).read_text())
    assert manifest["dataset"] == "blocks"
    assert [p["planned_credits"] for p in manifest["partitions"]] == [8_000] * 4
    with _lab(devnet) as lab, pytest.raises(BudgetExceeded):  # refused before anything runs
        cluster.run("blocks", lab.data_source, 1_000, 1_400, client=client, out=tmp_path / "poor",
                       budget=31_999, progress=False)  # fmt: skip
    assert not list((tmp_path / "poor").glob("part-*"))


def test_fee_history_on_a_node_is_cut_in_whole_calls(client, devnet, tmp_path):
    reference, spent = _one_process(devnet, lambda lab: lab.fee_history(0, 150_000))
    out = tmp_path / "job"

    def run(source):
        return cluster.run("fee_history", source, 0, 150_000, client=client, out=out,
                                   progress=False, partition_blocks=40_000)  # fmt: skip

    first, total = _on_cluster(devnet, run)
    _same(first.frame, reference)
    # 40,000 blocks rounded up to 40 calls of 1,024, from the range's end down
    names = first.report.computed
    assert names[0] == "part-000000000-000027119.parquet"
    assert names[1] == "part-000027120-000068079.parquet"
    calls = len(fee_history_dataset.calls(0, 150_000))
    assert first.report.calls == {"eth_feeHistory": calls}  # the calls one process sends
    assert abs(total - spent) <= spent / 100
    again, _ = _on_cluster(devnet, run)
    _rerun_sends_nothing(first, again, out)


def test_storage_of_a_series_matches_one_process(client, devnet, contracts, tmp_path):
    found, accounts, chain = contracts
    token = found["FeeslabToken"]["address"]
    slot = mapping_slot(accounts["holders"][0], 0)
    # out of order, and a block twice: partitions cut by block number, the series' order kept
    series = [*range(chain["contracts_block"] + 600, chain["contracts_block"], -1),
              chain["contracts_block"] + 7]  # fmt: skip
    reference, spent = _one_process(devnet, lambda lab: lab.storage_series(token, slot, series))
    assert reference["word"].nunique() > 3  # a balance that moves
    out = tmp_path / "job"

    def run(source):
        return cluster.run("storage_series", source, token, slot, series, client=client, out=out,
                                      progress=False, partition_blocks=150)  # fmt: skip

    _same_as_one_process(devnet, run, reference, spent, out, partitions=4,
                         calls={"eth_getStorageAt": len(series)})  # fmt: skip
    with _lab(devnet) as lab, pytest.raises(ConfigError, match="another job"):
        cluster.run("storage_series", lab.data_source, token, slot + 1, series, client=client,
                               out=out, progress=False, partition_blocks=150)  # fmt: skip


def test_calls_of_a_series_match_one_process(client, devnet, contracts, tmp_path):
    found, accounts, chain = contracts
    token = found["FeeslabToken"]
    holder = accounts["holders"][1]
    series = range(chain["contracts_block"] + 1, chain["contracts_block"] + 500, 2)

    def fetch(lab, **options):
        return lab.call_series(token["address"], "balanceOf", [holder], series,
                               abi=token["abi"], **options)  # fmt: skip

    reference, spent = _one_process(devnet, fetch)
    assert reference["output"].dtype == object and reference["output"].nunique() > 3
    out = tmp_path / "job"

    def run(source):
        return cluster.run("call_series", source, token["address"], "balanceOf", [holder], series,
                                   abi=token["abi"], client=client, out=out, progress=False,
                                   partition_blocks=100)  # fmt: skip

    _same_as_one_process(devnet, run, reference, spent, out, partitions=3,
                         calls={"eth_call": len(series)})  # fmt: skip


def test_reverts_are_rows_on_the_cluster_as_in_one_process(client, devnet, contracts,
                                                           tmp_path):  # fmt: skip
    found, _, chain = contracts
    reverter = found["Reverter"]
    deployed = chain["contracts_block"]
    series = range(deployed - 20, deployed + 20)  # no code before, a panic after

    with _lab(devnet) as lab:
        reference = lab.call_series(reverter["address"], "divide", [1, 0], series,
                                    abi=reverter["abi"])  # fmt: skip
        frame = lab.call_series(reverter["address"], "divide", [1, 0], series,
                                abi=reverter["abi"], client=client, out=tmp_path / "job",
                                progress=False)  # fmt: skip
    assert reference["error"].notna().all() and reference["output"].isna().all()
    _same(frame, reference)


def test_storage_and_calls_need_a_node(client, exported):
    source = Era1Source(exported[0].parent)
    with pytest.raises(ConfigError, match="storage_series dataset needs 'json-rpc'"):
        cluster.run("storage_series", source, "0x" + "11" * 20, 0, [1, 2], client=client)
    with pytest.raises(ValueError, match="blocks is empty"):
        cluster.run("call_series", source, "0x" + "11" * 20, "f()(uint256)", [], [], client=client)


def test_cli_fetches_blocks_on_a_running_cluster(client, exported, tmp_path):
    output = tmp_path / "b.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "feeslab.cli", "fetch", "blocks", "--era1",
         str(exported[0].parent), "--start", "8000", "--stop", "8400", "--scheduler",
         client.scheduler.address, "--quiet", "-o", str(output)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    reference = datasets.get("blocks", Era1Source(exported[0].parent), 8_000, 8_400,
                                   progress=False)  # fmt: skip
    pd.testing.assert_frame_equal(frame_from_bytes(output.read_bytes()), reference)
    assert len(list((tmp_path / "b.parts").glob("part-*.parquet"))) == 2


def test_a_finished_jobs_folder_is_a_source_of_its_dataset(client, exported, tmp_path):
    from feeslab.sources.partitions import PartitionSource

    files = Era1Source(exported[0].parent)
    scan = cluster.run("uncles", files, 0, 16_384, client=client, out=tmp_path / "u",
                       progress=False).value
    folder = PartitionSource(tmp_path / "u")
    assert folder.offers() == {"uncles"} and folder.label == "era1"
    again = datasets.get("uncles", folder, 0, 16_384)
    pd.testing.assert_frame_equal(again.uncles, scan.uncles)
    pd.testing.assert_frame_equal(again.blocks, scan.blocks)
    assert again.plan.total == 0
    inside = datasets.get("uncles", folder, 8_000, 9_000)  # across two partitions' edge
    expected = datasets.get("uncles", files, 8_000, 9_000, progress=False)
    pd.testing.assert_frame_equal(inside.uncles, expected.uncles)
    with pytest.raises(ConfigError, match="does not hold blocks 16,000 to 16,999"):
        datasets.get("uncles", folder, 16_000, 17_000)
    with pytest.raises(ConfigError, match="offers 'uncles'"):
        datasets.get("blocks", folder, 0, 10)
    (tmp_path / "u" / "part-000008192-000016383.parquet").unlink()
    with pytest.raises(ConfigError, match="lacks 1 partition files"):
        datasets.get("uncles", folder, 8_000, 9_000)
    with pytest.raises(ConfigError, match="holds no finished job"):
        PartitionSource(tmp_path)



def test_cli_fetches_base_fees_and_storage_on_a_running_cluster(client, devnet, contracts,
                                                                tmp_path):  # fmt: skip
    found, accounts, chain = contracts
    token = found["FeeslabToken"]["address"]
    slot = mapping_slot(accounts["holders"][2], 0)
    first = chain["contracts_block"] + 1
    with _lab(devnet) as lab:
        fees = lab.fee_history(100_000, 110_000, percentiles=(50,))
        words = lab.storage_series(token, slot, range(first, first + 300, 3))
    base = [sys.executable, "-m", "feeslab.cli", "fetch"]
    where = ["--url", devnet.url, "--api-key", devnet.api_key, "--api-key-secret",
             devnet.api_key_secret, "--no-cache", "--quiet", "--scheduler",
             client.scheduler.address, "--partition-blocks", "40"]  # fmt: skip
    for kind, options, reference in (
        ("fee-history", ["--start", "100000", "--stop", "110000", "--percentiles", "50"], fees),
        ("storage", ["--address", token, "--slot", str(slot), "--blocks",
                     f"{first}:{first + 300}:3"], words),
    ):  # fmt: skip
        output = tmp_path / f"{kind}.parquet"
        proc = subprocess.run([*base, kind, *where, *options, "-o", str(output)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        _same(frame_from_bytes(output.read_bytes()), reference)
        parts = len(list((tmp_path / f"{kind}.parts").glob("part-*.parquet")))
        assert parts == (10 if kind == "fee-history" else 3)  # 1,024 blocks, 40 words a part



def test_partition_files_give_back_tuples_and_exact_ints(tmp_path):
    """What a dataset's frame holds comes back from its partition file as it was written:
    Parquet alone gives arrays for tuples."""
    from feeslab.jobs import _write_partition

    frame = pd.DataFrame({
        "block_number": [1, 2, 3],
        "hashes": pd.Series([("0xaa", "0xbb"), (), None], dtype=object),
        "amounts": pd.Series([(1, 2), None, (3,)], dtype=object),
        "word": pd.Series([2**255, None, 7], dtype=object),
    })  # fmt: skip
    frame.attrs["chain_id"] = 1
    _write_partition(frame.copy(), tmp_path / "part-000000001-000000003.parquet", 0, "run")
    back = cluster.read_partitions(tmp_path)
    pd.testing.assert_frame_equal(back, frame, check_exact=True)
    assert back["hashes"].tolist() == [("0xaa", "0xbb"), (), None]
    assert back["amounts"].tolist() == [(1, 2), None, (3,)]
    assert back["word"].tolist() == [2**255, None, 7]
    assert back.attrs == {}  # the driver tags the whole frame
    lists = pd.read_parquet(tmp_path)["amounts"]  # Parquet lists, for any reader
    assert [len(v) for v in lists if v is not None] == [2, 1]


def test_a_partition_a_killed_attempt_wrote_keeps_its_rows_and_credits(tmp_path):
    """A worker killed after the file's rename, before its answer: the retry reads what the
    attempt did from the file (its rows and the credits they cost), so the manifest and the
    report count it as computed in this run, not as a partition found from an earlier run."""
    from dataclasses import replace

    from feeslab.cluster import DatasetJob
    from feeslab.jobs import Partition, Task, _write_partition, run_partition

    part = Partition(8_192, 8_200)
    frame = pd.DataFrame({"block_number": [8_192, 8_193]})
    _write_partition(frame, tmp_path / part.name, 1_234, "job-run1")
    spec, _ = DatasetJob.of("uncles", 8_192, 8_200)
    task = Task(spec=spec, out=str(tmp_path), bucket="unused", workers=1, run="job-run1")
    answer = run_partition(task, part, None)
    assert answer == {"file": part.name, "rows": 2, "credits": 1_234, "earlier_attempt": True}
    # another run's file (a killed job's task that finished after its driver died): skipped
    assert run_partition(replace(task, run="job-run2"), part, None) == {"file": part.name,
                                                                       "skipped": True}
