"""The engine under every chunked dataset: a dataset declares how one chunk of blocks is read
(extract) and becomes rows (transform); the engine plans, chunks, keeps chunks in flight,
charges the budget, shows progress, writes settled chunks to the cache and joins them.

==================  ===================================================================
module              what
==================  ===================================================================
``chunks``          :class:`Chunked`: what a dataset declares
``run``             the in-process executor: :func:`run`, :func:`plan`
``keep``            the cache sink: runs of chunks a file, notes of chunks in flight
``declare``         a dataset's fetch and plan made from its declaration
==================  ===================================================================

The dask executor is ``feeslab.cluster``: the same fetch on each partition of a job.
"""

from feeslab.engine.chunks import Chunk, Chunked, MissingBlock, Notes, aligned_chunks
from feeslab.engine.declare import fetcher, planner
from feeslab.engine.run import Layout, check_range, layout, plan, run

__all__ = ["Chunk", "Chunked", "Layout", "MissingBlock", "Notes", "aligned_chunks",
           "check_range", "fetcher", "layout", "plan", "planner", "run"]
