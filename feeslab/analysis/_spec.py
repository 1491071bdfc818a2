"""How analysis functions learn which chain a frame is of: one decorator, :func:`takes_spec`.

A decorated function ``f(frame, ..., *, spec: ChainSpec | None, ...)`` is called as
``f(frame, ..., spec=None, chain_id=None, ...)``: ``spec=`` (a
:class:`feeslab.ChainSpec` or its label) or ``chain_id=`` (the real chain's, unless the frame's
attrs say the chain follows other heights), else the frame's ``attrs`` — all through
:func:`feeslab.protocol.chainspec.resolve_spec`, so contradictions raise the same errors
everywhere. The function body only ever sees the resolved :class:`ChainSpec` (its forks,
EIP-1559 rules, blob schedule, rewards), never a chain id or a choice of heights.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TypeVar

from feeslab.protocol.chainspec import ChainSpec, resolve_spec

__all__ = ["takes_spec"]

F = TypeVar("F", bound=Callable[..., object])


def takes_spec(
    *, explicit: tuple[str, ...] = (), alternatives: str = "", required: bool = True
) -> Callable[[F], F]:
    """Decorate ``func(frame, ..., *, spec, ...)`` to resolve ``spec=``/``chain_id=``.

    Parameters
    ----------
    explicit : tuple of str
        Options that replace a spec (``elasticity_multiplier``, ...): when one is given (not
        None) the function gets ``spec=None``, and ``spec=``/``chain_id=`` with it raise
        ``ValueError``.
    alternatives : str
        Named in the :class:`~feeslab.MissingChainSpec` message as another way out.
    required : bool
        False: a frame without a chain gives ``spec=None`` instead of raising.
    """

    def decorate(func: F) -> F:
        what = func.__name__

        @functools.wraps(func)
        def inner(frame: object, *args: object, spec: ChainSpec | str | None = None,
                  chain_id: int | None = None, **options: object) -> object:  # fmt: skip
            if any(options.get(name) is not None for name in explicit):
                if spec is not None or chain_id is not None:
                    raise ValueError(f"{what}: give spec=/chain_id= or the parameters, not both")
                chosen: ChainSpec | None = None
            else:
                chosen = resolve_spec(frame, spec, chain_id, what=what, required=required,
                                      alternatives=alternatives)  # fmt: skip
            return func(frame, *args, spec=chosen, **options)

        signature = inspect.signature(func)
        params = list(signature.parameters.values())
        at = next(i for i, p in enumerate(params) if p.name == "spec")
        public = [
            params[at].replace(default=None, annotation="ChainSpec | str | None"),
            inspect.Parameter("chain_id", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation="int | None"),
        ]  # fmt: skip
        inner.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*params[:at], *public, *params[at + 1 :]]
        )
        return inner  # type: ignore[return-value]

    return decorate
