"""Datasets: one module per dataset, each owning its plan, its fetch and its parse.

Every module has ``plan(source, ...) -> Plan`` (the credits its calls cost, known before any
is sent) and ``get(source, ...)`` (the frame, ``attrs`` saying chain, spec and source). A
*source* is where the data comes from: ``feeslab.sources.rpc.RpcSource`` (the service, a
devnet or any node over JSON-RPC) or ``feeslab.sources.era1.Era1Source`` (pre-merge archive
files: blocks, uncles and fee history, at zero credits). The pure parsers are
``feeslab.frames``'; ``feeslab.lab.Lab`` binds these functions to one connection.

==============  ====================================================================
module          dataset
==============  ====================================================================
base_fees       the Gas API's last 500 base fees, placed at block numbers
fee_history     ``eth_feeHistory``: base fees, gas used and tip percentiles per block
blocks          block headers
uncles          every uncle of a range of blocks, and the uncle count of each block
storage         a storage slot of a contract over blocks
calls           ``eth_call`` of one function, decoded, at one block or many
gas             ``eth_estimateGas`` priced at the base fee, and the least gas needed
==============  ====================================================================

Blobs need no module of their own: ``blocks`` and ``fee_history`` carry the blob columns
(``blob_gas_used``, ``excess_blob_gas``, ``base_fee_per_blob_gas_wei``,
``blob_gas_used_ratio``).
"""

from feeslab.datasets import base_fees, blocks, calls, fee_history, gas, storage, uncles

__all__ = ["base_fees", "blocks", "calls", "fee_history", "gas", "storage", "uncles"]
