"""The devnet's chain 1 written as era1 files, the format of mainnet's pre-merge archive.

Blocks come from ``feeslab.devnet.chain``'s public ``history``/``devnet_params``, their
transactions and receipts from ``feeslab.devnet.transactions``: each body is
``rlp([transactions, uncles])`` and each receipts record the receipts in geth's stored form
(``rlp([status or root, cumulativeGasUsed, logs])``), written by
``feeslab.protocol.era1.era1_bytes``; files are named like the public archive's:
``devnet-00000-<first 4 bytes of the accumulator root>.era1``.  The devnet's
``transactionsRoot`` and ``receiptsRoot`` are stand-ins that do not commit to them (see
``feeslab.devnet.transactions``), which the era1 reader allows for files named ``devnet-``.

References
----------
.. [1] nimbus-eth1, ``docs/e2store.md``; go-ethereum, ``internal/era`` (era1 builder).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from feeslab.devnet.chain import devnet_params, history, rlp_list_of_encoded
from feeslab.devnet.transactions import block_body
from feeslab.protocol.era1 import EPOCH_SIZE, era1_bytes

__all__ = ["epoch_bytes", "export_epochs", "export_era1", "premerge_blocks"]

NETWORK = "devnet"


def premerge_blocks(seed: int = 0) -> int:
    """How many pre-merge blocks the devnet's chain 1 has (its merge height)."""
    merge = devnet_params()[1].merge_block
    if merge is None:  # pragma: no cover - chain 1 always merges
        raise ValueError("the devnet's chain 1 has no merge height")
    return merge


def epoch_bytes(epoch: int, *, seed: int = 0) -> tuple[bytes, bytes]:
    """(era1 file content, accumulator root) of the devnet chain 1's ``epoch``."""
    start = epoch * EPOCH_SIZE
    stop = min(start + EPOCH_SIZE, premerge_blocks(seed))
    if start >= stop:
        raise ValueError(f"epoch {epoch} starts past the devnet's merge ({stop:,})")
    chain = history(devnet_params()[1], seed)
    chain.ensure(stop - 1)
    blocks = []
    for number in range(start, stop):
        block = chain.block(number)
        txs = block_body(chain, number)
        uncles = rlp_list_of_encoded([u.encode() for u in block.uncles])
        body = rlp_list_of_encoded([rlp_list_of_encoded(txs.block_items()), uncles])
        stored = [r.encode_storage() for r in txs.receipts(block.header.logs_bloom)]
        receipts = rlp_list_of_encoded(stored)
        blocks.append((block.header.encode(), body, receipts, block.total_difficulty))
    return era1_bytes(start, blocks)


def export_era1(
    out: str | Path, *, start_epoch: int = 0, epochs: int | None = None, seed: int = 0
) -> list[Path]:
    """Write the devnet chain 1's pre-merge blocks as era1 files into ``out``.

    Parameters
    ----------
    out : str or Path
        A directory (made if missing).
    start_epoch : int
        The first epoch (8,192 blocks each) to write.
    epochs : int, optional
        How many; default all up to the devnet's merge (block 165,000: 21 files, the last
        one partial, as mainnet's last era1 file is).
    seed : int
        The devnet's seed.

    Returns
    -------
    list of Path
        The files written, each atomically (temporary file, then rename).
    """
    def era1_file(epoch: int) -> tuple[str, bytes]:
        content, root = epoch_bytes(epoch, seed=seed)
        return f"{NETWORK}-{epoch:05d}-{root[:4].hex()}.era1", content

    total = -(-premerge_blocks(seed) // EPOCH_SIZE)
    return export_epochs(out, total, start_epoch, epochs, era1_file)


def export_epochs(out: str | Path, total: int, start_epoch: int, epochs: int | None,
                  file_of: Callable[[int], tuple[str, bytes]]) -> list[Path]:  # fmt: skip
    """Write epochs ``start_epoch`` .. (``epochs`` of them, default to ``total``) into the
    directory ``out`` (made if missing), ``file_of(epoch)`` giving each file's name and
    content, each written atomically (temporary file, then rename): the era1 and Ere
    exports' one loop."""
    if start_epoch < 0 or start_epoch >= total:
        raise ValueError(f"start_epoch must be in 0..{total - 1}, got {start_epoch}")
    if epochs is not None and epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    last = total if epochs is None else min(total, start_epoch + epochs)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for epoch in range(start_epoch, last):
        name, content = file_of(epoch)
        path = directory / name
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(content)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        written.append(path)
    return written
