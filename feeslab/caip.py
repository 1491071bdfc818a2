"""Chain-agnostic identifiers as typed values: CAIP-2 chains, CAIP-10 accounts, CAIP-217 scopes.

Pure: parsing, printing and validation, no I/O. Every value prints back as the string it was
parsed from, and bad input raises :class:`~feeslab.errors.CaipError` (a ``ValueError``)
naming the field::

    >>> ChainId.parse("eip155:1")
    ChainId('eip155:1')
    >>> str(AccountId.parse("eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb").chain_id)
    'eip155:1'
    >>> ChainId.parse("Eip155:1")
    Traceback (most recent call last):
    ...
    feeslab.errors.CaipError: chain_id.namespace: must be 3-8 characters of [-a-z0-9] ...

The rules (CAIP-2, CAIP-10, CAIP-217; as summarised in the project's REFERENCE.md):

- a chain ID is ``namespace:reference``, namespace ``[-a-z0-9]{3,8}``, reference
  ``[-_a-zA-Z0-9]{1,32}``;
- an account ID is ``chain_id:address``, address ``[-.%a-zA-Z0-9]{1,128}``;
- a scope key is a chain ID, or a bare namespace;
- a scope object has ``methods`` and ``notifications`` (arrays of non-empty strings),
  optional ``accounts`` (CAIP-10 IDs on the scope's chains), and ``references`` only under a
  bare namespace key, where it is required and non-empty (the ``wallet`` namespace may go
  without); no other member (CAIP-25 requests support only these four).

A :class:`Session` is what ``wallet_createSession`` and ``wallet_getSession`` answer:
``sessionScopes`` keyed by chain ID, and ``sessionProperties``.

References
----------
.. [1] CAIP-2, "Blockchain ID Specification", chainagnostic.org/CAIPs/caip-2.
.. [2] CAIP-10, "Account ID Specification", chainagnostic.org/CAIPs/caip-10.
.. [3] CAIP-217, "Authorization Scopes", chainagnostic.org/CAIPs/caip-217.
.. [4] CAIP-25, "Wallet Create Session JSON-RPC Method", chainagnostic.org/CAIPs/caip-25.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from feeslab.errors import CaipError

__all__ = [
    "SCOPE_MEMBERS",
    "AccountId",
    "CaipError",
    "ChainId",
    "Scope",
    "ScopeKey",
    "Session",
    "normalize_scopes",
    "parse_scope_key",
    "parse_scopes",
]

_NAMESPACE = re.compile(r"[-a-z0-9]{3,8}")
_REFERENCE = re.compile(r"[-_a-zA-Z0-9]{1,32}")
_ADDRESS = re.compile(r"[-.%a-zA-Z0-9]{1,128}")
WALLET_NAMESPACE = "wallet"
SCOPE_MEMBERS = ("references", "methods", "notifications", "accounts")
"""The scope object members a CAIP-25 request may carry."""

_NAMESPACE_RULE = "must be 3-8 characters of [-a-z0-9]"
_REFERENCE_RULE = "must be 1-32 characters of [-_a-zA-Z0-9]"
_ADDRESS_RULE = "must be 1-128 characters of [-.%a-zA-Z0-9]"


def _check_namespace(value: object, where: str) -> str:
    if not isinstance(value, str) or not _NAMESPACE.fullmatch(value):
        raise CaipError(where, _NAMESPACE_RULE, value)
    return value


def _check_reference(value: object, where: str) -> str:
    if not isinstance(value, str) or not _REFERENCE.fullmatch(value):
        raise CaipError(where, _REFERENCE_RULE, value)
    return value


def _check_address(value: object, where: str, shown: object = None) -> str:
    if not isinstance(value, str) or not _ADDRESS.fullmatch(value):
        raise CaipError(where, _ADDRESS_RULE, value if shown is None else shown)
    return value


@dataclass(frozen=True, order=True)
class ChainId:
    """A CAIP-2 chain ID, ``namespace:reference`` (e.g. ``eip155:1``).

    Attributes
    ----------
    namespace : str
        The ecosystem: ``eip155`` (EVM chains), ``solana``, ``bip122``...
    reference : str
        The chain within it (for ``eip155`` the decimal EIP-155 chain id).
    """

    namespace: str
    reference: str

    def __post_init__(self) -> None:
        _check_namespace(self.namespace, "chain_id.namespace")
        _check_reference(self.reference, "chain_id.reference")

    @classmethod
    def parse(cls, text: str | ChainId, *, field: str = "chain_id") -> ChainId:
        """Read ``namespace:reference``; ``field`` names the value in errors."""
        if isinstance(text, ChainId):
            return text
        if not isinstance(text, str):
            raise CaipError(field, "must be a string namespace:reference", text)
        namespace, colon, reference = text.partition(":")
        if not colon:
            raise CaipError(field, "must be namespace:reference (e.g. eip155:1)", text)
        _check_namespace(namespace, f"{field}.namespace")
        _check_reference(reference, f"{field}.reference")
        return cls(namespace, reference)

    @classmethod
    def eip155(cls, chain_id: int) -> ChainId:
        """The chain ID of an EVM chain: ``eip155:<chain_id>``."""
        if not isinstance(chain_id, int) or isinstance(chain_id, bool) or chain_id < 0:
            raise CaipError("chain_id", "an EIP-155 chain id is a non-negative int", chain_id)
        return cls("eip155", str(chain_id))

    def __str__(self) -> str:
        return f"{self.namespace}:{self.reference}"

    def __repr__(self) -> str:
        return f"ChainId({str(self)!r})"


@dataclass(frozen=True, order=True)
class AccountId:
    """A CAIP-10 account ID, ``chain_id:address`` (e.g. ``eip155:1:0xab16...``).

    Attributes
    ----------
    chain_id : ChainId
    address : str
        As given: EVM addresses keep their checksum case (compare with :meth:`same`).
    """

    chain_id: ChainId
    address: str

    def __post_init__(self) -> None:
        if not isinstance(self.chain_id, ChainId):
            raise CaipError("account.chain_id", "must be a ChainId", self.chain_id)
        _check_address(self.address, "account.address")

    @classmethod
    def parse(cls, text: str | AccountId, *, field: str = "account") -> AccountId:
        """Read ``namespace:reference:address``; ``field`` names the value in errors."""
        if isinstance(text, AccountId):
            return text
        if not isinstance(text, str):
            raise CaipError(field, "must be a string namespace:reference:address", text)
        chain, colon, address = text.rpartition(":")
        if not colon or ":" not in chain:
            raise CaipError(field, "must be namespace:reference:address", text)
        chain_id = ChainId.parse(chain, field=f"{field}.chain_id")
        _check_address(address, f"{field}.address", shown=text)
        return cls(chain_id, address)

    @property
    def namespace(self) -> str:
        return self.chain_id.namespace

    def same(self, other: AccountId | str) -> bool:
        """The same account: on ``eip155`` addresses compare without case (checksums differ
        only in case); elsewhere exactly, as MetaMask compares them."""
        other = AccountId.parse(other)
        if other.chain_id != self.chain_id:
            return False
        if self.namespace == "eip155":
            return other.address.lower() == self.address.lower()
        return other.address == self.address

    def __str__(self) -> str:
        return f"{self.chain_id}:{self.address}"

    def __repr__(self) -> str:
        return f"AccountId({str(self)!r})"


ScopeKey = ChainId | str
"""A scope key: a chain ID, or a bare namespace (a ``str`` such as ``"eip155"``)."""


def parse_scope_key(text: str | ChainId, *, field: str = "scope") -> ScopeKey:
    """A scope key: a :class:`ChainId` for ``namespace:reference``, the namespace itself for a
    bare namespace."""
    if isinstance(text, ChainId):
        return text
    if isinstance(text, str) and ":" not in text:
        return _check_namespace(text, field)
    return ChainId.parse(text, field=field)


def _key_text(key: ScopeKey) -> str:
    return str(key)


def _strings(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise CaipError(where, "must be an array of strings", value)
    items = tuple(value)
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise CaipError(f"{where}[{i}]", "must be a non-empty string", item)
    return tuple(dict.fromkeys(items))  # drop repeats, keep order


@dataclass(frozen=True)
class Scope:
    """A CAIP-217 scope object: what a session allows on one chain (or one namespace).

    Lists may be given as any iterable; they are kept as tuples without repeats, in order.
    Accounts may be given as strings.

    Attributes
    ----------
    methods : tuple of str
        JSON-RPC methods.
    notifications : tuple of str
        Notification names (e.g. ``eth_subscription``).
    accounts : tuple of AccountId
        CAIP-10 accounts (in a request: preselected for the user; in a session: authorized).
    references : tuple of str or None
        Chain references, only for a scope keyed by a bare namespace.
    """

    methods: tuple[str, ...] = ()
    notifications: tuple[str, ...] = ()
    accounts: tuple[AccountId, ...] = ()
    references: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "methods", _strings(self.methods, "scope.methods"))
        set_(self, "notifications", _strings(self.notifications, "scope.notifications"))
        if isinstance(self.accounts, str | AccountId) or not isinstance(self.accounts, Iterable):
            raise CaipError("scope.accounts", "must be an array of CAIP-10 ids", self.accounts)
        accounts = tuple(
            AccountId.parse(a, field=f"scope.accounts[{i}]") for i, a in enumerate(self.accounts)
        )
        set_(self, "accounts", tuple(dict.fromkeys(accounts)))
        if self.references is not None:
            refs = _strings(self.references, "scope.references")
            for i, ref in enumerate(refs):
                _check_reference(ref, f"scope.references[{i}]")
            set_(self, "references", refs)

    @classmethod
    def from_json(cls, key: ScopeKey | str, value: object, *, field: str = "scope") -> Scope:
        """Read a scope object of a request or a session, under its key.

        Parameters
        ----------
        key : str or ChainId
            The scope's key (a chain ID, or a bare namespace).
        value : dict
            The scope object.
        field : str
            Names the scope in errors, e.g. ``optionalScopes["eip155:1"]``.

        Raises
        ------
        CaipError
            When the key or the object breaks the CAIP-2/10/217 rules above.
        """
        key = parse_scope_key(key, field=field)
        if not isinstance(value, Mapping):
            raise CaipError(field, "a scope object must be a JSON object", value)
        for member in value:
            if member not in SCOPE_MEMBERS:
                raise CaipError(
                    f"{field}.{member}",
                    "is not a supported scope member (" + ", ".join(SCOPE_MEMBERS) + ")",
                )
        for member in ("methods", "notifications"):
            if member not in value:
                raise CaipError(f"{field}.{member}", "is required (may be an empty array)")
        methods = _strings(value["methods"], f"{field}.methods")
        notifications = _strings(value["notifications"], f"{field}.notifications")
        references = value.get("references")
        if isinstance(key, ChainId):
            if references is not None:
                raise CaipError(
                    f"{field}.references", f"is only allowed under a bare namespace, not {key}"
                )
        elif references is None or references == []:
            if key != WALLET_NAMESPACE:
                raise CaipError(
                    f"{field}.references",
                    f"a bare namespace scope ({key}) needs a non-empty references array",
                )
            references = None
        if references is not None:
            references = _strings(references, f"{field}.references")
            for i, ref in enumerate(references):
                _check_reference(ref, f"{field}.references[{i}]")
        raw_accounts = value.get("accounts", [])
        if isinstance(raw_accounts, str) or not isinstance(raw_accounts, list):
            raise CaipError(f"{field}.accounts", "must be an array of CAIP-10 ids", raw_accounts)
        accounts = []
        for i, text in enumerate(raw_accounts):
            account = AccountId.parse(text, field=f"{field}.accounts[{i}]")
            if not _account_fits(account, key, references):
                raise CaipError(f"{field}.accounts[{i}]", f"is not an account of {key}", text)
            accounts.append(account)
        return cls(methods, notifications, tuple(accounts), references)

    def to_json(self) -> dict[str, list[str]]:
        """The scope object as JSON (``references`` only when set)."""
        body: dict[str, list[str]] = {}
        if self.references is not None:
            body["references"] = list(self.references)
        body["methods"] = list(self.methods)
        body["notifications"] = list(self.notifications)
        body["accounts"] = [str(a) for a in self.accounts]
        return body

    def merge(self, other: Scope) -> Scope:
        """Both scopes' methods, notifications and accounts (as a wallet merges duplicates)."""
        return Scope(
            self.methods + other.methods,
            self.notifications + other.notifications,
            self.accounts + other.accounts,
        )


def _account_fits(account: AccountId, key: ScopeKey, references: Iterable[str] | None) -> bool:
    if isinstance(key, ChainId):
        return account.chain_id == key
    if account.namespace != key:
        return False
    return references is None or account.chain_id.reference in references


def parse_scopes(value: object, *, field: str = "optionalScopes") -> dict[ScopeKey, Scope]:
    """Read a scopes object (scope key -> scope object), strictly.

    Raises
    ------
    CaipError
        Naming the first bad key or member, e.g. ``optionalScopes["eip155:1"].methods``.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CaipError(field, "must be a JSON object of scope key -> scope object", value)
    scopes: dict[ScopeKey, Scope] = {}
    for raw_key, obj in value.items():
        where = f"{field}[{_key_text(raw_key)!r}]"
        key = parse_scope_key(raw_key, field=where)
        if isinstance(obj, Scope):  # checked under its key like any scope object
            obj = obj.to_json()
        scopes[key] = Scope.from_json(key, obj, field=where)
    return scopes


def normalize_scopes(scopes: Mapping[ScopeKey, Scope]) -> dict[ScopeKey, Scope]:
    """One scope per chain: a bare namespace with ``references`` becomes one scope per
    referenced chain; scopes landing on the same chain are merged (MetaMask's
    ``normalizeAndMergeScopes``). Keys keep their first appearance's order."""
    merged: dict[ScopeKey, Scope] = {}
    for key, scope in scopes.items():
        parts: dict[ScopeKey, Scope]
        if isinstance(key, str) and scope.references:
            parts = {
                (chain := ChainId(key, ref)): Scope(
                    scope.methods,
                    scope.notifications,
                    tuple(a for a in scope.accounts if a.chain_id == chain),
                )
                for ref in scope.references
            }
        else:
            parts = {key: scope}
        for part_key, part in parts.items():
            merged[part_key] = merged[part_key].merge(part) if part_key in merged else part
    return merged


@dataclass(frozen=True)
class Session:
    """A multichain session as the wallet describes it: ``sessionScopes`` and
    ``sessionProperties``.

    Index it by chain ID (``session["eip155:1"]``) for a scope; iterate it for the keys.

    Attributes
    ----------
    scopes : dict of ScopeKey to Scope
        The granted scopes, in the wallet's order.
    properties : dict
        The granted ``sessionProperties`` (only ``wallet_createSession`` answers them).
    """

    scopes: Mapping[ScopeKey, Scope] = field(default_factory=dict)
    properties: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: object, *, field: str = "result") -> Session:
        """Read ``{"sessionScopes": {...}, "sessionProperties": {...}}`` strictly."""
        if not isinstance(body, Mapping):
            raise CaipError(field, "a session must be a JSON object", body)
        scopes = parse_scopes(body.get("sessionScopes", {}), field=f"{field}.sessionScopes")
        properties = body.get("sessionProperties", {})
        if not isinstance(properties, Mapping):
            raise CaipError(f"{field}.sessionProperties", "must be a JSON object", properties)
        return cls(scopes, dict(properties))

    def to_json(self) -> dict[str, object]:
        return {
            "sessionScopes": {str(k): s.to_json() for k, s in self.scopes.items()},
            "sessionProperties": dict(self.properties),
        }

    def __getitem__(self, key: ScopeKey | str) -> Scope:
        return self.scopes[parse_scope_key(key)]

    def __contains__(self, key: object) -> bool:
        try:
            return parse_scope_key(key) in self.scopes  # type: ignore[arg-type]
        except CaipError:
            return False

    def __iter__(self) -> Iterator[ScopeKey]:
        return iter(self.scopes)

    def __len__(self) -> int:
        return len(self.scopes)

    @property
    def chains(self) -> list[ChainId]:
        """The chains granted."""
        return [k for k in self.scopes if isinstance(k, ChainId)]

    def accounts(self, chain: ScopeKey | str | None = None) -> list[AccountId]:
        """The accounts authorized on ``chain``, or on every chain."""
        if chain is not None:
            return list(self[chain].accounts) if chain in self else []
        return [a for scope in self.scopes.values() for a in scope.accounts]

    def allows(self, scope: ScopeKey | str, method: str) -> bool:
        """Whether ``method`` may be invoked on ``scope`` (interface §4.3 rule 2)."""
        return scope in self and method in self[scope].methods

    def __str__(self) -> str:
        if not self.scopes:
            return "no session"
        lines = []
        for key, scope in self.scopes.items():
            accounts = ", ".join(a.address for a in scope.accounts) or "none"
            lines.append(
                f"{key}: {len(scope.methods)} methods, notifications "
                f"{list(scope.notifications)}, accounts {accounts}"
            )
        return "\n".join(lines)
