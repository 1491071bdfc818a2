"""go-ethereum's gas price oracle over the devnet's own blocks: ``eth_maxPriorityFeePerGas`` and
``eth_gasPrice``.

geth answers both from ``eth/gasprice``'s ``Oracle.SuggestTipCap`` (``eth_gasPrice`` adds the
head header's base fee, ``internal/ethapi/api.go`` ``GasPrice``), with ``FullNodeGPO``'s
settings (``eth/ethconfig/config.go``). Transcribed here, over the transactions the devnet's
blocks hold (:func:`feeslab.devnet.transactions.block_body`, the ones
``eth_getBlockByNumber(n, true)`` serves):

1. **Each block's values** (``getBlockValues``): its transactions sorted by effective tip
   (``EffectiveGasTip``: ``min(maxPriorityFeePerGas, maxFeePerGas - baseFee)``, the whole gas
   price before London), ascending; tips below the ignore price (2 wei) skipped, and those of
   transactions sent by the block's coinbase; the first 3 (``sampleNumber``) kept.
2. **The blocks** (``SuggestTipCap``): the head and the 19 blocks below it (20,
   ``checkBlocks``), never block 0 (``number > 0``). A block with no value counts as one
   value, the oracle's last price (``lastPrice``). Whenever a block gives a single value
   (that one included), one more block below the lowest asked is fetched, while
   ``len(results) + 1 + exp < 2 * checkBlocks``: ``results`` the values collected so far,
   ``exp`` the blocks asked and not yet read.
3. **The answer**: the values sorted, element ``(len - 1) * 60 // 100`` (``percentile`` 60),
   capped at 500 gwei (``DefaultMaxPrice``); ``lastPrice`` when there is no value at all
   (a head at block 0).
4. **The cache**: an answer is kept by the head's hash (``lastHead``): asked again at the same
   head, geth answers what it answered, without reading a block.

Two things geth leaves to its running node are fixed here, so the answers are a pure function
of the chain (the devnet is deterministic):

* **The order the blocks' values arrive.** geth reads the blocks in goroutines and takes their
  values as they come; the order changes ``len(results)`` at each step and so, rarely, how
  many extra blocks it reads. The devnet takes them in the order they were asked (the head
  first), as geth does when each read returns before the next one ends.
* **``lastPrice``.** geth's is its previous answer, at whatever head it was last asked (at
  start, ``--miner.gasprice``: 1 mwei, ``miner.DefaultConfig.GasPrice``). The devnet's is its
  answer at the head's parent: the node was asked at every head, as a wallet polling each
  block asks it. Only a block without values reads it, so the answer at a head needs the
  answers below it only back to the first head whose blocks all give values; at head 0
  (no block read) it is the start price.

References
----------
.. [1] go-ethereum ``eth/gasprice/gasprice.go`` (``sampleNumber``, ``DefaultMaxPrice``,
   ``DefaultIgnorePrice``, ``Oracle.SuggestTipCap``, ``Oracle.getBlockValues``),
   ``eth/ethconfig/config.go`` (``FullNodeGPO``: ``Blocks: 20``, ``Percentile: 60``),
   ``eth/backend.go`` (``gasprice.NewOracle(..., config.Miner.GasPrice)``),
   ``miner/miner.go`` (``DefaultConfig.GasPrice = params.GWei / 1000``),
   ``internal/ethapi/api.go`` (``EthereumAPI.GasPrice``, ``EthereumAPI.MaxPriorityFeePerGas``),
   ``core/types/transaction.go`` (``EffectiveGasTip``), github.com/ethereum/go-ethereum at
   commit 02b73d4ea7181464175e0a6cbecc0a3a2655a562 (2026-08-20).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from feeslab.devnet.transactions import Transaction, block_body

__all__ = [
    "CHECK_BLOCKS",
    "IGNORE_PRICE",
    "MAX_PRICE",
    "PERCENTILE",
    "SAMPLE_NUMBER",
    "START_PRICE",
    "block_values",
    "effective_gas_tip",
    "gas_price",
    "suggest_tip_cap",
]

CHECK_BLOCKS = 20  # FullNodeGPO.Blocks
PERCENTILE = 60  # FullNodeGPO.Percentile
SAMPLE_NUMBER = 3  # sampleNumber: values a block gives at most
IGNORE_PRICE = 2  # DefaultIgnorePrice [wei]
MAX_PRICE = 500 * 10**9  # DefaultMaxPrice [wei]
START_PRICE = 10**9 // 1000  # miner.DefaultConfig.GasPrice, the oracle's first lastPrice [wei]


def effective_gas_tip(tx: Transaction, base_fee: int | None) -> int:
    """geth's ``EffectiveGasTip``: the tip cap without a base fee, else ``min(tipCap, feeCap -
    baseFee)`` [wei] (a legacy transaction's caps are both its gas price)."""
    if base_fee is None:
        return tx.max_priority_fee_per_gas
    return min(tx.max_priority_fee_per_gas, tx.max_fee_per_gas - base_fee)


def block_values(history: Any, number: int, coinbase: bytes) -> tuple[int, ...]:
    """geth's ``getBlockValues`` for block ``number``: the (at most 3) lowest effective tips of
    at least 2 wei, of transactions not sent by ``coinbase``, ascending [wei]."""
    body = block_body(history, number)
    tips = sorted((effective_gas_tip(tx, body.base_fee), tx.sender) for tx in body.transactions)
    values: list[int] = []
    for tip, sender in tips:
        if tip < IGNORE_PRICE or sender == coinbase:
            continue
        values.append(tip)
        if len(values) >= SAMPLE_NUMBER:
            break
    return tuple(values)


class _Cache:
    """Per history: each block's values by number and each answer by head hash, LRUs."""

    def __init__(self, blocks: int = 4096, answers: int = 4096) -> None:
        self.blocks: OrderedDict[tuple[Any, int], tuple[int, ...]] = OrderedDict()
        self.answers: OrderedDict[tuple[Any, bytes], int] = OrderedDict()
        self.sizes = {"blocks": blocks, "answers": answers}
        self.lock = threading.Lock()

    def get(self, table: str, key: tuple[Any, Any]) -> Any:
        items: OrderedDict = getattr(self, table)
        with self.lock:
            value = items.get(key)
            if value is not None:
                items.move_to_end(key)
            return value

    def put(self, table: str, key: tuple[Any, Any], value: Any) -> None:
        items: OrderedDict = getattr(self, table)
        with self.lock:
            items[key] = value
            while len(items) > self.sizes[table]:
                items.popitem(last=False)


_CACHE = _Cache()


def _values(chain: Any, number: int) -> tuple[int, ...]:
    key = (chain.history, number)
    values = _CACHE.get("blocks", key)
    if values is None:
        values = block_values(chain.history, number, chain.block(number).header.coinbase)
        _CACHE.put("blocks", key, values)
    return values


def _read(chain: Any, head: int) -> list[tuple[int, ...]]:
    """The values of the blocks ``SuggestTipCap`` reads at ``head``, in the order it takes
    them; ``()`` for a block that gives none (it then counts ``lastPrice``)."""
    asked: list[int] = []
    number = head
    while len(asked) < CHECK_BLOCKS and number > 0:
        asked.append(number)
        number -= 1
    exp, count, taken = len(asked), 0, []
    i = 0
    while i < len(asked):  # the list grows while it is read: the extra blocks
        values = _values(chain, asked[i])
        i += 1
        exp -= 1
        size = len(values) or 1  # none: lastPrice, one value
        if size == 1 and count + 1 + exp < CHECK_BLOCKS * 2 and number > 0:
            asked.append(number)
            exp += 1
            number -= 1
        count += size
        taken.append(values)
    return taken


def _answer(taken: list[tuple[int, ...]], last_price: int) -> int:
    results = sorted(v for values in taken for v in (values or (last_price,)))
    price = results[(len(results) - 1) * PERCENTILE // 100] if results else last_price
    return min(price, MAX_PRICE)


def suggest_tip_cap(chain: Any, head: int | None = None) -> int:
    """geth's ``SuggestTipCap`` at ``head`` (default: the chain's head) [wei]: what
    ``eth_maxPriorityFeePerGas`` answers there (see the module for the rule).

    Raises
    ------
    ValueError
        ``head`` outside the chain's blocks ``0 .. chain.head()``.
    """
    top = chain.head()
    head = top if head is None else head
    if not 0 <= head <= top:
        raise ValueError(f"head {head} is outside the chain's blocks 0..{top}")
    history = chain.history
    # walk down to the first head that is cached or needs no lastPrice, then answer upwards
    pending: list[tuple[int, bytes, list[tuple[int, ...]]]] = []
    last_price = START_PRICE
    number = head
    while True:
        block_hash = chain.block(number).hash
        cached = _CACHE.get("answers", (history, block_hash))
        if cached is not None:
            last_price = cached
            break
        taken = _read(chain, number)
        pending.append((number, block_hash, taken))
        if number == 0 or all(taken):  # no block falls back on lastPrice
            break
        number -= 1
    for _, block_hash, taken in reversed(pending):
        last_price = _answer(taken, last_price)
        _CACHE.put("answers", (history, block_hash), last_price)
    return last_price


def gas_price(chain: Any) -> int:
    """geth's ``eth_gasPrice``: :func:`suggest_tip_cap` plus the head header's base fee (none
    before London) [wei]."""
    head = chain.head()
    return suggest_tip_cap(chain, head) + (chain.block(head).header.base_fee_per_gas or 0)
