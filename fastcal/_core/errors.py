"""fastcal's exception and warning classes, in a module that imports nothing from fastcal, so every layer can use them."""

from __future__ import annotations

import functools
import sys
import warnings

__all__ = ["ConvergenceWarning", "InvalidParameterError", "NotFittedError", "not_fitted", "warn_not_converged"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a calibrator is used before ``fit``.

    Like scikit-learn's exception of the same name, it is both a ``ValueError``
    and an ``AttributeError``; when scikit-learn is loaded, what fastcal
    raises is also an ``sklearn.exceptions.NotFittedError`` (see :func:`not_fitted`).
    """


@functools.cache
def _not_fitted_class(sklearn_class):
    return type("NotFittedError", (NotFittedError, sklearn_class),
                {"__module__": __name__, "__qualname__": "NotFittedError", "__doc__": NotFittedError.__doc__})


def not_fitted(message):
    """The :class:`NotFittedError` to raise, with ``message``.

    When scikit-learn is loaded (by the caller: fastcal never imports it for
    this), the exception is also an instance of
    ``sklearn.exceptions.NotFittedError``, so that code written for
    scikit-learn's estimators catches it. ``except`` matches the class
    hierarchy, not ``isinstance`` hooks, hence a subclass of both, made once.
    """
    if "sklearn" not in sys.modules:
        return NotFittedError(message)
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    return _not_fitted_class(SklearnNotFittedError)(message)


class InvalidParameterError(ValueError, TypeError):
    """A parameter has a value or type its function does not accept.

    Both a ``ValueError`` and a ``TypeError``, as scikit-learn's exception of
    the same name, so that code catching either works.
    """


class ConvergenceWarning(UserWarning):
    """An iterative fit (Newton, EM) stopped at ``max_iter`` before meeting its tolerance, or stopped where its
    optimum does not exist (beta calibration of separable data)."""


def warn_not_converged(what, max_iter, steps="iterations", criterion=None, stacklevel=2):
    """Warn that ``what`` stopped at ``max_iter`` before meeting its tolerance: every iterative fit's one wording.

    ``"<what> did not converge in <max_iter> <steps> (<criterion>); the result
    may be inaccurate. Increase max_iter or tol."`` ``criterion`` states the
    stopping rule's last value against ``tol``; ``stacklevel`` is counted from
    the caller of this function.
    """
    detail = f" ({criterion})" if criterion else ""
    warnings.warn(
        f"{what} did not converge in {max_iter} {steps}{detail}; the result may be inaccurate. "
        "Increase max_iter or tol.",
        ConvergenceWarning,
        stacklevel=stacklevel + 1,
    )
