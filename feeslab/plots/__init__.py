"""Matplotlib plots of the frames :mod:`feeslab.analysis` returns.

Every function is ``plot_<thing>(frame, *, ax=None, **kwargs) -> Axes``: a figure is made only
when ``ax`` is None, ``plt.show()`` is never called, statistics are never computed here (they
come from :mod:`feeslab.analysis`), and axis labels carry units. :func:`add_source` and
:func:`describe_source` put the data's source (real chain or simulator, which blocks) on a
figure.
"""

from feeslab.plots import blobs as _blobs
from feeslab.plots import fees as _fees
from feeslab.plots import gas as _gas
from feeslab.plots import gas_rules as _gas_rules
from feeslab.plots import revenue as _revenue
from feeslab.plots import source as _source
from feeslab.plots import storage as _storage
from feeslab.plots import suggestions as _suggestions
from feeslab.plots import uncles as _uncles
from feeslab.plots import watch as _watch
from feeslab.plots.blobs import *  # noqa: F403
from feeslab.plots.fees import *  # noqa: F403
from feeslab.plots.gas import *  # noqa: F403
from feeslab.plots.gas_rules import *  # noqa: F403
from feeslab.plots.revenue import *  # noqa: F403
from feeslab.plots.source import *  # noqa: F403
from feeslab.plots.storage import *  # noqa: F403
from feeslab.plots.suggestions import *  # noqa: F403
from feeslab.plots.uncles import *  # noqa: F403
from feeslab.plots.watch import *  # noqa: F403

__all__ = sorted(
    [
        *_blobs.__all__,
        *_fees.__all__,
        *_gas.__all__,
        *_gas_rules.__all__,
        *_revenue.__all__,
        *_source.__all__,
        *_storage.__all__,
        *_suggestions.__all__,
        *_uncles.__all__,
        *_watch.__all__,
    ]
)
