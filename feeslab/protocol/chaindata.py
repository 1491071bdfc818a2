"""Per-chain parameters from ``data/chains.json``.

The file has two halves per chain: ``protocol`` (public facts of the real chain,
each with its source) and ``devnet`` (the embedded devnet's scaled-down
simulation settings).  Both the analysis layer and the devnet read it, so the
parameters cannot drift apart.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

#: Whose fork heights: the real chain's (``protocol``) or the embedded devnet's (``devnet``).
Heights = Literal["protocol", "devnet"]
HEIGHTS: tuple[str, ...] = ("protocol", "devnet")


@cache
def chains_json_bytes() -> bytes:
    """The raw bytes of ``data/chains.json``."""
    return resources.files("feeslab._data").joinpath("chains.json").read_bytes()


@cache
def load_chains() -> tuple[dict[str, Any], ...]:
    """Every chain entry of ``data/chains.json``, in file order."""
    return tuple(json.loads(chains_json_bytes().decode("utf-8"))["chains"])


@cache
def load_upgrades() -> dict[str, Any]:
    """The top-level ``upgrades`` of ``data/chains.json``: each upgrade's EIPs (with their
    parameters and sources) and its activation per network."""
    upgrades: dict[str, Any] = json.loads(chains_json_bytes().decode("utf-8")).get("upgrades", {})
    return upgrades


def chain_entry(chain_id: int) -> dict[str, Any]:
    """The entry of one chain, by chain id.

    Raises
    ------
    KeyError
        If ``data/chains.json`` does not describe ``chain_id``.
    """
    for entry in load_chains():
        if entry["chain_id"] == chain_id:
            return entry
    known = ", ".join(str(e["chain_id"]) for e in load_chains())
    raise KeyError(f"chain id {chain_id} is not in data/chains.json (known: {known})")


def chain_half(chain_id: int, heights: Heights) -> dict[str, Any]:
    """One half of a chain's entry: the real chain's facts or the devnet's settings.

    Raises
    ------
    KeyError
        If ``data/chains.json`` does not describe ``chain_id``, or has no such half of it
        (a chain the devnet does not simulate has no ``"devnet"`` half).
    ValueError
        ``heights`` is neither ``"protocol"`` nor ``"devnet"``.
    """
    if heights not in HEIGHTS:
        raise ValueError(f"heights must be one of {HEIGHTS}, not {heights!r}")
    entry = chain_entry(int(chain_id))
    if heights not in entry:
        raise KeyError(no_half(chain_id, entry, heights))
    half: dict[str, Any] = entry[heights]
    return half


def no_half(chain_id: int, entry: dict[str, Any], heights: Heights) -> str:
    """What to say when ``entry`` (chain ``chain_id``'s) has no ``heights`` half."""
    name = entry.get("network", chain_id)
    if heights == "devnet":
        return f"{name} has no devnet heights: the devnet does not simulate chain {chain_id}"
    return f"{name} (chain {chain_id}) has no {heights} heights in data/chains.json"
