"""Each fork's transaction gas rules, London to Amsterdam: what a transaction is charged before
any code runs, the calldata floor, the gas-limit cap, and what a block counts of its gas.

Exact integer rules for every fork from London to Amsterdam (``docs/gas.md``): :func:`gas_rules`
gives a fork's figures, each with its sources; :func:`intrinsic_gas`, :func:`calldata_floor`,
:func:`least_gas_limit` and :func:`check_gas_limit` price and check one transaction as a node
does; :func:`transaction_gas_used` and :func:`block_gas_used` count what its receipt and its
block record. The datasets check transactions with them before asking a node
(:mod:`feeslab.datasets.gas`), and :mod:`feeslab.analysis.gas` re-exports them beside the
analyses built on them.

References
----------
.. [1] G. Wood, "Ethereum: a secure decentralised generalised transaction ledger" (yellow
   paper), appendix G (fee schedule: G_transaction, G_txcreate).
.. [2] EIP-2028: Transaction data gas cost reduction, https://eips.ethereum.org/EIPS/eip-2028
.. [3] EIP-2930: Optional access lists, https://eips.ethereum.org/EIPS/eip-2930
.. [4] EIP-3860: Limit and meter initcode, https://eips.ethereum.org/EIPS/eip-3860
.. [5] EIP-3529: Reduction in refunds, https://eips.ethereum.org/EIPS/eip-3529
.. [6] EIP-7623: Increase calldata cost; EIP-7702: Set code for EOAs; EIP-7825: Transaction gas
   limit cap; EIP-2780, EIP-7778, EIP-7954, EIP-7976, EIP-7981, EIP-8037, EIP-8038 (Amsterdam),
   https://eips.ethereum.org
.. [7] ethereum/execution-specs ``src/ethereum/forks/<fork>/transactions.py`` (the
   ``ethereum-execution`` package 2.20.0) for London to Osaka; go-ethereum
   ``core/state_transition.go``, ``core/gaspool.go`` and ``params/protocol_params.go`` at
   02b73d4ea7181464175e0a6cbecc0a3a2655a562 (2026-08-20) for Amsterdam.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from feeslab.errors import ConfigError, TransactionGasCapExceeded
from feeslab.protocol import eip1559

__all__ = [
    "GAS_FORKS",
    "GasRules",
    "TransactionGasCapExceeded",
    "block_gas_used",
    "calldata_floor",
    "check_gas_limit",
    "gas_rules",
    "intrinsic_gas",
    "least_gas_limit",
    "transaction_gas_used",
]


def _calldata(data: object) -> bytes:
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        text = data[2:] if data[:2] in ("0x", "0X") else None
        if text is None or len(text) % 2:
            raise ValueError(f"data must be 0x hex with whole bytes, got {data[:20]!r}")
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ValueError(f"data is not hex: {data[:20]!r}") from None
    raise TypeError(f"data must be bytes or 0x hex, not {type(data).__name__}")


#: The forks whose transaction gas rules :func:`gas_rules` knows, oldest first; a fork between
#: two of them (``merge``/``paris``, the blob-parameter-only ``bpo1``..``bpo5``) follows the
#: last one before it.
GAS_FORKS: tuple[str, ...] = ("london", "shanghai", "cancun", "prague", "osaka", "amsterdam")
_SAME_AS = {"merge": "london", "paris": "london", **{f"bpo{i}": "osaka" for i in range(1, 6)}}
GETH_AMSTERDAM = "ethereum/go-ethereum at 02b73d4ea7181464175e0a6cbecc0a3a2655a562 (2026-08-20)"


@dataclass(frozen=True)
class GasRules:
    """One fork's rules for what a transaction is charged before and around its execution.

    Every amount is [gas]. ``None`` marks a rule the fork does not have.

    Attributes
    ----------
    fork : str
        The fork that introduced this set (one of :data:`GAS_FORKS`).
    tx_gas, tx_create_gas : int
        The base cost of a call and of a creation (before EIP-2780).
    eip2780 : bool
        Amsterdam's resource-based base cost (EIP-2780): ``tx_base_2780`` for the sender,
        ``recipient_cold_gas`` (or ``create_access_gas`` for a creation, nothing for a
        transfer to oneself), and ``value_gas`` when value moves to another account.
    data_zero_gas, data_nonzero_gas : int
        Per byte of calldata (EIP-2028).
    initcode_word_gas : int
        Per 32-byte word of a creation's init code (EIP-3860; 0 before Shanghai).
    max_initcode_size : int or None
        The longest init code a creation may carry [bytes] (EIP-3860; EIP-7954 from Amsterdam).
    access_list_address_gas, access_list_key_gas : int
        Per address and per storage key of an access list (EIP-2930; EIP-8038 from Amsterdam).
    access_list_data_gas_per_byte : int
        EIP-7981 (Amsterdam): an access list's bytes (20 per address, 32 per key) are also
        charged as non-zero calldata at the floor price: ``4 * 16`` per byte.
    authorization_gas : int or None
        Per EIP-7702 authorization (``PER_EMPTY_ACCOUNT_COST``; Amsterdam's
        ``ExecutionPerAuthBaseCost`` of EIP-8037); None before Prague.
    floor_token_gas : int or None
        The EIP-7623 calldata floor's price per token (10; 16 from Amsterdam, EIP-7976);
        None before Prague.
    floor_tokens_per_zero_byte : int
        Tokens per zero byte in the floor (1; 4 from Amsterdam, where every byte counts as
        non-zero, EIP-7976). A non-zero byte is always 4 tokens.
    floor_counts_access_list : bool
        Whether the floor counts an access list's bytes as tokens (EIP-7981).
    tx_gas_cap : int or None
        EIP-7825's cap (``2**24``); None before Osaka.
    cap_on_gas_limit : bool
        True: the cap bounds the gas limit (Osaka); False: the gas limit may exceed it, the
        intrinsic gas and the floor may not (Amsterdam, EIP-8037's change to EIP-7825).
    refund_quotient : int
        Refunds are at most the gas used over this (EIP-3529).
    refunds_reduce_block_gas : bool
        Whether a block's ``gasUsed`` (and so the next base fee) counts gas after refunds;
        False from Amsterdam (EIP-7778: the block counts gas before refunds, the receipt
        after).
    state_gas : bool
        EIP-8037 (Amsterdam): state growth is charged as a second dimension, and a block's
        ``gasUsed`` is the larger of its execution and state sums.
    sources : tuple of str
        Where each figure was read.
    """

    fork: str
    tx_gas: int = 21_000
    tx_create_gas: int = 53_000
    eip2780: bool = False
    tx_base_2780: int = 12_000
    recipient_cold_gas: int = 3_000
    create_access_gas: int = 12_000
    value_gas: int = 6_000
    data_zero_gas: int = 4
    data_nonzero_gas: int = 16
    initcode_word_gas: int = 0
    max_initcode_size: int | None = None
    access_list_address_gas: int = 2_400
    access_list_key_gas: int = 1_900
    access_list_data_gas_per_byte: int = 0
    authorization_gas: int | None = None
    floor_token_gas: int | None = None
    floor_tokens_per_zero_byte: int = 1
    floor_counts_access_list: bool = False
    tx_gas_cap: int | None = None
    cap_on_gas_limit: bool = True
    refund_quotient: int = 5
    refunds_reduce_block_gas: bool = True
    state_gas: bool = False
    sources: tuple[str, ...] = ()


_LONDON = GasRules(
    "london",
    sources=("yellow paper appendix G (G_transaction 21000, G_txcreate 32000)",
             "EIP-2028 (16 per non-zero byte)", "EIP-2930 (2400 per address, 1900 per key)",
             "EIP-3529 (MAX_REFUND_QUOTIENT = 5)"),
)  # fmt: skip
_SHANGHAI = GasRules(
    "shanghai", initcode_word_gas=2, max_initcode_size=49_152,
    sources=(*_LONDON.sources, "EIP-3860 (INITCODE_WORD_COST 2, MAX_INITCODE_SIZE 49152)"),
)  # fmt: skip
_CANCUN = GasRules(
    "cancun", initcode_word_gas=2, max_initcode_size=49_152, sources=_SHANGHAI.sources,
)  # fmt: skip
_PRAGUE = GasRules(
    "prague", initcode_word_gas=2, max_initcode_size=49_152, authorization_gas=25_000,
    floor_token_gas=10,
    sources=(*_SHANGHAI.sources, "EIP-7702 (PER_EMPTY_ACCOUNT_COST 25000)",
             "EIP-7623 (TOTAL_COST_FLOOR_PER_TOKEN 10, 4 tokens per non-zero byte)"),
)  # fmt: skip
_OSAKA = GasRules(
    "osaka", initcode_word_gas=2, max_initcode_size=49_152, authorization_gas=25_000,
    floor_token_gas=10, tx_gas_cap=2**24,
    sources=(*_PRAGUE.sources, "EIP-7825 (TX_MAX_GAS_LIMIT 2**24)"),
)  # fmt: skip
_AMSTERDAM = GasRules(
    "amsterdam", eip2780=True, initcode_word_gas=2, max_initcode_size=131_072,
    access_list_address_gas=2_900, access_list_key_gas=2_000,
    access_list_data_gas_per_byte=16 * 4, authorization_gas=7_816, floor_token_gas=16,
    floor_tokens_per_zero_byte=4, floor_counts_access_list=True, tx_gas_cap=2**24,
    cap_on_gas_limit=False, refunds_reduce_block_gas=False, state_gas=True,
    sources=(
        f"{GETH_AMSTERDAM}: params/protocol_params.go TxBaseCost2780 12000, TxValueCost2780 "
        "6000, ColdAccountAccessAmsterdam 3000, CreateAccessAmsterdam 12000 (EIP-2780); "
        "TxAccessListAddressGasAmsterdam 2900, TxAccessListStorageKeyGasAmsterdam 2000 "
        "(EIP-8038); TxCostFloorPerToken7976 16 (EIP-7976); ExecutionPerAuthBaseCost 7816 "
        "(EIP-8037); MaxInitCodeSizeAmsterdam 131072 (EIP-7954)",
        f"{GETH_AMSTERDAM}: core/state_transition.go IntrinsicGas, intrinsicBaseGasEIP2780, "
        "FloorDataGas (EIP-7976, EIP-7981), execute (EIP-7825 cap on intrinsic and floor), "
        "settleGas (EIP-7778, EIP-8037); core/gaspool.go ChargeGasAmsterdam",
    ),
)  # fmt: skip
_RULES = {r.fork: r for r in (_LONDON, _SHANGHAI, _CANCUN, _PRAGUE, _OSAKA, _AMSTERDAM)}


def gas_rules(fork: str | GasRules) -> GasRules:
    """The transaction gas rules of ``fork``.

    Parameters
    ----------
    fork : str or GasRules
        A fork of :data:`GAS_FORKS`, or ``merge``/``paris`` (London's rules) or ``bpo1`` to
        ``bpo5`` (Osaka's); a :class:`GasRules` is returned as it is.

    Raises
    ------
    ConfigError
        A fork before London or one feeslab does not know.
    """
    if isinstance(fork, GasRules):
        return fork
    if not isinstance(fork, str):
        raise TypeError(f"fork must be a fork's name, not {type(fork).__name__}")
    name = fork.strip().lower()
    name = _SAME_AS.get(name, name)
    try:
        return _RULES[name]
    except KeyError:
        raise ConfigError(
            f"no transaction gas rules for fork {fork!r}: feeslab knows {', '.join(GAS_FORKS)} "
            "(and merge/paris, bpo1..bpo5)"
        ) from None


def _access_counts(access_list: Any) -> tuple[int, int]:
    if isinstance(access_list, str | bytes | Mapping):
        raise TypeError("access_list must be a list of (address, storage keys) pairs")
    addresses = keys = 0
    for entry in access_list:
        if isinstance(entry, Mapping):  # JSON-RPC's {"address": ..., "storageKeys": [...]}
            slots = entry.get("storageKeys", ())
        else:
            _, slots = entry
        addresses += 1
        keys += len(slots)
    return addresses, keys


def _base_gas(rules: GasRules, *, create: bool, value: int, to_self: bool) -> int:
    if not rules.eip2780:
        return rules.tx_create_gas if create else rules.tx_gas
    gas = rules.tx_base_2780
    if create:
        gas += rules.create_access_gas
    elif not to_self:
        gas += rules.recipient_cold_gas
    if value and not (create or to_self):
        gas += rules.value_gas
    return gas


def intrinsic_gas(
    data: bytes | str = b"",
    *,
    create: bool = False,
    access_list: Sequence[object] = (),
    authorizations: int = 0,
    value: int = 0,
    to_self: bool = False,
    fork: str | GasRules = "osaka",
) -> int:
    """Gas a transaction is charged before any code runs, under ``fork``'s rules [gas].

    * London to Osaka: ``21,000`` (``53,000`` for a contract creation), plus 4 per zero and
      16 per non-zero byte of calldata (EIP-2028), plus 2 per 32-byte word of init code for a
      creation from Shanghai (EIP-3860), plus 2,400 per address and 1,900 per storage key of
      an access list (EIP-2930), plus 25,000 per EIP-7702 authorization from Prague.
    * Amsterdam: the base is EIP-2780's, by resource: 12,000, plus 3,000 for the recipient
      (12,000 for a creation, nothing for a transfer to oneself), plus 6,000 when value moves
      to another account; an access list costs 2,900 per address and 2,000 per key
      (EIP-8038) plus its bytes at 64 each (EIP-7981); an authorization 7,816 (EIP-8037).
      A plain transfer still costs 21,000.

    A transaction given less gas (or less than :func:`calldata_floor`) is refused before it
    starts. Runtime charges are not intrinsic: from Amsterdam a creation, or value sent to an
    empty account, also pays EIP-8037's state gas for the new account when it runs.

    Parameters
    ----------
    data : bytes or str
        The calldata (or init code), as bytes or 0x hex.
    create : bool, default False
        True for a contract creation (no ``to``).
    access_list : sequence of (address, storage keys) or of dicts
        An EIP-2930 access list (pairs, or JSON-RPC's ``{"address", "storageKeys"}``).
    authorizations : int, default 0
        How many EIP-7702 authorizations the transaction carries (Prague on).
    value : int, default 0
        The value sent [wei]; only its being non-zero matters, and only from Amsterdam.
    to_self : bool, default False
        The recipient is the sender (Amsterdam charges no recipient access then).
    fork : str or GasRules, default "osaka"
        Whose rules (see :func:`gas_rules`).

    Returns
    -------
    int
        The intrinsic gas [gas].

    Raises
    ------
    ValueError
        ``authorizations`` before Prague, or with a creation.

    References
    ----------
    .. [1] Yellow paper, appendix G; EIP-2028; EIP-2930; EIP-3860; EIP-7702; EIP-2780;
       EIP-7981; EIP-8037; EIP-8038.
    .. [2] ethereum/execution-specs ``forks/<fork>/transactions.py``
       ``calculate_intrinsic_cost`` (package ``ethereum-execution``), London to Osaka;
       go-ethereum ``core/state_transition.go`` ``IntrinsicGas`` at 02b73d4 for Amsterdam.
    """
    rules = gas_rules(fork)
    raw = _calldata(data)
    zeros = raw.count(0)
    gas = _base_gas(rules, create=create, value=value, to_self=to_self)
    gas += zeros * rules.data_zero_gas + (len(raw) - zeros) * rules.data_nonzero_gas
    if create:
        gas += rules.initcode_word_gas * ((len(raw) + 31) // 32)
    addresses, keys = _access_counts(access_list)
    gas += addresses * rules.access_list_address_gas + keys * rules.access_list_key_gas
    gas += rules.access_list_data_gas_per_byte * (20 * addresses + 32 * keys)
    if authorizations:
        if rules.authorization_gas is None:
            raise ValueError(f"EIP-7702 authorizations came with Prague, not {rules.fork!r}")
        if create:
            raise ValueError("a set-code transaction cannot create a contract (EIP-7702)")
        gas += operator.index(authorizations) * rules.authorization_gas
    return gas


def calldata_floor(
    data: bytes | str = b"",
    *,
    create: bool = False,
    access_list: Sequence[object] = (),
    value: int = 0,
    to_self: bool = False,
    fork: str | GasRules = "osaka",
) -> int | None:
    """The least gas a transaction is charged whatever it runs: EIP-7623's calldata floor
    [gas]; None before Prague.

    Prague and Osaka: ``21,000 + 10 * tokens``, a zero byte 1 token and a non-zero byte 4.
    Amsterdam (EIP-7976, EIP-7981): ``base + 16 * tokens``, every calldata byte 4 tokens and
    every byte of the access list (20 per address, 32 per key) 4 tokens, where ``base`` is
    EIP-2780's base cost (see :func:`intrinsic_gas`). A transaction's gas used is at least
    this, so its gas limit must be too.

    Parameters
    ----------
    data, create, access_list, value, to_self, fork
        As for :func:`intrinsic_gas`.

    References
    ----------
    .. [1] EIP-7623: Increase calldata cost; EIP-7976: Increase calldata floor cost; EIP-7981:
       Increase access list cost.
    .. [2] go-ethereum ``core/state_transition.go`` ``FloorDataGas`` at 02b73d4.
    """
    rules = gas_rules(fork)
    if rules.floor_token_gas is None:
        return None
    raw = _calldata(data)
    zeros = raw.count(0)
    tokens = 4 * (len(raw) - zeros) + rules.floor_tokens_per_zero_byte * zeros
    if rules.floor_counts_access_list:
        addresses, keys = _access_counts(access_list)
        tokens += 4 * (20 * addresses + 32 * keys)
    base = _base_gas(rules, create=create, value=value, to_self=to_self)
    if not rules.eip2780:
        base = rules.tx_gas  # EIP-7623 anchors the floor at 21,000, creation or not
    return base + rules.floor_token_gas * tokens


def least_gas_limit(
    data: bytes | str = b"",
    *,
    create: bool = False,
    access_list: Sequence[object] = (),
    authorizations: int = 0,
    value: int = 0,
    to_self: bool = False,
    fork: str | GasRules = "osaka",
) -> int:
    """The least gas limit a node accepts: ``max(intrinsic_gas, calldata_floor)`` [gas].

    Parameters are those of :func:`intrinsic_gas`.
    """
    intrinsic = intrinsic_gas(data, create=create, access_list=access_list, value=value,
                              to_self=to_self, fork=fork, authorizations=authorizations)
    floor = calldata_floor(data, create=create, access_list=access_list, value=value,
                           to_self=to_self, fork=fork)  # fmt: skip
    return intrinsic if floor is None else max(intrinsic, floor)


def check_gas_limit(
    gas_limit: int,
    *,
    intrinsic: int,
    floor: int | None = None,
    fork: str | GasRules = "osaka",
) -> None:
    """Refuse a gas limit as a node refuses it for EIP-7825's cap, or for being too low.

    Osaka (and the blob-parameter-only forks after it) refuse a gas limit above ``2**24``.
    Amsterdam lets the limit exceed the cap (the excess can pay only for state growth,
    EIP-8037) but refuses a transaction whose intrinsic gas or calldata floor exceeds it.

    Parameters
    ----------
    gas_limit : int
        The transaction's ``gas`` [gas].
    intrinsic : int
        Its :func:`intrinsic_gas` under ``fork`` [gas].
    floor : int, optional
        Its :func:`calldata_floor` under ``fork`` [gas] (None before Prague).
    fork : str or GasRules

    Raises
    ------
    TransactionGasCapExceeded
        Over the cap, with go-ethereum's reason and the figures.
    ValueError
        A limit below the intrinsic gas or the floor (go-ethereum's ``intrinsic gas too
        low`` / ``insufficient gas for floor data gas cost``).

    References
    ----------
    .. [1] EIP-7825: Transaction Gas Limit Cap; EIP-8037.
    .. [2] go-ethereum ``core/txpool/validation.go`` ``ValidateTransaction`` and
       ``core/state_transition.go`` ``preCheck``/``execute`` at 02b73d4.
    """
    rules = gas_rules(fork)
    gas_limit = operator.index(gas_limit)
    cap = rules.tx_gas_cap
    if cap is not None and rules.cap_on_gas_limit and gas_limit > cap:
        raise TransactionGasCapExceeded(
            f"transaction gas limit too high (cap: {cap}, tx: {gas_limit}): EIP-7825 caps a "
            f"transaction's gas at 2**24 from Osaka ({rules.fork} rules)"
        )
    if gas_limit < intrinsic:
        raise ValueError(f"intrinsic gas too low: have {gas_limit}, want {intrinsic}")
    if floor is not None and gas_limit < floor:
        raise ValueError(
            f"insufficient gas for floor data gas cost: gas {gas_limit}, minimum needed {floor}"
        )
    if cap is not None and not rules.cap_on_gas_limit and max(intrinsic, floor or 0) > cap:
        raise TransactionGasCapExceeded(
            f"insufficient gas for floor data gas cost: intrinsic cost {intrinsic}, floor: "
            f"{floor or 0}: from Amsterdam the intrinsic gas and the calldata floor may not "
            f"exceed the EIP-7825 cap of {cap}"
        )


def transaction_gas_used(
    gas_before_refund: int,
    refund: int = 0,
    *,
    floor: int | None = None,
    state_gas: int = 0,
    fork: str | GasRules = "osaka",
) -> dict[str, int]:
    """What one transaction counts, for its receipt and for its block [gas].

    The receipt's gas (what the sender pays for) is ``gas_before_refund`` less the refund,
    capped at a fifth of it (EIP-3529), and at least the calldata floor (EIP-7623). What the
    block counts is the same before Amsterdam; from Amsterdam the block counts gas before
    refunds (EIP-7778), split into execution gas (at least the floor) and state gas
    (EIP-8037).

    Parameters
    ----------
    gas_before_refund : int
        Gas consumed, intrinsic gas included, before refunds [gas].
    refund : int
        The refund counter at the end [gas].
    floor : int, optional
        The :func:`calldata_floor` (None: no floor).
    state_gas : int
        Of ``gas_before_refund``, what EIP-8037 charged as state gas (Amsterdam) [gas].
    fork : str or GasRules

    Returns
    -------
    dict
        ``receipt_gas_used``, ``block_execution_gas``, ``block_state_gas`` [gas].

    References
    ----------
    .. [1] EIP-3529; EIP-7623; EIP-7778: Block gas accounting without refunds; EIP-8037.
    .. [2] go-ethereum ``core/state_transition.go`` ``settleGas`` at 02b73d4.
    """
    rules = gas_rules(fork)
    used = operator.index(gas_before_refund)
    refunded = min(operator.index(refund), used // rules.refund_quotient)
    receipt = max(used - refunded, floor or 0)
    if rules.refunds_reduce_block_gas:
        return {"receipt_gas_used": receipt, "block_execution_gas": receipt,
                "block_state_gas": 0}  # fmt: skip
    state = operator.index(state_gas) if rules.state_gas else 0
    return {"receipt_gas_used": receipt,
            "block_execution_gas": max(used - state, floor or 0),
            "block_state_gas": state}  # fmt: skip


def block_gas_used(
    transactions: Sequence[Mapping[str, int]] | pd.DataFrame, *, fork: str | GasRules = "osaka"
) -> int:
    """A block's ``gasUsed``, the figure its successor's base fee follows, from its
    transactions' :func:`transaction_gas_used` [gas].

    Before Amsterdam the sum of the receipts' gas (after refunds). From Amsterdam the larger
    of the sums of execution gas and of state gas, both before refunds (EIP-7778, EIP-8037):
    a block full of refunds no longer looks emptier than it was to the base-fee rule.

    Parameters
    ----------
    transactions : sequence of mapping, or DataFrame
        With ``block_execution_gas`` and ``block_state_gas`` (as :func:`transaction_gas_used`
        returns) [gas].
    fork : str or GasRules

    References
    ----------
    .. [1] EIP-7778; EIP-8037; go-ethereum ``core/gaspool.go`` ``GasPool.Used`` at 02b73d4.
    """
    rules = gas_rules(fork)
    if isinstance(transactions, pd.DataFrame):
        rows: Sequence[Mapping[str, Any]] = transactions.to_dict("records")
    else:
        rows = transactions
    return eip1559.block_gas_used([int(r["block_execution_gas"]) for r in rows],
                                   [int(r.get("block_state_gas", 0)) for r in rows],
                                   two_dimensional=rules.state_gas)  # fmt: skip
