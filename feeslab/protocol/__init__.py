"""Ethereum's protocol rules, written once for every layer that applies them.

Everything above reads its rules from here: the analysis (:mod:`feeslab.analysis`), the sources
and datasets that fetch and check blocks, the shipped samples (:mod:`feeslab.samples`) and the
embedded devnet that simulates chains under the same rules. A simulated chain, a fetched one and
the analysis of either therefore cannot disagree about a rule. This package imports nothing of
feeslab but :mod:`feeslab.errors` (a contract in ``pyproject.toml`` holds it to that).

One module per topic:

============== ==================================================================================
``eip1559``    the base-fee rule and its per-fork parameters (EIP-1559, Polygon's variants)
``blobs``      the blob fee and excess blob gas (EIP-4844, EIP-7691, EIP-7892, EIP-7918)
``gas``        each fork's transaction gas rules: intrinsic gas, the calldata floor, the cap
``chainspec``  :class:`~feeslab.protocol.chainspec.ChainSpec`: one chain's forks and rules
``chaindata``  ``feeslab/_data/chains.json``, which ``chainspec`` and the devnet read
``headers``    a block header's RLP fields per fork and its hash
``era1``       the era1 archive format (e2store records, the accumulator) read and written
``e2store``    what the archive formats share: records, snappy framing, keccak, RLP, tries
``ere``        the Ere archive format (execution history across the merge): records, writer
``costs``      the service's credit cost table and plans, charged by the devnet, paid by the client
============== ==================================================================================

Nothing is imported here: ``import feeslab.protocol.eip1559`` loads that rule alone.
"""
