"""On-disk store of generated chain histories, so a restarted devnet starts warm.

Generating chain 1's default 210,000 blocks takes ~5 s; every new process (a
``feeslab serve``, each notebook kernel) would pay it again.  Once a history
reaches its chain's configured height it is saved here; a later process with
the same seed loads it instead of generating.  A history lengthened for a longer head
(``feeslab serve --height N``) is stored once it reaches N, in a file of its own (``-toN``),
so the default chain's file stays as short as its chain.

The file name is a digest of everything that determines the history: the
simulator's source (with the EIP-1559 rule it imports, its RLP encoder, and the draws and
access lists Amsterdam's headers hash), ``data/chains.json``,
the chain's parameters and the seed.  Change any of them and the old file is
simply never read again.  Files are written atomically (temporary file, then
rename); a file that fails to load is ignored (and removed), never trusted.
``FEESLAB_CACHE_DIR`` moves the store (``<dir>/devnet``), ``FEESLAB_DEVNET_CACHE=0``
turns it off.

Processes that start together (a test run's workers, two notebook kernels) would all build a
missing file at once.  :func:`building` is a cross-process lock per file (``.<file>.lock``,
an OS lock through ``filelock``): one process builds and saves, the others wait, then load.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from feeslab.protocol.chaindata import chains_json_bytes

log = logging.getLogger(__name__)
FORMAT = 1
# the longest wait for another process's build of a file before building it here as well [s];
# a build takes ~80 s of CPU on py-evm, several minutes when processes share the cores
BUILD_LOCK_TIMEOUT = 1200.0


class History(Protocol):
    """What the store needs of ``feeslab.devnet.chain.History`` (named here, not imported:
    the chain imports the store)."""

    chain_id: int
    seed: int
    params: Any

    def export_columns(self) -> dict[str, np.ndarray]: ...

    def import_columns(self, columns: dict[str, np.ndarray]) -> None: ...


def store_dir() -> Path | None:
    """Where histories are kept, or None when the store is turned off."""
    if os.environ.get("FEESLAB_DEVNET_CACHE", "1") == "0":
        return None
    base = os.environ.get("FEESLAB_CACHE_DIR")
    if base is None:
        import platformdirs

        base = platformdirs.user_cache_dir("feeslab")
    return Path(base) / "devnet"


def history_file(history: History, extent: int | None = None) -> Path | None:
    """The file of ``history``'s store, or of its lengthened form that reaches ``extent``."""
    directory = store_dir()
    if directory is None:
        return None
    from feeslab.protocol import blobs, eip1559

    digest = hashlib.sha256()
    for part in (
        Path(__file__).with_name("chain.py").read_bytes(),  # the simulator
        # its RLP, and Amsterdam's access lists drawn from the transactions' streams
        Path(__file__).with_name("_rlp.py").read_bytes(),
        Path(__file__).with_name("_bal.py").read_bytes(),
        Path(__file__).with_name("_draws.py").read_bytes(),
        Path(eip1559.__file__).read_bytes(),  # the base-fee rule the simulator applies
        Path(blobs.__file__).read_bytes(),  # and the blob-fee rule
        chains_json_bytes(),
        repr(history.params).encode(),
        str(history.seed).encode(),
        str(FORMAT).encode(),
    ):
        digest.update(hashlib.sha256(part).digest())
    suffix = "" if extent is None else f"-to{extent}"
    return directory / f"chain-{history.chain_id}-{digest.hexdigest()[:24]}{suffix}.npz"


def load(history: History, extent: int | None = None) -> bool:
    """Fill ``history`` from its file (the one reaching ``extent``), if there is a good one."""
    path = history_file(history, extent)
    if path is None or not path.exists():
        return False
    try:
        # our own handle: np.load leaks its file when the archive is damaged
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as data:
            history.import_columns({name: data[name] for name in data.files})
    except Exception:  # a damaged or foreign file: regenerate rather than trust it
        log.warning("ignoring unreadable devnet history %s", path, exc_info=True)
        path.unlink(missing_ok=True)
        return False
    return True


def save(history: History, extent: int | None = None) -> None:
    """Write ``history``'s columns atomically (as the one reaching ``extent``); failures only
    cost the speed-up."""
    path = history_file(history, extent)
    if path is None:
        return
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **history.export_columns())
    keep(path, buffer.getvalue(), "history")


def keep(path: Path, data: bytes, what: str) -> None:
    """Write a store file atomically; a failure is logged (naming ``what``), not raised: it
    only costs the speed-up."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data)
    except OSError:
        log.warning("could not save devnet %s to %s", what, path, exc_info=True)


def write_atomically(
    path: Path, data: bytes, *, prefix: str | None = None, durable: bool = False
) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``:
    readers see the old file or the new one, never part of one.

    ``prefix`` names the temporary file (``path``'s name by default); ``durable`` fsyncs it
    before the rename (the directory's fsync is the caller's).  On any failure the
    temporary file is removed and the error raised.
    """
    name = path.name if prefix is None else prefix
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):  # the first error is the one to report
            os.unlink(temporary)
        raise


_LOCKS: dict[Path, Any] = {}  # one lock object per file in a process: its threads share it
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def building(path: Path | None, timeout: float | None = None) -> Iterator[bool]:
    """Hold the build lock of the store file ``path`` while loading it or building and saving it.

    One process at a time holds a file's lock, so of several processes that miss the file at
    once one builds it and the others, when they get the lock, load what it saved.  The lock
    is the operating system's (``flock`` on POSIX, through ``filelock``): it is released when
    its process dies, so a killed builder never blocks the others.  Threads of one process share
    their process's hold (the lock is reentrant across them): they take turns on the object's
    own lock instead.

    Parameters
    ----------
    path : Path or None
        The store file; None (the store is turned off) takes no lock.
    timeout : float, optional
        The longest wait for another process [s], :data:`BUILD_LOCK_TIMEOUT` by default.  A
        holder alive but stuck past it is waited for no longer: the caller builds as well
        (a warning is logged), which costs time only, as files are replaced atomically.

    Yields
    ------
    bool
        Whether the lock is held (False: store off, lock file not creatable, or timed out).

    References
    ----------
    .. [1] filelock, "A platform independent file lock", https://py-filelock.readthedocs.io
    .. [2] flock(2), Linux man-pages: "the lock is released ... when all file descriptors
       referring to [the open file description] have been closed" (also at process exit)
    """
    if path is None:
        yield False
        return
    from filelock import FileLock, Timeout

    wait = BUILD_LOCK_TIMEOUT if timeout is None else timeout
    lock_path = path.with_name(f".{path.name}.lock")  # hidden: globs of the files skip it
    with _LOCKS_GUARD:
        lock = _LOCKS.get(lock_path)
        if lock is None:
            # thread_local=False: the hold is the process's, so a second thread does not wait
            # for its own process's build (the object's lock keeps threads in turn)
            lock = _LOCKS[lock_path] = FileLock(lock_path, thread_local=False)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=0)
        except Timeout:  # another process is building: say why this one pauses
            log.info("waiting for another process to build %s", path.name)
            started = time.monotonic()
            lock.acquire(timeout=wait)
            log.info("waited %.1f s for %s", time.monotonic() - started, path.name)
    except Timeout:
        log.warning(
            "%s: another process has held its build lock for over %g s; building it here too",
            path.name,
            wait,
        )
        yield False
        return
    except OSError:  # a read-only or missing cache directory: no lock, the save fails alone
        log.warning("could not lock %s; building it without a lock", lock_path, exc_info=True)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
