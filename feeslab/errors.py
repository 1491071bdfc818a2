"""The one exception tree of feeslab: every error any layer raises (exported once, here).

::

    FeeslabError
     ├── ConfigError            bad or missing configuration: URL, key; a 404 (wrong URL)
     │    └── SourceMismatch     (feeslab.sources.base) a dataset asked a source for what it
     │                          does not offer
     ├── CaipError              (also a ValueError) a CAIP chain ID, account ID or scope that
     │                          breaks its standard's rules: .field names it, .value
     ├── TransportError         the network failed after the retries (connect/read errors,
     │                          timeouts, 5xx); the httpx/websockets error is the __cause__
     │    └── NotificationTimeout  (also a TimeoutError) no wallet notification in time
     ├── ProtocolError          an answer that is not JSON-RPC: malformed JSON, missing ids,
     │    │                     an unexpected HTTP status
     │    └── MalformedWord      (also a ValueError) a storage word that is not 0x and at most
     │                          64 hex digits (eth_getStorageAt's answer, or one passed in)
     ├── AuthError              401/403: what the service said, never the key
     ├── RateLimited            429s waited out for rate_limit_patience with nothing served;
     │                          .retry_after [s] or None, .attempts
     ├── CreditsExhausted       402: .credits_spent (this client's ledger); cached answers are
     │                          kept and a rerun resumes
     ├── BudgetExceeded         a planned fetch would pass budget=: .planned, .budget, .spent
     ├── TransactionGasCapExceeded  (also a ValueError) a transaction a node refuses for
     │                          EIP-7825's gas cap, with the node's reason
     ├── ChainSpecError         (also a ValueError) which chain's rules a frame follows
     │    ├── MissingChainSpec   the frame's attrs do not say, nor do the arguments: .argument
     │    │                      names what to pass (spec=, chain_id=)
     │    └── ChainSpecConflict  the arguments contradict each other or the frame's attrs
     ├── Era1Error              (feeslab.sources.era1; also a ValueError) a damaged era1
     │                          file, or a range no file covers: .path, .block
     ├── EraError               (feeslab.sources.era; also a ValueError) a damaged beacon
     │                          Era file, a payload whose hash does not match: .path, .slot,
     │                          .record
     ├── EreError               (feeslab.sources.ere; also a ValueError) a damaged Ere
     │                          execution file: .path, .block, .record
     ├── FigureRuleError        (feeslab.plots.audit) a displayed figure breaks the course's
     │                          figure rules (title, bars, log labels, legends): each named
     ├── IpfsError              a storage (IPFS) API command failed: .status, .code (kubo's
     │    │                     Code: 1 the caller's mistake), .command, kubo's Message
     │    ├── IpfsStreamError    the failure came after the answer began (X-Stream-Error
     │    │                      trailer, or a cut answer): what arrived is incomplete
     │    └── CidMismatchError   bytes that do not hash to the CID asked for: .expected, .actual
     └── RpcError               a JSON-RPC error object: .code, .message, .data
          ├── HistoryPruned      4444 "pruned history unavailable" (EIP-4444): the node dropped
          │                     the bodies, receipts and logs of old blocks: .first, .stop
          │                     (the range asked), .earliest (first block it serves, if known)
          ├── WalletError        the wallet refused: CAIP-25/EIP-1193 codes (5000 unknown error,
          │    │                 5100 networks not supported, 5302 bad sessionProperties, ...)
          │    ├── WalletUnauthorized  4100: no session, or a scope/method it did not grant
          │    └── UserRejected        4001: the user declined the request
          └── RevertError        code 3 or another node's revert form: .data (bytes), .reason,
                                 .panic_code, .error_name/.error_args (custom error + user ABI)

Which answer raises which of them is decided in one place for every client (JSON-RPC over
HTTP and WebSocket, the Gas API, the storage API): ``feeslab.fetch.retry.status_error``.

Every message goes through ``redact`` when the exception is built, so neither ``str`` nor
``repr`` of any of them can show an API key, a secret or Basic credentials (nor ``raw``, the
error object kept). Every one pickles (``FeeslabError.__reduce__``) with its type, message and
attributes, whatever its ``__init__`` takes: a cluster's worker raises them on the driver as
they are; the chain (``__cause__``) stays behind unless dask's tblib sends it along.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from feeslab._redact import redact
from feeslab._solidity import (
    ERROR_SELECTOR,
    PANIC_REASONS,
    PANIC_SELECTOR,
    panic_reason,
)

if TYPE_CHECKING:
    from eth_typing import ABIError

__all__ = [
    "PANIC_REASONS",
    "PRUNED_HISTORY_CODE",
    "AuthError",
    "BudgetExceeded",
    "CaipError",
    "ChainSpecConflict",
    "ChainSpecError",
    "CidMismatchError",
    "ConfigError",
    "CreditsExhausted",
    "FeeslabError",
    "HistoryPruned",
    "IpfsError",
    "IpfsStreamError",
    "MalformedWord",
    "MissingChainSpec",
    "NotificationTimeout",
    "ProtocolError",
    "RateLimited",
    "RevertError",
    "RpcError",
    "TransactionGasCapExceeded",
    "TransportError",
    "UserRejected",
    "WalletError",
    "WalletUnauthorized",
    "redact",
]


class FeeslabError(Exception):
    """Base of every error feeslab raises; its message is always redacted."""

    def __init__(self, message: str = "", *, secrets: Iterable[str] = ()) -> None:
        self.message = redact(message, secrets)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def __reduce__(self) -> tuple[Callable[..., FeeslabError], _Reduced]:
        # pickle rebuilds an exception as cls(*args), which the keyword-only arguments of most
        # of these refuse: rebuild from the (already redacted) args and attributes instead, so
        # every subclass crosses processes (dask workers) with its type, text and attributes
        return _rebuild, (type(self), self.args, dict(vars(self)))


_Reduced = tuple[type[FeeslabError], tuple[object, ...], dict[str, object]]
"""What ``FeeslabError.__reduce__`` hands ``_rebuild``: the class, ``args`` and ``vars``."""


def _rebuild(
    cls: type[FeeslabError], args: tuple[object, ...], state: dict[str, object]
) -> FeeslabError:
    """A pickled ``FeeslabError`` again, without calling its ``__init__`` (see ``__reduce__``)."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigError(FeeslabError):
    """Bad or missing configuration: a URL that cannot work, a missing key, an unknown network."""


class TransportError(FeeslabError):
    """The network failed after the retries: connect/read errors, timeouts, repeated 5xx.

    The last underlying error (httpx or websockets) is chained as ``__cause__``.
    """


class CaipError(FeeslabError, ValueError):
    """A CAIP-2 chain ID, CAIP-10 account ID or CAIP-217 scope that breaks the rules.

    Attributes
    ----------
    field : str
        Where the bad value is, e.g. ``optionalScopes["eip155:1"].methods[2]``.
    value : object
        The value refused.
    """

    def __init__(self, field: str, problem: str, value: object = None) -> None:
        shown = "" if value is None else f" (got {_short_repr(value)})"
        super().__init__(f"{field}: {problem}{shown}")
        self.field = field
        self.value = value


class NotificationTimeout(TransportError, TimeoutError):
    """No wallet notification arrived within the time asked for.

    Attributes
    ----------
    timeout : float
        The wait [s].
    """

    def __init__(self, timeout: float, received: int = 0) -> None:
        got = f" after {received} notification{'s' if received != 1 else ''}" if received else ""
        super().__init__(
            f"no wallet notification arrived within {timeout:g} s{got}; is a subscription or "
            "session open on a live chain (connect(block_time=...))?"
        )
        self.timeout = timeout
        self.received = received


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class ChainSpecError(FeeslabError, ValueError):
    """Which chain's rules (a ``feeslab.ChainSpec``) a frame follows is unclear."""


class MissingChainSpec(ChainSpecError):
    """Neither the arguments nor the frame's ``attrs`` say which chain the frame is of.

    Attributes
    ----------
    argument : str
        The argument to pass (``"spec"``, ``"chain_id"``).
    """

    def __init__(self, message: str, *, argument: str = "spec") -> None:
        super().__init__(message)
        self.argument = argument


class ChainSpecConflict(ChainSpecError):
    """The arguments name another chain or other heights than each other or the frame's attrs."""


class ProtocolError(FeeslabError):
    """An answer that is not JSON-RPC: malformed JSON, missing ids, an unexpected HTTP status.

    Attributes
    ----------
    status : int or None
        The HTTP status of the answer, when there was one.
    """

    def __init__(
        self, message: str, *, status: int | None = None, secrets: Iterable[str] = ()
    ) -> None:
        super().__init__(message, secrets=secrets)
        self.status = status


class MalformedWord(ProtocolError, ValueError):
    """A storage word that is not ``0x`` followed by at most 64 hex digits.

    Nodes answer ``eth_getStorageAt`` with 32-byte words (geth), or shortened ones (``0x0``,
    ``0x1``) and ``0x`` for an empty slot (ganache); all of those are words. Anything else
    (not hex, longer than 32 bytes, not a string) is this error.

    Attributes
    ----------
    value : object
        What was refused.
    """

    def __init__(self, message: str, *, value: object = None) -> None:
        super().__init__(message)
        self.value = value


class AuthError(FeeslabError):
    """The service refused the credentials (HTTP 401 or 403).

    The message repeats what the service said (e.g. "invalid project id"), never the key.

    Attributes
    ----------
    status : int
    """

    def __init__(self, message: str, *, status: int = 401, secrets: Iterable[str] = ()) -> None:
        super().__init__(message, secrets=secrets)
        self.status = status


class RateLimited(FeeslabError):
    """Still HTTP 429 (or JSON-RPC -32005) after the retries ran out.

    Attributes
    ----------
    retry_after : float or None
        Seconds the service last asked to wait, when it said.
    attempts : int
        Requests made before giving up.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        attempts: int = 0,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(message, secrets=secrets)
        self.retry_after = retry_after
        self.attempts = attempts


class CreditsExhausted(FeeslabError):
    """The daily credit balance is spent (HTTP 402); never retried.

    Attributes
    ----------
    credits_spent : int or None
        Credits this client's ledger counted before the refusal.
    details : str or None
        The service's own explanation.
    answers_kept : int
        Set by the fetch that stopped, when it counted them: how many of its answers are in
        the cache (absent otherwise).
    """

    answers_kept: int

    def __init__(
        self,
        *,
        credits_spent: int | None = None,
        details: str | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        spent = "" if credits_spent is None else f" after this client spent {credits_spent:,}"
        message = (
            f"the daily credit balance is exhausted (HTTP 402){spent}. Answers fetched so far "
            "stay in the cache; run the same fetch again after 00:00 UTC (or on a bigger plan) "
            "and it resumes where it stopped."
        )
        if details:
            message += f" The service said: {details}"
        super().__init__(message, secrets=secrets)
        self.credits_spent = credits_spent
        self.details = details if details is None else redact(str(details), secrets)


class BudgetExceeded(FeeslabError):
    """A planned fetch would pass the caller's ``budget=``; nothing was sent.

    Attributes
    ----------
    planned, budget, spent : int
        Credits the fetch needs, the budget, and what was already spent against it.
    """

    def __init__(self, *, planned: int, budget: int, spent: int = 0) -> None:
        super().__init__(
            f"this fetch needs {planned:,} credits but only {budget - spent:,} of the budget "
            f"of {budget:,} remain ({spent:,} already spent); raise budget= or fetch less"
        )
        self.planned = planned
        self.budget = budget
        self.spent = spent


class TransactionGasCapExceeded(FeeslabError, ValueError):
    """A transaction a node refuses for the EIP-7825 transaction gas cap.

    Before Amsterdam (Osaka on) a gas limit above ``2**24`` is refused; from Amsterdam the
    limit may exceed the cap, but the intrinsic gas or the calldata floor may not. The
    message is the node's reason (go-ethereum ``core.ErrGasLimitTooHigh`` /
    ``core.ErrFloorDataGas``) with the figures.
    """


class IpfsError(FeeslabError):
    """A storage (IPFS) API command failed: kubo's ``{"Message", "Code", "Type": "error"}``.

    Attributes
    ----------
    status : int or None
        The HTTP status (400 a malformed request, 403 a command the service forbids, 404 no
        such command, 405 a wrong method, 500 the command failed); None when the failure came
        after a 200.
    code : int or None
        kubo's ``Code``: 1 for the caller's mistakes, 0 otherwise.
    command : str or None
        The command, e.g. ``"cat"``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        command: str | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(message, secrets=secrets)
        self.status = status
        self.code = code
        self.command = command


class IpfsStreamError(IpfsError):
    """A storage API answer failed after it began (status 200 already sent).

    kubo reports such a failure in the ``X-Stream-Error`` trailer; an answer cut short of its
    ``X-Content-Length`` is reported the same way. What arrived before it is incomplete.
    """


class CidMismatchError(IpfsError):
    """Bytes received for a CID do not hash to it: damaged or substituted content.

    Attributes
    ----------
    expected : str
        The CID asked for.
    actual : str
        The CID the received bytes give.
    """

    def __init__(self, *, expected: str, actual: str, command: str | None = None) -> None:
        super().__init__(
            f"the bytes received for {expected} hash to {actual}: refusing content that does "
            "not match its CID",
            command=command,
        )
        self.expected = expected
        self.actual = actual


class RpcError(FeeslabError):
    """A JSON-RPC error object, as the node sent it.

    Attributes
    ----------
    code : int or None
    message : str
    data : object
        The ``data`` member as sent (``RevertError`` turns it into bytes).
    raw : dict
        The whole error object, for re-reading (e.g. ``RevertError.from_rpc(err.raw, abi=...)``).
    """

    def __init__(
        self,
        code: int | None,
        message: str,
        data: object = None,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(f"{code}: {message}" if code is not None else message, secrets=secrets)
        self.code = code
        self.message = redact(str(message), secrets)
        self.data = data
        self.raw: dict[str, Any] = {"code": code, "message": self.message}
        if data is not None:
            self.raw["data"] = data

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code is not None else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"

    @classmethod
    def from_object(cls, error: object, *, secrets: Iterable[str] = ()) -> RpcError:
        """Build the error for a JSON-RPC ``error`` member: a ``RevertError`` when it is one.

        Parameters
        ----------
        error : dict
            The ``error`` member of an answer.
        """
        if not isinstance(error, Mapping):
            return RpcError(None, f"malformed error object: {error!r}"[:200], secrets=secrets)
        if RevertError.recognises(error):
            return RevertError.from_rpc(error, secrets=secrets)
        if error.get("code") == PRUNED_HISTORY_CODE:
            return HistoryPruned.from_rpc(error, secrets=secrets)
        err = RpcError(
            error.get("code"), str(error.get("message", "")), error.get("data"), secrets=secrets
        )
        err.raw = _redacted_raw(error, err.message)
        return err


def _redacted_raw(error: Mapping[str, Any], message: str) -> dict[str, Any]:
    """The error object as sent, its message as redacted: ``raw`` travels with the error
    (pickled to a cluster's driver, say) and must show no more than ``str`` does."""
    raw = dict(error)
    if "message" in raw:
        raw["message"] = message
    return raw


# -- expired history (EIP-4444) ----------------------------------------------------------------

PRUNED_HISTORY_CODE = 4444
"""The JSON-RPC code of geth's and reth's "pruned history unavailable" (EIP-4444)."""

# reth adds the block asked for and the earliest it serves (paradigmxyz/reth
# crates/rpc/rpc-eth-types/src/error/mod.rs at 7b3432d950030875b23c5c4df7c9f53a7caa4868:
# "pruned history unavailable: requested {requested}, earliest available {earliest_available}")
_RETH_PRUNED = re.compile(r"requested (?P<requested>\d+), earliest available (?P<earliest>\d+)")


class HistoryPruned(RpcError):
    """The node no longer serves these blocks' bodies, receipts or logs (EIP-4444).

    Nodes run with history expiry (geth ``--history.chain postmerge``, reth's and others'
    equivalents, since July 2025) keep every header but drop the bodies, uncles, receipts and
    logs of the blocks before their cutoff (the merge), and answer a call for them with
    JSON-RPC error 4444, ``pruned history unavailable``; reth adds the block asked for and the
    earliest it still serves. That history lives on in era1 archive files: ``connect(...,
    era1=DIR)`` beside the node reads the blocks the files hold from them and the rest from
    the node (``feeslab.sources.combined``).

    Raised by a plan or a fetch before anything is sent when the node's cutoff is known and a
    range needs bodies below it, or from the node's 4444 answer itself.

    Attributes
    ----------
    code : int
        4444.
    first, stop : int or None
        The blocks asked for, ``first`` .. ``stop - 1`` (like ``range``), when known.
    earliest : int or None
        The first block whose body the node serves (its cutoff), when known.
    method : str or None
        The JSON-RPC method refused, when known.

    References
    ----------
    .. [1] EIP-4444, "Bound Historical Data in Execution Clients".
    .. [2] ethereum/go-ethereum core/history/historymode.go (``PrunedHistoryError``: code
       4444, "pruned history unavailable") and eth/api_backend.go, eth/filters/api.go at
       02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    .. [3] paradigmxyz/reth crates/rpc/rpc-eth-types/src/error/mod.rs
       (``PrunedHistoryUnavailable``) at 7b3432d950030875b23c5c4df7c9f53a7caa4868.
    """

    def __init__(
        self,
        message: str = "pruned history unavailable",
        *,
        code: int = PRUNED_HISTORY_CODE,
        first: int | None = None,
        stop: int | None = None,
        earliest: int | None = None,
        method: str | None = None,
        data: object = None,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(code, message, data, secrets=secrets)
        self.first = first
        self.stop = stop
        self.earliest = earliest
        self.method = method

    def __str__(self) -> str:
        if self.first is None:
            asked = "the blocks asked for"
        elif self.stop is None or self.stop == self.first + 1:
            asked = f"block {self.first:,}"
        else:
            asked = f"blocks {self.first:,} .. {self.stop - 1:,}"
        how = f" ({self.method})" if self.method else ""
        served = ("" if self.earliest is None
                  else f"; the earliest block whose body it serves is {self.earliest:,}")
        return (
            f"the node has expired the history of {asked}{how} (EIP-4444; it answers "
            f"{self.code}: {self.message}){served}. Read that history from era1 archive "
            "files instead: connect(..., era1=DIR) beside the node reads the blocks the files "
            "hold from them and the rest from the node (feeslab export-era1 writes a "
            "devnet's files; mainnet's pre-merge files are published by the client teams)"
        )  # fmt: skip

    def __repr__(self) -> str:
        return (f"HistoryPruned(first={self.first!r}, stop={self.stop!r}, "
                f"earliest={self.earliest!r}, method={self.method!r})")  # fmt: skip

    def asked(self, first: int, stop: int | None = None, *, method: str | None = None
              ) -> HistoryPruned:  # fmt: skip
        """This error, naming the blocks ``first`` .. ``stop - 1`` (one block by default) and
        the method, where the node's answer did not; returns itself."""
        if self.first is None:
            self.first, self.stop = first, first + 1 if stop is None else stop
        if self.method is None:
            self.method = method
        return self

    @classmethod
    def from_rpc(cls, error: Mapping[str, Any], *, secrets: Iterable[str] = ()) -> HistoryPruned:
        """The error for a node's 4444 answer: geth's bare one, or reth's naming the block
        asked for and the earliest it serves."""
        message = str(error.get("message", ""))
        said = _RETH_PRUNED.search(message)
        first = earliest = None
        if said is not None:
            first, earliest = int(said["requested"]), int(said["earliest"])
        err = cls(message, code=int(error.get("code", PRUNED_HISTORY_CODE)), first=first,
                  stop=None if first is None else first + 1, earliest=earliest,
                  data=error.get("data"), secrets=secrets)  # fmt: skip
        err.raw = _redacted_raw(error, err.message)
        return err


# -- wallet errors ----------------------------------------------------------------------------


class WalletError(RpcError):
    """An error the wallet answered with (CAIP-25 and EIP-1193 codes).

    ``code`` is one of 4001 (user rejected), 4100 (unauthorized), 4200 (unsupported method),
    4900/4901 (disconnected), 5000 (unknown error with request), 5001/5002 (user disapproved
    methods/notifications), 5100 (requested networks are not supported), 5101/5102 (methods/
    notifications not supported), 5300-5302 (invalid scoped/session properties), or -32602 for
    params the wallet cannot read. Errors of a method invoked *through* the wallet (a revert,
    a node's -32602) come as the node's own ``RpcError``/``RevertError`` instead.
    """

    CODES = frozenset(
        {4001, 4100, 4200, 4900, 4901, 5000, 5001, 5002, 5100, 5101, 5102, 5300, 5301, 5302}
    )

    @classmethod
    def from_wallet(cls, error: object, *, secrets: Iterable[str] = ()) -> RpcError:
        """The error for a wallet answer's ``error`` member: a ``WalletError`` (or subclass)
        for the wallet's codes, else what ``RpcError.from_object`` makes of it."""
        if not isinstance(error, Mapping) or error.get("code") not in cls.CODES:
            return RpcError.from_object(error, secrets=secrets)
        kind = {4100: WalletUnauthorized, 4001: UserRejected}.get(error["code"], WalletError)
        err = kind(error["code"], str(error.get("message", "")), error.get("data"), secrets=secrets)
        err.raw = _redacted_raw(error, err.message)
        return err


class WalletUnauthorized(WalletError):
    """4100: no active session, or a scope or method the session did not grant (§4.3 rule 2)."""


class UserRejected(WalletError):
    """4001: the user declined the request."""


# -- reverts ----------------------------------------------------------------------------------


_HEX = re.compile(r"0x[0-9a-fA-F]*")
# ganache 7 / hardhat: "VM Exception while processing transaction: revert <reason>"
_VM_EXCEPTION = re.compile(
    r"VM Exception while processing transaction: (?:revert|reverted)\b"
    r"(?: with reason string)?\s*'?(?P<reason>.*?)'?$",
    re.DOTALL,
)
_REVERT_WORD = re.compile(r"\brevert", re.IGNORECASE)


def _revert_bytes(data: object) -> bytes | None:
    """The raw revert bytes from a ``data`` member in any node's form, or None."""
    if isinstance(data, str):
        # nethermind says "Reverted 0x..."; geth and besu send the bare hex
        match = _HEX.search(data)
        if match is None:
            return None
        digits = match.group()[2:]
        return bytes.fromhex(digits) if len(digits) % 2 == 0 else None
    if isinstance(data, Mapping):
        # ganache 7: {"message", "result" | "data": "0x.."}; ganache 6: {"<txhash>": {"return"}}
        for key in ("data", "result", "return"):
            if key in data:
                found = _revert_bytes(data[key])
                if found is not None:
                    return found
        for value in data.values():
            if isinstance(value, Mapping):
                found = _revert_bytes(value)
                if found is not None:
                    return found
    return None


def _decode_custom(
    data: bytes, abi: Sequence[Mapping[str, Any]]
) -> tuple[str, tuple[object, ...]] | None:
    from eth_abi.abi import decode
    from eth_utils.abi import collapse_if_tuple, function_abi_to_4byte_selector

    for entry in abi:
        if entry.get("type") != "error":
            continue
        # a user's ABI is JSON (dicts), not eth_typing's TypedDicts: its type was checked above
        if function_abi_to_4byte_selector(cast("ABIError", entry)) != data[:4]:
            continue
        types = [collapse_if_tuple(p) for p in entry.get("inputs", [])]
        try:
            return entry["name"], tuple(decode(types, data[4:]))
        except Exception:  # the selector matched but the payload does not: leave undecoded
            return None
    return None


class RevertError(RpcError):
    """An ``eth_call``/``eth_estimateGas`` that reached REVERT.

    Attributes
    ----------
    data : bytes
        The raw revert data (empty for a bare ``revert()``).
    reason : str or None
        The ``Error(string)`` reason, or the panic text for ``Panic(uint256)``.
    panic_code : int or None
        The ``Panic(uint256)`` code.
    error_name : str or None
        A custom error's name, when decoded with the ABI given to ``from_rpc``.
    error_args : tuple or None
        That custom error's decoded arguments.
    """

    data: bytes

    def __init__(
        self,
        code: int | None,
        message: str,
        data: bytes = b"",
        *,
        reason: str | None = None,
        panic_code: int | None = None,
        error_name: str | None = None,
        error_args: tuple[object, ...] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(code, message, None, secrets=secrets)
        self.data = data
        self.raw["data"] = "0x" + data.hex()
        self.reason = reason
        self.panic_code = panic_code
        self.error_name = error_name
        self.error_args = error_args

    def __repr__(self) -> str:
        extra = f", error_name={self.error_name!r}" if self.error_name else ""
        return (
            f"RevertError(code={self.code!r}, reason={self.reason!r}, "
            f"panic_code={self.panic_code!r}{extra}, data=0x{self.data.hex()[:80]})"
        )

    @staticmethod
    def recognises(error: Mapping[str, object]) -> bool:
        """Whether a JSON-RPC error object is a revert in any node's form."""
        message = str(error.get("message", ""))
        if error.get("code") == 3:
            return True  # geth, erigon, reth: code 3 means reverted
        return bool(_REVERT_WORD.search(message)) and (
            "VM Exception" in message
            or message.lower().startswith(("execution reverted", "reverted"))
        )

    @classmethod
    def from_rpc(
        cls,
        error: Mapping[str, Any] | RpcError,
        abi: Sequence[Mapping[str, Any]] | None = None,
        *,
        secrets: Iterable[str] = (),
    ) -> RevertError:
        """Read a revert from a JSON-RPC error object in geth's or another node's form.

        Recognised forms: geth (code 3, ``execution reverted[: reason]``, data hex); ganache 7 /
        hardhat (code -32000/-32603, ``VM Exception while processing transaction: revert
        <reason>``, data a hex string or an object with ``result``/``data``); ganache 6
        (``{"<txhash>": {"return": "0x.."}}``); besu/nethermind (data hex, possibly after
        ``Reverted``).

        Parameters
        ----------
        error : dict or RpcError
            The ``error`` member of the answer (or an ``RpcError`` built from one).
        abi : list of dict, optional
            A contract ABI (JSON) whose ``error`` entries decode custom errors.

        Returns
        -------
        RevertError
        """
        if isinstance(error, RpcError):
            error = error.raw
        message = str(error.get("message", ""))
        data = _revert_bytes(error.get("data")) or b""
        reason: str | None = None
        panic: int | None = None
        name: str | None = None
        args: tuple[object, ...] | None = None
        from eth_abi.abi import decode

        if data[:4] == ERROR_SELECTOR:
            try:
                (reason,) = decode(["string"], data[4:])
            except Exception:
                reason = None
        elif data[:4] == PANIC_SELECTOR:
            try:
                (panic,) = decode(["uint256"], data[4:])
                reason = panic_reason(panic)
            except Exception:
                panic = None
        elif len(data) >= 4 and abi:
            decoded = _decode_custom(data, abi)
            if decoded is not None:
                name, args = decoded
        if reason is None and not data:
            # no data: take the reason from the message (ganache, older geth)
            match = _VM_EXCEPTION.search(message)
            if match and match.group("reason"):
                reason = match.group("reason").strip()
            elif message.startswith("execution reverted: "):
                reason = message[len("execution reverted: ") :]
        return cls(
            error.get("code"),
            message,
            data,
            reason=reason,
            panic_code=panic,
            error_name=name,
            error_args=args,
            secrets=secrets,
        )
