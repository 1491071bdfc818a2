"""Every plot function's docstring names its ``ax`` parameter (written once, in
``feeslab.plots._base``, and filled in through the ``%(ax)s`` placeholder, never by hand) and
keeps no unfilled placeholder."""

from __future__ import annotations

import inspect

import pytest

from feeslab import plots

MODULES = {f"feeslab.plots.{name}" for name in ("blobs", "fees", "gas", "gas_rules", "revenue",
                                              "storage", "suggestions", "uncles")}
PLOTS = [
    getattr(plots, name)
    for name in plots.__all__
    if name.startswith("plot_") and getattr(plots, name).__module__ in MODULES
]


@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_the_ax_parameter_is_documented(plot) -> None:
    assert len(PLOTS) >= 20
    doc = inspect.getdoc(plot)
    assert "ax" in inspect.signature(plot).parameters
    assert "ax : matplotlib.axes.Axes, optional\n    Where to draw; a new figure when None." in doc
    assert "%(" not in doc


@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_the_ax_entry_comes_from_the_shared_placeholder(plot) -> None:
    # a hand-written entry drifts from the shared one the day either changes
    source = inspect.getsource(plot)
    assert "%(ax)s" in source
    assert "ax : matplotlib.axes.Axes" not in source
