"""The devnet is an optional extra: a client process never loads its server, routes or EVM.

Each check runs in a fresh interpreter (``sys.modules`` of this test process already holds the
devnet), against a real ``feeslab serve`` started in another process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from feeslab.devnet import spawn

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "uvicorn", "starlette", "pyrevm", "eth", "eth_keys", "multipart", "python_multipart"
)
# prints the heavy top-level packages and the devnet modules the snippet left in sys.modules
REPORT = f"""
import json, sys
tops = {{name.split(".")[0] for name in sys.modules}}
print(json.dumps({{
    "heavy": sorted(tops & set({HEAVY!r})),
    "devnet": sorted(m for m in sys.modules if m.startswith("feeslab.devnet")),
}}))
"""
# makes the devnet extra's packages unimportable, as in an install without feeslab[devnet]
BLOCK_EXTRA = """
import sys
for name in ("starlette", "uvicorn", "pyrevm", "eth", "eth_keys", "python_multipart"):
    sys.modules[name] = None
"""


def _python(*parts: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "FEESLAB_CACHE_DIR": str(tmp_path / "cache"),
        **env,
    }
    environ.pop("INFURA_API_KEY", None)
    environ.pop("INFURA_API_KEY_SECRET", None)
    return subprocess.run(
        [sys.executable, "-c", "\n".join(textwrap.dedent(part) for part in parts)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=240,
    )


def _report(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def served():
    with spawn(seed=0) as devnet:
        yield devnet


def test_importing_the_client_loads_no_devnet(tmp_path):
    code = "import feeslab, feeslab.analysis, feeslab.plots, feeslab.fetch, feeslab.frames\n"
    code += "import feeslab.cli, feeslab.lab, feeslab.devnet\n"
    seen = _report(_python(code, REPORT, tmp_path=tmp_path))
    assert seen["heavy"] == []
    assert seen["devnet"] == ["feeslab.devnet"]  # the package alone: lazy names, no server


def test_connect_to_a_running_devnet_loads_none_of_it(served, tmp_path):
    code = f"""
    import feeslab
    lab = feeslab.connect(url={served.url!r}, api_key={served.api_key!r},
                          api_key_secret={served.api_key_secret!r}, progress=False)
    scan = lab.uncles(100_000, 100_200)
    fees = lab.base_fee_history()
    assert len(scan.blocks) == 200 and len(fees) == 500, (len(scan.blocks), len(fees))
    """
    seen = _report(_python(code, REPORT, tmp_path=tmp_path))
    assert seen == {"heavy": [], "devnet": []}


def test_cli_fetch_from_a_running_devnet_loads_none_of_it(served, tmp_path):
    code = f"""
    import feeslab.cli
    status = feeslab.cli.main(["fetch", "uncles", "--start", "100000", "--stop", "100100",
                               "--url", {served.url!r}, "--api-key", {served.api_key!r},
                               "--quiet", "-o", "uncles.parquet"])
    assert status == 0, status
    """
    seen = _report(_python(code, REPORT, tmp_path=tmp_path))
    assert seen == {"heavy": [], "devnet": []}  # only `serve` imports the devnet
    assert (tmp_path / "uncles.parquet").stat().st_size > 0


def test_connect_without_key_or_devnet_says_how_to_install(tmp_path):
    code = """
    import feeslab
    try:
        feeslab.connect()
    except feeslab.FeeslabError as exc:
        print(type(exc).__name__, "|", exc)
    """
    done = _python(BLOCK_EXTRA, code, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    name, message = done.stdout.strip().split(" | ")
    assert name == "ConfigError"
    assert message.startswith("no INFURA_API_KEY and the devnet is not installed")
    assert message.endswith("pip install 'feeslab[devnet]'")
    assert "starlette" in message and "uvicorn" in message


def test_options_that_conflict_are_refused_before_any_devnet_loads(tmp_path):
    # no key: connect() would start the embedded devnet, but the secret alone has no use there
    code = """
    import feeslab
    try:
        feeslab.connect(api_key_secret="s3cr3t-only", seed=3)
    except feeslab.ConfigError as exc:
        print("refused |", exc)
    """
    done = _python(code, REPORT, tmp_path=tmp_path)
    seen = _report(done)
    assert seen == {"heavy": [], "devnet": []}  # not started, not even imported
    refused = done.stdout.strip().splitlines()[0]
    assert refused.startswith("refused | api_key_secret= has no effect without api_key=")
    assert "s3cr3t-only" not in refused


def test_a_workers_node_builder_loads_none_of_it(served, tmp_path):
    # what a cluster's worker runs for each partition (feeslab.cluster._worker.paced_node)
    code = f"""
    from feeslab.sources.rpc import NodeSpec, open_node
    source = open_node(NodeSpec(url={served.url!r} + "/v3/" + {served.api_key!r}, chain_id=1,
                                devnet=True))
    assert source.head() > 0 and source.label == "devnet"
    source.close()
    """
    seen = _report(_python(code, REPORT, tmp_path=tmp_path))
    assert seen == {"heavy": [], "devnet": []}


def test_serve_without_the_devnet_exits_2_with_one_line(tmp_path):
    code = """
    import sys, feeslab.cli
    sys.exit(feeslab.cli.main(["serve", "--port", "0"]))
    """
    done = _python(BLOCK_EXTRA, code, tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert done.stderr.startswith("feeslab serve: feeslab serve needs the devnet (missing ")
    assert "pip install 'feeslab[devnet]'" in done.stderr


def test_the_extra_installed_passes_the_check():
    import feeslab.devnet

    assert feeslab.devnet.missing_packages() == []
    feeslab.devnet.require()  # no error here: the test environment has the extra


def test_cli_fetch_without_key_or_devnet_exits_2_with_the_install_line(tmp_path):
    code = """
    import sys, feeslab.cli
    sys.exit(feeslab.cli.main(["fetch", "uncles", "--start", "0", "--stop", "10",
                               "-o", "uncles.parquet"]))
    """
    done = _python(BLOCK_EXTRA, code, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "no INFURA_API_KEY and the devnet is not installed" in done.stderr
    assert "pip install 'feeslab[devnet]'" in done.stderr
    assert not (tmp_path / "uncles.parquet").exists()
