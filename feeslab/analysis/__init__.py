"""Pure functions on Series and DataFrames: statistics of fees, uncles and storage.

No I/O happens here: frames come from :class:`feeslab.Lab` (or any source with the same
columns), results go to :mod:`feeslab.plots`. One module per topic::

    feeslab.analysis.fees      EIP-1559 arithmetic, utilisation, volatility, forecast bounds
    feeslab.analysis.blobs     EIP-4844 blob fees, usage from fees, regimes, burn (in fees too)
    feeslab.analysis.gas       each fork's gas rules (London..Amsterdam), estimates, costs
    feeslab.analysis.estimators  wallets' and libraries' fee suggestions, reproduced from frames
    feeslab.analysis.backtest  those suggestions scored on history: inclusion, delay, overpayment
    feeslab.analysis.uncles    uncle rates with intervals, depth, rewards, miners, a model
    feeslab.analysis.storage   decoded storage series: balances, proxy upgrades, oracle rounds
    feeslab.analysis.revenue   what blocks paid their miners: composition, windows, tails, forks
    feeslab.analysis.events    event studies: before/after with autocorrelation-aware intervals
"""

from feeslab.analysis import (
    backtest,
    blobs,
    estimators,
    events,
    fees,
    gas,
    revenue,
    storage,
    uncles,
)

__all__ = [
    "backtest",
    "blobs",
    "estimators",
    "events",
    "fees",
    "gas",
    "revenue",
    "storage",
    "uncles",
]
