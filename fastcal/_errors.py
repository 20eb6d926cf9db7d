"""fastcal's exception and warning classes, in a module that imports nothing, so every layer can use them."""

from __future__ import annotations

__all__ = ["ConvergenceWarning", "NotFittedError"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a calibrator is used before ``fit``.

    Like scikit-learn's exception of the same name, it is both a ``ValueError``
    and an ``AttributeError``.
    """


class ConvergenceWarning(UserWarning):
    """An iterative fit (Newton, EM) stopped at ``max_iter`` before meeting its tolerance."""
