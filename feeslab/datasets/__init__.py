"""Datasets: one module per dataset, each declaring itself once (``DATASETS``).

Every module has the dataset's own fetch (``get(source, ...)``: the frame, ``attrs`` saying
chain, spec and source) and, where it costs credits, ``plan(source, ...) -> Plan`` (known
before any call is sent), and ends with its :class:`~feeslab.datasets.registry.Dataset`
declarations. :data:`REGISTRY` lists them: ``feeslab.lab.Lab`` has a method per dataset (and
``plan_<name>``), ``feeslab fetch`` a kind per dataset with a command-line name, and
``feeslab.cluster`` runs every dataset with partitions. Adding a dataset is one module and
one line below. The pure parsers are ``feeslab.frames``'; where rows come from is
``feeslab.sources``'.

==================  ==============  ================================================================
dataset             module          what
==================  ==============  ================================================================
base_fee_history    base_fees       the Gas API's last 500 base fees, placed at block numbers
fee_history         fee_history     ``eth_feeHistory``: base fees, gas used and tip percentiles
blocks              blocks          block headers
uncles              uncles          every uncle of a range of blocks, and each block's uncle count
storage             storage         a storage slot of a contract after one block
storage_series      storage         ... after each of a series of blocks
call                calls           ``eth_call`` of one function at one block, decoded
call_series         calls           ... at each of a series of blocks
estimate_costs      gas             ``eth_estimateGas`` priced at the base fee
gas_needed          gas             the least gas each transaction succeeds with
transactions        transactions    every transaction of a range of blocks, with its receipt
==================  ==============  ================================================================

A dataset of one's own is a module ending with its ``DATASETS`` (see ``feeslab.engine`` for a
chunked one, declared as extract and transform), added with ``REGISTRY.register(*DATASETS)``,
or named in the environment variable ``FEESLAB_DATASETS`` (modules separated by commas,
imported with this package): then ``feeslab fetch`` and a cluster's workers, which are other
processes, have it too.

Blobs need no dataset of their own: ``blocks`` and ``fee_history`` carry the blob columns
(``blob_gas_used``, ``excess_blob_gas``, ``base_fee_per_blob_gas_wei``,
``blob_gas_used_ratio``).
"""


import importlib
import os

from feeslab.datasets import (
    base_fees,
    blocks,
    calls,
    fee_history,
    gas,
    registry,
    storage,
    transactions,
    uncles,
)
from feeslab.datasets.registry import Dataset, Registry
from feeslab.sources.base import Source

__all__ = ["PLUGINS", "REGISTRY", "Dataset", "base_fees", "blocks", "calls", "fee_history", "gas",
           "get", "registry", "storage", "transactions", "uncles"]

REGISTRY = Registry([
    *base_fees.DATASETS,
    *fee_history.DATASETS,
    *blocks.DATASETS,
    *uncles.DATASETS,
    *storage.DATASETS,
    *calls.DATASETS,
    *gas.DATASETS,
    *transactions.DATASETS,
])


PLUGINS = "FEESLAB_DATASETS"  # modules whose DATASETS join the registry on import


def _load_plugins() -> None:
    """The datasets of each module ``FEESLAB_DATASETS`` names (comma-separated)."""
    for name in filter(None, (part.strip() for part in os.environ.get(PLUGINS, "").split(","))):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ImportError(f"{PLUGINS} names {name!r}, which cannot be imported: {exc}"
                              ) from exc  # fmt: skip
        REGISTRY.register(*getattr(module, "DATASETS", ()))


_load_plugins()


def get(name: str, source: Source, *args: object, **kwargs: object) -> object:
    """Dataset ``name`` of ``source`` with its arguments (what ``lab.<name>(...)`` runs in
    one process): read where the source holds the rows, else fetched by the dataset."""
    dataset = REGISTRY[name]
    return registry.get(dataset, source, dataset.bind(*args, **kwargs))
