"""``eth_maxPriorityFeePerGas`` and ``eth_gasPrice`` against geth's gas price oracle, rewritten
here from go-ethereum's source (``eth/gasprice/gasprice.go`` ``SuggestTipCap`` and
``getBlockValues``, ``eth/ethconfig/config.go`` ``FullNodeGPO``, ``miner/miner.go``
``DefaultConfig.GasPrice``, ``internal/ethapi/api.go`` ``GasPrice``; commit
02b73d4ea7181464175e0a6cbecc0a3a2655a562), over the blocks the devnet serves by JSON-RPC.

The rewrite reads nothing of the devnet's code: full blocks come from
``eth_getBlockByNumber(n, true)`` over real HTTP, each transaction's tip from its JSON fields
(``protocol_reference.effective_gas_tip``). Two choices the devnet documents are taken as its
contract: the blocks' values are taken in the order they were asked (geth's goroutines may
return them in any), and geth's ``lastPrice`` is the answer at the head's parent (a node asked
at every head), the start price 1 mwei below the first.

A devnet's head only grows from its configured height, so the 50 heads spread over the
post-London history are served by the devnet's own server over a view of its mainnet chain
whose head is set (:class:`AtHead`): the chain as it stood when that block was its head.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from protocol_reference import effective_gas_tip

from feeslab.devnet import rpc
from feeslab.devnet.auth import Credentials
from feeslab.devnet.chain import ChainSet, build_chains
from feeslab.devnet.credits import CreditLedger
from feeslab.devnet.server import serve
from feeslab.devnet.service import Devnet

SEED = 7  # the session devnet's: its histories are generated once a process
LONDON = 120_000  # the devnet mainnet's London block
HEAD = 210_000  # its configured head
# geth's FullNodeGPO and gasprice.go's constants, as written there
CHECK_BLOCKS, PERCENTILE, SAMPLE_NUMBER = 20, 60, 3
IGNORE_PRICE, MAX_PRICE = 2, 500 * 10**9
START_PRICE = 10**9 // 1000  # params.GWei / 1000


class AtHead:
    """A devnet chain seen when block ``at`` was its head: blocks above it unknown."""

    def __init__(self, chain: Any) -> None:
        self._chain = chain
        self.at = chain.head()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chain, name)

    def head(self) -> int:
        return self.at

    def block(self, number: int) -> Any:
        return self._chain.block(number) if 0 <= number <= self.at else None

    def uncle_count(self, number: int) -> int | None:
        return self._chain.uncle_count(number) if 0 <= number <= self.at else None

    def pending(self) -> Any:
        return self._chain.history.block(self.at + 1)

    def number_of(self, block_hash: bytes) -> int | None:
        number = self._chain.number_of(block_hash)
        return number if number is not None and number <= self.at else None


@pytest.fixture(scope="module")
def node() -> Iterator[tuple[AtHead, Any]]:
    """(the mainnet view, a function sending JSON-RPC batches to it over HTTP)."""
    mainnet = AtHead(build_chains(SEED).by_id[1])
    devnet = Devnet(seed=SEED, chains=ChainSet((mainnet,)),
                    credentials=Credentials("k" * 32, "s" * 32),
                    ledger=CreditLedger(10**15, 10**12), dispatch=rpc.dispatch)  # fmt: skip
    handle = serve(devnet)
    ids = itertools.count(1)
    client = httpx.Client(timeout=120)

    def batch(calls: list[tuple[str, list[Any]]]) -> list[Any]:
        body = [{"jsonrpc": "2.0", "id": next(ids), "method": m, "params": p} for m, p in calls]
        answers = {a["id"]: a for a in client.post(f"{handle.url}/v3/{'k' * 32}", json=body).json()}
        out = []
        for request in body:
            answer = answers[request["id"]]
            assert "error" not in answer, (request, answer)
            out.append(answer["result"])
        return out

    try:
        yield mainnet, batch
    finally:
        client.close()
        handle.stop()


# -- the rewrite -------------------------------------------------------------------------------


def block_values(block: dict[str, Any]) -> list[int]:
    """getBlockValues: transactions sorted by effective tip, ascending; tips under the ignore
    price skipped, and the coinbase's own; the first sampleNumber tips."""
    base_fee = int(block["baseFeePerGas"], 16) if "baseFeePerGas" in block else None
    ordered = sorted(block["transactions"], key=lambda tx: effective_gas_tip(tx, base_fee))
    prices: list[int] = []
    for tx in ordered:
        tip = effective_gas_tip(tx, base_fee)
        if tip < IGNORE_PRICE:
            continue
        if tx["from"] != block["miner"]:
            prices.append(tip)
            if len(prices) >= SAMPLE_NUMBER:
                break
    return prices


class Oracle:
    """SuggestTipCap over blocks fetched by JSON-RPC, with what each head needed noted."""

    def __init__(self, batch: Any) -> None:
        self.batch = batch
        self.blocks: dict[int, dict[str, Any]] = {}
        self.answers: dict[int, int] = {}
        self.extended: set[int] = set()  # heads where a block giving one value added a block
        self.single_tip: set[int] = set()  # heads with a block of exactly one tip
        self.fallback: set[int] = set()  # heads where a block gave none: lastPrice counted

    def block(self, number: int) -> dict[str, Any]:
        if number not in self.blocks:  # the block and the 39 below it, in one batch
            wanted = [n for n in range(max(1, number - 39), number + 1) if n not in self.blocks]
            found = self.batch([("eth_getBlockByNumber", [hex(n), True]) for n in wanted])
            self.blocks.update(zip(wanted, found, strict=True))
        return self.blocks[number]

    def collect(self, head: int) -> tuple[list[int], int]:
        """SuggestTipCap's loop at ``head``: the values of the blocks it reads, and how many
        blocks gave none (each counts lastPrice, one value, whatever its amount)."""
        sent = exp = fallbacks = 0
        number = head
        results: list[int] = []
        asked: deque[int] = deque()
        while sent < CHECK_BLOCKS and number > 0:
            asked.append(number)
            sent += 1
            exp += 1
            number -= 1
        while exp > 0:
            values = block_values(self.block(asked.popleft()))
            exp -= 1
            collected = len(results) + fallbacks  # geth's len(results): lastPrices included
            if len(values) == 1:
                self.single_tip.add(head)
            if not values:
                self.fallback.add(head)
                fallbacks += 1
            if len(values or [None]) == 1 and collected + 1 + exp < CHECK_BLOCKS * 2 \
                    and number > 0:  # fmt: skip
                self.extended.add(head)
                asked.append(number)
                sent += 1
                exp += 1
                number -= 1
            results += values
        return results, fallbacks

    def suggest_tip_cap(self, head: int) -> int:
        """The answer at ``head``, lastPrice being the answer at ``head - 1`` (the heads below
        are answered first, as far down as a lastPrice is needed)."""
        below: list[tuple[int, list[int], int]] = []
        number = head
        while number not in self.answers:
            values, fallbacks = self.collect(number)
            below.append((number, values, fallbacks))
            if number == 0 or (values and not fallbacks):
                break
            number -= 1
        last_price = self.answers.get(number, START_PRICE)
        for number, values, fallbacks in reversed(below):
            results = sorted(values + [last_price] * fallbacks)
            price = results[(len(results) - 1) * PERCENTILE // 100] if results else last_price
            last_price = self.answers[number] = min(price, MAX_PRICE)
        return self.answers[head]


# -- the heads ---------------------------------------------------------------------------------


def _lean_blocks(batch: Any) -> tuple[list[int], list[int]]:
    """(empty blocks, blocks whose cheapest and dearest tips are equal: one transaction, most
    likely) after London, from eth_feeHistory's gas-used ratios and [0, 100] rewards."""
    empty, single = [], []
    for newest in range(LONDON + 1023, HEAD + 1, 1024 * 8):  # a sample of the history
        (history,) = batch([("eth_feeHistory", [hex(1024), hex(newest), [0, 100]])])
        oldest = int(history["oldestBlock"], 16)
        for i, (ratio, (low, high)) in enumerate(zip(history["gasUsedRatio"], history["reward"],
                                                     strict=True)):  # fmt: skip
            if ratio == 0:
                empty.append(oldest + i)
            elif low == high:
                single.append(oldest + i)
    return empty, single


def _spread(items: list[int], count: int) -> list[int]:
    return items[:: max(1, len(items) // count)][:count]


def test_max_priority_fee_is_geths_oracle_over_the_devnets_blocks(node):
    mainnet, batch = node
    empty, single = _lean_blocks(batch)
    assert len(empty) >= 8 and len(single) >= 8  # lean blocks exist to cover
    # heads with a lean block somewhere in their 20 blocks, then heads evenly spread
    lean = [n + offset for n, offset in zip(_spread(empty, 8) + _spread(single, 8),
                                            itertools.cycle((0, 3, 11, 19)))]  # fmt: skip
    heads = set(lean)
    for k in range(100):
        if len(heads) == 50:
            break
        heads.add(HEAD - k * (HEAD - LONDON - 20) // 33)
    heads = sorted(heads)
    assert len(heads) == 50 and heads[0] > LONDON and heads[-1] == HEAD
    oracle = Oracle(batch)
    for head in heads:
        mainnet.at = head
        tip, price, header = batch([("eth_maxPriorityFeePerGas", []), ("eth_gasPrice", []),
                                    ("eth_getBlockByNumber", ["latest", False])])  # fmt: skip
        assert int(header["number"], 16) == head
        want = oracle.suggest_tip_cap(head)
        assert int(tip, 16) == want, head
        assert int(price, 16) == want + int(header["baseFeePerGas"], 16), head
        assert batch([("eth_maxPriorityFeePerGas", [])]) == [tip]  # the head's answer, kept
    # the heads covered geth's special cases: a block of a single tip, a block of none
    # (lastPrice counted, from the parent's answer) and the extra blocks fetched for them
    asked = set(heads)
    assert len(asked & oracle.single_tip) >= 5, sorted(asked & oracle.single_tip)
    assert len(asked & oracle.fallback) >= 5, sorted(asked & oracle.fallback)
    assert len(asked & oracle.extended) >= 10, sorted(asked & oracle.extended)
    assert asked & oracle.single_tip - oracle.fallback  # one real tip, no empty block
    # and the ordinary case: heads whose 20 blocks all gave three values
    assert len(asked - oracle.extended) >= 20


def test_the_start_price_answers_at_genesis_and_the_first_blocks_follow(node):
    mainnet, batch = node
    mainnet.at = 0
    assert batch([("eth_maxPriorityFeePerGas", [])]) == [hex(START_PRICE)]  # no block read
    oracle = Oracle(batch)
    for head in (1, 2, 25):
        mainnet.at = head
        assert batch([("eth_maxPriorityFeePerGas", [])]) == [hex(oracle.suggest_tip_cap(head))]
    mainnet.at = HEAD
