"""History expiry (EIP-4444) on a cluster: an uncle scan below a pruned node's cutoff is refused
with ``HistoryPruned`` by the job's plan, before the sample is bought or any task runs, as the
in-process plan refuses it (the registry's one check, ``tests/test_history_expiry.py``).

Real HTTP on loopback against a devnet pruned as geth's ``--history.chain postmerge`` prunes,
and a real LocalCluster of two worker processes (the ``client`` fixture).
"""

from __future__ import annotations

import pandas as pd
import pytest
from cluster_support import uncached_lab

from feeslab import cluster
from feeslab.cli import main
from feeslab.devnet import start
from feeslab.errors import HistoryPruned

pytestmark = pytest.mark.slow

SEED = 7  # the session devnet's: the same chains, generated once
CUTOFF = 164_999  # geth's prune point on mainnet, its terminal proof-of-work block
SCAN = (164_000, 166_000)  # a pre-merge scan reaching past the merge
SET_UP = {"eth_blockNumber", "eth_chainId", "web3_clientVersion"}  # what any fetch asks first


@pytest.fixture(scope="module")
def pruned():
    """A devnet serving history as geth run with ``--history.chain postmerge``."""
    with start(seed=SEED, daily_credits=10**15, credits_per_second=10**12) as handle:
        handle.devnet.set_history("postmerge")
        yield handle


def _refused(error: HistoryPruned) -> None:
    assert (error.first, error.stop, error.earliest) == (*SCAN, CUTOFF)
    assert "blocks 164,000 .. 165,999" in str(error) and "era1=DIR" in str(error)


@pytest.mark.parametrize("how", ["plan", "run"])
def test_a_cluster_scan_below_the_cutoff_is_refused_before_spending(client, pruned, tmp_path,
                                                                    how):  # fmt: skip
    out = tmp_path / "job"
    with uncached_lab(pruned) as lab:
        with pytest.raises(HistoryPruned) as caught:
            if how == "plan":
                cluster.plan("uncles", lab.data_source, *SCAN, out=out)
            else:
                cluster.run("uncles", lab.data_source, *SCAN, client=client, out=out,
                            progress=False, partition_blocks=500)  # fmt: skip
        _refused(caught.value)
        # no uncle count of the sample, no uncle: the set-up's calls alone (the devnet's
        # version says its cutoff)
        assert set(lab.credits.by_method) <= SET_UP
        assert lab.credits.spent <= 80 + 5 + 80
    assert not out.exists()  # refused before the job's directory was made


def test_the_command_refuses_it_on_a_cluster_too(client, pruned, tmp_path, capsys):
    output = tmp_path / "u.parquet"
    status = main(["fetch", "uncles", "--url", pruned.url, "--api-key", pruned.api_key,
                   "--api-key-secret", pruned.api_key_secret, "--start", str(SCAN[0]),
                   "--stop", str(SCAN[1]), "--no-cache", "--quiet", "--scheduler",
                   client.scheduler.address, "-o", str(output)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 1, err
    assert "HistoryPruned" in err and "blocks 164,000 .. 165,999" in err
    assert not output.exists() and not (tmp_path / "u.parts").exists()


def test_from_the_cutoff_on_the_cluster_scans_as_one_process(client, pruned, tmp_path):
    with uncached_lab(pruned) as lab:
        reference = lab.uncles(CUTOFF, SCAN[1], progress=False)
        scan = cluster.run("uncles", lab.data_source, CUTOFF, SCAN[1], client=client,
                           out=tmp_path / "job", progress=False, partition_blocks=500).value
    pd.testing.assert_frame_equal(scan.uncles, reference.uncles, check_exact=True)
    pd.testing.assert_frame_equal(scan.blocks, reference.blocks, check_exact=True)
