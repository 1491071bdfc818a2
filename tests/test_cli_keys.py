"""Several API keys from the command line: a cluster job's rate multiplied, a ledger per key,
and no key or secret in any message, argparse's included, nor in any file written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import feeslab
from feeslab.cli import _keys_given, build_parser, main
from feeslab.devnet import start
from feeslab.frames.io import frame_from_bytes

KEY1, SECRET1 = "k3y0ne0000aaaa", "s3cr3t0ne0000zzzz"
KEY2, SECRET2 = "k3ytw00000bbbb", "s3cr3ttw00000yyyy"
HIDDEN = (KEY1, SECRET1, KEY2, SECRET2)
RATE = 20_000  # each devnet's credits per second
START, STOP = 1_000, 2_000
PARTITION = 200


def _fetch(tmp_path, *options):
    return ["fetch", "uncles", "--start", "0", "--stop", "10", "-o",
            str(tmp_path / "u.parquet"), *options]  # fmt: skip


def _shown(capsys) -> str:
    out = capsys.readouterr()
    return out.out + out.err


@pytest.fixture(autouse=True)
def _no_keys_in_environment(monkeypatch):
    for name in ("INFURA_API_KEY", "INFURA_API_KEY_SECRET", "INFURA_API_KEYS"):
        monkeypatch.delenv(name, raising=False)


def test_keys_repeated_as_comma_lists_or_from_the_environment(monkeypatch):
    parser = build_parser()
    given = parser.parse_args(_fetch(Path("."), "--api-key", f"{KEY1}:{SECRET1},{KEY2}",
                                     "--api-key", "third"))  # fmt: skip
    assert _keys_given(given) == [(KEY1, SECRET1), (KEY2, None), ("third", None)]
    # --api-key-secret: the first key's, when it has none of its own
    given = parser.parse_args(_fetch(Path("."), "--api-key", f"{KEY1},{KEY2}:{SECRET2}",
                                     "--api-key-secret", SECRET1))  # fmt: skip
    assert _keys_given(given) == [(KEY1, SECRET1), (KEY2, SECRET2)]
    monkeypatch.setenv("INFURA_API_KEYS", f"{KEY1}:{SECRET1}, {KEY2}:{SECRET2}")
    monkeypatch.setenv("INFURA_API_KEY", "ignored")
    assert _keys_given(parser.parse_args(_fetch(Path(".")))) == [(KEY1, SECRET1), (KEY2, SECRET2)]
    given = parser.parse_args(_fetch(Path("."), "--api-key", KEY1))  # the command line first
    assert _keys_given(given) == [(KEY1, None)]


def test_several_keys_need_a_cluster(tmp_path, capsys):
    status = main(_fetch(tmp_path, "--url", "http://127.0.0.1:9", "--api-key",
                         f"{KEY1}:{SECRET1}", "--api-key", f"{KEY2}:{SECRET2}"))  # fmt: skip
    shown = _shown(capsys)
    assert status == 2 and "2 API keys" in shown and "--workers N or --scheduler" in shown
    assert not any(s in shown for s in HIDDEN)
    assert not (tmp_path / "u.parquet").exists()


def test_urls_once_for_all_or_once_per_key(tmp_path, capsys):
    status = main(_fetch(tmp_path, "--workers", "2", "--api-key", f"{KEY1},{KEY2}",
                         *("--url", "http://127.0.0.1:9") * 3))  # fmt: skip
    shown = _shown(capsys)
    assert status == 2 and "--url given 3 times for 2 API keys" in shown
    assert not any(s in shown for s in HIDDEN)


@pytest.mark.parametrize("value", [f"{KEY1}:", f":{SECRET1}", f"{KEY1}:{SECRET1},",
                                   f"{KEY1}: {SECRET1}"])  # fmt: skip
def test_a_malformed_key_is_named_without_its_value(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as raised:
        main(_fetch(tmp_path, "--api-key", value))
    shown = _shown(capsys)
    assert raised.value.code == 2 and "expected KEY or KEY:SECRET" in shown
    assert SECRET1 not in shown and KEY1 not in shown


def test_a_stray_secret_is_not_echoed_by_argparse(tmp_path, capsys):
    """``--api-key KEY SECRET`` (a space for the colon): argparse would print the secret."""
    with pytest.raises(SystemExit) as raised:
        main(_fetch(tmp_path, "--api-key", KEY1, SECRET1, "--strat", "5"))
    shown = _shown(capsys)
    assert raised.value.code == 2
    assert "unrecognized arguments: (a value) --strat (a value)" in shown  # the typo shown
    assert SECRET1 not in shown


def test_a_malformed_environment_variable_is_named_without_its_value(tmp_path, capsys,
                                                                     monkeypatch):  # fmt: skip
    monkeypatch.setenv("INFURA_API_KEYS", f"{KEY1}:{SECRET1},,{KEY2}")
    status = main(_fetch(tmp_path, "--url", "http://127.0.0.1:9"))
    shown = _shown(capsys)
    assert status == 2 and "$INFURA_API_KEYS: expected KEY or KEY:SECRET" in shown
    assert not any(s in shown for s in HIDDEN)


@pytest.fixture(scope="module")
def devnets():
    """Two keys: two devnets of one seed (the same chain), each with its own key and its own
    20,000 credits/s, as two keys on one plan each are to the service."""
    with start(seed=7, credits_per_second=RATE, api_key=KEY1, api_key_secret=SECRET1) as one, \
            start(seed=7, credits_per_second=RATE, api_key=KEY2,
                  api_key_secret=SECRET2) as two:  # fmt: skip
        yield one, two


def _files_holding(directory: Path, words) -> list[str]:
    found = []
    for path in directory.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {w}" for w in words if w.encode() in data]
    return found


@pytest.mark.slow
def test_two_keys_on_a_local_cluster_each_with_its_bucket_and_ledger(devnets, tmp_path):
    one, two = devnets
    with feeslab.connect(url=one.url, api_key=KEY1, api_key_secret=SECRET1, cache=False,
                         progress=False) as lab:  # fmt: skip
        reference = lab.uncles(START, STOP, progress=False).uncles
        spent = lab.credits.spent
        governor = lab.node.transport.governor
        governor.settle(timeout=5.0)
        one_key = governor.ceiling  # [credits/s] one key's pacing
    cache = tmp_path / "cache"
    output = tmp_path / "uncles.parquet"
    environment = {**os.environ, "FEESLAB_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "feeslab.cli", "fetch", "uncles", "--url", one.url, "--url",
         two.url, "--api-key", f"{KEY1}:{SECRET1}", "--api-key", f"{KEY2}:{SECRET2}",
         "--start", str(START), "--stop", str(STOP), "--workers", "2",
         "--partition-blocks", str(PARTITION), "-o", str(output)],
        capture_output=True, text=True, timeout=300, env=environment,
    )  # fmt: skip
    shown = proc.stdout + proc.stderr
    assert proc.returncode == 0, shown
    pd.testing.assert_frame_equal(frame_from_bytes(output.read_bytes()), reference)
    # the job paced at both keys' rates together
    assert f"pacing at {2 * one_key:,.0f} credits/s over 2 API keys" in proc.stdout
    # a ledger per key, each of which bought a share; together what one key alone buys
    ledgers = [int(n.replace(",", "")) for n in re.findall(r"key \d: spent ([\d,]+) credits",
                                                            proc.stdout)]  # fmt: skip
    assert len(ledgers) == 2 and min(ledgers) > 0.25 * spent, proc.stdout
    assert abs(sum(ledgers) - spent) <= spent / 100
    # neither key nor secret printed, nor in any file written (cache, partitions, output)
    assert not any(s in shown for s in HIDDEN)
    assert _files_holding(tmp_path, HIDDEN) == []
    assert list(cache.rglob("*")), "the run wrote nothing to its cache"
