"""The devnet: a local stand-in for the node JSON-RPC and Gas API service.

It serves deterministic simulated chains (mainnet, sepolia, polygon-mainnet, base-mainnet) on
loopback, with the real service's paths, authentication, credit costs and limits, so that
notebooks and tests run without a key or a network. Start one with ``start()`` (a background
thread of this process) or ``spawn()`` (its own process); the returned handle gives its URLs,
key and secret, and stops it.
"""

from feeslab.devnet.process import SpawnedDevnet, spawn
from feeslab.devnet.server import DevnetHandle, start

__all__ = ["DevnetHandle", "SpawnedDevnet", "spawn", "start"]
