"""The devnet's chain 1 written as Ere files, on both sides of its merge (block 165,000).

Each file holds one epoch of 8,192 blocks (the last one up to the chain's height), as reth's
``export-era --file-type ere`` lays them out (``feeslab.protocol.ere.ere_bytes``): headers,
bodies ``rlp([transactions, uncles])`` and from Shanghai ``rlp([transactions, uncles,
withdrawals])``, slim receipts ``[tx-type, status or post-state, cumulative-gas, logs]``, and
the total difficulties (the final one after the merge) with the accumulator root over the
pre-merge blocks, which equals the era1 export's root of the same epoch. No proofs: they prove
a header against the beacon chain's historical roots, which the devnet has no beacon chain
for; files are named ``devnet-<epoch:05>-<first 4 bytes of the last block's hash>-noproofs.ere``
(the format's profile for files without proofs). Transactions and receipts come from
``feeslab.devnet.transactions``, whose headers' ``transactionsRoot`` and ``receiptsRoot`` are
stand-ins (the reader knows ``devnet-`` files).

References
----------
.. [1] eth-clients/e2store-format-specs, ``formats/ere.md``; reth ``crates/era-utils``.
"""

from __future__ import annotations

from pathlib import Path

from feeslab.devnet.chain import devnet_params, history, rlp_list_of_encoded
from feeslab.devnet.era1 import export_epochs
from feeslab.devnet.transactions import block_body
from feeslab.protocol.e2store import rlp_int
from feeslab.protocol.era1 import EPOCH_SIZE
from feeslab.protocol.ere import ere_bytes

__all__ = ["epoch_bytes", "export_ere", "height"]

NETWORK = "devnet"


def height(seed: int = 0) -> int:
    """How many blocks the devnet's chain 1 has (0 .. height - 1 are exported)."""
    return devnet_params()[1].height


def epoch_bytes(epoch: int, *, seed: int = 0) -> tuple[bytes, bytes, bytes | None]:
    """(Ere file content, last block's hash, accumulator root or None) of chain 1's ``epoch``."""
    start = epoch * EPOCH_SIZE
    stop = min(start + EPOCH_SIZE, height(seed))
    if start >= stop:
        raise ValueError(f"epoch {epoch} starts past the devnet's height ({stop:,})")
    chain = history(devnet_params()[1], seed)
    chain.ensure(stop - 1)
    blocks = []
    for number in range(start, stop):
        block = chain.block(number)
        txs = block_body(chain, number)
        parts = [rlp_list_of_encoded(txs.block_items()),
                 rlp_list_of_encoded([u.encode() for u in block.uncles])]
        if block.header.withdrawals_root is not None:
            parts.append(rlp_list_of_encoded([w.encode() for w in block.withdrawals]))
        slim = [rlp_list_of_encoded([rlp_int(r.type), r._first(), rlp_int(r.cumulative_gas_used),
                                     b"\xc0"]) for r in txs.receipts(block.header.logs_bloom)]
        blocks.append((block.header.encode(), rlp_list_of_encoded(parts),
                       rlp_list_of_encoded(slim), block.total_difficulty))
    return ere_bytes(start, blocks)


def export_ere(
    out: str | Path, *, start_epoch: int = 0, epochs: int | None = None, seed: int = 0
) -> list[Path]:
    """Write the devnet chain 1's blocks as Ere files into ``out``.

    Parameters
    ----------
    out : str or Path
        A directory (made if missing).
    start_epoch : int
        The first epoch (8,192 blocks each) to write; epoch 20 holds the merge.
    epochs : int, optional
        How many; default all up to the chain's height.
    seed : int
        The devnet's seed.

    Returns
    -------
    list of Path
        The files written, each atomically (temporary file, then rename).
    """
    def ere_file(epoch: int) -> tuple[str, bytes]:
        content, last_hash, _ = epoch_bytes(epoch, seed=seed)
        return f"{NETWORK}-{epoch:05d}-{last_hash[:4].hex()}-noproofs.ere", content

    total = -(-height(seed) // EPOCH_SIZE)
    return export_epochs(out, total, start_epoch, epochs, ere_file)
