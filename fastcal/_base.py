"""The estimator conventions of scikit-learn, without importing scikit-learn.

Constructors store their arguments untouched; ``fit`` validates them and sets
fitted attributes whose names end in ``_``. ``get_params``/``set_params`` read
the constructor's signature, so ``sklearn.base.clone``, pipelines and grid
searches work, and pickling needs nothing more than the instance dict.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any, ClassVar, Self

from . import _persist
from ._core.errors import ConvergenceWarning, NotFittedError, not_fitted
from ._core.params import Options, check, check_all

__all__ = ["UNCHANGED", "BaseCalibrator", "ConvergenceWarning", "NotFittedError", "check_is_fitted"]

#: The default of ``set_*_request``'s arguments: leave the request as it is (scikit-learn's sentinel).
UNCHANGED = "$UNCHANGED$"


class _Requests(dict):
    """``{method: {parameter: request}}`` of ``set_*_request``; scikit-learn's ``clone`` copies it."""

    def __sklearn_clone__(self):
        return _Requests({method: dict(params) for method, params in self.items()})


def check_is_fitted(estimator: object, attribute: str) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has the fitted ``attribute``."""
    if not hasattr(estimator, attribute):
        raise not_fitted(
            f"This {type(estimator).__name__} instance is not fitted yet. "
            "Call 'fit' with appropriate arguments before using this estimator."
        )


class BaseCalibrator:
    """Parameter handling shared by fastcal's estimators."""

    #: True for estimators that take 1-D scores (as scikit-learn's IsotonicRegression): their scikit-learn
    #: tags say so (``one_d_array``), and scikit-learn's checks test them for what they are.
    _one_d_input = False

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

    #: What each constructor parameter accepts (see :mod:`fastcal._core.params`).
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {}

    def _validate_params(self):
        """The constructor parameters, checked against ``_parameter_constraints`` and normalised (a dict)."""
        return check_all(self._parameter_constraints, self.get_params())

    # -- scikit-learn's metadata routing and set_output, without importing it ------

    def set_fit_request(self, *, sample_weight: bool | str | None = UNCHANGED) -> Self:
        """Whether ``fit`` takes ``sample_weight`` when a scikit-learn meta-estimator routes metadata.

        As scikit-learn's ``set_fit_request`` (``sklearn.set_config(enable_metadata_routing=True)``): True
        requests it, False does not, None raises if it is passed, a string is an alias.
        """
        return self._set_request("fit", sample_weight=sample_weight)

    def _set_request(self, method, **params):
        for name, alias in params.items():
            if alias is not UNCHANGED:
                if not (alias is None or isinstance(alias, (bool, str))):
                    raise TypeError(f"{name} must be True, False, None or an alias (a str); got {alias!r}.")
                self.__dict__.setdefault("_metadata_request", _Requests()).setdefault(method, {})[name] = alias
        return self

    def get_metadata_routing(self) -> Any:
        """scikit-learn's ``MetadataRequest`` of this estimator (for scikit-learn's metadata routing)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=self)
        for method in ("fit", "score"):
            func = getattr(self, method, None)
            if func is None:
                continue
            asked = getattr(self, "_metadata_request", {}).get(method, {})
            if "sample_weight" in inspect.signature(func).parameters:
                getattr(request, method).add_request(param="sample_weight", alias=asked.get("sample_weight"))
        return request

    def set_output(self, *, transform: str | None = None) -> Self:
        """What ``transform`` and ``fit_transform`` return, as scikit-learn's ``set_output``: "default" (NumPy) or
        "pandas" (a DataFrame with the column of :meth:`get_feature_names_out`); None leaves it unchanged."""
        if transform is not None:
            check("transform", transform, [Options("default", "pandas")])
            self._sklearn_output_config = {"transform": transform}
        return self

    def _wrap_output(self, out, X):
        """``out`` of ``transform`` as :meth:`set_output` asked, else as scikit-learn's global ``transform_output``
        says (``sklearn.set_config`` or ``config_context``, read only if scikit-learn is loaded), as scikit-learn's
        estimators do; pandas is imported only then."""
        how = getattr(self, "_sklearn_output_config", {}).get("transform")
        if how is None:
            sklearn = sys.modules.get("sklearn")
            how = sklearn.get_config().get("transform_output", "default") if sklearn is not None else "default"
        if how != "pandas":
            return out
        import pandas as pd

        index = X.index if isinstance(X, (pd.Series, pd.DataFrame)) else None
        return pd.DataFrame({str(self.get_feature_names_out()[0]): out}, index=index)

    def __sklearn_tags__(self):
        # Called only by scikit-learn itself (pipelines, clone, checks), so
        # importing it here keeps it out of fastcal's import-time dependencies.
        from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags, TransformerTags

        regressor = getattr(self, "_estimator_type", None) == "regressor"
        return Tags(
            estimator_type="regressor" if regressor else None,
            target_tags=TargetTags(required=True),
            transformer_tags=TransformerTags() if hasattr(self, "transform") else None,
            regressor_tags=RegressorTags() if regressor else None,
            input_tags=InputTags(one_d_array=self._one_d_input, two_d_array=not self._one_d_input),
        )
