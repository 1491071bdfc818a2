"""The devnet's wallet: CAIP-25 multichain sessions, in-process and over ``WS /wallet``.

A stand-in for MetaMask's multichain API (interface §2.6, §4.3, §5-§7.2), faithful to the
extension's shipped handlers (MetaMask/core ``multichain-api-middleware``):

``wallet_createSession``
    ``params`` must be an object (else -32602 ``Invalid method parameter(s).``);
    ``sessionProperties: {}`` (or any non-object) -> 5302, unknown property keys are dropped;
    ``requiredScopes`` count as ``optionalScopes``; invalid scopes are dropped silently, bare
    namespaces with ``references`` become one scope per chain; unsupported chains, methods,
    notifications and accounts are filtered out and if no chain remains -> 5100 ``Requested
    networks are not supported``. The **user** (:class:`WalletUser`) then approves a subset:
    fewer chains, fewer methods, fewer or no accounts; declining everything -> 4001. The grant
    replaces any earlier session of the connection. A ``sessionId`` is never issued, and one
    sent is ignored.
``wallet_getSession``
    ``{"sessionScopes": {...}}``, ``{}`` without a session.
``wallet_invokeMethod``
    Only a granted scope and method (else 4100); node methods run on that devnet chain through
    ``feeslab.devnet.rpc.dispatch`` (geth's answers and errors, passed through as they are);
    ``eth_subscribe("newHeads")`` needs ``eth_subscription`` granted and its events come back
    as ``wallet_notify``; ``personal_sign`` (EIP-191, secp256k1) and Solana ``signMessage``
    (ed25519) are answered by the wallet with a granted account's key. The result is the
    invoked method's bare result, as MetaMask's shipped handler and its official client
    (``@metamask/multichain-api-client``) answer; the interface's table (§4.3) shows it wrapped
    as ``{"scope", "result": {"method", "result"}}``, which no MetaMask dapp expects.
``wallet_revokeSession``
    Ends the session and its subscriptions; ``true``, also without a session. An unexpected
    failure in create or revoke answers 5000 ``Unknown error with request``.

Notifications carry no id: ``wallet_notify`` ``{scope, notification: {method, params}}`` for
each new head of a subscription (in block order, after the ``eth_subscribe`` answer), and
``wallet_sessionChanged`` ``{sessionScopes}`` (the full updated scopes) when the user changes
the grant (:meth:`DevnetWallet.change_grant`, or ``POST /devnet/wallet`` on the server).

Sessions belong to a connection: closing it ends its session (no session IDs exist to find it
again). **Credits**: the wallet API has no API key (§5; the connection is the authorization),
but its node traffic is metered like any other: on a devnet it is charged to the devnet's
ledger, at the same prices and under the same daily balance and throughput limits as the key's
other traffic (forwarded node methods, ``eth_subscribe``/``eth_unsubscribe``, 50 per
``newHeads`` event; signing is the wallet's own work and free). A refused call answers the
key's 402 or 429 error object. A wallet built alone keeps its own, unlimited ledger.

**Origins**: ``WS /wallet`` refuses a browser page of another origin (HTTP 403), so a page the
user happens to open cannot drive the wallet: only loopback origins (``http://localhost:*``,
``127.0.0.0/8``, ``[::1]``), clients that send no ``Origin`` (scripts, notebooks) and the
origins a devnet allows (``wallet_allow_origin``) may connect.

**Accounts** are derived from the seed: three secp256k1 keys (``eth-keys``; real EIP-55
addresses, the same on every ``eip155`` chain) and three ed25519 keys for Solana mainnet
(``solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp``; base58 public keys), the wallet's non-EVM
namespace. The devnet runs no Solana node: that scope offers the wallet's own ``signMessage``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import itertools
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from eth_hash.auto import keccak
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.websockets import WebSocket

from feeslab.caip import (
    AccountId,
    CaipError,
    ChainId,
    Scope,
    ScopeKey,
    normalize_scopes,
    parse_scope_key,
)
from feeslab.devnet import rpc
from feeslab.devnet.credits import payment_required_body, too_many_requests_body
from feeslab.devnet.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from feeslab.devnet.jsonrpc import CallContext, encode, execute, parse_request
from feeslab.devnet.subscriptions import HeadSubscriptions, poll_interval
from feeslab.protocol.costs import event_cost, method_cost

if TYPE_CHECKING:
    from feeslab.devnet.credits import Usage

log = logging.getLogger(__name__)

# -- error codes and messages (EIP-1193, CAIP-25; the interface's messages where it has one) ----
USER_REJECTED = 4001
UNAUTHORIZED = 4100
UNKNOWN_ERROR = 5000
NETWORKS_NOT_SUPPORTED = 5100
INVALID_SESSION_PROPERTIES = 5302
MESSAGES = {
    USER_REJECTED: "User rejected the request.",
    UNAUTHORIZED: "The requested account and/or method has not been authorized by the user.",
    UNKNOWN_ERROR: "Unknown error with request",
    NETWORKS_NOT_SUPPORTED: "Requested networks are not supported",
    INVALID_SESSION_PROPERTIES: "Invalid sessionProperties requested",
    INVALID_PARAMS: "Invalid method parameter(s).",
}

SOLANA_MAINNET = ChainId("solana", "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")
ACCOUNTS_PER_NAMESPACE = 3
SESSION_PROPERTIES = frozenset(
    # the interface's example (§2.6) and MetaMask's KnownSessionProperties
    {"expiry", "globalConfig", "eip1193-compatible", "solana_accountChanged_notifications"}
)
WALLET_METHODS_EIP155 = ("eth_subscribe", "eth_unsubscribe", "personal_sign")
SOLANA_METHODS = ("signMessage",)
EIP155_NOTIFICATIONS = ("eth_subscription",)
_SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def wallet_error(code: int, data: Any = None) -> RpcError:
    """The wallet's error ``code`` with its standard message."""
    return RpcError(code, MESSAGES[code], data)


def _details(body: dict[str, Any]) -> dict[str, Any]:
    error = body["error"]
    return {"event": error["event"], "details": error["details"]}


def _notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def base58(data: bytes) -> str:
    """Bitcoin-alphabet base58, as Solana prints keys and signatures."""
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, rest = divmod(number, 58)
        digits.append(_BASE58[rest])
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(reversed(digits))


# -- keys -------------------------------------------------------------------------------------


class _EvmKey:
    def __init__(self, secret: bytes) -> None:
        from eth_keys import keys  # loaded when the first wallet is built

        self._key = keys.PrivateKey(secret)
        self.address = self._key.public_key.to_checksum_address()

    def personal_sign(self, message: bytes) -> str:
        """EIP-191 ``personal_sign``: 65 bytes r || s || v, v in {27, 28}."""
        prefix = b"\x19Ethereum Signed Message:\n" + str(len(message)).encode()
        signature = self._key.sign_msg_hash(keccak(prefix + message)).to_bytes()
        return "0x" + signature[:64].hex() + f"{signature[64] + 27:02x}"


class _Ed25519Key:
    def __init__(self, seed: bytes) -> None:
        from Crypto.PublicKey import ECC  # pycryptodome

        self._key = ECC.construct(curve="Ed25519", seed=seed)
        self.public = self._key.public_key().export_key(format="raw")
        self.address = base58(self.public)

    def sign(self, message: bytes) -> bytes:
        from Crypto.Signature import eddsa

        return eddsa.new(self._key, "rfc8032").sign(message)


def _derived(seed: int, label: bytes, index: int) -> bytes:
    material = keccak(b"feeslab-wallet:" + label + seed.to_bytes(16, "big", signed=True))
    secret = keccak(material + bytes([index]))
    while not 0 < int.from_bytes(secret, "big") < _SECP256K1_ORDER:  # never in practice
        secret = keccak(secret)
    return secret


# -- the user ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WalletUser:
    """The person at the wallet, as a policy: what they approve of a connection request.

    Parameters
    ----------
    approve : bool
        False: decline every ``wallet_createSession`` (4001).
    chains : collection of str, optional
        The chains the user agrees to share (CAIP-2 IDs); None: every supported chain asked.
    deny_methods, deny_notifications : collection of str
        Methods and notifications the user leaves out of every grant.
    accounts_per_scope : int or None
        How many accounts the user selects per chain: the first of those the dapp preselected
        (when it did), else of the wallet's own; 0 grants none, None all of them.
    """

    approve: bool = True
    chains: Collection[str] | None = None
    deny_methods: Collection[str] = ()
    deny_notifications: Collection[str] = ()
    accounts_per_scope: int | None = 1

    def __post_init__(self) -> None:
        if self.chains is not None:
            chains = frozenset(
                ChainId.parse(c, field=f"chains[{i}]") for i, c in enumerate(self.chains)
            )
            object.__setattr__(self, "chains", chains)
        object.__setattr__(self, "deny_methods", frozenset(self.deny_methods))
        object.__setattr__(self, "deny_notifications", frozenset(self.deny_notifications))
        n = self.accounts_per_scope
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
            raise ValueError(f"accounts_per_scope must be None or an int >= 0, not {n!r}")

    def decide(
        self, asked: Mapping[ChainId, Scope], owned: Mapping[ChainId, tuple[AccountId, ...]]
    ) -> dict[ChainId, Scope]:
        """The scopes granted of ``asked`` (already filtered to what the wallet supports).

        Raises
        ------
        RpcError
            4001 when the user declines, or grants nothing.
        """
        if not self.approve:
            raise wallet_error(USER_REJECTED)
        granted: dict[ChainId, Scope] = {}
        for chain, scope in asked.items():
            if self.chains is not None and chain not in self.chains:
                continue
            candidates = scope.accounts or owned.get(chain, ())
            n = len(candidates) if self.accounts_per_scope is None else self.accounts_per_scope
            granted[chain] = Scope(
                [m for m in scope.methods if m not in self.deny_methods],
                [x for x in scope.notifications if x not in self.deny_notifications],
                candidates[:n],
            )
        if not granted:
            raise wallet_error(USER_REJECTED)
        return granted


# -- the wallet -------------------------------------------------------------------------------


class DevnetWallet:
    """The devnet's wallet: its accounts, its user, and the connections of dapps.

    Parameters
    ----------
    chains : ChainSet
        The devnet's chains (``feeslab.devnet.chain.build_chains``); each is an ``eip155``
        scope the wallet serves.
    seed : int
        Derives the wallet's keys.
    user : WalletUser, optional
        Who approves requests (default: approves everything asked, one account per chain).
    format_head : callable
        ``newHeads`` payloads (default ``feeslab.devnet.rpc.format_new_head``).
    ledger : CreditLedger, optional
        Where the node traffic is charged: the devnet's (``Devnet.wallet`` passes it); default
        a ledger of the wallet's own that never limits.
    """

    def __init__(
        self,
        chains: Any,
        seed: int,
        *,
        user: WalletUser | None = None,
        format_head: Callable[[Any], dict] = rpc.format_new_head,
        ledger: Any = None,
    ) -> None:
        from feeslab.devnet.credits import CreditLedger

        self.chains = chains
        self.seed = seed
        self.user = user or WalletUser()
        self.format_head = format_head
        self.ledger = ledger if ledger is not None else CreditLedger(2**62, float(2**62))
        self._chains = {ChainId.eip155(c.chain_id): c for c in chains}
        evm = [_EvmKey(_derived(seed, b"eip155", i)) for i in range(ACCOUNTS_PER_NAMESPACE)]
        sol = [_Ed25519Key(_derived(seed, b"solana", i)) for i in range(ACCOUNTS_PER_NAMESPACE)]
        self._keys: dict[AccountId, _EvmKey | _Ed25519Key] = {}
        for chain in self._chains:
            self._keys.update({AccountId(chain, k.address): k for k in evm})
        self._keys.update({AccountId(SOLANA_MAINNET, k.address): k for k in sol})
        self.accounts: dict[ChainId, tuple[AccountId, ...]] = {}
        for account in self._keys:
            self.accounts[account.chain_id] = (*self.accounts.get(account.chain_id, ()), account)
        self._serials = itertools.count(1)
        self._connections: set[WalletConnection] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<DevnetWallet chains={[str(c) for c in self.accounts]} user={self.user}>"

    # -- what it supports ------------------------------------------------------------------

    def methods(self, chain: ChainId) -> tuple[str, ...]:
        """The methods the wallet serves on ``chain``."""
        if chain in self._chains:
            return (*rpc.METHODS, *WALLET_METHODS_EIP155)
        return SOLANA_METHODS if chain == SOLANA_MAINNET else ()

    def notifications(self, chain: ChainId) -> tuple[str, ...]:
        return EIP155_NOTIFICATIONS if chain in self._chains else ()

    def chain(self, chain: ChainId) -> Any:
        """The devnet chain behind an ``eip155`` scope."""
        return self._chains[chain]

    def key(self, account: AccountId) -> _EvmKey | _Ed25519Key:
        return self._keys[account]

    def usage(self) -> Usage:
        """The ledger the wallet's node traffic is charged to (on a devnet: the devnet's)."""
        return self.ledger.usage()

    def charge(self, method: str) -> None:
        """Admit and charge one node call, or raise the key's 402/429 error object."""
        decision = self.ledger.admit([(method, method_cost(method))])
        if decision.status == 402:
            raise RpcError(402, "Payment Required", _details(payment_required_body()))
        if decision.status == 429:
            data = {**_details(too_many_requests_body()), "retry_after": decision.retry_after}
            raise RpcError(429, "Too Many Requests", data)

    # -- connections -----------------------------------------------------------------------

    def connect(self, sink: Callable[[dict], None] | None = None) -> WalletConnection:
        """A new dapp connection.

        Parameters
        ----------
        sink : callable, optional
            ``sink(message)`` receives every notification (and, over WebSocket, every
            answer) as a JSON-ready dict or encoded bytes; default: kept for
            :meth:`WalletConnection.poll`.
        """
        connection = WalletConnection(self, next(self._serials), sink)
        with self._lock:
            self._connections.add(connection)
        return connection

    def _forget(self, connection: WalletConnection) -> None:
        with self._lock:
            self._connections.discard(connection)

    @property
    def connections(self) -> list[WalletConnection]:
        with self._lock:
            return sorted(self._connections, key=lambda c: c.serial)

    # -- the user changes the grant ------------------------------------------------------------

    def change_grant(
        self,
        *,
        revoke: bool = False,
        remove_chains: Iterable[str] = (),
        remove_methods: Iterable[str] = (),
        remove_accounts: Iterable[str] = (),
        add_accounts: Iterable[str] = (),
        connection: WalletConnection | None = None,
    ) -> int:
        """Act as the user on the open sessions (all, or ``connection``'s).

        Each session that changes gets ``wallet_sessionChanged`` with its full updated
        scopes; a session left without chains ends (``sessionScopes: {}``) with its
        subscriptions.

        Parameters
        ----------
        revoke : bool
            Disconnect the dapp: end the session.
        remove_chains, remove_methods, remove_accounts : iterable of str
            CAIP-2 chains, method names and CAIP-10 accounts to take back.
        add_accounts : iterable of str
            The wallet's CAIP-10 accounts to add to the granted chains they belong to.

        Returns
        -------
        int
            How many sessions changed.

        Raises
        ------
        CaipError
            A malformed chain or account ID, or an account this wallet does not hold.
        """
        if not isinstance(revoke, bool):
            raise CaipError("revoke", "must be true or false", revoke)
        edit = _GrantEdit(
            revoke=revoke,
            chains=frozenset(
                ChainId.parse(c, field=f"remove_chains[{i}]")
                for i, c in enumerate(_listed(remove_chains, "remove_chains"))
            ),
            methods=frozenset(_listed(remove_methods, "remove_methods")),
            removed=tuple(
                AccountId.parse(a, field=f"remove_accounts[{i}]")
                for i, a in enumerate(_listed(remove_accounts, "remove_accounts"))
            ),
            added=tuple(
                self._own(a, f"add_accounts[{i}]")
                for i, a in enumerate(_listed(add_accounts, "add_accounts"))
            ),
        )
        targets = [connection] if connection is not None else self.connections
        return sum(c._apply_user_edit(edit) for c in targets)

    def _own(self, text: str, where: str) -> AccountId:
        account = AccountId.parse(text, field=where)
        for mine in self.accounts.get(account.chain_id, ()):
            if mine.same(account):
                return mine
        raise CaipError(where, "is not an account of this wallet", text)


def _listed(values: Iterable[str], where: str) -> list[str]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise CaipError(where, "must be a list of strings", values)
    listed = list(values)
    for i, value in enumerate(listed):
        if not isinstance(value, str):
            raise CaipError(f"{where}[{i}]", "must be a string", value)
    return listed


@dataclass(frozen=True)
class _GrantEdit:
    revoke: bool = False
    chains: frozenset[ChainId] = frozenset()
    methods: frozenset[str] = frozenset()
    removed: tuple[AccountId, ...] = ()
    added: tuple[AccountId, ...] = ()

    def apply(self, scopes: Mapping[ChainId, Scope]) -> dict[ChainId, Scope]:
        if self.revoke:
            return {}
        out = {}
        for chain, scope in scopes.items():
            if chain in self.chains:
                continue
            kept = [a for a in scope.accounts if not any(a.same(r) for r in self.removed)]
            kept += [a for a in self.added if a.chain_id == chain]
            out[chain] = Scope(
                [m for m in scope.methods if m not in self.methods], scope.notifications, kept
            )
        return out


@dataclass
class _Grant:
    scopes: dict[ChainId, Scope]
    properties: dict[str, Any] = field(default_factory=dict)

    def scopes_json(self) -> dict[str, Any]:
        return {str(chain): scope.to_json() for chain, scope in self.scopes.items()}


def _lenient_scopes(value: Any) -> dict[ScopeKey, Scope]:
    """A request's scopes as MetaMask reads them: invalid scopes and malformed or foreign
    accounts dropped without a word, references flattened, duplicates merged."""
    if not isinstance(value, Mapping):
        return {}
    scopes: dict[ScopeKey, Scope] = {}
    for key, obj in value.items():
        if isinstance(obj, Mapping) and isinstance(obj.get("accounts"), list):
            obj = {**obj, "accounts": [a for a in obj["accounts"] if _fits(a, key, obj)]}
        try:
            scope = Scope.from_json(key, obj)
            scopes[parse_scope_key(key)] = scope
        except CaipError:
            continue
    return normalize_scopes(scopes)


def _fits(account: Any, key: Any, obj: Mapping[str, Any]) -> bool:
    """Whether ``account`` is a well-formed account of the scope ``key``/``obj``."""
    probe = {"methods": [], "notifications": [], "accounts": [account]}
    if "references" in obj:
        probe["references"] = obj["references"]
    try:
        Scope.from_json(key, probe)
    except CaipError:
        return False
    return True


def _merge(a: Mapping[ScopeKey, Scope], b: Mapping[ScopeKey, Scope]) -> dict[ScopeKey, Scope]:
    merged = dict(a)
    for key, scope in b.items():
        merged[key] = merged[key].merge(scope) if key in merged else scope
    return merged


class WalletConnection:
    """One dapp's connection to the wallet: its session, subscriptions and notifications.

    ``request(method, params)`` runs a wallet method and returns its result (raising the
    devnet's ``RpcError``); ``handle(body)`` answers a JSON-RPC body; ``poll()`` (default sink
    only) returns the notifications due, oldest first. Thread-safe.
    """

    def __init__(
        self, wallet: DevnetWallet, serial: int, sink: Callable[[Any], None] | None
    ) -> None:
        self.wallet = wallet
        self.serial = serial
        self._pending: list[Any] = []
        self._sink = sink if sink is not None else self._pending.append
        self._grant: _Grant | None = None
        self._heads: dict[ChainId, HeadSubscriptions] = {}
        self._lock = threading.RLock()
        self._ctx = CallContext(chain=None, chains=wallet.chains, transport="ws")
        self.closed = False

    def __repr__(self) -> str:
        chains = [] if self._grant is None else [str(c) for c in self._grant.scopes]
        return f"<WalletConnection {self.serial} session={chains}>"

    # -- requests ----------------------------------------------------------------------------

    def request(self, method: str, params: Any = None) -> Any:
        """Run ``method`` and return its result; an error raises the devnet's ``RpcError``."""
        with self._lock:
            try:
                return self.dispatch(self._ctx, method, {} if params is None else params)
            finally:
                self._activate()

    def handle(self, body: bytes | str, *, send: bool = False) -> bytes | None:
        """Answer a JSON-RPC body (one call or a batch).

        With ``send``, the answer goes to the sink (ahead of any notification it allows).
        """
        with self._lock:
            payload = execute(parse_request(body), self._ctx, self.dispatch)
            if send and payload is not None:
                self._sink(payload)
            self._activate()
            return payload

    def dispatch(self, ctx: Any, method: str, params: Any) -> Any:
        handler = _METHODS.get(method)
        if handler is None:
            raise RpcError(
                METHOD_NOT_FOUND, f'The method "{method[:80]}" does not exist / is not available.'
            )
        return handler(self, params)

    def _create(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, Mapping):
            raise wallet_error(INVALID_PARAMS)
        properties = params.get("sessionProperties")
        if properties is not None and (not isinstance(properties, Mapping) or not properties):
            raise wallet_error(INVALID_SESSION_PROPERTIES)
        try:
            granted = self._decide(params)
        except RpcError:
            raise
        except Exception:
            log.exception("wallet_createSession failed")
            raise wallet_error(UNKNOWN_ERROR) from None
        kept = {k: v for k, v in (properties or {}).items() if k in SESSION_PROPERTIES}
        with self._lock:
            self._set_grant(_Grant(granted, kept))
            return {"sessionScopes": self._grant.scopes_json(), "sessionProperties": kept}

    def _decide(self, params: Mapping[str, Any]) -> dict[ChainId, Scope]:
        wallet = self.wallet
        asked = _merge(
            _lenient_scopes(params.get("requiredScopes")),
            _lenient_scopes(params.get("optionalScopes")),
        )
        supported: dict[ChainId, Scope] = {}
        for key, scope in asked.items():
            if not isinstance(key, ChainId) or key not in wallet.accounts:
                continue
            methods, notifications = wallet.methods(key), wallet.notifications(key)
            owned = wallet.accounts[key]
            supported[key] = Scope(
                [m for m in scope.methods if m in methods],
                [n for n in scope.notifications if n in notifications],
                [mine for a in scope.accounts for mine in owned if mine.same(a)],
            )
        if not supported:
            raise wallet_error(NETWORKS_NOT_SUPPORTED)
        return wallet.user.decide(supported, wallet.accounts)

    def _get(self, params: Any) -> dict[str, Any]:
        with self._lock:
            scopes = {} if self._grant is None else self._grant.scopes_json()
        return {"sessionScopes": scopes}

    def _revoke(self, params: Any) -> bool:
        try:
            with self._lock:
                self._set_grant(None)
        except Exception:
            log.exception("wallet_revokeSession failed")
            raise wallet_error(UNKNOWN_ERROR) from None
        return True

    def _invoke(self, params: Any) -> Any:
        if not isinstance(params, Mapping):
            raise wallet_error(INVALID_PARAMS)
        scope_text, request = params.get("scope"), params.get("request")
        if not isinstance(request, Mapping) or not isinstance(request.get("method"), str):
            raise wallet_error(INVALID_PARAMS)
        try:
            chain = ChainId.parse(scope_text)
        except CaipError:
            raise wallet_error(INVALID_PARAMS) from None
        method = request["method"]
        with self._lock:
            scope = None if self._grant is None else self._grant.scopes.get(chain)
        if scope is None or method not in scope.methods:
            raise wallet_error(UNAUTHORIZED)
        inner = request.get("params")
        if inner is None or (isinstance(inner, Mapping) and not inner):
            inner = []  # "params object, may be empty": no arguments
        return self._run(chain, scope, method, inner)

    def _run(self, chain: ChainId, scope: Scope, method: str, params: Any) -> Any:
        wallet = self.wallet
        if chain == SOLANA_MAINNET:
            return self._sign_solana(scope, params)
        if method == "personal_sign":
            return self._personal_sign(scope, params)
        if method in ("eth_subscribe", "eth_unsubscribe"):
            with self._lock:
                heads = self._heads.get(chain)
                if heads is None:
                    prefix = f"wallet:{self.serial}:{chain}"
                    heads = HeadSubscriptions(
                        wallet.chain(chain),
                        wallet.format_head,
                        prefix,
                        elsewhere=lambda chain=chain: self._held(chain),
                    )
                    self._heads[chain] = heads
            if method == "eth_subscribe":
                if "eth_subscription" not in scope.notifications:
                    raise wallet_error(UNAUTHORIZED, {"notification": "eth_subscription"})
                wallet.charge(method)
                return heads.subscribe(params)
            wallet.charge(method)
            return heads.unsubscribe(params)
        wallet.charge(method)
        ctx = CallContext(chain=wallet.chain(chain), chains=wallet.chains, transport="ws")
        return rpc.dispatch(ctx, method, params)

    def _held(self, besides: ChainId) -> int:
        """Subscriptions this connection holds on chains other than ``besides``."""
        return sum(len(h) for c, h in list(self._heads.items()) if c != besides)

    def _granted_account(self, scope: Scope, address: Any) -> AccountId:
        if isinstance(address, str):
            for account in scope.accounts:
                with contextlib.suppress(CaipError):
                    if account.same(AccountId(account.chain_id, address)):
                        return account
        raise wallet_error(UNAUTHORIZED)

    def _personal_sign(self, scope: Scope, params: Any) -> str:
        if not isinstance(params, list) or len(params) < 2 or not isinstance(params[0], str):
            raise wallet_error(INVALID_PARAMS)
        account = self._granted_account(scope, params[1])
        text = params[0]
        try:  # hex is signed as bytes; other text as its UTF-8 (as MetaMask does)
            message = bytes.fromhex(text[2:]) if text.startswith("0x") else text.encode()
        except ValueError:
            message = text.encode()
        key = self.wallet.key(account)
        assert isinstance(key, _EvmKey)
        return key.personal_sign(message)

    def _sign_solana(self, scope: Scope, params: Any) -> dict[str, str]:
        account = params.get("account") if isinstance(params, Mapping) else None
        encoded = params.get("message") if isinstance(params, Mapping) else None
        if not isinstance(account, Mapping) or not isinstance(encoded, str):
            raise wallet_error(INVALID_PARAMS)
        try:
            message = base64.b64decode(encoded, validate=True)
        except ValueError:
            raise wallet_error(INVALID_PARAMS) from None
        granted = self._granted_account(scope, account.get("address"))
        key = self.wallet.key(granted)
        assert isinstance(key, _Ed25519Key)
        return {
            "signature": base58(key.sign(message)),
            "signedMessage": encoded,
            "signatureType": "ed25519",
        }

    # -- session state -----------------------------------------------------------------------

    def _set_grant(self, grant: _Grant | None) -> None:
        """Replace the session; subscriptions on chains no longer granted end."""
        self._grant = grant
        for chain in list(self._heads):
            scope = None if grant is None else grant.scopes.get(chain)
            if scope is None or "eth_subscription" not in scope.notifications:
                self._heads.pop(chain).clear()

    def _apply_user_edit(self, edit: _GrantEdit) -> bool:
        with self._lock:
            if self._grant is None or self.closed:
                return False
            scopes = edit.apply(self._grant.scopes)
            if scopes == self._grant.scopes:
                return False
            self._set_grant(_Grant(scopes, self._grant.properties) if scopes else None)
            body = {"sessionScopes": {str(c): s.to_json() for c, s in scopes.items()}}
            self._sink(_notification("wallet_sessionChanged", body))
            return True

    @property
    def session(self) -> dict[str, Any]:
        """``wallet_getSession``'s answer."""
        return self._get({})

    # -- notifications -----------------------------------------------------------------------

    def _activate(self) -> None:
        for heads in self._heads.values():
            heads.activate()

    @property
    def following(self) -> bool:
        """Whether some subscription may have events due."""
        return any(heads.active for heads in list(self._heads.values()))

    def follow(self) -> int:
        """Send the ``wallet_notify`` events due now; returns how many."""
        cost = event_cost("newHeads")

        def charge() -> bool:  # False once the daily balance cannot pay: no more events
            return self.wallet.ledger.charge_event("newHeads", cost)

        sent = 0
        with self._lock:
            if self._grant is None or self.closed:
                return 0
            for chain, heads in self._heads.items():
                events, _ = heads.due(charge)
                for sub_id, header in events:
                    params = {"subscription": sub_id, "result": header}
                    body = {
                        "scope": str(chain),
                        "notification": {"method": "eth_subscription", "params": params},
                    }
                    self._sink(_notification("wallet_notify", body))
                    sent += 1
        return sent

    def poll(self) -> list[dict[str, Any]]:
        """The notifications due, oldest first (connections made without a ``sink``)."""
        self.follow()
        with self._lock:
            out, self._pending[:] = list(self._pending), []
        return out

    def close(self) -> None:
        """End the connection and its session."""
        with self._lock:
            self.closed = True
            self._set_grant(None)
        self.wallet._forget(self)


_METHODS: dict[str, Callable[[WalletConnection, Any], Any]] = {
    "wallet_createSession": WalletConnection._create,
    "wallet_getSession": WalletConnection._get,
    "wallet_invokeMethod": WalletConnection._invoke,
    "wallet_revokeSession": WalletConnection._revoke,
}


# -- WebSocket ----------------------------------------------------------------------------------


class _WalletSocket:
    """One ``WS /wallet`` connection: answers and notifications leave through one queue, in
    the order the connection produced them."""

    def __init__(self, websocket: WebSocket, devnet: Any) -> None:
        self.ws = websocket
        self.devnet = devnet
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.connection = devnet.wallet.connect(sink=self._emit)

    def _emit(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else encode(message)
        self.loop.call_soon_threadsafe(self.queue.put_nowait, data)

    async def _send_loop(self) -> None:
        while True:
            data = await self.queue.get()
            await self.ws.send_text(data.decode("ascii"))

    async def _follow_loop(self) -> None:
        interval = poll_interval(self.devnet.block_time)
        while True:
            await asyncio.sleep(interval)
            if self.connection.following:
                await run_in_threadpool(self.connection.follow)

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._send_loop()), asyncio.create_task(self._follow_loop())]
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    return
                if self.devnet.latency_ms:
                    await asyncio.sleep(self.devnet.latency_ms / 1000)
                body = message.get("text")
                body = body if body is not None else message.get("bytes") or b""
                await run_in_threadpool(self.connection.handle, body, send=True)
                if any(task.done() for task in tasks):  # the peer went away mid-send
                    return
        except Exception:  # a disconnect mid-receive: end this connection only
            log.debug("wallet connection ended", exc_info=True)
        finally:
            self.connection.close()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


def origin_allowed(origin: str | None, allowed: Collection[str] = ()) -> bool:
    """Whether a ``WS /wallet`` handshake's ``Origin`` may drive the wallet.

    No ``Origin`` (a script, a notebook: browsers always send one), a loopback page
    (``localhost``, ``127.0.0.0/8``, ``::1``) or an origin in ``allowed`` (``"*"``: any).
    """
    if origin is None or "*" in allowed or origin in allowed:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or parts.path or parts.query:
        return False
    host = parts.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_allowed_origins(origins: str | Iterable[str] | None) -> tuple[str, ...]:
    """``wallet_allow_origin`` as a tuple of exact origins (``scheme://host[:port]``) or ``*``.

    Raises
    ------
    ValueError
        An entry that is not an origin (e.g. a bare host name, or a URL with a path).
    """
    if origins is None:
        return ()
    listed = [origins] if isinstance(origins, str) else list(origins)
    for origin in listed:
        parts = urlsplit(origin) if isinstance(origin, str) else None
        if origin == "*" or (
            parts is not None
            and parts.scheme in ("http", "https")
            and parts.netloc
            and not parts.path
            and not parts.query
        ):
            continue
        raise ValueError(
            f"wallet_allow_origin: {origin!r} is not an origin like "
            "'https://dapp.example' or 'http://host:8080' (or '*' for any)"
        )
    return tuple(o.rstrip("/") for o in listed)


async def wallet_ws(websocket: WebSocket) -> None:
    """``WS /wallet``: the multichain wallet API. No key: the connection is the authorization
    (interface §5), so a page of another origin is refused (403) unless allowed."""
    devnet = websocket.app.state.devnet
    origin = websocket.headers.get("origin")
    if not origin_allowed(origin, getattr(devnet, "wallet_allow_origins", ())):
        body = {
            "error": f"origin {origin[:120]!r} may not use the wallet; only loopback pages may "
            "(allow others with feeslab serve --wallet-allow-origin ORIGIN, or "
            "feeslab.devnet.start(wallet_allow_origin=[...]))"
        }
        try:
            await websocket.send_denial_response(
                Response(encode(body), 403, media_type="application/json")
            )
        except RuntimeError:  # a server without denial responses: refuse as the close reason
            await websocket.close(code=1008, reason="origin not allowed")
        return
    await websocket.accept()
    await _WalletSocket(websocket, devnet).run()
