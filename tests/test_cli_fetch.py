"""``feeslab fetch`` as a real subprocess against the session devnet (and the embedded one).

Each file it writes must read back equal to the frame the ``Lab`` method makes; each user
mistake must exit 2 with one line on stderr, no traceback and no file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import feeslab
import feeslab.devnet
from feeslab.cli import main
from feeslab.slots import mapping_slot

TIMEOUT = 240


@pytest.fixture
def lab(devnet, tmp_path):
    lab = feeslab.connect(
        url=devnet.url,
        api_key=devnet.api_key,
        api_key_secret=devnet.api_key_secret,
        cache=tmp_path / "lab-cache",
        progress=False,
    )
    yield lab
    lab.close()


@pytest.fixture(scope="module")
def token(devnet):
    info = devnet.contracts
    (chain,) = [c for c in info["chains"] if c["chain_id"] == 1]
    contract = next(c for c in info["contracts"] if c["name"] == "FeeslabToken")
    return contract["address"], info["accounts"]["holders"][2], chain["contracts_block"]


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFURA_")}
    return {**env, "PYTHONUNBUFFERED": "1"}


def fetch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "feeslab.cli", "fetch", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env() if env is None else env,
    )


def on_devnet(devnet, *args: str) -> subprocess.CompletedProcess:
    """Run with the key in the environment, as a user would."""
    env = {
        **clean_env(),
        "INFURA_API_KEY": devnet.api_key,
        "INFURA_API_KEY_SECRET": devnet.api_key_secret,
    }
    return fetch(*args, "--url", devnet.url, env=env)


def succeeded(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def read(path: Path, **csv_options) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path, **csv_options)


def as_ints(column: pd.Series) -> list:
    """Exact-int object columns are written as decimal text."""
    return [None if pd.isna(v) else int(v) for v in column]


# -- round trips -----------------------------------------------------------------------------


def test_base_fees_over_a_range_parquet_and_csv(devnet, lab, tmp_path):
    start, stop = 150_000, 151_500  # two eth_feeHistory calls
    expected = lab.fee_history(start, stop).reset_index(drop=True)
    parquet, csv = tmp_path / "fees.parquet", tmp_path / "fees.csv"
    out = succeeded(
        on_devnet(devnet, "fee-history", "--start", "150000", "--stop", "151500", "-o",
                  str(parquet))
    )
    # the plan first, then the ledger
    assert out.index("fee history of blocks 150,000 to 151,499: 160 credits") < out.index("spent")
    assert "eth_feeHistory" in out and "wrote 1,500 rows" in out
    pd.testing.assert_frame_equal(read(parquet), expected)
    succeeded(
        on_devnet(
            devnet, "fee-history", "--start", "150000", "--stop", "151500", "-o", str(csv),
            "--quiet",
        )
    )
    # CSV has no nullable ints: say which columns are, as a reader would
    nullable = {c: "Int64" for c, t in expected.dtypes.items() if str(t) == "Int64"}
    assert "base_fee_per_blob_gas_wei" in nullable
    pd.testing.assert_frame_equal(read(csv, dtype=nullable), expected)


def test_base_fees_from_the_gas_api(devnet, lab, tmp_path):
    path = tmp_path / "gas.csv"
    out = succeeded(on_devnet(devnet, "base-fees", "--chain-id", "1", "-o", str(path)))
    assert "baseFeeHistory" in out
    expected = lab.base_fee_history(1)
    got = read(path)
    assert len(got) == 500
    pd.testing.assert_frame_equal(got, expected)


def test_uncles_parquet_and_csv_per_block(devnet, lab, tmp_path):
    start, stop = 40_000, 40_400
    scan = lab.uncles(start, stop)
    assert len(scan.uncles) > 0
    parquet = tmp_path / "uncles.parquet"
    out = succeeded(
        on_devnet(
            devnet,
            "uncles",
            "--start",
            str(start),
            "--stop",
            str(stop),
            "-o",
            str(parquet),
            "--no-cache",
        )
    )
    assert out.index("uncle scan of blocks 40,000 to 40,399") < out.index("spent")
    got = read(parquet)
    assert as_ints(got["difficulty"]) == scan.uncles["difficulty"].tolist()
    pd.testing.assert_frame_equal(
        got.drop(columns="difficulty"), scan.uncles.drop(columns="difficulty")
    )
    csv = tmp_path / "per-block.csv"
    succeeded(
        on_devnet(
            devnet,
            "uncles",
            "--start",
            str(start),
            "--stop",
            str(stop),
            "--per-block",
            "-o",
            str(csv),
        )
    )
    pd.testing.assert_frame_equal(read(csv), scan.blocks)


def test_storage_parquet_and_csv(devnet, lab, tmp_path, token):
    address, holder, deployed_at = token
    slot = mapping_slot(holder, 0)
    blocks = range(deployed_at, deployed_at + 300, 10)
    expected = lab.storage_series(address, slot, blocks)
    assert expected["word"].max() > 2**63  # balances in wei: beyond int64
    spec = f"{deployed_at}:{deployed_at + 300}:10"
    for name in ("balance.parquet", "balance.csv"):
        path = tmp_path / name
        succeeded(
            on_devnet(
                devnet,
                "storage",
                "--address",
                address,
                "--slot",
                hex(slot),
                "--blocks",
                spec,
                "-o",
                str(path),
            )
        )
        got = read(path)
        assert as_ints(got["word"]) == expected["word"].tolist()
        pd.testing.assert_frame_equal(got.drop(columns="word"), expected.drop(columns="word"))


def test_embedded_devnet_with_a_seed(lab, tmp_path, token):
    address, holder, deployed_at = token
    slot = mapping_slot(holder, 0)
    path = tmp_path / "embedded.parquet"
    succeeded(
        fetch(
            "storage",
            "--address",
            address,
            "--slot",
            str(slot),
            "--seed",
            "7",
            "--blocks",
            f"{deployed_at}:{deployed_at + 5}",
            "-o",
            str(path),
        )
    )
    expected = lab.storage_series(address, slot, range(deployed_at, deployed_at + 5))
    assert as_ints(read(path)["word"]) == expected["word"].tolist()


def test_secrets_are_never_printed(devnet, tmp_path):
    path = tmp_path / "fees.csv"
    proc = fetch(
        "fee-history",
        "--start",
        "1000",
        "--stop",
        "1010",
        "-o",
        str(path),
        "--url",
        devnet.url,
        "--api-key",
        devnet.api_key,
        "--api-key-secret",
        devnet.api_key_secret,
    )
    succeeded(proc)
    for text in (proc.stdout, proc.stderr):
        assert devnet.api_key not in text
        assert devnet.api_key_secret not in text
    # a refused key is reported on one line, without the key
    bad = fetch(
        "fee-history",
        "--start",
        "1000",
        "--stop",
        "1010",
        "-o",
        str(tmp_path / "x.csv"),
        "--url",
        devnet.url,
        "--api-key",
        "wrongwrongwrong",
    )
    assert bad.returncode == 1
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    assert "wrongwrongwrong" not in bad.stderr + bad.stdout
    assert not (tmp_path / "x.csv").exists()


# -- user mistakes -----------------------------------------------------------------------------

MISTAKES = {
    "bad range": (["fee-history", "--start", "10", "--stop", "5"], "greater than --start"),
    "half a range": (["fee-history", "--start", "10"], "--stop"),
    "negative block": (["uncles", "--start", "-1", "--stop", "5"], "non-negative"),
    "missing stop": (["uncles", "--start", "1"], "--stop"),
    "empty blocks": (
        ["storage", "--address", "0x" + "11" * 20, "--slot", "0", "--blocks", "5:5"],
        "greater than A",
    ),
    "bad blocks": (
        ["storage", "--address", "0x" + "11" * 20, "--slot", "0", "--blocks", "5-9"],
        "A:B or A:B:STEP",
    ),
    "bad address": (
        ["storage", "--address", "0x12", "--slot", "0", "--blocks", "1:2"],
        "--address",
    ),
    "chain id with a range": (
        ["fee-history", "--start", "1", "--stop", "5", "--chain-id", "1"],
        "unrecognized arguments: --chain-id",
    ),
    "unknown suffix": (
        ["fee-history", "--start", "1", "--stop", "5", "--suffix=.txt"],
        "unknown output format '.txt'",
    ),
    "missing key with --url": (["base-fees", "--url", "http://127.0.0.1:9"], "--api-key"),
    "unknown kind": (["headers"], "invalid choice"),
}


@pytest.mark.parametrize("name", list(MISTAKES))
def test_user_mistakes_exit_2_on_one_line_and_leave_no_file(name, tmp_path):
    args, message = MISTAKES[name]
    suffix = ".csv"
    if args[-1].startswith("--suffix="):
        suffix = args.pop().split("=", 1)[1]
    path = tmp_path / f"out{suffix}"
    proc = fetch(*args, "-o", str(path))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_mistakes_found_after_connecting_exit_2_and_leave_no_file(devnet, tmp_path):
    path = tmp_path / "out.parquet"
    beyond = on_devnet(devnet, "uncles", "--start", "209990", "--stop", "999999", "-o", str(path))
    assert beyond.returncode == 2
    assert (
        "beyond the head (210,000)" in beyond.stderr
        and len(beyond.stderr.strip().splitlines()) == 1
    )
    over = on_devnet(
        devnet, "fee-history", "--start", "1", "--stop", "5000", "--budget", "100", "-o", str(path)
    )
    assert over.returncode == 2
    assert "needs 400 credits" in over.stderr and len(over.stderr.strip().splitlines()) == 1
    assert "Traceback" not in beyond.stderr + over.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_uncle_scan_over_budget_is_refused_before_its_sample_is_bought(devnet, tmp_path):
    path = tmp_path / "uncles.parquet"
    before = _spent(devnet)
    over = on_devnet(devnet, "uncles", "--start", "100000", "--stop", "120000", "--budget",
                     "1000000", "--no-cache", "-o", str(path))
    assert over.returncode == 2 and "1,600,000 credits" in over.stderr
    assert len(over.stderr.strip().splitlines()) == 1 and "Traceback" not in over.stderr
    assert _spent(devnet) - before == 80  # the head, to check the range; no header bought
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(devnet, tmp_path, monkeypatch, capsys):
    path = tmp_path / "fees.parquet"
    path.write_bytes(b"the previous run's file")

    def full(fd: int) -> None:  # the bytes went to the temporary file; the disk fills now
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    monkeypatch.setenv("INFURA_API_KEY", devnet.api_key)
    status = main(
        [
            "fetch",
            "fee-history",
            "--start",
            "1000",
            "--stop",
            "1010",
            "--quiet",
            "--url",
            devnet.url,
            "-o",
            str(path),
        ]
    )
    assert status == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and len(err.strip().splitlines()) == 1
    assert path.read_bytes() == b"the previous run's file"
    assert [p.name for p in tmp_path.iterdir()] == ["fees.parquet"]


# -- pacing and resuming (a `feeslab serve` process of their own) ---------------------------------


def _spent(served) -> int:
    import httpx

    auth = (served.api_key, served.api_key_secret)
    answer = httpx.get(f"{served.url}/devnet/credits", auth=auth, timeout=30)
    answer.raise_for_status()
    return answer.json()["spent"]


def _env_for(served, cache_dir: Path) -> dict[str, str]:
    return {
        **clean_env(),
        "INFURA_API_KEY": served.api_key,
        "INFURA_API_KEY_SECRET": served.api_key_secret,
        "FEESLAB_CACHE_DIR": str(cache_dir),  # the fetch's own answer cache, empty at first
    }


def test_uncles_against_feeslab_serve_with_its_default_limits(tmp_path):
    """The issue's command: a default `feeslab serve` (Team plan: 40,000 credits/s)."""
    out = tmp_path / "uncles.parquet"
    with feeslab.devnet.spawn(seed=0) as served:
        proc = fetch("uncles", "--start", "100000", "--stop", "110000", "-o", str(out),
                     "--url", served.url, env=_env_for(served, tmp_path / "cache"))  # fmt: skip
        spent = _spent(served)
    text = succeeded(proc)
    assert "pacing at 38,000 credits/s" in text  # 95 % of what the devnet reported
    frame = read(out)
    assert len(frame) > 500 and frame["block_number"].between(100_000, 109_999).all()
    assert f"spent {spent:,} credits" in text  # the client's ledger is the service's


def test_credits_per_second_option_is_honoured(devnet, tmp_path):
    import time

    rate = 10_000
    out = tmp_path / "uncles.csv"
    before = _spent(devnet)
    began = time.monotonic()
    proc = on_devnet(devnet, "uncles", "--start", "40000", "--stop", "41000", "-o", str(out),
                     "--no-cache", "--credits-per-second", str(rate))  # fmt: skip
    elapsed = time.monotonic() - began
    spent = _spent(devnet) - before
    assert "pacing at 9,500 credits/s" in succeeded(proc)
    assert spent > 1_000 * 80
    # the service's rule (one second's burst, then the rate); and unpaced it would take < 3 s
    assert spent <= rate * (elapsed + 1)
    assert elapsed >= (spent - rate) / rate


def test_a_bad_credits_per_second_exits_2(tmp_path):
    out = tmp_path / "x.csv"
    proc = fetch("uncles", "--start", "1", "--stop", "2", "-o", str(out),
                 "--credits-per-second", "fast")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "credits_per_second" in line and "'fast'" in line and "core" in line
    assert not out.exists()


def test_a_killed_fetch_pays_again_only_for_the_batches_in_flight(tmp_path):
    import signal
    import time

    from feeslab.fetch.transport import GOVERNOR_HEADROOM

    rate, concurrency = 50_000, 8  # the client's pace, and connect()'s max_concurrency
    batch = rate * GOVERNOR_HEADROOM / concurrency  # the most credits a batch carries
    in_flight = concurrency * batch
    args = ("uncles", "--start", "100000", "--stop", "105000", "--quiet")
    resumed, whole = tmp_path / "resumed.parquet", tmp_path / "whole.parquet"
    with feeslab.devnet.spawn(seed=0, credits_per_second=10**9, daily_credits=10**12) as served:
        env = _env_for(served, tmp_path / "cache")
        command = [sys.executable, "-m", "feeslab.cli", "fetch", *args, "-o", str(resumed),
                   "--url", served.url, "--credits-per-second", str(rate)]  # fmt: skip
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            deadline = time.monotonic() + TIMEOUT
            while _spent(served) < 150_000:  # some batches answered, most of the scan to go
                assert child.poll() is None, child.stderr.read()
                assert time.monotonic() < deadline
                time.sleep(0.02)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
            child.stderr.close()
        assert child.returncode == -signal.SIGKILL and not resumed.exists()
        time.sleep(0.5)  # requests the killed child sent may still be answered
        first = _spent(served)
        succeeded(fetch(*args, "-o", str(resumed), "--url", served.url,
                        "--credits-per-second", str(rate), env=env))  # fmt: skip
        rerun = _spent(served) - first
        succeeded(fetch(*args, "-o", str(whole), "--url", served.url, "--credits-per-second",
                        "inf", env=_env_for(served, tmp_path / "fresh-cache")))  # fmt: skip
        full = _spent(served) - first - rerun
    assert first < full / 2  # killed well before the end
    paid_again = rerun - (full - first)  # what the rerun paid for answers the first run got
    assert paid_again <= in_flight, (first, rerun, full)
    pd.testing.assert_frame_equal(read(resumed), read(whole))
