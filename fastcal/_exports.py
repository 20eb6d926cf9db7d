"""The public home of the names a package of fastcal re-exports from its private modules."""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any


def publish(namespace: MutableMapping[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` of each of ``names`` in a package's ``namespace`` (its ``globals()``) to the package.

    The public name of a class or function defined in a private module
    (``fastcal.metrics._scores.brier_score_loss``) is the package's
    (``fastcal.metrics.brier_score_loss``): that is the name pickles store,
    reprs show and the API reference lists, and it does not move when the
    code moves between private modules.
    """
    for name in names:
        namespace[name].__module__ = namespace["__name__"]
