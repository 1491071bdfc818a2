"""``Lab``: the one object a notebook holds, and ``connect()``, which makes it.

::

    lab = feeslab.connect()                       # no key: the embedded devnet
    lab = feeslab.connect(api_key=..., api_key_secret=..., network="mainnet")  # the real service
    lab = feeslab.connect(url=dev.url, api_key=..., api_key_secret=...)        # a running devnet
    lab = feeslab.connect(rpc_url="http://127.0.0.1:8545")                     # any JSON-RPC node

The key and secret come from the arguments or from ``INFURA_API_KEY`` /
``INFURA_API_KEY_SECRET``. A ``Lab`` gives the node client (``lab.node``), the Gas API
client (``lab.gas``), the credits ledger (``lab.credits``) and the frame functions below.
Data flows one way: the fetch layer answers, ``feeslab.frames`` parses, and analysis and
plots never do I/O.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from feeslab.fetch.credits import Budget, CreditLedger, Plan, PlanLine
from feeslab.fetch.errors import ConfigError
from feeslab.fetch.gas import GasClient
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import HTTPTransport
from feeslab.frames import (
    parse_base_fee_history,
    parse_blocks,
    parse_fee_history,
    parse_uncles,
    uncle_scan_frame,
)

INFURA_NODE = "https://{network}.infura.io/v3/{key}"
INFURA_GAS = "https://gas.api.infura.io"
MAX_FEE_HISTORY = 1024  # blocks per eth_feeHistory call (geth's and Infura's limit)
# networks whose path prefix on a devnet differs from nothing (mainnet is served at the root)
DEVNET_ROOT_NETWORK = "mainnet"


@dataclass(frozen=True)
class UncleScan:
    """The result of :meth:`Lab.uncles`.

    Attributes
    ----------
    uncles : pandas.DataFrame
        One row per uncle (see ``feeslab.frames.parse_uncles``).
    blocks : pandas.DataFrame
        One row per scanned block with its ``uncle_count``, zeros included, so that rates
        count blocks without uncles (see ``feeslab.frames.uncle_scan_frame``).
    plan : Plan
        The credits the scan was planned to cost before it ran.
    """

    uncles: pd.DataFrame
    blocks: pd.DataFrame
    plan: Plan


class Lab:
    """A connection to one chain of the service (real or devnet), with frames on top.

    Use :func:`connect` to make one.
    """

    def __init__(
        self,
        *,
        node: NodeClient,
        gas: GasClient | None,
        credits: CreditLedger,
        devnet: Any = None,
        network: str = "mainnet",
    ) -> None:
        self.node = node
        self.gas = gas
        self.credits = credits
        self.devnet = devnet
        self.network = network

    def __repr__(self) -> str:
        where = "devnet" if self.devnet is not None else "service"
        return f"<Lab {self.network} on the {where}, {self.credits.spent:,} credits spent>"

    def close(self) -> None:
        """Close connections and the cache; stop the embedded devnet if this Lab started it."""
        self.node.close()
        self.node.transport.close()
        if self.gas is not None:
            self.gas.close()
        if self.devnet is not None:
            self.devnet.stop()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- fees ----------------------------------------------------------------------------------

    def base_fee_history(self, chain_id: int | None = None) -> pd.DataFrame:
        """The Gas API's last 500 base fees, exact, placed at block numbers.

        The values are placed at the 500 blocks ending at the node's head when the newest
        value equals that block's ``baseFeePerGas``, and the oldest is checked the same way;
        otherwise (the head moved between the two requests) the frame keeps a positional
        index and ``block_number`` is absent.

        Returns
        -------
        pandas.DataFrame
            See ``feeslab.frames.parse_base_fee_history``.
        """
        if self.gas is None:
            raise ConfigError("this Lab has no Gas API (connected with rpc_url=)")
        chain_id = self.node.chain_id if chain_id is None else chain_id
        values = self.gas.base_fee_history(chain_id)
        frame = parse_base_fee_history(values)
        if chain_id != self.node.chain_id or frame.empty:
            return frame
        head = self.node.head(refresh=True)
        ends = self.node.blocks([head - len(values) + 1, head], progress=False)
        fees = frame["base_fee_wei"]
        if all(b is not None and "baseFeePerGas" in b for b in ends) and (
            int(ends[0]["baseFeePerGas"], 16) == fees.iloc[0]
            and int(ends[1]["baseFeePerGas"], 16) == fees.iloc[-1]
        ):
            return parse_base_fee_history(values, newest_block=head)
        return frame

    def fee_history(
        self,
        start: int,
        stop: int,
        *,
        percentiles: Sequence[float] = (10, 50, 90),
        budget: int | None = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Base fees, gas used ratios and tip percentiles of blocks ``start`` .. ``stop - 1``.

        Uses ``eth_feeHistory``, 1,024 blocks per 80-credit call, so months of fee history
        cost little. See ``feeslab.frames.parse_fee_history`` for the columns.
        """
        _check_range(start, stop)
        newest = list(range(stop - 1, start - 1, -MAX_FEE_HISTORY))
        plan = Plan([PlanLine.of("eth_feeHistory", len(newest))], title="fee history")
        self._check_budget(plan, budget)
        answers = [
            self.node.fee_history(min(MAX_FEE_HISTORY, n - start + 1), n, percentiles)
            for n in reversed(newest)
        ]
        # each answer ends with the base fee of the block after its newest: drop that row
        frames = [parse_fee_history(a, percentiles=percentiles).iloc[:-1] for a in answers]
        frame = pd.concat(frames, ignore_index=True) if frames else parse_fee_history(
            {"oldestBlock": hex(start), "baseFeePerGas": [], "gasUsedRatio": []}
        )  # fmt: skip
        return frame[(frame["block_number"] >= start) & (frame["block_number"] < stop)]

    # -- blocks and uncles -------------------------------------------------------------------

    def blocks(self, start: int, stop: int, *, progress: bool | None = None) -> pd.DataFrame:
        """Block headers of ``start`` .. ``stop - 1`` (see ``feeslab.frames.parse_blocks``)."""
        _check_range(start, stop)
        found = self.node.blocks(range(start, stop), progress=progress)
        return parse_blocks([b for b in found if b is not None])

    def plan_uncles(self, start: int, stop: int, *, sample: int = 200) -> Plan:
        """What :meth:`uncles` will cost, before it runs.

        Headers first (``eth_getBlockByNumber``: their ``uncles`` list says which blocks have
        uncles and how many), then ``eth_getUncleByBlockNumberAndIndex`` only for uncles that
        exist: about 80 x blocks + 150 x uncles, instead of 300 x blocks for probing both
        indexes everywhere. The number of uncles is estimated from a sample of headers
        (fetched, and cached for the scan) unless every header is already cached.
        """
        _check_range(start, stop)
        count = stop - start
        step = max(1, count // sample)
        probe = self.node.blocks(range(start, stop, step), progress=False)
        found = sum(len(b["uncles"]) for b in probe if b is not None)
        per_block = found / max(1, len(probe))
        lines = [
            PlanLine.of("eth_getBlockByNumber", count),
            PlanLine.of(
                "eth_getUncleByBlockNumberAndIndex",
                round(per_block * count),
                estimated=step > 1,
            ),
        ]
        return Plan(lines, title=f"uncle scan of blocks {start:,} to {stop - 1:,}")

    def uncles(
        self,
        start: int,
        stop: int,
        *,
        budget: int | None = None,
        progress: bool | None = None,
    ) -> UncleScan:
        """Every uncle included by blocks ``start`` .. ``stop - 1`` (like ``range``).

        Returns
        -------
        UncleScan
            ``.uncles`` (one row per uncle), ``.blocks`` (uncle count per scanned block,
            zeros included) and ``.plan`` (the credits planned before running).
        """
        plan = self.plan_uncles(start, stop)
        self._check_budget(plan, budget)
        headers = self.node.blocks(range(start, stop), progress=progress)
        missing = [start + i for i, b in enumerate(headers) if b is None]
        if missing:
            raise ConfigError(
                f"the node has no block {missing[0]:,} (head {self.node.head(refresh=True):,})"
            )
        wanted = [
            (int(b["number"], 16), i) for b in headers for i in range(len(b["uncles"]))
        ]
        objects = self.node.uncles(wanted, progress=progress)
        rows = [(n, i, u) for (n, i), u in zip(wanted, objects, strict=True) if u is not None]
        uncles = parse_uncles(rows)
        return UncleScan(uncles=uncles, blocks=uncle_scan_frame(range(start, stop), uncles),
                         plan=plan)  # fmt: skip

    # -- storage -------------------------------------------------------------------------------

    def storage(self, address: str, slot: int, block: int) -> int:
        """The 32-byte word at ``slot`` of ``address`` after ``block``, as an int."""
        return self.node.storage_at(address, slot, block)

    def storage_series(
        self, address: str, slot: int, blocks: Sequence[int], *, progress: bool | None = None
    ) -> pd.DataFrame:
        """The word at ``slot`` of ``address`` after each of ``blocks``.

        See ``feeslab.frames.parse_storage_series`` for the columns; decode with
        ``feeslab.frames.decode_series`` and compute slots with ``feeslab.slots``.
        """
        from feeslab.frames import parse_storage_series

        words = self.node.storage_series(address, slot, list(blocks), progress=progress)
        answers = {
            b: "0x" + w.to_bytes(32, "big").hex() for b, w in zip(blocks, words, strict=True)
        }
        return parse_storage_series(address, slot, answers)

    # -- helpers -------------------------------------------------------------------------------

    def _check_budget(self, plan: Plan, budget: int | None) -> None:
        if budget is not None:
            Budget(budget).check(plan, self.credits)


def _check_range(start: int, stop: int) -> None:
    for name, value in (("start", start), ("stop", stop)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative block number, not {value!r}")
    if stop <= start:
        raise ValueError(f"stop ({stop}) must be greater than start ({start}), as in range()")


def connect(
    *,
    api_key: str | None = None,
    api_key_secret: str | None = None,
    network: str = "mainnet",
    url: str | None = None,
    rpc_url: str | None = None,
    seed: int = 0,
    cache: Any = True,
    progress: bool = True,
    credits_per_second: float | None = None,
    max_batch: int = 100,
    max_concurrency: int = 8,
) -> Lab:
    """A :class:`Lab` on the real service, a running devnet, any node, or the embedded devnet.

    Parameters
    ----------
    api_key, api_key_secret : str, optional
        Credentials; default ``INFURA_API_KEY`` / ``INFURA_API_KEY_SECRET``. With neither an
        argument nor the variable, and no ``url``/``rpc_url``, the embedded devnet is started
        (``feeslab.devnet.start(seed=seed)``) and used.
    network : str
        The service's network name (``mainnet``, ``sepolia``, ``polygon-mainnet``, ...).
    url : str, optional
        The root of a running devnet (every surface under one root, as ``feeslab serve``
        lays them out); needs ``api_key`` (and ``api_key_secret`` for the Gas API).
    rpc_url : str, optional
        Any standard JSON-RPC node; no Gas API then.
    seed : int
        The embedded devnet's seed.
    cache : bool or path
        The on-disk answer cache: on (user cache directory), a directory, or off.
    progress : bool
        Progress bars on long fetches.
    credits_per_second : float, optional
        Keep the fetch under this throughput (the plan's limit) [credits/s].
    max_batch, max_concurrency : int
        JSON-RPC calls per HTTP request, and requests in flight.
    """
    if url is not None and rpc_url is not None:
        raise ConfigError("give url= (a devnet or service root) or rpc_url= (a node), not both")
    api_key = api_key or os.environ.get("INFURA_API_KEY") or None
    api_key_secret = api_key_secret or os.environ.get("INFURA_API_KEY_SECRET") or None
    ledger = CreditLedger()
    devnet = None
    if rpc_url is not None:
        node_url, gas_root = rpc_url, None
    elif url is not None:
        if not api_key:
            raise ConfigError("url= needs api_key= (the devnet prints it; or INFURA_API_KEY)")
        prefix = "" if network == DEVNET_ROOT_NETWORK else f"/{network}"
        node_url, gas_root = f"{url.rstrip('/')}{prefix}/v3/{api_key}", url
    elif api_key:
        node_url, gas_root = INFURA_NODE.format(network=network, key=api_key), INFURA_GAS
    else:
        import feeslab.devnet

        devnet = feeslab.devnet.start(seed=seed)
        api_key, api_key_secret = devnet.api_key, devnet.api_key_secret
        prefix = "" if network == DEVNET_ROOT_NETWORK else f"/{network}"
        node_url, gas_root = f"{devnet.url}{prefix}/v3/{api_key}", devnet.url
    transport = HTTPTransport(
        url=node_url,
        max_batch=max_batch,
        max_concurrency=max_concurrency,
        credits_per_second=credits_per_second,
        on_response=ledger.on_response,
    )
    node = NodeClient(transport, ledger=ledger, cache=cache, progress=progress)
    gas = None
    if gas_root is not None and api_key:
        gas = GasClient(
            base_url=gas_root, api_key=api_key, api_key_secret=api_key_secret, ledger=ledger
        )
    return Lab(node=node, gas=gas, credits=ledger, devnet=devnet, network=network)
