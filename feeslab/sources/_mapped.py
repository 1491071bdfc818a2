"""An archive file memory-mapped for reading (era1, Era, Ere): opened, refused and closed one
way, so each reader holds only what its format reads."""

from __future__ import annotations

import contextlib
import mmap
from pathlib import Path
from typing import ClassVar, Self

from feeslab.errors import FeeslabError

__all__ = ["MappedFile"]


class MappedFile:
    """A file mapped read-only (``self._map``), ``self.path`` its path; a context manager.

    A subclass names what it reads (``KIND``: ``"an era1 file"``), the least size such a file
    has [bytes] (``MIN_SIZE``), its error (``ERROR``, taking ``path=``) and ``_error(message)``
    for what its records get wrong."""

    KIND: ClassVar[str]
    MIN_SIZE: ClassVar[int]
    ERROR: ClassVar[type[FeeslabError]]
    path: Path

    def _error(self, message: str) -> FeeslabError:
        raise NotImplementedError

    def _open(self, path: str | Path) -> None:
        """Map ``path``; its error naming the file if it cannot be read or is too short."""
        self.path = Path(path)
        try:
            with open(self.path, "rb") as handle:
                size = handle.seek(0, 2)
                if size < self.MIN_SIZE:
                    raise self._error(f"{size} bytes: too short for {self.KIND}")
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise self.ERROR(f"{self.path}: cannot read: {exc.strerror or exc}",
                             path=self.path) from None  # type: ignore[call-arg]  # fmt: skip

    def close(self) -> None:
        """Unmap the file (at once, or when the last array or traceback still using it goes)."""
        with contextlib.suppress(BufferError):
            self._map.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
