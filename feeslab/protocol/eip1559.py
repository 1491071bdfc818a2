"""EIP-1559 arithmetic and parameter schedules shared by the analysis and the devnet.

Pure and scalar: exact Python ints, no pandas. :mod:`feeslab.analysis.fees` vectorises these
rules over frames; :mod:`feeslab.devnet.chain` builds its chains with :func:`next_base_fee`
and :mod:`feeslab.devnet.gasapi` ranks base fees with :func:`nearest_rank`, so the simulated
service and the analysis of what it serves cannot drift apart.

References
----------
.. [1] EIP-1559: Fee market change for ETH 1.0 chain, Specification (``validate_block``),
   https://eips.ethereum.org/EIPS/eip-1559
.. [2] 0xPolygon/bor ``consensus/misc/eip1559/eip1559.go`` ``CalcBaseFee``: fork parameters
   are chosen by the *parent's* number (``BaseFeeChangeDenominator(config.Bor,
   parent.Number)``, ``IsDandeli(parent.Number)``).
.. [3] EIP-7778: Block gas accounting without refunds; EIP-8037 (a block's gas used is the
   larger of its execution and state gas); go-ethereum ``core/gaspool.go`` ``GasPool.Used``
   at 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from feeslab.protocol.chaindata import Heights, chain_half

# Chains whose clients pick a fork's EIP-1559 parameters by the parent's number [2], so a
# fork's parameters first shape the base fee of the block after the fork block. Elsewhere
# (go-ethereum, op-geth by the child's timestamp, the devnet) the fork block itself uses them.
_KEYED_BY_PARENT: frozenset[int] = frozenset({137})


def gas_target(gas_limit: int, elasticity_multiplier: int = 2, *,
               gas_target_percent: int | None = None) -> int:
    """A block's gas target [gas]: ``gas_limit // elasticity_multiplier`` (EIP-1559), or
    ``gas_limit * gas_target_percent // 100`` where the percentage is set (Polygon after
    Dandeli)."""
    if gas_target_percent is None:
        return gas_limit // elasticity_multiplier
    return gas_limit * gas_target_percent // 100


def next_base_fee(parent_base_fee: int, parent_gas_used: int, parent_gas_limit: int,
                  elasticity_multiplier: int = 2, max_change_denominator: int = 8, *,
                  gas_target_percent: int | None = None) -> int:  # fmt: skip
    """EIP-1559's base fee of a child block, in exact integer arithmetic [wei].

    ``gas_target_percent`` replaces ``parent_gas_limit // elasticity_multiplier`` as the
    gas target by ``parent_gas_limit * gas_target_percent // 100`` (Polygon after Dandeli).

    ``parent_gas_used`` is the parent header's ``gasUsed``, whose meaning is the parent's
    fork's: before Amsterdam the sum of its receipts' gas, after refunds; from Amsterdam
    (EIP-7778, EIP-8037) gas before refunds, the larger of the execution and the state sums.
    :func:`block_gas_used` computes it either way from a block's transactions. The rule
    itself did not change.
    """
    target = gas_target(parent_gas_limit, elasticity_multiplier,
                        gas_target_percent=gas_target_percent)
    if parent_gas_used == target:
        return parent_base_fee
    if parent_gas_used > target:
        delta = parent_base_fee * (parent_gas_used - target) // target // max_change_denominator
        return parent_base_fee + max(1, delta)
    delta = parent_base_fee * (target - parent_gas_used) // target // max_change_denominator
    return parent_base_fee - delta


def block_gas_used(execution_gas: Sequence[int], state_gas: Sequence[int] = (), *,
                   two_dimensional: bool = False) -> int:  # fmt: skip
    """A block's ``gasUsed``: what its successor's base fee follows [gas].

    Parameters
    ----------
    execution_gas : sequence of int
        Per transaction, what the block counts of it [gas]: before Amsterdam the receipt's
        gas (after refunds, at least the EIP-7623 floor); from Amsterdam its gas before
        refunds less its state gas, at least the floor (EIP-7778).
    state_gas : sequence of int
        Per transaction, its EIP-8037 state gas (Amsterdam) [gas]; empty before.
    two_dimensional : bool
        Amsterdam's accounting (EIP-8037): ``max(sum(execution), sum(state))``; otherwise
        the sum of both (the state sum being empty).
    """
    execution = sum(int(g) for g in execution_gas)
    state = sum(int(g) for g in state_gas)
    return max(execution, state) if two_dimensional else execution + state


def nearest_rank_index(count: int, percentile: float) -> int:
    """0-based position of the nearest-rank ``percentile`` among ``count`` sorted values.

    The ``p``-th percentile of ``N`` values is the ``ceil(p * N / 100)``-th smallest (the
    smallest for ``p = 0``), computed in integers when ``p`` is an integer.
    """
    if count < 1:
        raise ValueError("the nearest rank of no values is undefined")
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must be in 0..100, got {percentile!r}")
    if float(percentile).is_integer():
        rank = -(-int(percentile) * count // 100)  # ceil in integers
    else:
        from math import ceil

        rank = ceil(percentile * count / 100)
    return max(1, rank) - 1


def nearest_rank(values: Sequence[int], percentile: float) -> int:
    """The nearest-rank ``percentile`` (0..100) of integer ``values``: always one of them."""
    ordered = sorted(values)
    return ordered[nearest_rank_index(len(ordered), percentile)]


@dataclass(frozen=True)
class Eip1559Rule:
    """EIP-1559 parameters that shape the base fees of blocks from ``from_block`` on.

    Attributes
    ----------
    from_block : int
        The first block whose base fee is computed with these parameters (for chains whose
        clients key forks by the parent's number, one past the fork block in chains.json).
    elasticity_multiplier : int or None
        ``gas_limit // elasticity_multiplier`` is the gas target; None when
        ``gas_target_percent`` sets the target instead.
    max_change_denominator : int
        The base fee moves by at most ``1 / max_change_denominator`` of its value per gas
        target of excess, per block.
    gas_target_percent : int or None
        Gas target as a percentage of the gas limit (Polygon after Dandeli), or None.
    """

    from_block: int
    elasticity_multiplier: int | None
    max_change_denominator: int
    gas_target_percent: int | None = None

    def gas_target(self, gas_limit: int) -> int:
        """The gas target of a block with ``gas_limit`` [gas] under this rule [gas]."""
        return gas_target(gas_limit, self.elasticity_multiplier or 2,
                          gas_target_percent=self.gas_target_percent)

    @property
    def full_ratio(self) -> float:
        """Gas limit over gas target: the gas-used/target ratio of a full block."""
        if self.gas_target_percent is not None:
            return 100 / self.gas_target_percent
        return float(self.elasticity_multiplier or 0)


def eip1559_schedule(chain_id: int, heights: Heights = "protocol") -> tuple[Eip1559Rule, ...]:
    """The chain's EIP-1559 rules from ``data/chains.json``, oldest first.

    Parameters
    ----------
    chain_id : int
        A chain described by ``data/chains.json``.
    heights : {"protocol", "devnet"}
        The real chain's rules (``protocol``) or the embedded devnet's compressed ones.

    Raises
    ------
    KeyError, ValueError
        As :func:`feeslab.protocol.chaindata.chain_half`: an unknown chain or ``heights``.
    """
    half = chain_half(chain_id, heights)
    shift = 1 if heights == "protocol" and int(chain_id) in _KEYED_BY_PARENT else 0
    rules = []
    for i, item in enumerate(half["eip1559"]):
        elasticity = item.get("elasticity_multiplier")
        percent = item.get("gas_target_percent")
        rules.append(
            Eip1559Rule(
                # the chain's first rule is London itself: its fork block has the initial fee
                from_block=int(item["from_block"]) + (shift if i > 0 else 0),
                elasticity_multiplier=None if elasticity is None else int(elasticity),
                max_change_denominator=int(item["base_fee_max_change_denominator"]),
                gas_target_percent=None if percent is None else int(percent),
            )
        )
    return tuple(rules)


def initial_base_fee(chain_id: int, heights: Heights = "protocol") -> int:
    """Base fee of the chain's London block [wei]."""
    value = chain_half(chain_id, heights)["initial_base_fee_wei"]
    return int(value["value"] if isinstance(value, dict) else value)
