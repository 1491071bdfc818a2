"""Transactions of whole blocks: a node's full blocks with their receipts, one row per transaction.

The parse of ``eth_getBlockByNumber(n, true)`` and ``eth_getBlockReceipts(n)`` answers (geth's
JSON), and of the same fields wherever they come from (``feeslab.samples``' real blocks).

References
----------
.. [1] EIP-1559: Fee market change for ETH 1.0 chain, https://eips.ethereum.org/EIPS/eip-1559
.. [2] EIP-4844: Shard Blob Transactions, https://eips.ethereum.org/EIPS/eip-4844
.. [3] go-ethereum, ``internal/ethapi/api.go`` (``RPCMarshalBlock``, ``marshalReceipt``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from feeslab.errors import ProtocolError

__all__ = ["TRANSACTION_DTYPES", "parse_transactions", "slim_full_block", "slim_receipts"]

TRANSACTION_DTYPES = {
    "block_number": "int64",
    "transaction_index": "int64",
    "hash": "str",
    "type": "int64",
    "gas_limit": "int64",
    "gas_used": "int64",
    "effective_gas_price_wei": "Int64",
    "max_fee_per_gas_wei": "Int64",
    "max_priority_fee_per_gas_wei": "Int64",
    "effective_tip_wei": "Int64",
    "blob_count": "int64",
    "max_fee_per_blob_gas_wei": "Int64",
}
"""The columns and dtypes of :func:`parse_transactions`' frame. A column of wei per gas whose
values pass int64 (a max fee of 2**255 is legal) holds exact Python ints (``object``)."""

_INT64_MAX = 2**63 - 1
_TX_FIELDS = ("hash", "type", "gas", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas",
              "maxFeePerBlobGas", "blobVersionedHashes", "transactionIndex")  # fmt: skip
_RECEIPT_FIELDS = ("transactionHash", "gasUsed", "effectiveGasPrice", "transactionIndex")


def slim_full_block(block: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A full block's answer reduced to what :func:`parse_transactions` reads (its number,
    base fee and each transaction's fee fields), as it arrives: the rest is freed at once."""
    if block is None:
        return None
    return {
        "number": block["number"],
        "baseFeePerGas": block.get("baseFeePerGas"),
        "transactions": [{k: tx[k] for k in _TX_FIELDS if k in tx}
                         for tx in block.get("transactions", ())],
    }


def slim_receipts(receipts: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """A block's receipts reduced to the gas used and the price paid (no logs)."""
    if receipts is None:
        return None
    return [{k: r[k] for k in _RECEIPT_FIELDS if k in r} for r in receipts]


def _int(value: Any) -> int | None:
    return None if value is None else int(value, 16)


def _exact(values: list[int | None]) -> pd.Series:
    """Wei per gas: nullable int64, or exact Python ints where a value passes int64."""
    if any(v is not None and v > _INT64_MAX for v in values):
        return pd.Series(values, dtype="object")
    return pd.Series(pd.array(values, dtype="Int64"))


def parse_transactions(
    blocks: Sequence[Mapping[str, Any]], receipts: Sequence[Sequence[Mapping[str, Any]]]
) -> pd.DataFrame:
    """One row per transaction of ``blocks`` (full blocks), with their ``receipts``.

    Parameters
    ----------
    blocks : sequence of dict
        ``eth_getBlockByNumber(n, true)`` answers (or :func:`slim_full_block` of them).
    receipts : sequence of list of dict
        ``eth_getBlockReceipts(n)`` of each block, in the same order.

    Returns
    -------
    pandas.DataFrame
        ``block_number``, ``transaction_index`` (int64), ``hash`` (str), ``type`` (int64: 0
        legacy, 1 access list, 2 EIP-1559, 3 blob, 4 set code), ``gas_limit`` and
        ``gas_used`` (int64) [gas], ``effective_gas_price_wei`` [wei/gas] (the receipt's
        ``effectiveGasPrice``), ``max_fee_per_gas_wei`` and ``max_priority_fee_per_gas_wei``
        [wei/gas] (missing for types 0 and 1, which set only a gas price),
        ``effective_tip_wei`` [wei/gas] (the effective gas price less the block's base fee; the
        whole price before London, which had no base fee), ``blob_count`` (int64) and
        ``max_fee_per_blob_gas_wei`` [wei/blob gas] (missing but for blob transactions); the wei
        columns are ``Int64`` (see :data:`TRANSACTION_DTYPES`).

    Raises
    ------
    ProtocolError
        A block's receipts do not match its transactions (count or hashes).
    """
    if len(blocks) != len(receipts):
        raise ProtocolError(f"{len(blocks)} blocks but {len(receipts)} lists of receipts")
    columns: dict[str, list[Any]] = {name: [] for name in TRANSACTION_DTYPES}
    for block, block_receipts in zip(blocks, receipts, strict=True):
        number = int(block["number"], 16)
        base_fee = _int(block.get("baseFeePerGas")) or 0
        transactions = block.get("transactions", ())
        if len(transactions) != len(block_receipts):
            raise ProtocolError(f"block {number:,} has {len(transactions)} transactions but "
                                f"{len(block_receipts)} receipts")  # fmt: skip
        for tx, receipt in zip(transactions, block_receipts, strict=True):
            if not isinstance(tx, Mapping):
                raise ProtocolError(f"block {number:,} holds transaction hashes, not "
                                    "transactions: ask eth_getBlockByNumber(n, true)")  # fmt: skip
            if receipt.get("transactionHash") != tx["hash"]:
                raise ProtocolError(f"block {number:,}: receipt {receipt.get('transactionHash')} "
                                    f"does not belong to transaction {tx['hash']}")  # fmt: skip
            price = _int(receipt.get("effectiveGasPrice")) or _int(tx.get("gasPrice"))
            columns["block_number"].append(number)
            columns["transaction_index"].append(int(tx["transactionIndex"], 16))
            columns["hash"].append(tx["hash"])
            columns["type"].append(_int(tx.get("type")) or 0)
            columns["gas_limit"].append(int(tx["gas"], 16))
            columns["gas_used"].append(int(receipt["gasUsed"], 16))
            columns["effective_gas_price_wei"].append(price)
            columns["max_fee_per_gas_wei"].append(_int(tx.get("maxFeePerGas")))
            columns["max_priority_fee_per_gas_wei"].append(_int(tx.get("maxPriorityFeePerGas")))
            columns["effective_tip_wei"].append(None if price is None else price - base_fee)
            columns["blob_count"].append(len(tx.get("blobVersionedHashes") or ()))
            columns["max_fee_per_blob_gas_wei"].append(_int(tx.get("maxFeePerBlobGas")))
    return pd.DataFrame({
        name: (_exact(values) if dtype == "Int64"
               else pd.Series(values, dtype="str") if dtype == "str"
               else pd.Series(np.asarray(values, dtype=np.int64)))
        for (name, dtype), values in zip(TRANSACTION_DTYPES.items(), columns.values(), strict=True)
    })  # fmt: skip
