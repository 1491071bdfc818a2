"""Pausing the cyclic garbage collector while answers are decoded.

Decoding a batch of 500 headers makes ~20,000 containers, and every 700 allocations the
collector walks the young generation; with tens of thousands of decoded headers alive it also
walks the older ones again and again. JSON answers form no reference cycles, so those walks
find nothing: on a 20,000-block scan they were a third of the client's CPU time. The
collector is paused while a fetch decodes and resumed after (and then runs as usual).

This changes process-wide state (every thread's collection is paused while any fetch runs):
``FEESLAB_GC_PAUSE=0`` in the environment turns it off, read at each fetch. The process-wide
changes feeslab makes are listed in one place, ``docs/architecture.md``.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # fetches in progress, all threads together
_resume = False  # whether the collector was on when the first of them began


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; nested and concurrent uses are counted, and
    the collector is turned back on only if it was on before the outermost one began."""
    global _depth, _resume
    if os.environ.get("FEESLAB_GC_PAUSE", "1").strip().lower() in ("0", "off", "false", "no"):
        yield  # turned off: the collector runs as the process set it
        return
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
