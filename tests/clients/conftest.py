"""Shared helpers of the real-client tests: the devnet's token, a holder and its balance read
straight from storage, and a runner for the node scripts in this directory."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from eth_hash.auto import keccak

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
NODE = shutil.which("node")
PACKAGES = ("ethers", "viem", "kubo-rpc-client", "@metamask/multichain-api-client")


def pytest_configure(config: pytest.Config) -> None:
    # web3's own module tests (web3._utils.module_testing), reused here, carry this mark
    config.addinivalue_line("markers", "asyncio: web3.py's async module tests")


def mapping_slot(key: str, slot: int) -> str:
    """Solidity's slot of ``mapping[key]`` for an address key (keccak(pad(key) . pad(slot)))."""
    word = bytes.fromhex(key[2:]).rjust(32, b"\0") + slot.to_bytes(32, "big")
    return "0x" + keccak(word).hex()


@pytest.fixture(scope="session")
def token(devnet) -> dict[str, Any]:
    """FeeslabToken on mainnet: address, ABI, a holder and its balance from eth_getStorageAt
    (slot 0 is ``_balances``, per the compiler's storage layout)."""
    contracts = devnet.contracts
    deployed = {c["name"]: c for c in contracts["contracts"]}
    found = deployed["FeeslabToken"]
    layout = {v["label"]: int(v["slot"]) for v in found["storage_layout"]["storage"]}
    return {
        "address": found["address"],
        "abi": found["abi"],
        "balances_slot": layout["_balances"],
        "holder": contracts["accounts"]["holders"][0],
        "reverter": deployed["Reverter"]["address"],
        "reverter_abi": deployed["Reverter"]["abi"],
    }


@pytest.fixture
def stored_balance(rpc, token) -> int:
    slot = mapping_slot(token["holder"], token["balances_slot"])
    return int(rpc("eth_getStorageAt", token["address"], slot, "latest"), 16)


def _node_ready() -> str | None:
    """Why the node scripts cannot run here, or None."""
    if NODE is None:
        return "node is not installed"
    missing = [p for p in PACKAGES if not (ROOT / "node_modules" / p / "package.json").exists()]
    if missing:
        return f"node_modules lacks {', '.join(missing)} (run npm ci; make test does)"
    return None


@pytest.fixture(scope="session")
def node_script():
    """``node_script(name, **args)`` runs ``tests/clients/<name>.mjs`` with ``args`` as JSON
    and returns the JSON it prints; skipped (with the reason) without node or node_modules."""
    why = _node_ready()
    if why:
        pytest.skip(reason=why)
    flags: list[str] = []
    probe = subprocess.run(
        [NODE, "-e", "process.stdout.write(typeof WebSocket)"], capture_output=True, text=True
    )
    if probe.stdout != "function":  # node 20 and 21: a global WebSocket behind a flag
        flags.append("--experimental-websocket")

    def run(name: str, **args: Any) -> Any:
        done = subprocess.run(
            [NODE, *flags, str(HERE / f"{name}.mjs"), json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=ROOT,
        )
        assert done.returncode == 0, f"{name}.mjs failed:\n{done.stderr[-4000:]}"
        return json.loads(done.stdout)

    return run
