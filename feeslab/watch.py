"""Watch the fee market live: a rolling frame of the last blocks, and a figure in JupyterLab.

::

    lab = feeslab.connect(block_time=1)           # a devnet that grows a block a second
    w = lab.watch(blocks=120)                      # the last 120 blocks already; then runs on
    w                                              # in JupyterLab: a figure redrawn per block
    w.frame                                        # the last 120 blocks, any time
    w.stop()                                       # or: with lab.watch(...) as w: ...

A :class:`Watch` puts together the layers below it:

- the head is followed by ``feeslab.fetch.heads.HeadsFollower`` on the blocking clients'
  shared loop thread: the prefill of the window, ``newHeads`` over a WebSocket (else polling
  over HTTP), gaps filled, reorgs found, a dropped connection opened again under the fetch
  layer's retry policy. The WebSocket is the Lab's own when it has one, else one its node
  client opens (``NodeClient.open_websocket``: built by ``feeslab.sources.rpc``'s transport
  builder, at the one WebSocket twin of the node's URL, booked in the Lab's ledger);
- the rows are held by ``feeslab.frames.watch.WatchRing``: one preallocated numpy array per
  column (:data:`WATCH_DTYPES`), so reading :attr:`Watch.frame` is cheap and a reorg replaces
  rows in place;
- the figure is ``feeslab.plots.watch.plot_watch``, one panel per column, shown in JupyterLab
  as an ``ipywidgets.Image`` whose PNG is replaced in place (docs/watch.md says why). The same
  output also carries a still of the figure as it was when shown (``image/png``, and the status
  line as ``text/plain``): a static page (nbconvert's HTML, the course's site), which has no
  kernel to run the widget, shows the still instead of a blank space; :meth:`Watch.still`
  gives it at any time;
- ``feeslab watch`` (``feeslab.cli``) prints a line per block.

Why a thread of its own: the follower runs on the shared loop, and the watch's thread takes
its batches (blocking), writes them into the frame and calls ``on_block``. So a user's
callback never runs on the shared loop (where a blocking call would deadlock), and the watch
keeps running while the user runs other cells (a task on the kernel's event loop runs only
while the kernel waits between cells). The figure is drawn on a second thread, at most every
``redraw`` seconds, so a slow draw never delays a block.

References
----------
.. [1] Ethereum execution APIs, ``eth_subscribe`` ``newHeads``, ``eth_feeHistory``,
   https://github.com/ethereum/execution-apis
.. [2] EIP-1559 (base fee, gas target = gas limit / 2), https://eips.ethereum.org/EIPS/eip-1559
.. [3] EIP-4844 (blob gas, ``GAS_PER_BLOB`` = 2**17), https://eips.ethereum.org/EIPS/eip-4844
"""

from __future__ import annotations

import base64
import contextlib
import io
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypedDict, Unpack

import numpy as np
import pandas as pd

from feeslab.errors import ConfigError, FeeslabError
from feeslab.fetch.heads import HeadsBatch, HeadsFollower, Reorg
from feeslab.fetch.jsonrpc import RpcCall
from feeslab.fetch.retry import Retry
from feeslab.fetch.ws import WebSocketTransport
from feeslab.frames.base_fees import reward_column
from feeslab.frames.watch import (
    ELASTICITY_MULTIPLIER,
    WATCH_DTYPES,
    WatchRing,
    parse_heads,
    watch_dtypes,
)

if TYPE_CHECKING:
    from feeslab.fetch.credits import CreditLedger
    from feeslab.fetch.node import NodeClient
    from feeslab.protocol.chainspec import ChainSpec
    from feeslab.sources.base import Source

__all__ = ["DEFAULT_COLUMNS", "DEFAULT_PERCENTILES", "ELASTICITY_MULTIPLIER", "MAX_FEE_HISTORY",
           "WATCH_DTYPES", "Reorg", "Watch", "WatchOptions", "Watched", "watch"]  # fmt: skip

DEFAULT_COLUMNS = ("base_fee_gwei", "gas_target_ratio", "blob_count")
DEFAULT_PERCENTILES = (10.0, 50.0, 90.0)
MAX_FEE_HISTORY = 1024  # blocks one eth_feeHistory may cover (geth's and Infura's cap)


class Watched(Protocol):
    """What a watch reads of the Lab it follows (``feeslab.lab.Lab`` is one). Named here,
    not imported: the Lab imports the watch, never the other way round."""

    @property
    def has_node(self) -> bool: ...
    @property
    def node(self) -> NodeClient: ...
    @property
    def credits(self) -> CreditLedger: ...
    @property
    def chain_spec(self) -> ChainSpec | None: ...
    @property
    def data_source(self) -> Source: ...
    @property
    def network(self) -> str: ...
    @property
    def rpc_url(self) -> str | None: ...


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
    title: str | None
    start: bool


class _Enough(Exception):
    """Raised inside the watch's thread once ``stop_after`` rows were added."""


class Watch:
    """A live, rolling frame of the chain's last blocks; see the module's notes.

    Made by :func:`watch` (``lab.watch(...)``); it starts at once, with the last ``blocks``
    blocks already in its frame. Use it as a context manager, or call :meth:`stop`.

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
    error : FeeslabError or None
        What stopped the watch, if it stopped on its own (``CreditsExhausted``, or a
        connection that could not be opened again within the retry policy).
    latencies : list of float
        For the last 4,096 new rows, from the header's arrival at the client to the row in
        the frame [s] (a batch's rows count from its oldest header: a bound).
    title : str
        The figure's title (its source line, under it, says the blocks and where they come
        from).
    """

    def __init__(
        self,
        lab: Watched,
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
        title: str | None = None,
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
        self._dtypes = watch_dtypes(percentiles)
        unknown = [c for c in columns if c not in self._dtypes]
        if isinstance(columns, str) or unknown:
            raise ConfigError(f"columns must name columns of the frame ({list(self._dtypes)}), "
                              f"not {columns!r}")  # fmt: skip
        self.lab = lab
        self.blocks = blocks
        self.percentiles = percentiles
        self.columns = tuple(columns)
        self.poll = poll
        self.redraw = redraw
        self.stop_after = stop_after
        self.on_block = on_block
        self.title = f"The chain's last {blocks:,} blocks, live" if title is None else title
        self._rewards = [reward_column(p) for p in percentiles]
        self._spec = lab.chain_spec  # each block's gas target by its chain's EIP-1559 rule
        self._credits_at_start = lab.credits.spent
        node = lab.node
        self._ws, self._owns_ws = _heads_transport(lab, node, websocket)
        self.mode = "polling" if self._ws is None else "websocket"
        try:
            # live blocks go past the answer cache (it is for settled ones), on the node's
            # transport; the WebSocket only carries the subscription
            self._follower = HeadsFollower(node.transport, self._ws, window=blocks,
                                           extra=self._fee_calls, poll=poll,
                                           retry=retry)  # fmt: skip
        except BaseException:
            if self._owns_ws and self._ws is not None:
                self._ws.close()
            raise
        self.reorgs: list[Reorg] = []
        self.error: FeeslabError | None = None
        self.latencies: list[float] = []
        self._ring = WatchRing(blocks, self._dtypes)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._version = 0  # bumped at each change of the rows
        self._added = 0  # rows added since the prefill (replacements included)
        self._frame: tuple[int, pd.DataFrame] | None = None
        self._stop = threading.Event()
        self._prefilled = threading.Event()
        self._done = threading.Event()
        self._closed = False
        self._view: _View | None = None
        self._thread = threading.Thread(target=self._run, name="feeslab-watch", daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        """Start following the head (done by the constructor unless ``start=False``): returns
        once the window holds the last ``blocks`` blocks (or the watch stopped on an error)."""
        if not self._thread.is_alive() and not self._done.is_set():
            self._thread.start()
        self._prefilled.wait()

    # -- what the user reads -----------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the watch still follows the head (False once it has ended: its thread may
        still be closing its connections)."""
        return not self._done.is_set() and self._thread.is_alive()

    @property
    def added(self) -> int:
        """Rows added since the prefill: new blocks, and the blocks that replaced others."""
        return self._added

    @property
    def drops(self) -> int:
        """Times the WebSocket was lost and opened again."""
        return self._follower.drops

    @property
    def credits_spent(self) -> int:
        """Credits the Lab's ledger booked since this watch started (every caller of the Lab
        counts: the watch's calls, its prefill, and any fetch run meanwhile) [credits]."""
        return int(self.lab.credits.spent - self._credits_at_start)

    @property
    def frame(self) -> pd.DataFrame:
        """The rows held now, oldest first: :data:`WATCH_DTYPES`, the tip columns, ``reorged``
        and ``received_at``; ``attrs`` say the chain, its spec and the source. A snapshot:
        later blocks do not change it. Built from the ring's column arrays when the rows have
        changed since the last read (about 2 ms for 10,000 rows), else the same again."""
        with self._lock:
            if self._frame is not None and self._frame[0] == self._version:
                return self._frame[1].copy(deep=False)
            version = self._version
            frame = self._ring.frame()
        self.lab.data_source.tag(frame)
        frame.attrs["watch"] = {"mode": self.mode, "blocks": self.blocks}
        with self._lock:
            self._frame = (version, frame)
        return frame.copy(deep=False)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the watch stops (``stop_after`` blocks seen, ``stop()``, or an error);
        whether it did within ``timeout`` [s]."""
        return self._done.wait(timeout)

    def wait_for(self, count: int, timeout: float | None = None) -> bool:
        """Block until ``count`` rows were added since the prefill (:attr:`added`, or the
        watch stopped); whether they were, within ``timeout`` [s]."""
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
        self._follower.stop()  # the follower's wait in progress ends
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._close_connections()
        if self._view is not None:
            self._view.close()

    def _close_connections(self) -> None:
        """Close the WebSocket this watch opened and give back the follower's share of the
        loop thread (once)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):
            if self._owns_ws and self._ws is not None:
                self._ws.close()  # the node ends its subscriptions with the connection
        self._follower.close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def status(self) -> str:
        """One line: state, blocks held, reorgs, reconnections, credits spent."""
        with self._lock:
            numbers = self._ring.block_numbers
        state = "running" if self.running else "stopped"
        if self.error is not None:
            state = f"stopped: {type(self.error).__name__}"
        span = f"blocks {numbers[0]:,}-{numbers[-1]:,}" if len(numbers) else "no block yet"
        return (f"{state}, {self.mode}: {len(numbers):,} of {self.blocks:,} rows ({span}), "
                f"{len(self.reorgs)} reorged, {self.drops} reconnections, "
                f"{self.credits_spent:,} credits spent")  # fmt: skip

    def __repr__(self) -> str:
        return f"<Watch {self.status()}>"

    def still(self) -> bytes:
        """The figure as it is now: a PNG of the rows held, titled :attr:`title`, with its
        source line (the blocks, and devnet or chain) [PNG bytes]."""
        return _Chart(self.columns).png(self.frame, self.title)

    def _ipython_display_(self) -> None:
        """One output: the live figure (the widget) where a kernel runs it, and beside it
        a still of the figure now (``image/png``) and the status line (``text/plain``), which
        a static page shows instead."""
        from IPython.display import display

        try:
            view = self._view or _View(self)
        except ImportError:  # no ipywidgets: the still and the text line
            still = self.still()
            live: dict[str, object] = {}
        else:
            self._view = view
            still = bytes(view.image.value)
            live = dict(view.widget._repr_mimebundle_())
        bundle = {**live, "image/png": base64.b64encode(still).decode("ascii"),
                  "text/plain": repr(self)}  # fmt: skip
        display(bundle, raw=True)

    # -- the watch's thread --------------------------------------------------------------------

    def _fee_calls(self, first: int, last: int) -> list[RpcCall]:
        """``eth_feeHistory`` for blocks ``first`` .. ``last`` (their blob base fee and tips),
        at most :data:`MAX_FEE_HISTORY` blocks a call."""
        calls = []
        while first <= last:
            stop = min(last, first + MAX_FEE_HISTORY - 1)
            calls.append(RpcCall("eth_feeHistory", [hex(stop - first + 1), hex(stop),
                                                    list(self.percentiles)]))  # fmt: skip
            first = stop + 1
        return calls

    def _run(self) -> None:
        batches = self._follower.batches()
        try:
            for batch in batches:
                self._take(batch)
                if self._stop.is_set():
                    break
        except _Enough:
            pass
        except FeeslabError as exc:
            self.error = exc
        finally:
            with contextlib.suppress(Exception):
                batches.close()  # the follower unsubscribes
            self._prefilled.set()
            self._close_connections()
            with self._changed:
                self._done.set()
                self._changed.notify_all()
            if self._view is not None:
                self._view.wake()

    def _take(self, batch: HeadsBatch) -> None:
        """One batch of the follower into the frame: the replaced rows cut, the new appended."""
        received_at = time.time_ns() - (time.monotonic_ns() - batch.received_ns)
        columns = parse_heads(batch.headers, batch.extra, percentiles=self.percentiles,
                              spec=self._spec, reorged=batch.reorged,
                              received_at_ns=received_at)  # fmt: skip
        count = len(batch.headers)
        if not batch.prefill and self.stop_after is not None:  # exactly stop_after rows
            count = min(count, self.stop_after - self._added)
            columns = {name: values[:count] for name, values in columns.items()}
        with self._changed:
            if batch.cut_from is not None:
                self._ring.cut_from(batch.cut_from)
            self._ring.append(columns)
            self.reorgs.extend(batch.reorgs)
            self._version += 1
            if not batch.prefill:
                self._added += count
            self._changed.notify_all()
        if batch.prefill:
            self._prefilled.set()
        else:  # each new row's lag, from the arrival of the oldest header taken with it
            lag = (time.monotonic_ns() - batch.received_ns) / 1e9
            self.latencies.extend([lag] * count)
            del self.latencies[:-4096]
        if self._view is not None:
            self._view.wake()
        if self.on_block is not None and not batch.prefill:
            for row in _rows(columns):
                self.on_block(row)
        if self.stop_after is not None and self._added >= self.stop_after:
            self._stop.set()
            raise _Enough


def _rows(columns: Mapping[str, np.ndarray]) -> Iterator[dict[str, object]]:
    """The rows of :func:`parse_heads`' columns, as dicts of Python values (None: absent)."""
    names = list(columns)
    for values in zip(*(columns[name].tolist() for name in names), strict=True):
        yield dict(zip(names, values, strict=True))


def _heads_transport(lab: Watched, node: NodeClient, websocket: bool | str | None
                     ) -> tuple[WebSocketTransport | None, bool]:  # fmt: skip
    """The WebSocket transport to subscribe on, and whether the watch opened it (and closes
    it): the Lab's own, or one the node client opens at ``websocket`` (a URL) or at its URL's
    WebSocket twin (the service and devnets); None: polling."""
    if websocket is False:
        return None, False
    if isinstance(websocket, str):
        return node.open_websocket(websocket), True
    if isinstance(node.transport, WebSocketTransport):
        return node.transport, False  # the Lab's own connection
    if lab.rpc_url is None:  # the service or a devnet: their layout
        return node.open_websocket(), True
    if websocket is True:
        raise ConfigError("no WebSocket for this Lab: pass its URL (websocket='ws...')")
    return None, False


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
        self.image.value = self._chart.png(frame, self.watch.title)
        self._drawn = version
        self.draws += 1


class _Chart:
    """One matplotlib figure (Agg, off pyplot: nothing is shown by itself), a panel per
    column drawn by ``feeslab.plots.watch.plot_watch``; each draw gives the panels the new
    frame (the same lines, new data) and renders a PNG."""

    def __init__(self, columns: Sequence[str]) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.columns = tuple(columns)
        # fixed margins: the constrained layout engine doubled a draw's time; the title's
        # and the x labels' and source line's room in inches, whatever the panels
        height = 1.4 + 1.6 * len(self.columns)
        self.figure = Figure(figsize=(9, height), dpi=80)
        self.figure.subplots_adjust(left=0.1, right=0.98, top=1 - 0.45 / height,
                                    bottom=0.8 / height, hspace=0.12)  # fmt: skip
        FigureCanvasAgg(self.figure)
        axes = self.figure.subplots(len(self.columns), 1, sharex=True, squeeze=False)[:, 0]
        self.axes = list(axes)
        self._styled = False

    def png(self, frame: pd.DataFrame, title: str) -> bytes:
        """The panels drawn with ``frame``'s rows, titled ``title``, the source line under
        them (:func:`feeslab.plots.describe_source`), as PNG bytes."""
        from feeslab.plots import add_source, describe_source
        from feeslab.plots.watch import plot_watch

        for ax, column in zip(self.axes, self.columns, strict=True):
            plot_watch(frame, column=column, ax=ax)
        if not self._styled:  # small print, and the block numbers under the last panel only
            for ax in self.axes:
                ax.yaxis.label.set_fontsize(8)
                ax.tick_params(labelsize=8)
                if ax is not self.axes[-1]:
                    ax.set_xlabel("")
            self.axes[-1].xaxis.label.set_fontsize(8)
            self._styled = True
        self.figure.suptitle(title, fontsize=9)
        add_source(self.figure, describe_source(frame) if len(frame) else "no block yet")
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        return buffer.getvalue()


def watch(lab: Watched, **options: Unpack[WatchOptions]) -> Watch:
    """Start watching ``lab``'s chain: a :class:`Watch` (what ``lab.watch(...)`` returns).

    The watch first fills its window: it asks the head, then the headers and the fee history
    of the last ``blocks`` blocks in one batched request, paid in credits like any fetch and
    booked in ``lab.credits`` (an ``eth_getBlockByNumber`` per block and an
    ``eth_feeHistory`` per 1,024 blocks, after ``eth_blockNumber``: for 128 blocks 130 calls
    of 80 credits, 10,400 credits on the service's price list). It returns once they are in
    :attr:`Watch.frame`, before any new head arrives; from then on it follows the head in the
    background.

    Parameters
    ----------
    lab : Lab
        On the service, a devnet or any node (era1 files have no head to watch).
    blocks : int
        Rows kept: the last ``blocks`` blocks (default 128) [blocks], filled at the start.
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
        Stop once this many rows were added after the prefill (replacements count) [blocks].
    retry : feeslab.fetch.retry.Retry, optional
        How a lost connection is opened again (default the fetch layer's policy).
    on_block : callable, optional
        ``on_block(row)`` for each row added after the prefill, on the watch's thread.
    title : str, optional
        The figure's title (default ``"The chain's last <blocks> blocks, live"``); a notebook
        numbers it (``"Figure 2. ..."``). The source line under it names the blocks.
    start : bool
        Start at once (default); else call :meth:`Watch.start`.

    Returns
    -------
    Watch
        Running, its window filled; stop it with ``stop()`` or use it as a context manager.

    Raises
    ------
    ConfigError
        A Lab without a node, or options out of range.
    """
    if not lab.has_node:
        raise ConfigError("a watch follows a node's head: this Lab reads files")
    return Watch(lab, **options)
