"""The counter-based random draws of the devnet's transactions that a header needs too.

:mod:`feeslab.devnet.transactions` draws every field of a block's transactions from a
counter-based stream keyed by ``(seed, chain, block, transaction, field)``.  From Amsterdam a
header commits to its block's access list (EIP-7928), and so to its transactions' senders,
nonces and recipients: :func:`touched` draws those three from the same streams, from the
header's ``gasUsed`` alone, while the chain generates the block.  Both modules take the draws
from here, so they cannot disagree.

References
----------
.. [1] G. Steele, D. Lea and C. Flood, "Fast splittable pseudorandom number generators",
   OOPSLA 2014 (splitmix64).
"""

from __future__ import annotations

import functools

import numpy as np

from feeslab.devnet._rlp import _keccak

__all__ = ["GAS_PER_TX", "TX_GAS", "touched"]

GAS_PER_TX = 1_000_000  # about one transaction per this much of a block's gas used [gas]
TX_GAS = 21_000  # intrinsic gas of a transaction: a plain transfer's whole gas [gas]
_SENDERS = 1 << 16
_RECIPIENTS = 4096
_BLOCK_STREAM = 0xFFFF  # the transaction index a block's own draws are keyed with
_MAX_NONCE = 5000

# streams of the counter-based generator (the low byte of a key)
_S_COUNT, _S_TRANSFER, _S_W1, _S_W2, _S_TYPE, _S_CAP, _S_HEAD, _S_PRIO = range(8)
_S_LIMIT, _S_BLOBFEE, _S_WHO, _S_TO, _S_NONCE, _S_VALUE, _S_INPUT, _S_BLOOM = range(8, 16)
_S_REFUNDS, _S_REFUND_SIZE = 16, 17  # EIP-7778 (Amsterdam): which calls get a refund, how much


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 that scrambles every bit (wrapping)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@functools.lru_cache(maxsize=256)
def _stream_salt(salt: int, stream: int) -> np.uint64:
    with np.errstate(over="ignore"):
        return _mix64(np.array([salt ^ (stream * 0x9E3779B97F4A7C15 & (2**64 - 1))],
                               dtype=np.uint64))[0]  # fmt: skip


def _bits(salt: int, keys: np.ndarray, stream: int) -> np.ndarray:
    """64 random bits for each key (block << 24 | index << 8) and stream: one splitmix64 of
    the key xor the stream's salt (a bijection, so distinct keys never collide)."""
    with np.errstate(over="ignore"):
        return _mix64(keys ^ _stream_salt(salt, stream))


def _uniform(salt: int, keys: np.ndarray, stream: int) -> np.ndarray:
    """Uniforms in (0, 1), one per key."""
    return ((_bits(salt, keys, stream) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


@functools.lru_cache(maxsize=8)
def _addresses(salt: bytes, kind: bytes, count: int) -> np.ndarray:
    """The first ``count`` addresses of a kind, as a (count, 20) byte matrix (one per history)."""
    prefix = salt + kind  # address i: the last 20 bytes of keccak(salt || kind || i)
    raw = b"".join(_keccak(prefix + i.to_bytes(4, "big"))[12:] for i in range(count))
    return np.frombuffer(raw, dtype=np.uint8).reshape(count, 20)


def _counts(salt: int, numbers: np.ndarray, used: np.ndarray) -> np.ndarray:
    """How many transactions blocks ``numbers`` (uint64) with header gas ``used`` hold."""
    block_keys = (numbers << np.uint64(24)) | np.uint64(_BLOCK_STREAM << 8)
    jitter = 0.6 + 0.8 * _uniform(salt, block_keys, _S_COUNT)
    counts = np.rint(used / GAS_PER_TX * jitter).astype(np.int64)
    counts = np.clip(counts, 1, np.maximum(used // TX_GAS, 1))
    counts[used == 0] = 0
    return counts


def touched(history_salt: bytes, number: int, gas_used: int) -> tuple[list[bytes], list[int],
                                                                       list[bytes]]:  # fmt: skip
    """Block ``number``'s transactions' senders, nonces and recipients, from its header's
    ``gas_used`` [gas] alone, for a history whose ``_salt`` is ``history_salt``.

    No history column is read: the chain calls this while it generates the block, for its
    EIP-7928 access list.  The same draws as :func:`feeslab.devnet.transactions.block_body`'s.
    """
    salt = int.from_bytes(history_salt[:8], "big")  # transactions._salt
    numbers = np.array([number], dtype=np.uint64)
    count = int(_counts(salt, numbers, np.array([gas_used], dtype=np.int64))[0])
    if not count:
        return [], [], []
    index = np.arange(count, dtype=np.uint64)
    keys = (numbers[0] << np.uint64(24)) | (index << np.uint64(8))
    who = (_bits(salt, keys, _S_WHO) % np.uint64(_SENDERS)).astype(np.int64)
    senders = _addresses(history_salt, b"sender", _SENDERS)[who].tobytes()
    nonces = (_bits(salt, keys, _S_NONCE) % np.uint64(_MAX_NONCE)).astype(np.int64).tolist()
    to_index = (_bits(salt, keys, _S_TO) % np.uint64(_RECIPIENTS)).astype(np.int64)
    to = _addresses(history_salt, b"to", _RECIPIENTS)[to_index].tobytes()
    return ([senders[i : i + 20] for i in range(0, 20 * count, 20)], nonces,
            [to[i : i + 20] for i in range(0, 20 * count, 20)])  # fmt: skip
