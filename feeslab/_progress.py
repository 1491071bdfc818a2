"""Progress bars for long fetches: a widget in Jupyter, text on stderr elsewhere.

``tqdm.auto`` picks the bar: in a Jupyter kernel with ipywidgets, tqdm's widget; anywhere else
(a terminal, a script, a kernel without ipywidgets) the text bar on stderr, without tqdm's
"IProgress not found" warning.

In a kernel the widget is shown alone, without the ``text/plain`` twin ipywidgets adds (tqdm
makes it the bar's text at 0 %), under a display id; once the fetch is complete that output is
replaced by an empty one. So a saved notebook keeps no stale "0%" bar, and nbval (which skips
a widget view, whose model id is random, but compares a ``text/plain`` twin, and ignores
display updates) sees the same outputs whether a bar appeared (a cold cache) or not (a warm
one). A fetch that fails keeps its bar, stopped where it failed.
"""

from __future__ import annotations

import functools
import warnings
from typing import Protocol

__all__ = ["ProgressBar", "progress_bar"]


class ProgressBar(Protocol):
    """What a fetch does with a bar (a ``tqdm.tqdm``): count items, show a postfix, close."""

    def update(self, n: float = 1) -> bool | None:
        """Count ``n`` more items done."""

    def set_postfix(
        self, ordered_dict: object = None, refresh: bool = True, **kwargs: object
    ) -> None:
        """Show ``key=value`` after the bar, e.g. ``credits=...``."""

    def close(self) -> None:
        """Stop the bar (see :func:`progress_bar` for what stays on screen)."""


def progress_bar(
    *, total: int, initial: int = 0, description: str, unit: str = "call"
) -> ProgressBar:
    """A tqdm bar over ``total`` items, ``initial`` of them already done; closes leaving
    nothing behind.

    Parameters
    ----------
    total, initial : int
    description : str
        Shown before the bar, e.g. ``"blocks"``.
    unit : str
        What is counted, e.g. ``"call"``.

    Returns
    -------
    tqdm.tqdm
        ``update(n)`` it, ``close()`` it.
    """
    tqdm = _tqdm()
    options = {"total": total, "initial": initial, "desc": description, "unit": unit}
    bar: ProgressBar
    if any(cls.__name__ == "tqdm_notebook" for cls in tqdm.__mro__):
        bar = _widget_bar(tqdm)(**options)
    else:
        bar = tqdm(**options, leave=False)
    return bar


@functools.cache  # once: catch_warnings swaps the process's warning filters
def _tqdm() -> type:
    from tqdm import TqdmWarning

    with warnings.catch_warnings():
        # a kernel without ipywidgets gets tqdm's text bar, not a warning about it
        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm
    cls: type = tqdm
    return cls


@functools.cache
def _widget_bar(base: type) -> type:
    # a base chosen at run time (tqdm's widget class): mypy cannot check a class built on it
    class WidgetBar(base):  # type: ignore[misc]
        """tqdm's widget, shown under a display id that is emptied once complete."""

        def __init__(self, **options: object) -> None:
            from IPython.display import display

            super().__init__(**options, leave=False, display=False)
            # the view alone: its text/plain twin (tqdm's bar at 0 %) would be compared by nbval
            bundle = getattr(self.container, "_repr_mimebundle_", lambda: None)() or {}
            view = {k: v for k, v in bundle.items() if k != "text/plain"}
            if view:
                self._handle = display(view, raw=True, display_id=True)
            else:  # an ipywidgets without mime bundles: let it show itself
                self._handle = display(self.container, display_id=True)

        def close(self) -> None:
            complete = not self.total or self.n >= self.total
            super().close()
            handle, self._handle = getattr(self, "_handle", None), None
            if complete and handle is not None:
                handle.update({}, raw=True)

    return WidgetBar
