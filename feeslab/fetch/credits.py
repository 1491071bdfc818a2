"""Credits on the client side: what was spent (`CreditLedger`), what a fetch will cost before it
runs (`Plan`), and a cap that stops a fetch before it passes it (`Budget`).

Prices come from ``feeslab.protocol.costs``, the table the embedded devnet charges from, so an
estimate here and a charge there cannot drift apart. The charging rules (REFERENCE.md, "Credits"):

- a served request (HTTP 2xx) costs each of its calls' price: batching saves requests, not credits;
- HTTP 402 and 429 answers are free, and so is any 5xx;
- any other 4xx costs 5 credits per *request* (not per call of a rejected batch);
- an answer taken from the cache costs nothing.

The ledger books the 5-credit fees in a row of their own named ``"http_4xx"``, as the devnet's
ledger does, so the two tables can be compared line by line.
"""

from __future__ import annotations

import html
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

from feeslab.protocol.costs import (
    DEFAULT_DEVNET_PLAN,
    DEFAULT_SERVICE_PLAN,
    PLANS,
    event_cost,
    gas_api_cost,
    http_status_cost,
    method_cost,
    plan_credits_per_second,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FEE_ROW",
    "Budget",
    "CreditLedger",
    "HasMethod",
    "Kind",
    "Plan",
    "PlanLine",
    "ask_devnet_credits_per_second",
    "devnet_credits_per_second",
    "pacing_rate",
    "unit_cost",
]

Kind = Literal["rpc", "gas", "event"]
"""What a name prices as: a node method, a Gas API endpoint, or a subscription event."""


class HasMethod(Protocol):
    """A call the ledger books by its ``method`` (``feeslab.fetch.jsonrpc.RpcCall``)."""

    @property
    def method(self) -> str: ...

FEE_ROW = "http_4xx"
"""Ledger row for the 5-credit fee of a rejected request (the devnet's ledger's name too)."""

_PRICE: dict[str, Callable[[str], int]] = {
    "rpc": method_cost,
    "gas": gas_api_cost,
    "event": event_cost,
}


def unit_cost(name: str, *, kind: Kind = "rpc") -> int:
    """Credits for one call of ``name`` priced as ``kind`` [credits]."""
    try:
        return _PRICE[kind](name)
    except KeyError:
        raise ValueError(f"kind must be one of {sorted(_PRICE)}, not {kind!r}") from None


class _Row:
    __slots__ = ("cached", "calls", "credits", "refused")

    def __init__(self) -> None:
        self.calls = 0
        self.credits = 0
        self.cached = 0
        self.refused = 0


class CreditLedger:
    """Credits this client has spent, per method; thread-safe.

    Attributes (read-only properties)
    ---------------------------------
    spent : int
        Credits spent in total [credits].
    calls : int
        Calls answered by the service (any status), not counting cache hits.
    cached : int
        Calls answered from the cache (0 credits).
    by_method : dict of str to int
        Credits per method [credits]; fees of rejected requests under ``"http_4xx"``.

    Parameters
    ----------
    priced : bool
        Price calls with the service's table (default). ``False`` for a node that is not the
        service (``connect(rpc_url=...)``): calls are counted, credits stay 0.

    Notes
    -----
    Feed it with `record` per call, or pass `on_response` as the transport's ``on_response=``
    callback, which books a whole HTTP request at once (the 4xx fee is per request).
    """

    def __init__(self, *, priced: bool = True) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}
        self.priced = priced

    def _row(self, name: str) -> _Row:
        row = self._rows.get(name)
        if row is None:
            row = self._rows[name] = _Row()
        return row

    def record(
        self, method: str, *, cached: bool = False, http_status: int = 200, kind: Kind = "rpc"
    ) -> int:
        """Book one call of ``method`` answered with ``http_status`` (or from the cache).

        Parameters
        ----------
        method : str
            Method, Gas API endpoint or event kind, as named in ``feeslab.protocol.costs``.
        cached : bool
            Answered from the cache: counted, free; ``http_status`` is ignored.
        http_status : int
            The HTTP status of the answer that carried this call.
        kind : {"rpc", "gas", "event"}
            Which price table ``method`` is in.

        Returns
        -------
        int
            Credits charged for it [credits].
        """
        price = unit_cost(method, kind=kind)  # validates kind before touching the ledger
        if not self.priced:
            price = 0
        with self._lock:
            row = self._row(method)
            if cached:
                row.cached += 1
                return 0
            row.calls += 1
            if 200 <= http_status < 300:
                row.credits += price
                return price
            row.refused += 1
            fee = http_status_cost(http_status) if self.priced else 0
            if fee:
                self._row(FEE_ROW).credits += fee
            return fee

    def record_cached(self, method: str, count: int = 1) -> None:
        """Book ``count`` calls of ``method`` answered from the cache without being asked
        one by one (a scan's piece kept as a frame stands for its headers and uncles): free."""
        with self._lock:
            self._row(method).cached += count

    def record_request(
        self, calls: Iterable[str | HasMethod], http_status: int = 200, *, kind: Kind = "rpc"
    ) -> int:
        """Book one HTTP request carrying ``calls`` (a batch or a single call).

        Parameters
        ----------
        calls : iterable of str or of objects with a ``.method``
            The request's calls (e.g. the transport's ``RpcCall`` objects).
        http_status : int
            The HTTP status of its answer.

        Returns
        -------
        int
            Credits charged for the request: the sum of its calls' prices when served, 5 for a
            rejected request (other 4xx), else 0 [credits].
        """
        # a batch repeats a few methods many times: book each method once
        counts = Counter(c if isinstance(c, str) else c.method for c in calls)
        prices = {name: unit_cost(name, kind=kind) * self.priced for name in counts}
        served = 200 <= http_status < 300
        with self._lock:
            for name, n in counts.items():
                row = self._row(name)
                row.calls += n
                if served:
                    row.credits += prices[name] * n
                else:
                    row.refused += n
            if served:
                return sum(prices[name] * n for name, n in counts.items())
            fee = http_status_cost(http_status) if counts and self.priced else 0
            if fee:
                self._row(FEE_ROW).credits += fee
            return fee

    def on_response(self, calls: Sequence[str | HasMethod], http_status: int, /) -> None:
        """The transport's ``on_response(calls, http_status)`` callback: `record_request`."""
        self.record_request(calls, http_status)

    @property
    def spent(self) -> int:
        with self._lock:
            return sum(row.credits for row in self._rows.values())

    @property
    def calls(self) -> int:
        with self._lock:
            return sum(row.calls for row in self._rows.values())

    @property
    def cached(self) -> int:
        with self._lock:
            return sum(row.cached for row in self._rows.values())

    @property
    def by_method(self) -> dict[str, int]:
        with self._lock:
            return {name: row.credits for name, row in sorted(self._rows.items())}

    def to_frame(self) -> pd.DataFrame:
        """One row per method: ``method, calls, credits, cached, refused`` (sorted by credits).

        ``refused`` counts calls whose answer was not 2xx (free, or the request's 4xx fee).
        """
        import pandas as pd  # imported late: the ledger itself is used without pandas

        with self._lock:
            records = [
                (name, row.calls, row.credits, row.cached, row.refused)
                for name, row in self._rows.items()
            ]
        frame = pd.DataFrame(
            records, columns=["method", "calls", "credits", "cached", "refused"]
        ).astype({"calls": "int64", "credits": "int64", "cached": "int64", "refused": "int64"})
        return frame.sort_values(["credits", "method"], ascending=[False, True], ignore_index=True)

    def __repr__(self) -> str:
        if not self.priced:
            return (f"CreditLedger(calls={self.calls:,}, cached={self.cached:,}, not priced: "
                    "a node that is not the service)")  # fmt: skip
        return f"CreditLedger(spent={self.spent:,}, calls={self.calls:,}, cached={self.cached:,})"

    def _repr_html_(self) -> str:
        """The ledger as a table in Jupyter: one row per method, a total row last."""
        with self._lock:
            rows = sorted(self._rows.items(), key=lambda item: (-item[1].credits, item[0]))
        esc = html.escape
        right = "style='text-align:right'"
        body = "".join(
            f"<tr><td><code>{esc(name)}</code></td><td {right}>{row.calls:,}</td>"
            f"<td {right}>{row.cached:,}</td><td {right}>{row.refused:,}</td>"
            f"<td {right}>{row.credits:,}</td></tr>"
            for name, row in rows
        )
        priced = "" if self.priced else " (not priced: a node that is not the service)"
        return (
            f"<table><caption>Credits spent: {self.spent:,}{priced}</caption>"
            "<thead><tr><th>method</th><th>calls</th><th>cached</th><th>refused</th>"
            "<th>credits</th></tr></thead>"
            f"<tbody>{body}</tbody><tfoot><tr><th>total</th><th {right}>{self.calls:,}</th>"
            f"<th {right}>{self.cached:,}</th><td></td><th {right}>{self.spent:,}</th></tr>"
            "</tfoot></table>"
        )


@dataclass(frozen=True)
class PlanLine:
    """One line of a `Plan`: ``count`` calls of ``method`` at ``unit_cost`` each.

    Attributes
    ----------
    method : str
    count : int
        Calls still to make (after `Plan.minus_cached`).
    unit_cost : int
        Credits per call [credits].
    estimated : bool
        ``count`` is an estimate (shown as ``~``).
    note : str
        Free text shown after the line, e.g. how the estimate was made.
    cached : int
        Calls removed from ``count`` because the cache holds their answers.
    """

    method: str
    count: int
    unit_cost: int
    estimated: bool = False
    note: str = ""
    cached: int = 0

    @property
    def credits(self) -> int:
        """``count * unit_cost`` [credits]."""
        return self.count * self.unit_cost

    @classmethod
    def of(
        cls,
        method: str,
        count: int,
        *,
        estimated: bool = False,
        note: str = "",
        kind: Kind = "rpc",
    ) -> PlanLine:
        """A line priced from the cost table."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be a non-negative int, not {count!r}")
        return cls(method, count, unit_cost(method, kind=kind), estimated, note)

    @classmethod
    def from_sample(
        cls,
        method: str,
        *,
        found: int,
        sample: int,
        population: int,
        per_item: float = 1.0,
        kind: Kind = "rpc",
    ) -> PlanLine:
        """A line whose count is extrapolated from a sample, rounded up.

        Parameters
        ----------
        found : int
            Calls the ``sample`` items needed (e.g. uncles found in 500 sampled blocks).
        sample : int
            Items sampled.
        population : int
            Items the fetch covers.
        per_item : float
            Calls per item found (1 for one call per uncle).
        """
        if sample <= 0:
            raise ValueError("sample must be > 0")
        count = math.ceil(found * per_item * population / sample)
        return cls.of(
            method, count, estimated=True, kind=kind, note=f"estimated from a sample of {sample:,}"
        )


class Plan:
    """The credits a fetch will cost, computed before it sends anything.

    Parameters
    ----------
    lines : iterable of PlanLine or (method, count) pairs
        Pairs are priced as node methods from ``feeslab.protocol.costs``.
    title : str, optional
        Shown above the table.

    Examples
    --------
    >>> plan = Plan([("eth_getBlockByNumber", 20_000),
    ...              PlanLine.of("eth_getUncleByBlockNumberAndIndex", 1_600, estimated=True)])
    >>> plan.total
    1840000
    """

    def __init__(self, lines: Iterable[PlanLine | tuple[str, int]], *, title: str = "") -> None:
        self.lines: tuple[PlanLine, ...] = tuple(
            line if isinstance(line, PlanLine) else PlanLine.of(*line) for line in lines
        )
        self.title = title

    @property
    def total(self) -> int:
        """Credits the whole plan costs [credits]."""
        return sum(line.credits for line in self.lines)

    @property
    def calls(self) -> int:
        """Calls the plan makes."""
        return sum(line.count for line in self.lines)

    @property
    def estimated(self) -> bool:
        """Whether any line is an estimate."""
        return any(line.estimated for line in self.lines)

    def count(self, method: str) -> int:
        """Calls of ``method`` the plan makes (estimated where its lines are), summed over its
        lines; 0 when the plan does not call it."""
        return sum(line.count for line in self.lines if line.method == method)

    def minus_cached(self, counts: Mapping[str, int]) -> Plan:
        """The plan left once the cache's answers are taken off.

        Parameters
        ----------
        counts : mapping of str to int
            Calls per method the cache already answers (e.g. ``Cache.count_cached``). A method
            on several lines is taken off them in order; a count never drops below 0.
        """
        left = dict(counts)
        lines = []
        for line in self.lines:
            take = min(line.count, max(0, left.get(line.method, 0)))
            if take:
                left[line.method] -= take
            lines.append(replace(line, count=line.count - take, cached=line.cached + take))
        return Plan(lines, title=self.title)

    def __add__(self, other: Plan) -> Plan:
        if not isinstance(other, Plan):
            return NotImplemented
        return Plan(self.lines + other.lines, title=self.title or other.title)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and self.lines == other.lines

    __hash__ = None  # type: ignore[assignment]

    def to_frame(self) -> pd.DataFrame:
        """The lines as a DataFrame: method, count, unit_cost, credits, estimated, cached, note."""
        import pandas as pd

        return pd.DataFrame(
            [
                (ln.method, ln.count, ln.unit_cost, ln.credits, ln.estimated, ln.cached, ln.note)
                for ln in self.lines
            ],
            columns=["method", "count", "unit_cost", "credits", "estimated", "cached", "note"],
        )

    def _cells(self) -> list[tuple[str, str, str, str, str]]:
        rows = []
        for line in self.lines:
            count = ("~" if line.estimated else "") + f"{line.count:,}"
            notes = [line.note] if line.note else []
            if line.cached:
                notes.append(f"{line.cached:,} cached")
            rows.append(
                (line.method, count, f"{line.unit_cost:,}", f"{line.credits:,}", "; ".join(notes))
            )
        return rows

    def __repr__(self) -> str:
        cells = self._cells()
        total = ("~" if self.estimated else "") + f"{self.total:,}"
        width = [max([len(c[i]) for c in cells], default=0) for i in range(4)]
        width[3] = max(width[3], len(total))
        head = f"{self.title}: " if self.title else "Plan: "
        out = [f"{head}{total} credits"]
        for method, count, unit, credits, note in cells:
            text = (
                f"  {method:<{width[0]}}  x {count:>{width[1]}} @ {unit:>{width[2]}}"
                f" = {credits:>{width[3]}}"
            )
            out.append(f"{text}  ({note})" if note else text)
        pad = width[0] + width[1] + width[2] + 9
        out.append(f"  {'total':<{pad}} = {total:>{width[3]}}")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        esc = html.escape
        total = ("~" if self.estimated else "") + f"{self.total:,}"
        rows = "".join(
            f"<tr><td><code>{esc(m)}</code></td><td style='text-align:right'>{esc(c)}</td>"
            f"<td style='text-align:right'>{esc(u)}</td>"
            f"<td style='text-align:right'>{esc(cr)}</td><td>{esc(n)}</td></tr>"
            for m, c, u, cr, n in self._cells()
        )
        caption = esc(self.title or "Plan")
        return (
            f"<table><caption>{caption}: {esc(total)} credits</caption>"
            "<thead><tr><th>method</th><th>calls</th><th>credits each</th><th>credits</th>"
            "<th></th></tr></thead>"
            f"<tbody>{rows}</tbody><tfoot><tr><th>total</th><td></td><td></td>"
            f"<th style='text-align:right'>{esc(total)}</th><td></td></tr></tfoot></table>"
        )


class Budget:
    """A cap on the credits a fetch may spend; refuses before anything is sent.

    Parameters
    ----------
    limit : int
        The most credits the fetch may spend [credits].

    Notes
    -----
    `check` compares a plan with the ledger's spend before a fetch starts; `charge` is called
    with each request's price just before it is sent (by the transport, in one place:
    ``feeslab.fetch.core.RpcCore.before_send``, for the budgets a fetch runs ``charging``), so
    a fetch whose estimate was low stops before crossing the limit rather than after. `charge`
    reserves pessimistically (a 429 answer turns out free); the transport gives such credits
    back with `refund`. Thread-safe.
    """

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, not {limit!r}")
        self.limit = limit
        self._spent = 0
        self._lock = threading.Lock()

    @property
    def spent(self) -> int:
        """Credits counted against the budget so far [credits]."""
        with self._lock:
            return self._spent

    @property
    def remaining(self) -> int:
        """Credits left before the limit [credits]."""
        with self._lock:
            return max(0, self.limit - self._spent)

    def check(self, plan: Plan | int, ledger: CreditLedger | None = None) -> None:
        """Refuse a plan that would take spending past the limit.

        Parameters
        ----------
        plan : Plan or int
            The fetch's plan (or its total) [credits].
        ledger : CreditLedger, optional
            Whose ``spent`` counts against the budget; from then on the budget counts from at
            least that figure.

        Raises
        ------
        feeslab.errors.BudgetExceeded
            If ``spent + planned > limit``; nothing has been sent.
        """
        planned = plan.total if isinstance(plan, Plan) else int(plan)
        with self._lock:
            if ledger is not None:
                self._spent = max(self._spent, ledger.spent)
            if self._spent + planned > self.limit:
                raise _budget_exceeded(planned, self.limit, self._spent)

    def charge(self, credits: int) -> None:
        """Count ``credits`` about to be spent; raise instead if that would pass the limit.

        Raises
        ------
        feeslab.errors.BudgetExceeded
            With ``planned=credits``; nothing is counted and the request must not be sent.
        """
        if credits < 0:
            raise ValueError("credits must be >= 0 (use refund)")
        with self._lock:
            if self._spent + credits > self.limit:
                raise _budget_exceeded(credits, self.limit, self._spent)
            self._spent += credits

    def refund(self, credits: int) -> None:
        """Give back credits charged for a request that turned out free (429, 5xx, 402)."""
        with self._lock:
            self._spent = max(0, self._spent - credits)

    def __repr__(self) -> str:
        return f"Budget(limit={self.limit:,}, spent={self.spent:,})"


def _budget_exceeded(planned: int, budget: int, spent: int) -> Exception:
    # late import: errors.py belongs to the transport side and must not import this module
    from feeslab.errors import BudgetExceeded

    return BudgetExceeded(planned=planned, budget=budget, spent=spent)


# -- the rate a client paces at ------------------------------------------------------------------


def devnet_credits_per_second(
    root: str, auth: tuple[str, str], *, timeout: float = 10.0
) -> float | None:
    """The throughput a running devnet enforces (``GET {root}/devnet/info``) [credits/s].

    None when ``root`` is not a devnet that answers (another service, a wrong secret, no route).
    """
    import httpx

    from feeslab.fetch._tls import shared_ssl_context  # a new context per call costs 40 ms

    url = f"{root.rstrip('/')}/devnet/info"
    try:
        answer = httpx.get(url, auth=auth, timeout=timeout, verify=shared_ssl_context())
        rate = answer.json().get("credits_per_second") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0:
        return float(rate)
    return None


def ask_devnet_credits_per_second(root: str, auth: tuple[str, str]) -> Future[float | None]:
    """`devnet_credits_per_second` on a daemon thread: a future of its answer, so that a
    client can start at once and take the devnet's limit when it comes (one round trip less
    before the first request)."""
    told: Future[float | None] = Future()

    def ask() -> None:
        try:
            told.set_result(devnet_credits_per_second(root, auth))
        except BaseException as exc:  # the future carries it
            told.set_exception(exc)

    threading.Thread(target=ask, name="feeslab-devnet-limit", daemon=True).start()
    return told


def pacing_rate(
    credits_per_second: float | str | None,
    *,
    devnet_root: str | None = None,
    auth: tuple[str, str] | None = None,
    service: bool = False,
) -> float | None:
    """The rate a client should pace its requests at [credits/s], or None for no pacing.

    Parameters
    ----------
    credits_per_second : float, str or None
        A number [credits/s]; a plan's name (``"core"``, ``"developer"``, ``"team"``, see
        ``feeslab.protocol.costs.PLANS``); ``math.inf`` for no pacing; None for the default: what a
        devnet at ``devnet_root`` says it enforces (asked with ``auth``), or without a secret
        to ask with the devnet's default plan (``DEFAULT_DEVNET_PLAN``, Team); else on the
        service (``service``) the ``DEFAULT_SERVICE_PLAN`` (the free Core plan: every plan
        allows that much); else (a node that charges no credits) no pacing.
    devnet_root : str, optional
        The root URL of a devnet (``connect(url=...)``, or the embedded one).
    auth : (key, secret), optional
        HTTP Basic credentials for ``devnet_root``.
    service : bool
        The client talks to the credit-charging service (or may: a root that is not a devnet).

    Raises
    ------
    ConfigError
        A value that is neither a positive number nor a known plan.
    """
    from feeslab.errors import ConfigError

    if isinstance(credits_per_second, str):
        try:
            return float(plan_credits_per_second(credits_per_second))
        except KeyError:
            try:
                credits_per_second = float(credits_per_second)
            except ValueError:
                raise ConfigError(
                    f"credits_per_second must be a number of credits per second or a plan "
                    f"({', '.join(PLANS)}), not {credits_per_second!r}"
                ) from None
    if credits_per_second is not None:
        if isinstance(credits_per_second, bool) or not isinstance(credits_per_second, int | float):
            raise ConfigError(
                f"credits_per_second must be a number or a plan name, not {credits_per_second!r}"
            )
        if not credits_per_second > 0:  # NaN too
            raise ConfigError(f"credits_per_second must be > 0, not {credits_per_second!r}")
        return None if math.isinf(credits_per_second) else float(credits_per_second)
    if devnet_root is not None and auth is not None and all(auth):
        told = devnet_credits_per_second(devnet_root, auth)
        if told is not None:
            return told
    if devnet_root is not None:
        return float(plan_credits_per_second(DEFAULT_DEVNET_PLAN))
    if service:
        return float(plan_credits_per_second(DEFAULT_SERVICE_PLAN))
    return None
