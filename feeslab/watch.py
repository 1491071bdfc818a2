"""Watch the fee market live: a rolling frame of the last blocks, and a figure in JupyterLab.

::

    lab = feeslab.connect(block_time=1)           # a devnet that grows a block a second
    w = lab.watch(blocks=120)                      # returns at once; runs in the background
    w                                              # in JupyterLab: a figure redrawn per block
    w.frame                                        # the last 120 blocks, any time
    w.stop()                                       # or: with lab.watch(...) as w: ...

A :class:`Watch` follows the chain's head: over a WebSocket (``eth_subscribe("newHeads")``)
when the Lab reaches the service or a devnet, else by polling ``eth_blockNumber`` over HTTP.
For each new block it keeps one row: the header's fields (base fee, gas, blob gas), and what
``eth_feeHistory`` says of that block (its blob base fee and its tip percentiles), in the
columns and dtypes of ``lab.blocks`` and ``lab.fee_history`` (:data:`WATCH_DTYPES`).

It never loses or double-counts a block:

- The rows are kept by block number: a header announced again with the same hash is ignored.
- A header whose number is past the next one expected: the blocks between are fetched over
  the Lab's node connection (``eth_getBlockByNumber``) first.
- A header whose number is already held with another hash is a reorg: the rows from that
  number on are replaced, and the new row says ``reorged``. A header whose parent is not the
  row before it: its parent is fetched by hash, as far back as the branches differ.
- A dropped WebSocket (the subscription ends with ``TransportError``) is opened again under
  the fetch layer's one retry policy (``feeslab.fetch.retry.drive``: backoff with jitter);
  then the head is asked over the node connection and every block missed meanwhile fetched.
- A 429 is waited out and a 402 stops the watch with ``CreditsExhausted``
  (:attr:`Watch.error`), as every fetch does: the calls go through the Lab's transport.
- Memory is bounded: the oldest rows beyond ``blocks`` are dropped.

Why a thread: a watch must keep running while the user runs other cells. A task on the
kernel's event loop runs only while the kernel waits between cells (a cell that computes
for a minute would stall it for a minute), and nothing runs it in a terminal. The watch runs
on a daemon thread of its own; the network waits release the GIL, and the blocking clients
already run their async twins on one shared loop thread (``feeslab.fetch.loop``). The figure
is drawn on a second thread, at most every ``redraw`` seconds, so a slow draw never delays a
block. In JupyterLab the figure is an ``ipywidgets.Image`` whose PNG is replaced in place
(docs/watch.md says why this stack, with measurements).

References
----------
.. [1] Ethereum execution APIs, ``eth_subscribe`` ``newHeads``, ``eth_feeHistory``,
   https://github.com/ethereum/execution-apis
.. [2] EIP-1559 (base fee, gas target = gas limit / 2), https://eips.ethereum.org/EIPS/eip-1559
.. [3] EIP-4844 (blob gas, ``GAS_PER_BLOB`` = 2**17), https://eips.ethereum.org/EIPS/eip-4844
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    SupportsFloat,
    SupportsInt,
    TextIO,
    TypeAlias,
    TypedDict,
    TypeVar,
    Unpack,
)

import numpy as np
import pandas as pd

from feeslab.errors import ConfigError, FeeslabError, TransportError
from feeslab.fetch.jsonrpc import RpcCall
from feeslab.fetch.retry import Retry, Retryable, drive
from feeslab.frames.base_fees import GWEI, parse_fee_history, reward_column
from feeslab.frames.blocks import _typed_frame
from feeslab.protocol.blobs import GAS_PER_BLOB

if TYPE_CHECKING:
    from feeslab.fetch.ws import Subscription, WebSocketTransport
    from feeslab.lab import Lab

__all__ = ["ELASTICITY_MULTIPLIER", "WATCH_DTYPES", "Reorg", "Watch", "WatchOptions", "run_cli",
           "watch"]

ELASTICITY_MULTIPLIER = 2
"""EIP-1559's ``ELASTICITY_MULTIPLIER``: the gas target is the gas limit over it [2], for a
chain whose spec feeslab does not know (a known chain's own rule is used: Polygon's percent)."""

#: Columns and dtypes of :attr:`Watch.frame`, in order, before the ``reward_p<pct>_wei``
#: columns (``Int64`` [wei], ``eth_feeHistory``'s tips at each percentile) and the two last
#: ones, ``reorged`` (bool) and ``received_at`` (``datetime64[ns, UTC]``, when the client had
#: the header). Names and dtypes are those of ``lab.blocks`` (``BLOCK_DTYPES``) and
#: ``lab.fee_history`` (``FEE_HISTORY_DTYPES``) where they share a column.
WATCH_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "hash": "str",
    "parent_hash": "str",
    "timestamp": "datetime64[ns, UTC]",
    "gas_limit": "int64",
    "gas_used": "int64",
    "gas_used_ratio": "float64",
    "gas_target": "int64",
    "gas_target_ratio": "float64",
    "base_fee_wei": "Int64",
    "base_fee_gwei": "float64",
    "base_fee_per_blob_gas_wei": "Int64",
    "blob_gas_used": "Int64",
    "excess_blob_gas": "Int64",
    "blob_count": "Int64",
}
_TAIL_DTYPES = {"reorged": "bool", "received_at": "datetime64[ns, UTC]"}
DEFAULT_COLUMNS = ("base_fee_gwei", "gas_target_ratio", "blob_count")
DEFAULT_PERCENTILES = (10.0, 50.0, 90.0)
MAX_FEE_HISTORY = 1024  # blocks one eth_feeHistory may cover (geth's and Infura's cap)
_R = TypeVar("_R")
_Row: TypeAlias = dict[str, object]  # a block's row of the frame, by column (and "pending")


@dataclass(frozen=True)
class Reorg:
    """One block replaced by another of the same number.

    Attributes
    ----------
    block_number : int
    old_hash, new_hash : str
    """

    block_number: int
    old_hash: str
    new_hash: str


class WatchOptions(TypedDict, total=False):
    """The options of :func:`watch` (and ``lab.watch``), as :class:`Watch` takes them."""

    blocks: int
    columns: Sequence[str]
    percentiles: Sequence[float]
    websocket: bool | str | None
    poll: float
    redraw: float
    stop_after: int | None
    retry: Retry | None
    on_block: Callable[[Mapping[str, object]], None] | None
    start: bool


class _Stopped(Exception):
    """Raised inside the watch thread when ``stop()`` was called."""


def _int(value: object) -> int | None:
    """A JSON-RPC quantity as an int; None when absent (a field before its fork)."""
    if value is None:
        return None
    if isinstance(value, str):
        return int(value, 16)
    if isinstance(value, SupportsInt):
        return int(value)
    raise TypeError(f"a quantity must be 0x hex or a number, not {type(value).__name__}")


def _ws_url_of(http_url: str) -> str | None:
    """The WebSocket twin of a service's or a devnet's node URL (``https://h/v3/K`` ->
    ``wss://h/ws/v3/K``, as ``connect(websocket=True)`` makes it); None for other URLs."""
    root, sep, key = http_url.partition("/v3/")
    if not sep:
        return None
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if root.startswith(http):
            return ws + root[len(http):] + "/ws/v3/" + key
    return None


class Watch:
    """A live, rolling frame of the chain's last blocks; see the module's notes.

    Made by :func:`watch` (``lab.watch(...)``); it starts at once. Use it as a context
    manager, or call :meth:`stop`.

    Attributes
    ----------
    blocks : int
        Rows kept at most [blocks].
    columns : tuple of str
        The columns the figure charts, one panel each.
    percentiles : tuple of float
        The tip percentiles asked of ``eth_feeHistory`` [%].
    mode : str
        ``"websocket"`` (newHeads) or ``"polling"`` (HTTP).
    reorgs : list of Reorg
        Every block replaced so far, in order.
    drops : int
        Times the WebSocket was lost and opened again.
    error : FeeslabError or None
        What stopped the watch, if it stopped on its own (``CreditsExhausted``, or a
        connection that could not be opened again within the retry policy).
    """

    def __init__(
        self,
        lab: Lab,
        *,
        blocks: int = 128,
        columns: Sequence[str] = DEFAULT_COLUMNS,
        percentiles: Sequence[float] = DEFAULT_PERCENTILES,
        websocket: bool | str | None = None,
        poll: float = 1.0,
        redraw: float = 0.25,
        stop_after: int | None = None,
        retry: Retry | None = None,
        on_block: Callable[[Mapping[str, object]], None] | None = None,
        start: bool = True,
    ) -> None:
        if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
            raise ConfigError(f"blocks must be an int >= 1 (rows kept), not {blocks!r}")
        if not poll > 0 or not redraw >= 0:
            raise ConfigError(f"poll must be > 0 s and redraw >= 0 s, not {poll!r}, {redraw!r}")
        if stop_after is not None and stop_after < 1:
            raise ConfigError(f"stop_after must be >= 1 block, not {stop_after!r}")
        percentiles = tuple(float(p) for p in percentiles)
        if any(not 0 <= p <= 100 for p in percentiles) or list(percentiles) != sorted(
            set(percentiles)
        ):
            raise ConfigError(f"percentiles must rise within [0, 100], not {percentiles!r}")
        self.lab = lab
        self.blocks = blocks
        self.percentiles = percentiles
        self._rewards = [reward_column(p) for p in percentiles]
        self._dtypes = WATCH_DTYPES | dict.fromkeys(self._rewards, "Int64") | _TAIL_DTYPES
        unknown = [c for c in columns if c not in self._dtypes]
        if isinstance(columns, str) or unknown:
            raise ConfigError(f"columns must name columns of the frame ({list(self._dtypes)}), "
                              f"not {columns!r}")  # fmt: skip
        self.columns = tuple(columns)
        self.poll = poll
        self.redraw = redraw
        self.stop_after = stop_after
        self.on_block = on_block
        self._retry = retry or Retry()
        self._spec = lab.chain_spec  # each block's gas target by its chain's EIP-1559 rule
        self._node = lab.node.transport  # live blocks: past the answer cache, which is for
        self._credits_at_start = lab.credits.spent  # settled ones
        self._ws, self._owns_ws = self._heads_transport(websocket)
        self.mode = "polling" if self._ws is None else "websocket"
        self.reorgs: list[Reorg] = []
        self.drops = 0
        self.error: FeeslabError | None = None
        self._rows: dict[int, _Row] = {}  # by block number, ascending
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._version = 0  # bumped at each change of the rows
        self._added = 0  # rows added since the start (replacements included)
        self._frame: tuple[int, pd.DataFrame] | None = None
        self._stop = threading.Event()
        self._done = threading.Event()
        self._sub: Subscription | None = None
        self._view: _View | None = None
        self.latencies: list[float] = []  # [s] header received -> row in the frame, last 4,096
        self._thread = threading.Thread(target=self._run, name="feeslab-watch", daemon=True)
        if start:
            self._thread.start()

    # -- where the heads come from -----------------------------------------------------------

    def _heads_transport(self, websocket: bool | str | None
                         ) -> tuple[WebSocketTransport | None, bool]:  # fmt: skip
        """The WebSocket transport to subscribe on, and whether this watch opened it."""
        from feeslab.fetch.ws import WebSocketTransport

        if websocket is False:
            return None, False
        if isinstance(self._node, WebSocketTransport):
            return self._node, False  # the Lab's own connection
        url = websocket if isinstance(websocket, str) else None
        if url is None and self.lab.rpc_url is None:  # the service or a devnet: their layout
            url = _ws_url_of(str(getattr(self._node, "url", "")))
        if url is None:
            if websocket is True:
                raise ConfigError("no WebSocket for this Lab: pass its URL (websocket='ws...')")
            return None, False
        return WebSocketTransport(url=url, ledger=self.lab.credits), True

    # -- what the user reads -----------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the watch still follows the head (False once it has ended: its thread may
        still be closing its connections)."""
        return not self._done.is_set() and self._thread.is_alive()

    @property
    def credits_spent(self) -> int:
        """Credits the Lab's ledger booked since this watch started (every caller of the Lab
        counts: the watch's calls, and any fetch run meanwhile) [credits]."""
        return int(self.lab.credits.spent - self._credits_at_start)

    @property
    def frame(self) -> pd.DataFrame:
        """The rows held now, oldest first: :data:`WATCH_DTYPES`, the tip columns, ``reorged``
        and ``received_at``; ``attrs`` say the chain, its spec and the source. A snapshot:
        later blocks do not change it."""
        with self._lock:
            if self._frame is not None and self._frame[0] == self._version:
                return self._frame[1].copy(deep=False)
            version = self._version
            rows = [row for row in self._rows.values() if not row["pending"]]
        frame = self._build(rows)
        with self._lock:
            self._frame = (version, frame)
        return frame.copy(deep=False)

    def _build(self, rows: list[_Row]) -> pd.DataFrame:
        columns: _Row = {name: [row.get(name) for row in rows] for name in self._dtypes}
        for name in ("timestamp", "received_at"):
            columns[name] = pd.to_datetime(np.asarray(columns[name], dtype="int64"), unit="ns",
                                           utc=True)  # fmt: skip
        for name in ("block_number", "gas_limit", "gas_used", "gas_target"):
            columns[name] = np.asarray(columns[name], dtype=np.int64)
        columns["reorged"] = np.asarray(columns["reorged"], dtype=bool)
        frame = _typed_frame(self._dtypes, columns)
        tag = getattr(self.lab.data_source, "tag", None)
        if tag is not None:
            tag(frame)
        frame.attrs["watch"] = {"mode": self.mode, "blocks": self.blocks}
        return frame

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the watch stops (``stop_after`` blocks seen, ``stop()``, or an error);
        whether it did within ``timeout`` [s]."""
        return self._done.wait(timeout)

    def wait_for(self, count: int, timeout: float | None = None) -> bool:
        """Block until ``count`` rows were added since the start (or the watch stopped);
        whether they were, within ``timeout`` [s]."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self._added < count and not self._done.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._changed.wait(0.1 if left is None else min(left, 0.1))
            return self._added >= count

    def stop(self, timeout: float = 10.0) -> None:
        """Stop following the head (idempotent); the frame stays readable. Waits at most
        ``timeout`` [s] for the watch's thread and its connections to close."""
        self._stop.set()
        sub = self._sub
        if sub is not None:
            with contextlib.suppress(Exception):
                sub.detach()  # wakes the thread waiting on it, sending nothing
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._close_connections(timeout)
        if self._view is not None:
            self._view.close()

    def _close_connections(self, timeout: float = 10.0) -> None:
        """Unsubscribe (on the Lab's own WebSocket) or close the WebSocket this watch opened,
        on a helper thread waited for at most ``timeout`` [s]: a socket flooded with heads
        must not hold the caller."""
        sub, self._sub = self._sub, None
        ws = self._ws if self._owns_ws else None

        def close() -> None:
            with contextlib.suppress(Exception):
                if ws is not None:
                    ws.close()  # the node ends its subscriptions with the connection
                elif sub is not None:
                    sub.close()

        if sub is None and ws is None:
            return
        closer = threading.Thread(target=close, name="feeslab-watch-close", daemon=True)
        closer.start()
        if closer is not threading.current_thread():
            closer.join(timeout)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def status(self) -> str:
        """One line: state, blocks held, reorgs, reconnections, credits spent."""
        with self._lock:
            numbers = list(self._rows)
        state = "running" if self.running else "stopped"
        if self.error is not None:
            state = f"stopped: {type(self.error).__name__}"
        span = f"blocks {numbers[0]:,}-{numbers[-1]:,}" if numbers else "no block yet"
        return (f"{state}, {self.mode}: {len(numbers):,} of {self.blocks:,} rows ({span}), "
                f"{len(self.reorgs)} reorged, {self.drops} reconnections, "
                f"{self.credits_spent:,} credits spent")  # fmt: skip

    def __repr__(self) -> str:
        return f"<Watch {self.status()}>"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        try:
            view = self._view or _View(self)
        except ImportError:  # no ipywidgets: the text line
            display(self.status())
            return
        self._view = view
        display(view.widget)

    # -- the watch thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._driven(self._catch_up)
            if self._ws is None:
                while not self._stop.wait(self.poll):
                    self._driven(self._catch_up)
            else:
                self._follow()
        except _Stopped:
            pass
        except FeeslabError as exc:
            self.error = exc
        finally:
            self._close_connections()
            with self._changed:
                self._done.set()
                self._changed.notify_all()
            if self._view is not None:
                self._view.wake()

    def _driven(self, step: Callable[[], _R]) -> _R:
        """``step()`` retried under the retry policy (``feeslab.fetch.retry.drive``): a
        ``TransportError`` is retried with backoff; ``stop()`` ends the waits."""

        async def attempt() -> _R:
            if self._stop.is_set():
                raise _Stopped
            try:
                return step()
            except TransportError as exc:
                raise Retryable(exc) from None

        async def sleep(seconds: float) -> None:
            if self._stop.wait(seconds):
                raise _Stopped

        return asyncio.run(drive(attempt, self._retry, sleep))

    def _follow(self) -> None:
        """Subscribe, catch up, take the heads; after a drop, the same again."""
        assert self._ws is not None
        ws = self._ws
        while not self._stop.is_set():
            self._sub = sub = self._driven(lambda: ws.subscribe("newHeads"))
            if self._stop.is_set():
                break
            self._driven(self._catch_up)  # what came while no subscription was open
            try:
                for header in sub:
                    received = sub.received_ns or time.monotonic_ns()  # off the socket
                    # heads that came meanwhile: one eth_feeHistory for them all, so a
                    # fast chain queues no backlog behind one round trip per block
                    self._ingest([header, *sub.ready()], received)
                    if self._stop.is_set():
                        break
            except TransportError:
                pass  # the connection dropped: subscribe again
            if not self._stop.is_set():
                self.drops += 1

    def _call(self, calls: list[RpcCall]) -> list[Any]:
        return [r.unwrap() for r in self._node.handle_request(calls)]

    def _catch_up(self) -> None:
        """Every block from the last one held (asked again: it may have been replaced) up to
        the head, over the node connection."""
        (head_hex,) = self._call([RpcCall("eth_blockNumber", [])])
        head = int(head_hex, 16)
        with self._lock:
            last = next(reversed(self._rows), None)
        low = head if last is None else max(last, head - self.blocks + 1)
        if low > head:
            return
        headers = self._call([RpcCall("eth_getBlockByNumber", [hex(n), False])
                              for n in range(low, head + 1)])  # fmt: skip
        self._ingest([h for h in headers if h is not None], time.monotonic_ns())

    # -- rows --------------------------------------------------------------------------------

    def _ingest(self, headers: list[Mapping[str, object]], received_ns: int) -> None:
        fresh: dict[int, _Row] = {}
        for header in sorted(headers, key=lambda h: _int(h["number"]) or 0):
            self._accept(header, fresh, received_ns)
        if self.stop_after is not None:  # exactly stop_after blocks, however many came at once
            extra = sorted(fresh)[max(0, self.stop_after - self._added):]
            with self._lock:
                for number in extra:  # the newest, backfilled ones included
                    del fresh[number]
                    self._rows.pop(number, None)
        if not fresh:
            return
        self._add_fees(fresh)
        now = time.monotonic_ns()
        with self._changed:
            for number, row in fresh.items():
                if self._rows.get(number) is row:
                    row["pending"] = False
            # the window cut after stop_after's: rows taken beyond the stop, dropped, must not
            # have pushed out the older rows the window keeps
            while len(self._rows) > self.blocks:
                del self._rows[next(iter(self._rows))]
            self._version += 1
            self._added += len(fresh)
            self._changed.notify_all()
        # each new row's lag, from the arrival of the oldest header taken with it (a bound)
        self.latencies.extend([(now - received_ns) / 1e9] * len(fresh))
        del self.latencies[:-4096]
        if self._view is not None:
            self._view.wake()
        if self.on_block is not None:
            for row in fresh.values():
                self.on_block(row)
        if self.stop_after is not None and self._added >= self.stop_after:
            self._stop.set()
            raise _Stopped

    def _accept(self, header: Mapping[str, object], fresh: dict[int, _Row],
                received_ns: int) -> None:  # fmt: skip
        number = _int(header["number"])
        assert number is not None
        block_hash, parent = str(header["hash"]), str(header["parentHash"])
        rows = self._rows
        replaced = None
        if rows:
            first, last = next(iter(rows)), next(reversed(rows))
            if number < first:
                return  # older than the window
            held = rows.get(number)
            if held is not None:
                if held["hash"] == block_hash:
                    return  # announced again: held already
                replaced = str(held["hash"])
                self._drop_from(number)
            elif number > last + 1:
                self._backfill(last + 1, number - 1, fresh, received_ns)
            before = rows.get(number - 1)
            if before is not None and before["hash"] != parent:
                # the row before is on another branch: take this block's parent first
                ancestor = self._call([RpcCall("eth_getBlockByHash", [parent, False])])[0]
                if ancestor is None:  # replaced again meanwhile: the canonical one by number
                    ancestor = self._call([RpcCall("eth_getBlockByNumber",
                                                   [hex(number - 1), False])])[0]  # fmt: skip
                self._accept(ancestor, fresh, received_ns)
        row = self._row(header, received_ns, reorged=replaced is not None)
        with self._lock:
            rows[number] = row  # the window is cut to its size once the batch is in (_ingest)
            if replaced is not None:
                self.reorgs.append(Reorg(number, replaced, block_hash))
        fresh[number] = row

    def _drop_from(self, number: int) -> None:
        with self._lock:
            for n in [n for n in self._rows if n >= number]:
                del self._rows[n]
            self._version += 1

    def _backfill(self, low: int, high: int, fresh: dict[int, _Row],
                  received_ns: int) -> None:  # fmt: skip
        low = max(low, high - self.blocks + 1)  # more than the window holds: its last part
        if low > next(reversed(self._rows)) + 1:
            with self._lock:
                self._rows.clear()
        headers = self._call([RpcCall("eth_getBlockByNumber", [hex(n), False])
                              for n in range(low, high + 1)])  # fmt: skip
        for header in headers:
            if header is not None:
                self._accept(header, fresh, received_ns)

    def _row(self, header: Mapping[str, object], received_ns: int, *, reorged: bool
             ) -> _Row:  # fmt: skip
        gas_limit, gas_used = _int(header["gasLimit"]) or 0, _int(header["gasUsed"]) or 0
        base_fee = _int(header.get("baseFeePerGas"))
        blob_gas = _int(header.get("blobGasUsed"))
        number = _int(header["number"]) or 0
        rule = None if self._spec is None else self._spec.eip1559_rule_at(number)
        target = gas_limit // ELASTICITY_MULTIPLIER if rule is None else rule.gas_target(gas_limit)
        row: _Row = {
            "block_number": _int(header["number"]),
            "hash": str(header["hash"]),
            "parent_hash": str(header["parentHash"]),
            "timestamp": (_int(header["timestamp"]) or 0) * 10**9,
            "gas_limit": gas_limit,
            "gas_used": gas_used,
            "gas_used_ratio": gas_used / gas_limit if gas_limit else np.nan,
            "gas_target": target,
            "gas_target_ratio": gas_used / target if target else np.nan,
            "base_fee_wei": base_fee,
            "base_fee_gwei": np.nan if base_fee is None else base_fee / GWEI,
            "base_fee_per_blob_gas_wei": None,
            "blob_gas_used": blob_gas,
            "excess_blob_gas": _int(header.get("excessBlobGas")),
            "blob_count": None if blob_gas is None else blob_gas // GAS_PER_BLOB,
            "reorged": reorged,
            "received_at": time.time_ns() - (time.monotonic_ns() - received_ns),
            "pending": True,
        }
        row.update(dict.fromkeys(self._rewards))
        return row

    def _add_fees(self, fresh: dict[int, _Row]) -> None:
        """The blob base fee and the tips of the new rows, from ``eth_feeHistory``."""
        numbers = sorted(fresh)
        calls, spans = [], []
        start = numbers[0]
        while start <= numbers[-1]:
            stop = min(numbers[-1], start + MAX_FEE_HISTORY - 1)
            calls.append(RpcCall("eth_feeHistory", [hex(stop - start + 1), hex(stop),
                                                    list(self.percentiles)]))  # fmt: skip
            spans.append((start, stop))
            start = stop + 1
        for result in self._call(calls):
            history = parse_fee_history(result, percentiles=self.percentiles)
            blob = history["base_fee_per_blob_gas_wei"].to_numpy(dtype=object, na_value=None)
            rewards = {name: history[name].to_numpy(dtype=object, na_value=None)
                       for name in self._rewards if name in history}  # fmt: skip
            for i, number in enumerate(history["block_number"].to_numpy()[:-1]):
                row = fresh.get(int(number))
                if row is None:
                    continue
                row["base_fee_per_blob_gas_wei"] = blob[i]
                for name, values in rewards.items():
                    row[name] = values[i]



class _View:
    """The figure and the status line in JupyterLab: an ``ipywidgets.Image`` whose PNG is
    replaced in place (no flicker, no output that grows), drawn on its own thread at most
    every ``watch.redraw`` seconds."""

    def __init__(self, watch: Watch) -> None:
        import ipywidgets  # type: ignore[import-untyped]  # no py.typed

        self.watch = watch
        self.status = ipywidgets.HTML(value=self._status_html())
        self.image = ipywidgets.Image(format="png", layout=ipywidgets.Layout(width="100%"))
        self.widget = ipywidgets.VBox([self.status, self.image])
        self.draws = 0
        self._drawn = -1
        self._wake = threading.Event()
        self._closed = False
        self._chart = _Chart(watch.columns)
        self._draw()
        self._thread = threading.Thread(target=self._loop, name="feeslab-watch-view",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def _status_html(self) -> str:
        import html

        return f"<code>{html.escape(self.watch.status())}</code>"

    def wake(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    def _loop(self) -> None:
        while not self._closed:
            self._wake.wait(1.0)  # once a second anyway: the credits line moves
            self._wake.clear()
            with contextlib.suppress(Exception):  # a failed draw must not end the watch's view
                self._draw()
            if self.watch.redraw:
                time.sleep(self.watch.redraw)
        with contextlib.suppress(Exception):
            self._draw()  # the final state

    def _draw(self) -> None:
        self.status.value = self._status_html()
        version = self.watch._version
        if version == self._drawn:
            return
        frame = self.watch.frame
        self.image.value = self._chart.png(frame, _source_title(self.watch.lab, frame))
        self._drawn = version
        self.draws += 1


def _source_title(lab: Lab, frame: pd.DataFrame) -> str:
    """What the figure's data are: ``"devnet (simulated), mainnet, blocks a-b"`` or
    ``"mainnet, blocks a-b"``."""
    where = str(getattr(lab, "network", "chain"))
    if frame.attrs.get("source") == "devnet":
        where = f"devnet (simulated), {where}"
    if len(frame):
        first, last = frame["block_number"].iloc[0], frame["block_number"].iloc[-1]
        where += f", blocks {first:,}-{last:,}"
    return where


class _Chart:
    """One matplotlib figure (Agg, off pyplot: nothing is shown by itself), a panel per
    column; each draw sets the lines' data and renders a PNG."""

    def __init__(self, columns: Sequence[str]) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.columns = tuple(columns)
        # fixed margins: the constrained layout engine doubled a draw's time
        self.figure = Figure(figsize=(9, 1.0 + 1.6 * len(self.columns)), dpi=80)
        self.figure.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.12, hspace=0.12)
        FigureCanvasAgg(self.figure)
        axes = self.figure.subplots(len(self.columns), 1, sharex=True, squeeze=False)[:, 0]
        self.axes = list(axes)
        self.lines = []
        self.marks = []
        for ax, column in zip(self.axes, self.columns, strict=True):
            (line,) = ax.plot([], [], lw=1.2, color="tab:blue")
            (mark,) = ax.plot([], [], "x", color="tab:red", label="replaced (reorg)")
            ax.set_ylabel(_label(column), fontsize=8)
            ax.tick_params(labelsize=8)
            ax.grid(alpha=0.3)
            self.lines.append(line)
            self.marks.append(mark)
        self.axes[-1].set_xlabel("block number", fontsize=8)
        self.axes[-1].ticklabel_format(axis="x", style="plain", useOffset=False)

    def png(self, frame: pd.DataFrame, title: str) -> bytes:
        x = frame["block_number"].to_numpy()
        reorged = frame["reorged"].to_numpy(dtype=bool)
        for ax, line, mark, column in zip(self.axes, self.lines, self.marks, self.columns,
                                          strict=True):  # fmt: skip
            y = frame[column].to_numpy(dtype=float, na_value=np.nan)
            line.set_data(x, y)
            mark.set_data(x[reorged], y[reorged])
            ax.relim()
            ax.autoscale_view()
        self.figure.suptitle(title, fontsize=9)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        return buffer.getvalue()


def _label(column: str) -> str:
    units = {"_gwei": "[gwei]", "_wei": "[wei]", "_ratio": "", "blob_count": "[blobs]",
             "gas_": "[gas]"}  # fmt: skip
    for suffix, unit in units.items():
        if column.endswith(suffix) or column.startswith(suffix):
            return f"{column} {unit}".strip()
    return column


def watch(lab: Lab, **options: Unpack[WatchOptions]) -> Watch:
    """Start watching ``lab``'s chain: a :class:`Watch` (what ``lab.watch(...)`` returns).

    Parameters
    ----------
    lab : Lab
        On the service, a devnet or any node (era1 files have no head to watch).
    blocks : int
        Rows kept: the last ``blocks`` blocks (default 128) [blocks].
    columns : sequence of str
        The columns the figure charts, one panel each (default base fee [gwei], gas used over
        the target, blob count); any column of the frame.
    percentiles : sequence of float
        The tip percentiles asked of ``eth_feeHistory`` for each block (default 10, 50, 90)
        [%]: the columns ``reward_p10_wei``, ...
    websocket : bool or str, optional
        None (default): subscribe over the Lab's WebSocket, or the service's (or devnet's)
        WebSocket twin of its HTTP URL, else poll; False: poll over HTTP; a ``ws(s)://`` URL:
        subscribe there.
    poll : float
        Seconds between two looks at the head when polling (default 1) [s].
    redraw : float
        Least seconds between two draws of the figure (default 0.25) [s].
    stop_after : int, optional
        Stop once this many rows were added (replacements count) [blocks].
    retry : feeslab.fetch.retry.Retry, optional
        How a lost connection is opened again (default the fetch layer's policy).
    on_block : callable, optional
        ``on_block(row)`` for each new row, on the watch's thread.

    Returns
    -------
    Watch
        Already running; stop it with ``stop()`` or use it as a context manager.

    Raises
    ------
    ConfigError
        A Lab without a node, or options out of range.
    """
    if not lab.has_node:
        raise ConfigError("a watch follows a node's head: this Lab reads files")
    return Watch(lab, **options)


def _cli_line(row: Mapping[str, object], rewards: Sequence[str]) -> str:
    def gwei(value: object) -> str:
        # a base fee or tip [wei] (exact below 2**53, so as the int's own quotient)
        return "-" if not isinstance(value, SupportsFloat) else f"{float(value) / GWEI:10.4f}"

    blobs = row["blob_count"]
    tips = " ".join(gwei(row[name]) for name in rewards)
    mark = " reorg" if row["reorged"] else ""
    return (f"{row['block_number']:>10} {gwei(row['base_fee_wei'])} "
            f"{gwei(row['base_fee_per_blob_gas_wei'])} {row['gas_target_ratio']:6.3f} "
            f"{'-' if blobs is None else blobs:>5} {tips}{mark}")  # fmt: skip


def run_cli(
    lab: Lab,
    *,
    blocks: int = 128,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    stop_after: int | None = None,
    out: str | None = None,
    websocket: bool | str | None = None,
    stream: TextIO | None = None,
) -> int:
    """``feeslab watch``: one line per block on ``stream`` (default stdout) until Ctrl-C or
    ``stop_after`` blocks; then, with ``out``, the frame written atomically
    (``feeslab.frames.io.write_frame``: Parquet, or CSV by the suffix). Returns the exit
    status (1 when the watch stopped on an error, which is printed on stderr)."""
    from feeslab.frames.io import write_frame

    stream = stream or sys.stdout
    rewards = [reward_column(float(p)) for p in percentiles]
    print(f"{'block':>10} {'base[gwei]':>10} {'blob[gwei]':>10} {'/target':>6} {'blobs':>5} "
          + " ".join(f"{'p' + format(float(p), 'g'):>10}" for p in percentiles),
          file=stream, flush=True)  # fmt: skip

    def line(row: Mapping[str, object]) -> None:
        print(_cli_line(row, rewards), file=stream, flush=True)

    w = watch(lab, blocks=blocks, percentiles=percentiles, stop_after=stop_after,
              websocket=websocket, on_block=line)  # fmt: skip
    try:
        while not w.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        w.stop()
    print(w.status(), file=stream, flush=True)
    if out is not None:
        path = write_frame(w.frame, out)
        print(f"wrote {len(w.frame):,} blocks to {path}", file=stream, flush=True)
    if w.error is not None:
        print(f"error: {w.error}", file=sys.stderr)
        return 1
    return 0
