"""Compiled Solidity contracts that the devnet executes.

The sources (``*.sol``) sit beside this module; ``build.js`` compiles them with the solc-js
version pinned in the repository's ``package.json`` (``make contracts``) into ``artifacts.json``,
which is committed so that no Node.js is needed at run time. This module only reads that file.

Contracts: ``FeeslabToken`` (ERC-20), ``PriceOracle`` (packed structs), ``FeeslabProxy`` (EIP-1967)
with ``CounterV1``/``CounterV2`` behind it, ``Reverter`` (one function per kind of revert data)
and ``GasBurner`` (gas that depends on input and state).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from eth_utils import function_signature_to_4byte_selector

__all__ = ["ARTIFACTS_FILE", "Artifact", "load_artifacts", "load_manifest", "selector"]

ARTIFACTS_FILE = "artifacts.json"


@dataclass(frozen=True)
class Artifact:
    """One compiled contract.

    Attributes
    ----------
    name : str
        Contract name, e.g. ``"FeeslabToken"``.
    abi : tuple of dict
        The ABI entries as solc emits them.
    bytecode : bytes
        Creation code; append the ABI-encoded constructor arguments to deploy.
    deployed_bytecode : bytes
        Runtime code, as found at the contract's address after deployment.
    storage_layout : dict
        solc's ``storageLayout``: ``{"storage": [...], "types": {...}}``.
    method_identifiers : dict of str to str
        Function signature -> 4-byte selector as 8 hex digits, e.g.
        ``{"transfer(address,uint256)": "a9059cbb"}``.
    source : str
        File name of the Solidity source, e.g. ``"FeeslabToken.sol"``.

    Notes
    -----
    Artifacts returned by ``load_artifacts`` are shared; treat their dicts as read-only.
    """

    name: str
    abi: tuple[dict[str, Any], ...]
    bytecode: bytes
    deployed_bytecode: bytes
    storage_layout: dict[str, Any]
    method_identifiers: dict[str, str]
    source: str = ""

    def slot_of(self, label: str) -> tuple[int, int]:
        """Return ``(slot, offset)`` of the state variable ``label``.

        Parameters
        ----------
        label : str
            The variable's name in the source, e.g. ``"decimals"``.

        Returns
        -------
        tuple of int
            The storage slot and the byte offset within it (from the low-order end).

        Raises
        ------
        KeyError
            If the contract has no state variable of that name.
        """
        for entry in self.storage_layout.get("storage", []):
            if entry["label"] == label:
                return int(entry["slot"]), int(entry["offset"])
        raise KeyError(f"{self.name} has no state variable {label!r}")


@functools.cache
def load_manifest() -> dict[str, Any]:
    """Return the whole parsed ``artifacts.json``.

    Returns
    -------
    dict
        ``{"compiler": {...}, "contracts": {...}, "sources_sha256": {file: hex}}``.
    """
    text = resources.files(__name__).joinpath(ARTIFACTS_FILE).read_text(encoding="utf-8")
    manifest: dict[str, Any] = json.loads(text)
    return manifest


@functools.cache
def _artifacts() -> dict[str, Artifact]:
    contracts = load_manifest()["contracts"]
    return {
        name: Artifact(
            name=name,
            abi=tuple(entry["abi"]),
            bytecode=bytes.fromhex(entry["bytecode"].removeprefix("0x")),
            deployed_bytecode=bytes.fromhex(entry["deployedBytecode"].removeprefix("0x")),
            storage_layout=entry["storageLayout"],
            method_identifiers=entry["methodIdentifiers"],
            source=entry["source"],
        )
        for name, entry in sorted(contracts.items())
    }


def load_artifacts() -> dict[str, Artifact]:
    """Return every compiled contract, keyed by contract name.

    The file is read once per process; each call returns a new dict of the same ``Artifact``
    objects.

    Returns
    -------
    dict of str to Artifact
        E.g. ``load_artifacts()["FeeslabToken"].bytecode``.
    """
    return dict(_artifacts())


def selector(signature: str) -> bytes:
    """Return the 4-byte selector of a function, error or event signature.

    Parameters
    ----------
    signature : str
        Canonical signature with no spaces or argument names, e.g. ``"transfer(address,uint256)"``
        or ``"Error(string)"``.

    Returns
    -------
    bytes
        The first four bytes of keccak-256 of the signature.
    """
    return function_signature_to_4byte_selector(signature)
