"""The estimator conventions of scikit-learn, without importing scikit-learn.

Constructors store their arguments untouched; ``fit`` validates them and sets
fitted attributes whose names end in ``_``. ``get_params``/``set_params`` read
the constructor's signature, so ``sklearn.base.clone``, pipelines and grid
searches work, and pickling needs nothing more than the instance dict.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, ClassVar, Self

from . import _persist
from ._errors import ConvergenceWarning, NotFittedError, not_fitted
from ._params import check_all

__all__ = ["BaseCalibrator", "ConvergenceWarning", "NotFittedError", "check_is_fitted"]


def check_is_fitted(estimator: object, attribute: str) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has the fitted ``attribute``."""
    if not hasattr(estimator, attribute):
        raise not_fitted(
            f"This {type(estimator).__name__} instance is not fitted yet. "
            "Call 'fit' with appropriate arguments before using this estimator."
        )


class BaseCalibrator:
    """Parameter handling shared by fastcal's estimators."""

    @classmethod
    def _get_param_names(cls):
        signature = inspect.signature(cls.__init__)
        return sorted(
            p.name
            for p in signature.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Return the constructor parameters as a dict (``deep`` is accepted for scikit-learn)."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}; valid parameters are {valid}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = []
        for name, value in self.get_params().items():
            default = defaults.get(name, inspect.Parameter.empty)
            if default is inspect.Parameter.empty or value is not default and value != default:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- model files (see fastcal._persist) ------------------------------------

    #: Fitted attributes saved in a model file, with their kinds; subclasses
    #: that can be saved declare theirs and are registered with ``_persist.register``.
    _state_schema: ClassVar[dict[str, str]] = {}

    def to_dict(self) -> dict[str, Any]:
        """The fitted calibrator as a JSON-ready dict of numbers and names (no code)."""
        return _persist.to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild a fitted calibrator from :meth:`to_dict` output; ``ValueError`` if it is not valid."""
        estimator = _persist.from_dict(data)
        if not isinstance(estimator, cls):
            raise ValueError(f"invalid fastcal model: holds a {type(estimator).__name__}, not a {cls.__name__}")
        return estimator

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted calibrator to ``path`` as a fastcal JSON model file; read it with ``fastcal.load``."""
        _persist.save(self, path)

    def _check_loaded_state(self):
        """Check the parameters and fitted attributes set from a model file; raise ``ValueError`` if inconsistent."""
        self._validate_params()

    # -- parameters ------------------------------------------------------------

    #: What each constructor parameter accepts (see :mod:`fastcal._params`).
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {}

    def _validate_params(self):
        """The constructor parameters, checked against ``_parameter_constraints`` and normalised (a dict)."""
        return check_all(self._parameter_constraints, self.get_params())

    def __sklearn_tags__(self):
        # Called only by scikit-learn itself (pipelines, clone, checks), so
        # importing it here keeps it out of fastcal's import-time dependencies.
        from sklearn.utils import Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=True),
            transformer_tags=TransformerTags() if hasattr(self, "transform") else None,
        )
