"""``Lab``'s typed surface: its dataset methods are written out from the registry
(``python -m feeslab._gen_lab`` -> ``feeslab/_lab_datasets.py``), so type checkers know them;
the wheel ships ``py.typed``; a dataset registered at run time is still reached, untyped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import feeslab
import feeslab.lab
from feeslab._gen_lab import COMMAND, TARGET, main, render
from feeslab.datasets import REGISTRY
from feeslab.datasets.registry import Dataset, Registry
from feeslab.fetch.credits import Plan
from feeslab.lab import Lab

REPO = Path(__file__).parents[1]
REAL = REPO / "tests" / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"
PYRIGHT = REPO / "node_modules" / ".bin" / "pyright"


def test_the_checked_in_methods_are_those_the_registry_gives():
    assert TARGET.read_text() == render(), f"{TARGET.name} is stale: run {COMMAND}"
    assert main(["--check"]) == 0


def test_a_stale_module_is_found_and_named_with_the_command(monkeypatch, tmp_path, capsys):
    stale = tmp_path / "_lab_datasets.py"
    stale.write_text(TARGET.read_text().replace("def uncles(", "def uncle_scan(", 1))
    monkeypatch.setattr("feeslab._gen_lab.TARGET", stale)
    assert main(["--check"]) == 1
    assert COMMAND in capsys.readouterr().err
    assert main([]) == 0  # rewritten
    assert stale.read_text() == TARGET.read_text()


# -- a dataset registered at run time ------------------------------------------------------------


def gas_share(source, start: int, stop: int, *, of: float = 1.0) -> pd.DataFrame:
    """Each block's gas used over its gas limit, times ``of``."""
    blocks = source.read("blocks", start=start, stop=stop)
    return pd.DataFrame({"block_number": blocks["block_number"],
                         "share": blocks["gas_used"] / blocks["gas_limit"] * of})  # fmt: skip


def plan_gas_share(source, start: int, stop: int) -> Plan:
    return Plan([], title=f"gas shares of {stop - start} blocks")


GAS_SHARE = Dataset("gas_share", gas_share, plan=plan_gas_share, needs=("blocks",),
                    summary="each block's share of its gas limit")  # fmt: skip


def test_a_dataset_registered_at_run_time_is_reached_by_name_and_by_attribute(monkeypatch):
    monkeypatch.setattr(feeslab.lab, "REGISTRY", Registry([*REGISTRY.values(), GAS_SHARE]))
    with feeslab.connect(era1=REAL) as lab:
        expected = gas_share(lab.data_source, 0, 6, of=100.0)
        assert len(expected) == 6
        pd.testing.assert_frame_equal(lab.fetch("gas_share", 0, 6, of=100.0), expected)
        pd.testing.assert_frame_equal(lab.gas_share(0, 6, of=100.0), expected)
        pd.testing.assert_frame_equal(lab.gas_share(start=0, stop=6, of=100.0), expected)
        assert lab.plan_gas_share(0, 6).title == "gas shares of 6 blocks"
        assert lab.plan("gas_share", 0, 6).title == "gas shares of 6 blocks"
        with pytest.raises(TypeError, match="'off'"):  # its fetch's signature binds the call
            lab.gas_share(0, 6, off=2.0)
        with pytest.raises(AttributeError, match="no attribute 'gas_shares'"):
            lab.gas_shares  # noqa: B018
        with pytest.raises(AttributeError, match="no attribute 'plan_call'"):  # it has no plan
            lab.plan_call  # noqa: B018
        assert lab.uncles.__func__ is Lab.uncles  # the generated ones are the class's own
    assert not hasattr(Lab, "gas_share")  # reached at run time only: no typed method


# -- the wheel, as a user's type checkers see it -------------------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The Python of a fresh venv holding the wheel built from this checkout (and this venv's
    dependencies, without its .pth files: its editable feeslab is not seen)."""
    root = tmp_path_factory.mktemp("wheel")
    tree = root / "src"  # a copy: building leaves build/ and *.egg-info behind
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tree / name)
    shutil.copytree(REPO / "feeslab", tree / "feeslab",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    run = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*run, "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w",
                    str(root / "dist"), str(tree)], check=True, capture_output=True)  # fmt: skip
    (wheel,) = (root / "dist").glob("feeslab-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "feeslab/py.typed" in names and "feeslab/_lab_datasets.py" in names
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([*run, "--python", str(python), "install", "--no-deps", "--quiet",
                    str(wheel)], check=True, capture_output=True)  # fmt: skip
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    # a path line of a .pth adds the directory; the .pth files inside it are not run
    (Path(site) / "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    where = subprocess.run([python, "-c", "import feeslab; print(feeslab.__file__)"],
                           check=True, capture_output=True, text=True, cwd=root).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(venv), where
    return python


SNIPPET = """\
from typing import reveal_type

import feeslab

lab = feeslab.connect(era1="files/")
scan = lab.uncles(0, 10, budget=5)
reveal_type(scan)
reveal_type(lab.plan_uncles(0, 10))
lab.uncles(0, 10, budgett=5)
"""


def _snippet(tmp_path: Path) -> Path:
    path = tmp_path / "user.py"
    path.write_text(SNIPPET)
    return path


@pytest.mark.slow
def test_mypy_knows_the_methods_of_the_installed_wheel(installed, tmp_path):
    user = _snippet(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(installed), "--strict",
         "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", user.name],
        capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        'user.py:7: note: Revealed type is "feeslab.datasets.uncles.UncleScan"',
        'user.py:8: note: Revealed type is "feeslab.fetch.credits.Plan"',
    ], done.stdout + done.stderr
    (error,) = [line for line in lines if ": error: " in line]
    assert error.startswith('user.py:9: error: Unexpected keyword argument "budgett" for '
                            '"uncles"'), error  # fmt: skip
    assert done.returncode == 1


@pytest.mark.slow
def test_pyright_knows_the_methods_of_the_installed_wheel(installed, tmp_path):
    if not PYRIGHT.exists():
        pytest.fail("no node_modules/.bin/pyright: npm ci (make test runs it)")
    user = _snippet(tmp_path)
    done = subprocess.run([str(PYRIGHT), "--pythonpath", str(installed), "--outputjson",
                           user.name], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    found = [(d["range"]["start"]["line"] + 1, d["severity"], d["message"])
             for d in json.loads(done.stdout)["generalDiagnostics"]]  # fmt: skip
    assert found == [
        (7, "information", 'Type of "scan" is "UncleScan"'),
        (8, "information", 'Type of "lab.plan_uncles(0, 10)" is "Plan"'),
        (9, "error", 'No parameter named "budgett"'),
    ], done.stdout
    assert done.returncode == 1
