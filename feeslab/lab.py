"""``Lab``: the one object a notebook holds, and ``connect()``, which makes it.

::

    lab = feeslab.connect()                       # no key: the embedded devnet
    lab = feeslab.connect(api_key=..., api_key_secret=..., network="mainnet")  # the real service
    lab = feeslab.connect(url=dev.url, api_key=..., api_key_secret=...)        # a running devnet
    lab = feeslab.connect(rpc_url="http://127.0.0.1:8545")                     # any JSON-RPC node

The key and secret come from the arguments or from ``INFURA_API_KEY`` /
``INFURA_API_KEY_SECRET``. A ``Lab`` gives the node client (``lab.node``), the Gas API
client (``lab.gas``), the credits ledger (``lab.credits``), the multichain wallet client
(``lab.wallet``, on a devnet or with ``wallet_url=``), the storage (IPFS) client
(``lab.ipfs``, with ``publish_frame``/``load_frame`` to share datasets by CID) and the frame
functions below.
Data flows one way: the fetch layer answers, ``feeslab.frames`` parses, and analysis and
plots never do I/O.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.chainspec import ChainSpec, with_chain
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.credits import (
    Budget,
    CreditLedger,
    Plan,
    PlanLine,
    ask_devnet_credits_per_second,
    pacing_rate,
)
from feeslab.fetch.errors import ConfigError, RevertError, redact
from feeslab.fetch.gas import GasClient
from feeslab.fetch.ipfs import IpfsClient
from feeslab.fetch.node import NodeClient, quantity
from feeslab.fetch.transport import HTTPTransport, RpcCall
from feeslab.fetch.ws import Subscription, WebSocketTransport
from feeslab.frames import (
    call_object,
    decode_output,
    encode_call,
    error_text,
    function_spec,
    parse_base_fee_history,
    parse_blocks,
    parse_call_series,
    parse_cost_estimates,
    parse_fee_history,
    parse_uncles,
    uncle_scan_frame,
)
from feeslab.frames.calls import ZERO_ADDRESS
from feeslab.frames.io import frame_from_bytes, frame_to_bytes

if TYPE_CHECKING:
    from feeslab.fetch.wallet import WalletClient

INFURA_NODE = "https://{network}.infura.io/v3/{key}"
INFURA_GAS = "https://gas.api.infura.io"
INFURA_IPFS = "https://ipfs.infura.io:5001"
DEVNET_CLIENT = "feeslab-devnet/"  # how a devnet's web3_clientVersion begins
UNCLE_SAMPLE = 200  # headers read to estimate a scan's uncles (the scan reuses them)
MAX_FEE_HISTORY = 1024  # blocks per eth_feeHistory call (geth's and Infura's limit)
_NEVER_ENOUGH_GAS = 20_999  # below every transaction's intrinsic gas (21,000): always fails
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_BLOCK_TAGS = ("latest", "pending", "safe", "finalized", "earliest")
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
        wallet_url: str | None = None,
        ipfs: IpfsClient | None = None,
        rpc_url: str | None = None,
        era1: Any = None,
    ) -> None:
        self.node = node
        self.era1 = era1  # an Era1Source: blocks, uncles and fee_history read its files
        self.gas = gas
        self.ipfs = ipfs
        self.credits = credits
        self.devnet = devnet
        self.network = network
        self._heights: str | None = None if era1 is None else era1.heights
        self._chain_spec: tuple[ChainSpec | None] | None = None  # asked once, then kept
        self._own_chain_id: int | None = None
        self.rpc_url = rpc_url  # any node's URL (connect(rpc_url=)); None on the service
        self.wallet_url = wallet_url
        self._wallet: Any = None

    def __repr__(self) -> str:
        if self.era1 is not None:
            return f"<Lab on era1 files ({len(self.era1.files)}), no node>"
        if self.rpc_url is not None:  # any node: no network name, no credits
            known = self.node._identity  # shown only when already asked: a repr sends nothing
            chain = f"chain {known.split('-', 1)[0]}" if known else "a node"
            return f"<Lab {chain} at {redact(self.rpc_url)}, {self.credits.calls:,} calls>"
        where = "devnet" if self.devnet is not None else "service"
        return f"<Lab {self.network} on the {where}, {self.credits.spent:,} credits spent>"

    def close(self) -> None:
        """Close connections and the cache; stop the embedded devnet if this Lab started it."""
        if self.era1 is not None:
            self.era1.close()
            return
        self.node.close()
        self.node.transport.close()
        if self.gas is not None:
            self.gas.close()
        if self.ipfs is not None:
            self.ipfs.close()
        if self._wallet is not None:
            self._wallet.close()
        if self.devnet is not None:
            self.devnet.stop()

    @property
    def wallet(self) -> WalletClient:
        """The multichain wallet client (CAIP-25 sessions; see ``feeslab.fetch.wallet``),
        connected on first use.

        On a devnet it is the devnet's emulated wallet (``WS /wallet``). The real service has
        no wallet endpoint: the multichain API belongs to MetaMask's desktop extension, so a
        Lab on the service needs ``connect(wallet_url=...)``.
        """
        if self._wallet is None:
            if self.wallet_url is None:
                raise ConfigError(
                    "this Lab has no wallet: the multichain wallet API (CAIP-25) is served by "
                    "MetaMask's desktop extension, not by the node service. Use the devnet "
                    "(feeslab.connect() without a key, or url= of a running devnet), or pass "
                    "connect(wallet_url='ws://.../wallet') for a wallet you can reach"
                )
            from feeslab.fetch.wallet import WalletClient

            self._wallet = WalletClient(url=self.wallet_url)
        return self._wallet

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- shared datasets (IPFS) ----------------------------------------------------------------

    def _storage(self) -> IpfsClient:
        if self.ipfs is None:
            raise ConfigError(
                "this Lab has no storage (IPFS) API: it needs the service or a devnet with the "
                "API key and its secret (connect(rpc_url=) has none)"
            )
        return self.ipfs

    def publish_frame(self, frame: pd.DataFrame, format: str = "parquet", **options: Any) -> str:
        """Share a frame: add it to the storage API as a Parquet (or CSV) file, pinned.

        Returns
        -------
        str
            Its CID: anyone with the CID can load the same frame, and check it.

        See Also
        --------
        feeslab.frames.io.frame_to_bytes : the file's bytes.
        feeslab.fetch.ipfs.IpfsClient.publish : the options (``name``, ``pin``,
            ``cid_version``).
        """
        data = frame_to_bytes(frame, format)
        options.setdefault("name", f"frame.{format}")
        return self._storage().publish(data, **options)

    def load_frame(self, cid: str) -> pd.DataFrame:
        """The frame published under ``cid``; its bytes are hashed here and must give ``cid``.

        Raises
        ------
        CidMismatchError
            The storage API sent bytes that are not the ones ``cid`` names.
        """
        return frame_from_bytes(self._storage().load(cid))

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
            See ``feeslab.frames.parse_base_fee_history``; ``attrs`` say its chain (see
            :meth:`chain_spec`).
        """
        if self.gas is None:
            raise ConfigError("this Lab has no Gas API (connected with rpc_url=)")
        chain_id = self.node.chain_id if chain_id is None else chain_id
        values = self.gas.base_fee_history(chain_id)
        frame = self._tag(parse_base_fee_history(values), chain_id)
        if chain_id != self.node.chain_id or frame.empty:
            return frame
        head = self.node.head(refresh=True)
        ends = self.node.blocks([head - len(values) + 1, head], progress=False)
        fees = frame["base_fee_wei"]
        if all(b is not None and "baseFeePerGas" in b for b in ends) and (
            int(ends[0]["baseFeePerGas"], 16) == fees.iloc[0]
            and int(ends[1]["baseFeePerGas"], 16) == fees.iloc[-1]
        ):
            return self._tag(parse_base_fee_history(values, newest_block=head))
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
        if self.era1 is not None:
            return self.era1.fee_history(start, stop, percentiles=percentiles, progress=progress)
        _check_range(start, stop)
        newest = list(range(stop - 1, start - 1, -MAX_FEE_HISTORY))
        plan = Plan([PlanLine.of("eth_feeHistory", len(newest))], title="fee history")
        self._check_budget(plan, budget)
        self._check_head(stop)
        answers = [
            self.node.fee_history(min(MAX_FEE_HISTORY, n - start + 1), n, percentiles)
            for n in reversed(newest)
        ]
        # each answer ends with the base fee of the block after its newest: drop that row
        frames = [parse_fee_history(a, percentiles=percentiles).iloc[:-1] for a in answers]
        frame = pd.concat(frames, ignore_index=True) if frames else parse_fee_history(
            {"oldestBlock": hex(start), "baseFeePerGas": [], "gasUsedRatio": []}
        )  # fmt: skip
        return self._tag(frame[(frame["block_number"] >= start) & (frame["block_number"] < stop)])

    # -- blocks and uncles -------------------------------------------------------------------

    @property
    def heights(self) -> str:
        """Whose fork heights this chain follows, for ``feeslab.analysis``'s ``heights=``.

        ``"devnet"`` on a feeslab devnet (embedded, or reached with ``url=``/``rpc_url=``: its
        ``web3_clientVersion`` says so; it compresses each chain's forks into a short history)
        and ``"protocol"`` elsewhere (the real chains' fork heights, from ``data/chains.json``).
        Asked once (one ``web3_clientVersion`` call) and remembered.
        """
        if self._heights is None:
            if self.devnet is not None:
                self._heights = "devnet"
            else:
                version = str(self.node.request("web3_clientVersion", []))
                self._heights = "devnet" if version.startswith(DEVNET_CLIENT) else "protocol"
        return self._heights

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The rules this Lab's chain follows (``feeslab.chainspec.ChainSpec``), which every
        frame it returns carries in ``attrs`` for the analysis to read.

        The real chain's heights on the service and on other nodes; the devnet's compressed
        heights on a feeslab devnet (see :attr:`heights`). None for a chain that
        ``data/chains.json`` does not describe (e.g. a local node's chain 1337): the analysis
        then needs explicit parameters.
        """
        if self._chain_spec is None and self.era1 is not None:  # mainnet's archive, or a devnet's
            self._chain_spec = (ChainSpec.from_chain(1, heights=self.heights),)
        if self._chain_spec is None:
            chain_id = self._chain_id()
            known = chain_id in ChainSpec.known()
            self._chain_spec = (ChainSpec.from_chain(chain_id, heights=self.heights)
                                if known else None,)  # fmt: skip
        return self._chain_spec[0]

    @property
    def source(self) -> str:
        """Where this Lab's frames come from: ``"devnet"`` (a feeslab devnet), ``"node"``
        (another node, ``connect(rpc_url=)``) or ``"service"``; in every frame's ``attrs``."""
        if self.era1 is not None:
            return "era1"
        if self.heights == "devnet":
            return "devnet"
        return "node" if self.rpc_url is not None else "service"

    def _chain_id(self) -> int:
        """The node's chain id: from the cache's identity when known, else ``eth_chainId``
        alone (without the cache the genesis block the identity needs is not asked for)."""
        if self.node._identity is not None:
            return self.node.chain_id
        if self._own_chain_id is None:
            self._own_chain_id = int(self.node.request("eth_chainId", []), 16)
        return self._own_chain_id

    def _tag(self, frame: pd.DataFrame, chain_id: int | None = None) -> pd.DataFrame:
        """``frame`` with ``attrs`` saying its chain, the chain's spec and this Lab's source."""
        own = self._chain_id()
        if chain_id is None or chain_id == own:
            spec = self.chain_spec
        else:  # the Gas API of another chain of the same service: same heights
            known = chain_id in ChainSpec.known()
            spec = ChainSpec.from_chain(chain_id, heights=self.heights) if known else None
        return with_chain(frame, chain_id=chain_id or own, spec=spec, source=self.source)

    def subscribe(self, kind: str = "newHeads", *params: Any) -> Subscription:
        """``eth_subscribe(kind, *params)`` on this Lab's WebSocket: iterate the result for
        the notifications (``for head in sub`` or ``next(sub)``); close it when done.

        Needs ``connect(websocket=True)`` (HTTP cannot push); on the embedded devnet new heads
        come when it grows, ``connect(block_time=...)``.
        """
        if not isinstance(self.node.transport, WebSocketTransport):
            raise ConfigError("subscriptions need a WebSocket: connect(..., websocket=True)")
        return self.node.transport.subscribe(kind, *params)

    def blocks(self, start: int, stop: int, *, progress: bool | None = None) -> pd.DataFrame:
        """Block headers of ``start`` .. ``stop - 1`` (see ``feeslab.frames.parse_blocks``)."""
        if self.era1 is not None:
            return self.era1.blocks(start, stop, progress=progress)
        _check_range(start, stop)
        self._check_head(stop)
        with gc_paused():  # the decoded headers die before the collector resumes
            found = self.node.blocks(range(start, stop), progress=progress)
            return self._tag(parse_blocks([b for b in found if b is not None]))

    def plan_uncles(self, start: int, stop: int, *, sample: int = UNCLE_SAMPLE) -> Plan:
        """What :meth:`uncles` will cost, before it runs.

        Headers first (``eth_getBlockByNumber``: their ``uncles`` list says which blocks have
        uncles and how many), then ``eth_getUncleByBlockNumberAndIndex`` only for uncles that
        exist: about 80 x blocks + 150 x uncles, instead of 300 x blocks for probing both
        indexes everywhere. The number of uncles is estimated from a sample of headers
        (fetched, and cached for the scan) unless every header is already cached.
        """
        if self.era1 is not None:  # files cost nothing
            return Plan([], title=f"uncle scan of blocks {start:,} to {stop - 1:,} (era1 files)")
        return self._plan_uncles(start, stop, sample)[0]

    def _plan_uncles(self, start: int, stop: int, sample: int) -> tuple[Plan, dict[int, Any]]:
        """The plan, and the sampled headers by number (the scan need not fetch them again)."""
        _check_range(start, stop)
        self._check_head(stop)
        count = stop - start
        step = max(1, count // sample)
        numbers = range(start, stop, step)
        probe = self.node.blocks(numbers, progress=False)
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
        plan = Plan(lines, title=f"uncle scan of blocks {start:,} to {stop - 1:,}")
        return plan, dict(zip(numbers, probe, strict=True))

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
        if self.era1 is not None:
            uncles, blocks = self.era1.uncle_rows(start, stop, progress=progress)
            return UncleScan(uncles=uncles, blocks=blocks, plan=self.plan_uncles(start, stop))
        with gc_paused():  # the decoded headers die before the collector resumes
            plan, sampled = self._plan_uncles(start, stop, UNCLE_SAMPLE)
            self._check_budget(plan, budget)
            rest = [n for n in range(start, stop) if n not in sampled]
            fetched = dict(zip(rest, self.node.blocks(rest, progress=progress), strict=True))
            headers = [sampled[n] if n in sampled else fetched[n] for n in range(start, stop)]
            missing = [start + i for i, b in enumerate(headers) if b is None]
            if missing:
                head = self.node.head(refresh=True)
                raise ConfigError(f"the node has no block {missing[0]:,} (head {head:,})")
            wanted = [
                (int(b["number"], 16), i) for b in headers for i in range(len(b["uncles"]))
            ]
            objects = self.node.uncles(wanted, progress=progress)
            rows = [(n, i, u) for (n, i), u in zip(wanted, objects, strict=True) if u is not None]
            uncles = self._tag(parse_uncles(rows))
            blocks = self._tag(uncle_scan_frame(range(start, stop), uncles))
            return UncleScan(uncles=uncles, blocks=blocks, plan=plan)

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
        return self._tag(parse_storage_series(address, slot, answers))

    # -- plans ---------------------------------------------------------------------------------

    def plan_fee_history(self, start: int, stop: int) -> Plan:
        """What :meth:`fee_history` of ``start`` .. ``stop - 1`` costs (a call per 1,024 blocks)."""
        _check_range(start, stop)
        if self.era1 is not None:  # files cost nothing
            return Plan([], title=f"fee history of blocks {start:,} to {stop - 1:,} (era1)")
        count = len(range(stop - 1, start - 1, -MAX_FEE_HISTORY))
        return Plan([PlanLine.of("eth_feeHistory", count)],
                    title=f"fee history of blocks {start:,} to {stop - 1:,}")

    def plan_base_fee_history(self) -> Plan:
        """What :meth:`base_fee_history` costs: the Gas API call, the head and two headers."""
        return Plan(
            [
                PlanLine.of("baseFeeHistory", 1, kind="gas"),
                PlanLine.of("eth_blockNumber", 1),
                PlanLine.of("eth_getBlockByNumber", 2, note="to place the values at blocks"),
            ],
            title="Gas API base fee history",
        )

    def plan_storage_series(
        self, address: str, slot: int, blocks: Sequence[int], *, less_cached: bool = True
    ) -> Plan:
        """What :meth:`storage_series` costs, less the answers already in the cache (unless
        ``less_cached=False``: the cost from scratch, the same on every run, e.g. for a
        notebook's printed output)."""
        calls = [
            RpcCall("eth_getStorageAt", [address, quantity(slot), quantity(b)]) for b in blocks
        ]
        title = f"storage slot over {len(calls):,} blocks"
        return self._plan_calls(calls, title, less_cached=less_cached)

    # -- contract calls and gas estimates ------------------------------------------------------

    def call(
        self,
        to: str,
        function: str | Mapping[str, Any],
        args: Sequence[Any] = (),
        *,
        block: int | str = "latest",
        sender: str = ZERO_ADDRESS,
        returns: Sequence[str] | None = None,
        abi: Sequence[Mapping[str, Any]] | None = None,
    ) -> Any:
        """``eth_call`` of one function at one block, decoded.

        Parameters
        ----------
        to : str
            The contract's address.
        function : dict or str
            The function's ABI entry, a signature ``"balanceOf(address)"`` (with ``returns``,
            or ``"balanceOf(address)(uint256)"``), or its name in ``abi``.
        args : sequence
            The arguments, as Python values.
        block : int or str
            A block number (answers about settled blocks are cached) or a tag (``"latest"``).
        sender : str
            The call's ``from`` [address]; the zero address by default.
        returns : list of str, optional
            The return types, when ``function`` is a bare signature.
        abi : list of dict, optional
            The contract's ABI: looks up ``function`` by name and decodes custom errors.

        Returns
        -------
        Any
            The single return value itself, a tuple of them when the function returns several,
            None when it returns nothing. Ints are exact Python ints.

        Raises
        ------
        feeslab.fetch.errors.RevertError
            When the call reverts: ``.reason`` (``Error(string)`` or the panic text),
            ``.panic_code``, and ``.error_name``/``.error_args`` for a custom error in ``abi``.
        ValueError
            When the answer does not decode as the outputs (e.g. no code at ``to``).
        """
        spec = function_spec(function, returns=returns, abi=abi)
        request = {"from": _address(sender, "sender"), "to": _address(to, "to"),
                   "data": encode_call(spec, args)}
        answer = self.node.run([RpcCall("eth_call", [request, _block_param(block)])],
                               progress=False)[0]
        if isinstance(answer.error, RevertError):
            raise RevertError.from_rpc(answer.error.raw, abi=abi) from None
        values = decode_output(spec, answer.unwrap())
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def call_series(
        self,
        to: str,
        function: str | Mapping[str, Any],
        args: Sequence[Any],
        blocks: Sequence[int],
        *,
        sender: str = ZERO_ADDRESS,
        returns: Sequence[str] | None = None,
        abi: Sequence[Mapping[str, Any]] | None = None,
        budget: int | None = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """``eth_call`` of one function with the same arguments at each of ``blocks``, decoded.

        A revert is data, not an exception: its decoded reason goes in that row's ``error``
        column and the other rows are kept. Other node errors (e.g. a block beyond the head)
        raise. Answers about settled blocks are cached, so asking again costs nothing.

        Parameters
        ----------
        to, function, args, sender, returns, abi
            As for :meth:`call`.
        blocks : sequence of int
            Block numbers (e.g. a ``range``).
        budget : int, optional
            Refuse (``BudgetExceeded``) before sending if this Lab's spending plus the calls
            the cache cannot answer would pass it [credits]; ``eth_call`` is 80 credits.

        Returns
        -------
        pandas.DataFrame
            One row per block: ``block_number`` (int64), one column per output (named as in
            the ABI; ``uint256``/``int256`` and other ints wider than int64 as exact Python ints
            in ``object`` columns) and ``error`` (str, missing where the call succeeded). See
            ``feeslab.frames.parse_call_series``.
        """
        spec = function_spec(function, returns=returns, abi=abi)
        request = {"from": _address(sender, "sender"), "to": _address(to, "to"),
                   "data": encode_call(spec, args)}
        numbers = [_block_number(b) for b in blocks]
        calls = [RpcCall("eth_call", [request, quantity(n)]) for n in numbers]
        if budget is not None:
            plan = self._plan_calls(calls, f"{spec.name}() at {len(calls):,} blocks")
            self._check_budget(plan, budget)
        results = self.node.run(calls, progress=progress, description="eth_call")
        answers: dict[int, Any] = {}
        for n, answer in zip(numbers, results, strict=True):
            if answer.ok:
                answers[n] = answer.result
            elif isinstance(answer.error, RevertError):
                answers[n] = answer.error
            else:
                raise answer.error
        return self._tag(parse_call_series(spec, answers, abi=abi))

    def estimate_costs(
        self,
        transactions: Sequence[Mapping[str, Any]],
        *,
        block: int | str = "latest",
        priority_fee_wei: int = 0,
        abi: Sequence[Mapping[str, Any]] | None = None,
        budget: int | None = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """``eth_estimateGas`` of each transaction, and its cost at the block's base fee.

        Parameters
        ----------
        transactions : list of dict
            Each with ``from``, ``to``, ``data`` (or ``input``) and optionally ``value`` [wei]
            and ``gas`` (see ``feeslab.frames.call_object``).
        block : int or "latest"
            The block whose state the estimates run on and whose ``baseFeePerGas`` prices
            them; ``"latest"`` is resolved to the head's number first, so that estimates and
            base fee come from the same block (reported in ``block_number``).
        priority_fee_wei : int
            Tip per gas to add to the base fee [wei/gas].
        abi : list of dict, optional
            A contract ABI whose custom errors decode the reverts.
        budget : int, optional
            Refuse before sending if this Lab's spending plus the calls would pass it
            [credits]; ``eth_estimateGas`` is 300 credits.

        Returns
        -------
        pandas.DataFrame
            One row per transaction, in order: ``block_number``, ``gas_estimate`` (Int64)
            [gas], ``base_fee_wei``, ``priority_fee_wei`` [wei/gas] and ``cost_wei`` [wei]
            (exact Python ints, object), ``cost_gwei``, ``cost_eth`` (float64), ``error`` (the
            decoded revert or the node's error for that transaction; it does not raise). See
            ``feeslab.frames.parse_cost_estimates``.
        """
        if isinstance(transactions, Mapping):
            raise TypeError("transactions must be a list of dicts (wrap a single one in [])")
        requests = [call_object(tx) for tx in transactions]
        if block == "latest":
            number = self.node.head(refresh=True)
        elif isinstance(block, str):
            raise ValueError(f'block must be a block number or "latest", not {block!r}')
        else:
            number = _block_number(block)
        calls = [RpcCall("eth_estimateGas", [r, quantity(number)]) for r in requests]
        if budget is not None:
            plan = self._plan_calls(calls, f"gas estimates of {len(calls):,} transactions")
            self._check_budget(plan + Plan([("eth_getBlockByNumber", 1)]), budget)
        (header,) = self.node.blocks([number], progress=False)
        if header is None:
            raise ConfigError(
                f"the node has no block {number:,} (head {self.node.head(refresh=True):,})"
            )
        base_fee = header.get("baseFeePerGas")
        answers = [
            a.result if a.ok else a.error
            for a in self.node.run(calls, progress=progress, description="eth_estimateGas")
        ]
        return self._tag(
            parse_cost_estimates(
                answers,
                block_number=number,
                base_fee_wei=None if base_fee is None else int(base_fee, 16),
                priority_fee_wei=priority_fee_wei,
                abi=abi,
            )
        )

    def gas_needed(
        self,
        transactions: Sequence[Mapping[str, Any]],
        *,
        block: int | str = "latest",
        abi: Sequence[Mapping[str, Any]] | None = None,
        budget: int | None = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """The least gas each transaction succeeds with, found exactly, beside its estimate.

        ``eth_estimateGas`` binary-searches the gas limit and stops within 1.5 % of the least
        one that succeeds (geth's estimator). This runs :meth:`estimate_costs`, then the same
        search to the end: ``eth_call`` of the transaction at the same block with ``gas`` set,
        between 20,999 (below any transaction's intrinsic gas, so failing) and the estimate
        (checked to succeed). Each step probes every transaction in one batch: 11 to 21
        ``eth_call`` per transaction (80 credits each), settled successes cached.

        For code that runs straight through without refunds, the gas needed is the gas the
        transaction uses; refunds (EIP-3529) make the gas used smaller, and a call into
        another contract needs more than it uses, as a 64th of the gas is kept back (EIP-150).

        Parameters
        ----------
        transactions, block, abi, progress
            As for :meth:`estimate_costs` (a missing ``from`` is the zero address, as
            ``eth_estimateGas`` assumes).
        budget : int, optional
            Refuse before sending if this Lab's spending plus the estimates, and then plus the
            search's most ``eth_call``, would pass it [credits].

        Returns
        -------
        pandas.DataFrame
            :meth:`estimate_costs`' frame with two more columns: ``gas_needed`` (Int64) [gas],
            missing where the estimate failed or the transaction fails with its own estimate
            (``error`` says which); ``eth_calls`` (int64), the probes sent or read from the
            cache for it.
        """
        frame = self.estimate_costs(
            transactions, block=block, abi=abi, budget=budget, progress=progress
        )
        requests = [{"from": ZERO_ADDRESS, **call_object(tx)} for tx in transactions]
        if frame.empty:
            return frame.assign(gas_needed=pd.Series(dtype="Int64"),
                                eth_calls=pd.Series(dtype="int64"))
        number = quantity(int(frame["block_number"].iloc[0]))
        # search state per transaction: lo fails, hi succeeds (once checked)
        search = {
            i: [_NEVER_ENOUGH_GAS, int(g), False]
            for i, g in enumerate(frame["gas_estimate"])
            if not pd.isna(g)
        }
        if budget is not None:
            most = sum(1 + (hi - lo).bit_length() for lo, hi, _ in search.values())
            self._check_budget(Plan([("eth_call", most)], title="gas search"), budget)
        needed: list[int | None] = [None] * len(frame)
        calls = [0] * len(frame)
        errors = frame["error"].tolist()
        while search:
            probes: list[tuple[int, int]] = []
            for i, (lo, hi, checked) in search.items():
                if not checked:  # the estimate itself, and just under geth's 1.5 % stop
                    probes.append((i, hi))
                    guess = hi - -(-hi * 15 // 1000)
                    if lo < guess < hi:
                        probes.append((i, guess))
                else:
                    probes.append((i, (lo + hi) // 2))
            batch = [RpcCall("eth_call", [{**requests[i], "gas": quantity(gas)}, number])
                     for i, gas in probes]
            answers = self.node.run(batch, progress=progress, description="gas search")
            for (i, gas), answer in zip(probes, answers, strict=True):
                calls[i] += 1
                if i not in search:
                    continue
                failed = not answer.ok
                if failed and not (
                    isinstance(answer.error, RevertError) or answer.error.code == -32000
                ):
                    raise answer.error
                state = search[i]
                if gas == state[1] and not state[2]:
                    if failed:
                        errors[i] = (f"fails in eth_call with its estimate of {gas:,} gas: "
                                     f"{error_text(answer.error, abi)}")
                        del search[i]
                        continue
                    state[2] = True
                elif failed:
                    state[0] = max(state[0], gas)
                else:
                    state[1] = min(state[1], gas)
            for i in [i for i, (lo, hi, checked) in search.items() if checked and hi - lo <= 1]:
                needed[i] = search.pop(i)[1]
        return frame.assign(
            gas_needed=pd.Series(needed, dtype="Int64"),
            eth_calls=pd.Series(calls, dtype="int64"),
            error=pd.Series(errors, dtype="str"),
        )

    # -- helpers -------------------------------------------------------------------------------

    def _plan_calls(
        self, calls: Sequence[RpcCall], title: str, *, less_cached: bool = True
    ) -> Plan:
        """A plan for ``calls``, less those the cache already answers (if ``less_cached``)."""
        counts: dict[str, int] = {}
        for call in calls:
            counts[call.method] = counts.get(call.method, 0) + 1
        plan = Plan(list(counts.items()), title=title)
        cache = self.node.cache if calls and less_cached else None
        if cache is None:
            return plan
        return plan.minus_cached(cache.count_cached((c.method, c.params) for c in calls))

    def _check_head(self, stop: int) -> None:
        """Refuse a range past the head before any block of it is fetched."""
        head = self.node.head()
        if stop - 1 > head:  # the head may have grown since it was last asked
            head = self.node.head(refresh=True)
        if stop - 1 > head:
            raise ValueError(
                f"stop ({stop:,}) is past the chain's head ({head:,}): the last block that "
                f"exists is {head:,}, so stop can be at most {head + 1:,}"
            )

    def _check_budget(self, plan: Plan, budget: int | None) -> None:
        if budget is not None:
            Budget(budget).check(plan, self.credits)


def _check_range(start: int, stop: int) -> None:
    for name, value in (("start", start), ("stop", stop)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative block number, not {value!r}")
    if stop <= start:
        raise ValueError(f"stop ({stop}) must be greater than start ({start}), as in range()")


def _address(value: Any, name: str) -> str:
    if not isinstance(value, str) or not _ADDRESS.fullmatch(value):
        raise ValueError(f"{name} must be 0x followed by 40 hex digits, not {value!r}")
    return value


def _block_number(value: Any) -> int:
    """A block number as an int (numpy ints accepted); bools, floats and negatives refused."""
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if isinstance(value, bool) or number is None or number < 0:
        raise ValueError(f"a block must be a non-negative block number, not {value!r}")
    return number


def _block_param(block: int | str) -> str:
    """A block number as a 0x quantity, or a tag as it is."""
    if isinstance(block, str):
        if block not in _BLOCK_TAGS:
            raise ValueError(f"block must be a number or one of {_BLOCK_TAGS}, not {block!r}")
        return block
    return quantity(_block_number(block))


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
    credits_per_second: float | str | None = None,
    max_batch: int = 500,
    max_concurrency: int = 8,
    wallet_url: str | None = None,
    block_time: float | None = None,
    websocket: bool = False,
    era1: Any = None,
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
        lays them out); needs ``api_key`` (and ``api_key_secret`` for the Gas API and
        ``lab.ipfs``, the storage API at ``{url}/api/v0``).
    rpc_url : str, optional
        Any standard JSON-RPC node; no Gas API and no storage API then.
    seed : int
        The embedded devnet's seed.
    cache : bool or path
        The on-disk answer cache: on (user cache directory), a directory, or off.
    progress : bool
        Progress bars on long fetches.
    credits_per_second : float or str, optional
        Keep the fetch under this throughput [credits/s], or a plan's (``"core"``,
        ``"developer"``, ``"team"``); ``math.inf`` does not pace. Default: the plan's rate,
        as a devnet reports it (``GET /devnet/info``; without ``api_key_secret`` a devnet's
        default, Team's 40,000), else on the service the free Core plan's 500 credits/s (pass
        your plan's), else (``rpc_url``) none. The client paces with a token bucket at 95 %
        of it, cuts batches to fit it, and halves its pace on a 429 (see
        ``feeslab.fetch.transport.CreditGovernor``).
    max_batch, max_concurrency : int
        JSON-RPC calls per HTTP request (500: fewer round trips on a slow link, and within
        geth's limit of 1,000 per batch), and requests in flight.
    wallet_url : str, optional
        The multichain wallet's WebSocket for ``lab.wallet``; default on a devnet its
        ``/wallet`` (the real service has none: the wallet API is MetaMask's extension).
    websocket : bool
        Send node calls over one WebSocket (``wss://{network}.infura.io/ws/v3/KEY``, or the
        devnet's ``/ws/v3/KEY``) instead of HTTPS; needed for :meth:`Lab.subscribe`. An
        ``rpc_url`` starting with ``ws://``/``wss://`` implies it.
    block_time : float, optional
        The embedded devnet's chains grow one block every ``block_time`` [s] (live mode:
        ``newHeads`` subscriptions and wallet notifications fire); default fixed heads.
    era1 : str, Path or sequence of them, optional
        Read blocks, uncles and fee history from era1 files (mainnet's pre-merge archive):
        a file, a directory of ``*.era1`` or a glob; no node, no credits
        (``feeslab.sources.era1.Era1Source``).
    """
    if era1 is not None:
        from feeslab.sources.era1 import Era1Source, NoNode

        source = Era1Source(era1)
        return Lab(node=NoNode(source), gas=None, credits=CreditLedger(), era1=source)  # type: ignore[arg-type]
    if url is not None and rpc_url is not None:
        raise ConfigError("give url= (a devnet or service root) or rpc_url= (a node), not both")
    api_key = api_key or os.environ.get("INFURA_API_KEY") or None
    api_key_secret = api_key_secret or os.environ.get("INFURA_API_KEY_SECRET") or None
    if block_time is not None and (url is not None or rpc_url is not None or api_key):
        raise ConfigError("block_time= sets the embedded devnet's pace; this Lab starts none")
    ledger = CreditLedger(priced=rpc_url is None)  # another node charges no credits
    devnet = None
    ipfs_root = None
    if rpc_url is not None:
        node_url, gas_root = rpc_url, None
    elif url is not None:
        if not api_key:
            raise ConfigError("url= needs api_key= (the devnet prints it; or INFURA_API_KEY)")
        prefix = "" if network == DEVNET_ROOT_NETWORK else f"/{network}"
        node_url, gas_root = f"{url.rstrip('/')}{prefix}/v3/{api_key}", url
        wallet_url = wallet_url or _ws_root(url) + "/wallet"
        ipfs_root = url
    elif api_key:
        node_url, gas_root = INFURA_NODE.format(network=network, key=api_key), INFURA_GAS
        ipfs_root = INFURA_IPFS
    else:
        import feeslab.devnet  # only here: a client with a key never loads the devnet

        feeslab.devnet.require("no INFURA_API_KEY and the devnet is not installed")
        devnet = feeslab.devnet.start(seed=seed, block_time=block_time)
        wallet_url = wallet_url or f"{devnet.ws_url}/wallet"
        api_key, api_key_secret = devnet.api_key, devnet.api_key_secret
        prefix = "" if network == DEVNET_ROOT_NETWORK else f"/{network}"
        node_url, gas_root = f"{devnet.url}{prefix}/v3/{api_key}", devnet.url
        ipfs_root = devnet.url
    if node_url.startswith(("ws://", "wss://")):
        websocket = True  # an rpc_url that is a WebSocket
    elif websocket:
        node_url = _ws_node_url(node_url)
    devnet_root = devnet.url if devnet is not None else url
    told = None  # a devnet's own limit, asked while the first requests go
    if credits_per_second is None and devnet_root is not None and api_key and api_key_secret:
        told = ask_devnet_credits_per_second(devnet_root, (api_key, api_key_secret))
    credits_per_second = pacing_rate(
        credits_per_second,
        devnet_root=devnet_root,
        service=(rpc_url is None and bool(api_key))
        or node_url.partition("//")[2].partition("/")[0].endswith(".infura.io"),
    )
    options = dict(
        url=node_url,
        max_batch=max_batch,
        max_concurrency=max_concurrency,
        credits_per_second=credits_per_second,
        on_response=ledger.on_response,
    )
    transport = WebSocketTransport(**options) if websocket else HTTPTransport(**options)
    if told is not None and getattr(transport, "governor", None) is not None:
        transport.governor.follow(told)
    node = NodeClient(
        transport,
        ledger=ledger,
        cache=cache,
        progress=progress,
        identity_suffix=None if devnet is None else f"devnet{devnet.simulation}",
    )
    gas = None
    if gas_root is not None and api_key:
        gas = GasClient(
            base_url=gas_root, api_key=api_key, api_key_secret=api_key_secret, ledger=ledger
        )
    ipfs = None
    if ipfs_root is not None and api_key and api_key_secret:  # the storage API needs both
        ipfs = IpfsClient(base_url=ipfs_root, api_key=api_key, api_key_secret=api_key_secret)
    return Lab(
        node=node,
        gas=gas,
        credits=ledger,
        devnet=devnet,
        network=network,
        wallet_url=wallet_url,
        ipfs=ipfs,
        rpc_url=rpc_url,
    )


def _ws_node_url(url: str) -> str:
    """The WebSocket twin of a node URL: ``https://h/v3/K`` -> ``wss://h/ws/v3/K`` (the
    service's and the devnet's layout); another node's URL just changes scheme."""
    if not url.startswith(("http://", "https://")):
        scheme = url.partition(":")[0]
        raise ConfigError(f"websocket=True needs an http(s) or ws(s) node URL, not {scheme!r}")
    root, sep, rest = url.partition("/v3/")
    return _ws_root(root) + "/ws/v3/" + rest if sep else _ws_root(url)


def _ws_root(url: str) -> str:
    """The WebSocket root of an HTTP(S) root: ``http://h:p/`` -> ``ws://h:p``."""
    root = url.rstrip("/")
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if root.startswith(http):
            return ws + root[len(http) :]
    return root
