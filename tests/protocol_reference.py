"""Independent reference implementations the tests check the code against.

Written from the specifications (EIP-1559's reference code, the Yellow Paper's
header layout) with the ``rlp`` and ``eth_hash`` packages, never with feeslab's
own code, so that a test comparing the two can fail.
"""

from __future__ import annotations

from typing import Any

import rlp
from eth_hash.auto import keccak

# Yellow Paper header order; "int" fields are quantities, the rest byte strings
HEADER_FIELDS = (
    ("parentHash", "bytes"), ("sha3Uncles", "bytes"), ("miner", "bytes"),
    ("stateRoot", "bytes"), ("transactionsRoot", "bytes"), ("receiptsRoot", "bytes"),
    ("logsBloom", "bytes"), ("difficulty", "int"), ("number", "int"), ("gasLimit", "int"),
    ("gasUsed", "int"), ("timestamp", "int"), ("extraData", "bytes"), ("mixHash", "bytes"),
    ("nonce", "bytes"),
)


def eip1559_base_fee(
    parent_fee: int, used: int, limit: int, elasticity: int = 2, denominator: int = 8
) -> int:
    """EIP-1559's reference base fee update, transcribed from the EIP [wei]."""
    target = limit // elasticity
    if used == target:
        return parent_fee
    if used > target:
        return parent_fee + max(parent_fee * (used - target) // target // denominator, 1)
    return parent_fee - parent_fee * (target - used) // target // denominator


def header_rlp(block: dict[str, Any]) -> bytes:
    """RLP of the header a block/uncle JSON object describes (London adds baseFeePerGas)."""
    items: list[Any] = []
    for name, kind in HEADER_FIELDS:
        value = block[name]
        items.append(int(value, 16) if kind == "int" else bytes.fromhex(value[2:]))
    if "baseFeePerGas" in block:
        items.append(int(block["baseFeePerGas"], 16))
    for name, kind in LATER_HEADER_FIELDS:
        if name not in block:
            break
        value = block[name]
        items.append(int(value, 16) if kind == "int" else bytes.fromhex(value[2:]))
    return rlp.encode(items)


# go-ethereum core/types/block.go Header, after BaseFee: Shanghai (EIP-4895), Cancun
# (EIP-4844, EIP-4788), Prague (EIP-7685), Amsterdam (EIP-7928, EIP-7843)
LATER_HEADER_FIELDS = (
    ("withdrawalsRoot", "bytes"), ("blobGasUsed", "int"), ("excessBlobGas", "int"),
    ("parentBeaconBlockRoot", "bytes"), ("requestsHash", "bytes"),
    ("blockAccessListHash", "bytes"), ("slotNumber", "int"),
)  # fmt: skip

GAS_PER_BLOB = 2**17  # EIP-4844


def fake_exponential(factor: int, numerator: int, denominator: int) -> int:
    """EIP-4844's ``fake_exponential``, transcribed from the EIP."""
    i = 1
    output = 0
    numerator_accum = factor * denominator
    while numerator_accum > 0:
        output += numerator_accum
        numerator_accum = (numerator_accum * numerator) // (denominator * i)
        i += 1
    return output // denominator


def calc_excess_blob_gas(
    parent_excess: int, parent_used: int, target: int, maximum: int, fraction: int,
    parent_base_fee: int | None = None,
) -> int:  # fmt: skip
    """EIP-4844's ``calc_excess_blob_gas`` with EIP-7918's branch when a base fee is given."""
    target_gas = target * GAS_PER_BLOB
    if parent_excess + parent_used < target_gas:
        return 0
    if parent_base_fee is not None:
        blob_fee = fake_exponential(1, parent_excess, fraction)
        if 2**13 * parent_base_fee > GAS_PER_BLOB * blob_fee:  # BLOB_BASE_COST (EIP-7918)
            return parent_excess + parent_used * (maximum - target) // maximum
    return parent_excess + parent_used - target_gas


def header_hash(block: dict[str, Any]) -> str:
    """``0x`` keccak256 of :func:`header_rlp`: what the block's ``hash`` must be."""
    return "0x" + keccak(header_rlp(block)).hex()


def _hex_int(text: str) -> int:
    return int(text, 16)


def effective_gas_tip(tx, base_fee):
    """geth's ``Transaction.EffectiveGasTip``: the tip cap without a base fee, else
    ``min(tipCap, feeCap - baseFee)`` (a legacy transaction's caps are its gas price)."""
    typed = _hex_int(tx["type"]) != 0
    tip_cap = _hex_int(tx["maxPriorityFeePerGas"] if typed else tx["gasPrice"])
    fee_cap = _hex_int(tx["maxFeePerGas"] if typed else tx["gasPrice"])
    if base_fee is None:
        return tip_cap
    return min(tip_cap, fee_cap - base_fee)


def geth_rewards(block, receipts, percentiles):
    """geth's ``processBlock`` reward row, transcribed: zeros without transactions; else the
    (tip, gasUsed) pairs sorted by tip, and per percentile the tip where the running gas first
    reaches ``uint64(float64(gasUsed) * p / 100)``."""
    txs = block["transactions"]
    if not txs:
        return [0] * len(percentiles)
    base_fee = _hex_int(block["baseFeePerGas"]) if "baseFeePerGas" in block else None
    sorter = sorted(((effective_gas_tip(tx, base_fee), _hex_int(r["gasUsed"]))
                     for tx, r in zip(txs, receipts, strict=True)),
                    key=lambda pair: pair[0])  # fmt: skip
    reward, tx_index, sum_gas = [], 0, sorter[0][1]
    for p in percentiles:
        threshold = int(float(_hex_int(block["gasUsed"])) * p / 100)
        while sum_gas < threshold and tx_index < len(txs) - 1:
            tx_index += 1
            sum_gas += sorter[tx_index][1]
        reward.append(sorter[tx_index][0])
    return reward
