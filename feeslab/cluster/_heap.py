"""glibc's allocator on a dask worker as in a process dask did not start, while partitions run
(``process_heap``): a nanny's ``MALLOC_TRIM_THRESHOLD_`` made a worker's era1 scan 0.6x as
fast per core (``benchmarks/cluster.py``)."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["process_heap"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt() parameters
_MMAP_THRESHOLD_MAX = 32 * 2**20  # [bytes] where glibc's own sliding thresholds stop (64-bit),
_TRIM_THRESHOLD_MAX = 2 * _MMAP_THRESHOLD_MAX  # which a process dask did not start reaches
_MMAP_THRESHOLD_FIXED = 128 * 2**10  # [bytes] glibc's default, fixed once any threshold is set


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library if it is glibc (its ``mallopt``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc's own symbol: not musl)
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def _nanny_worker() -> bool:
    """Whether this runs on a worker process a nanny started (with the nanny's environment
    from its start; a worker in the driver's process, ``processes=False``, is not one)."""
    try:
        from distributed import get_worker

        return get_worker().nanny is not None
    except (ImportError, ValueError):  # not on a worker
        return False


_heap_lock = threading.Lock()
_heap_users = 0  # partitions running in this process under _process_heap, all threads


@contextmanager
def process_heap(enabled: bool = True) -> Iterator[None]:
    """glibc's allocator as in a process dask did not start, while partitions run.

    A dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (to hand freed
    memory back to the system). Setting any threshold fixes glibc's mmap threshold at
    128 KiB: every buffer above it (an era1 file's header columns, a Parquet page) is mapped,
    zero-filled and unmapped afresh, where a process started without it reuses its heap. A
    worker's era1 scan did 0.6x one process's work per CPU second (``benchmarks/cluster.py``).
    So while partitions run, the thresholds are where glibc's own sliding ones end; when the
    last ends, dask's are put back (the next ``free`` at the heap's top returns memory). A
    process-wide change, made only in a worker a nanny started with
    ``MALLOC_TRIM_THRESHOLD_`` set, on glibc; ``Dask(client, tune_malloc=False)`` turns it off.
    """
    global _heap_users
    libc = _glibc() if enabled and _nanny_worker() else None
    try:
        trim = int(os.environ["MALLOC_TRIM_THRESHOLD_"])
        mmap = int(os.environ.get("MALLOC_MMAP_THRESHOLD_", _MMAP_THRESHOLD_FIXED))
    except (KeyError, ValueError):  # started without: glibc's thresholds still slide
        libc = None
    if libc is None:
        yield
        return
    with _heap_lock:
        if _heap_users == 0:
            libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
            libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_MAX)
        _heap_users += 1
    try:
        yield
    finally:
        with _heap_lock:
            _heap_users -= 1
            if _heap_users == 0:
                libc.mallopt(_M_MMAP_THRESHOLD, mmap)
                libc.mallopt(_M_TRIM_THRESHOLD, trim)
