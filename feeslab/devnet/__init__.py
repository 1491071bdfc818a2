"""The devnet: a local stand-in for the node JSON-RPC and Gas API service.

It serves deterministic simulated chains (mainnet, sepolia, polygon-mainnet, base-mainnet) on
loopback, with the real service's paths, authentication, credit costs and limits, so that
notebooks and tests run without a key or a network. Start one with ``start()`` (a background
thread of this process) or ``spawn()`` (its own process); the returned handle gives its URLs,
key and secret, and stops it.

The devnet is an optional extra (``pip install 'feeslab[devnet]'``). Importing this package
loads nothing heavy: ``start`` and ``DevnetHandle`` load the server (uvicorn, starlette, the
EVM) on first use, and ``require()`` says how to install the extra when it is missing.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["DevnetHandle", "SpawnedDevnet", "require", "spawn", "start"]

INSTALL_HINT = "pip install 'feeslab[devnet]'"
# the extra's packages
_REQUIRED = ("starlette", "uvicorn", "eth_keys", "Crypto", "python_multipart")
_EVM_BACKENDS = ("pyrevm", "eth")  # pyrevm, or py-evm (package ``eth``) where pyrevm has no wheel
_LAZY = {
    "DevnetHandle": "feeslab.devnet.server",
    "start": "feeslab.devnet.server",
    "SpawnedDevnet": "feeslab.devnet.process",
    "spawn": "feeslab.devnet.process",
}


def missing_packages() -> list[str]:
    """The devnet extra's modules that cannot be imported here (empty when it is installed)."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if all(importlib.util.find_spec(name) is None for name in _EVM_BACKENDS):
        missing.append("pyrevm" if sys.version_info < (3, 13) else "py-evm")
    return missing


def require(reason: str = "the devnet is not installed") -> None:
    """Raise ``ConfigError`` saying how to install the devnet extra, when it is missing."""
    missing = missing_packages()
    if missing:
        from feeslab.errors import ConfigError

        raise ConfigError(f"{reason} (missing {', '.join(missing)}): {INSTALL_HINT}")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
