"""Model files: fitted calibrators as small, versioned JSON that holds only numbers and names.

A file looks like::

    {"format": "fastcal", "version": 1, "type": "IsotonicRegression",
     "params": {"increasing": true, "out_of_bounds": "clip", "y_max": null, "y_min": null},
     "state": {"X_thresholds_": {"dtype": "float64", "data": [0.1, 0.5, 0.9]}, ...}}

Loading never executes anything from the file (unlike a pickle): it parses
JSON, checks every field against the class's declared schema, and builds the
estimator through its constructor. Anything else (wrong format or version,
unknown type, missing or extra fields, wrong types, NaN or infinity, a file
that is not JSON at all) raises ``ValueError`` naming what is wrong. Floats
are written with ``repr`` precision, so predictions after a round trip are
identical.
"""

from __future__ import annotations

import json
import math

import numpy as np

from ._core.errors import not_fitted
from ._io import AtomicTarget

__all__ = ["FORMAT", "VERSION", "from_dict", "load", "loads", "register", "save", "to_dict"]

FORMAT = "fastcal"
VERSION = 1

#: Persistable classes by name; each declares ``_state_schema``: fitted
#: attribute -> "array" | "float" | "int" | "bool" | "str", or, for estimators made of
#: others (GroupedCalibrator), "model" (a nested model, as a file holds it),
#: "models" (a list of them) or "values" (a list of group names: JSON scalars, or lists of them of one length
#: for the tuples of groups of several columns).
#: A parameter that is an estimator is saved as ``{"type": ..., "params": ...}``. Files may lack what a class
#: added later: ``_added_params`` (parameter -> its default) and ``_added_state`` (fitted attribute -> the
#: parameter whose value it takes; each class's ``_check_loaded_state`` checks the result).
_REGISTRY: dict[str, type] = {}
_ARRAY_DTYPES = ("float32", "float64", "int64")


def register(cls):
    """Class decorator: make ``cls`` saveable and loadable under its class name."""
    _REGISTRY[cls.__name__] = cls
    return cls


def _encode(value, kind, name):
    if kind == "array":
        arr = np.asarray(value)
        if arr.dtype.name not in _ARRAY_DTYPES:
            raise ValueError(f"cannot save {name}: dtype {arr.dtype} is not one of {_ARRAY_DTYPES}")
        return {"dtype": arr.dtype.name, "shape": list(arr.shape), "data": arr.ravel().tolist()}
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    if kind == "str":
        return str(value)
    if kind == "model":
        return to_dict(value)
    if kind == "models":
        return [to_dict(v) for v in value]
    if kind == "values":
        for v in value:
            if not all(_is_scalar(x) for x in (v if isinstance(v, tuple) else (v,))):
                raise ValueError(f"cannot save {name}: {v!r} is not a string, an int64, a finite float, a bool or "
                                 f"None, or a tuple of them")
        if len({len(v) if isinstance(v, tuple) else -1 for v in value}) > 1:
            raise ValueError(f"cannot save {name}: its groups are not all single values or all tuples of one length")
        return [list(v) if isinstance(v, tuple) else v for v in value]
    raise AssertionError(kind)


def _bad(where, message):
    raise ValueError(f"invalid fastcal model: {where} {message}")


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v):
    """Whether the JSON number ``v`` is a finite float64 (an integer literal beyond float64's range is not)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _is_scalar(v):
    """Whether ``v`` is a group name a model file holds: a string, an int64, a finite float, a bool or None."""
    return v is None or isinstance(v, (str, bool)) or _is_int64(v) or (isinstance(v, float) and _finite(v))


def _is_int64(v):
    return isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63)


def _decode(value, kind, where):
    if kind == "array":
        if not isinstance(value, dict) or set(value) != {"dtype", "shape", "data"}:
            _bad(where, "must be an object with the fields dtype, shape and data")
        dtype, shape, data = value["dtype"], value["shape"], value["data"]
        if dtype not in _ARRAY_DTYPES:
            _bad(where, f"has dtype {dtype!r}; expected one of {_ARRAY_DTYPES}")
        if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                  for s in shape):
            _bad(where, "has a shape that is not a list of non-negative integers")
        if not isinstance(data, list) or not all(_is_number(v) for v in data):
            _bad(where, "has data that is not a list of numbers")
        if math.prod(shape) != len(data):
            _bad(where, f"has {len(data)} values for shape {tuple(shape)}")
        if not all(_finite(v) for v in data):
            _bad(where, "contains NaN, infinity or a number beyond float64's range")
        if dtype == "int64" and not all(_is_int64(v) for v in data):
            _bad(where, "has int64 data that is not all integers in int64's range")
        return np.array(data, dtype=dtype).reshape(shape)
    if kind == "float":
        if not _is_number(value) or not _finite(value):
            _bad(where, f"must be a finite number, got {value!r}")
        return float(value)
    if kind == "int":
        if not _is_int64(value):
            _bad(where, f"must be an integer in int64's range, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            _bad(where, f"must be true or false, got {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            _bad(where, f"must be a string, got {value!r}")
        return value
    if kind == "model":
        return from_dict(value)
    if kind == "models":
        if not isinstance(value, list):
            _bad(where, "must be a list of models")
        return [from_dict(v) for v in value]
    if kind == "values":
        if not isinstance(value, list) or not all(
                all(_is_scalar(x) for x in v) if isinstance(v, list) else _is_scalar(v) for v in value):
            _bad(where, "must be a list of strings, int64 integers, finite numbers, booleans or nulls, or of lists "
                        "of them (groups of several columns)")
        if len({len(v) if isinstance(v, list) else -1 for v in value}) > 1 or any(v == [] for v in value):
            _bad(where, "must hold single values or lists of one length (at least one value), not both")
        return [tuple(v) if isinstance(v, list) else v for v in value]
    raise AssertionError(kind)


def _check_param(value, where, *, estimator=True):
    """Constructor parameters: JSON scalars, lists of them (e.g. class priors), or an estimator's
    ``{"type": ..., "params": ...}`` (built, unfitted)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, dict) and estimator:
        if set(value) != {"type", "params"} or not isinstance(value["params"], dict):
            _bad(where, "must be an estimator's object with the fields type and params")
        cls = _REGISTRY.get(value["type"]) if isinstance(value["type"], str) else None
        if cls is None:
            _bad(f"{where} type", f"is {value['type']!r}; known types: {sorted(_REGISTRY)}")
        names = set(cls._get_param_names())
        if set(value["params"]) != names:
            _bad(f"{where} params", f"must be exactly {sorted(names)}; got {sorted(value['params'])}")
        return cls(**{k: _check_param(v, f"{where}.{k}") for k, v in value["params"].items()})
    if _is_number(value):
        if not _finite(value):
            _bad(where, "must be a finite number within float64's range")
        return value
    if isinstance(value, list):
        return [_check_param(v, f"{where}[{i}]", estimator=False) for i, v in enumerate(value)]
    _bad(where, f"has unsupported type {type(value).__name__}")


def to_dict(estimator):
    """The JSON-ready dict of a fitted, registered ``estimator``."""
    cls = type(estimator)
    if _REGISTRY.get(cls.__name__) is not cls:
        raise TypeError(f"{cls.__name__} cannot be saved as a fastcal model")
    missing = [name for name in cls._state_schema if not hasattr(estimator, name)]
    if missing:
        raise not_fitted(f"This {cls.__name__} instance is not fitted yet; fit it before saving it.")
    params = {name: _param_value(value, f"parameter {name!r}") for name, value in estimator.get_params().items()}
    state = {name: _encode(getattr(estimator, name), kind, name) for name, kind in cls._state_schema.items()}
    return {"format": FORMAT, "version": VERSION, "type": cls.__name__, "params": params, "state": state}


def _param_value(value, where):
    """A constructor parameter as a file holds it: an estimator as ``{"type": ..., "params": ...}``, arrays and
    tuples as lists, NumPy scalars as Python ones (checked by :func:`_check_param`)."""
    if _REGISTRY.get(type(value).__name__) is type(value):
        return {"type": type(value).__name__,
                "params": {k: _param_value(v, f"{where}.{k}") for k, v in value.get_params().items()}}
    if isinstance(value, (np.ndarray, tuple)):
        value = np.asarray(value).tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, dict):
        _bad(where, "is a dict; only estimators are saved as objects")
    return _check_param(value, where)


def from_dict(data):
    """Rebuild a fitted estimator from :func:`to_dict` output, checking every field."""
    if not isinstance(data, dict):
        _bad("file", "must hold a JSON object")
    expected = {"format", "version", "type", "params", "state"}
    if set(data) != expected:
        missing, extra = sorted(expected - set(data)), sorted(set(data) - expected)
        _bad("file", f"has missing fields {missing} or unexpected fields {extra}")
    if data["format"] != FORMAT:
        _bad("field 'format'", f"is {data['format']!r}, expected {FORMAT!r}")
    if data["version"] != VERSION or isinstance(data["version"], bool):
        _bad("field 'version'", f"is {data['version']!r}; this fastcal reads version {VERSION}")
    cls = _REGISTRY.get(data["type"]) if isinstance(data["type"], str) else None
    if cls is None:
        _bad("field 'type'", f"is {data['type']!r}; known types: {sorted(_REGISTRY)}")
    params, state = data["params"], data["state"]
    if not isinstance(params, dict) or not isinstance(state, dict):
        _bad("fields 'params' and 'state'", "must be JSON objects")
    names = set(cls._get_param_names())
    added = getattr(cls, "_added_params", {})  # parameters newer than some files: their default if absent
    if not names - set(added) <= set(params) <= names:
        _bad(f"{cls.__name__} params", f"must be exactly {sorted(names)}; got {sorted(params)}")
    params = {**{name: value for name, value in added.items() if name not in params}, **params}
    schema = cls._state_schema
    added_state = getattr(cls, "_added_state", {})
    if not set(schema) - set(added_state) <= set(state) <= set(schema):
        _bad(f"{cls.__name__} state", f"must have exactly the fields {sorted(schema)}; got {sorted(state)}")
    checked = {name: _check_param(value, f"parameter {name!r}") for name, value in params.items()}
    estimator = cls(**checked)
    for name, kind in schema.items():
        value = _decode(state[name], kind, f"field {name!r}") if name in state else checked[added_state[name]]
        setattr(estimator, name, value)
    estimator._check_loaded_state()
    return estimator


def _reject_constant(token):
    raise ValueError(f"invalid fastcal model: {token} is not allowed (only finite numbers)")


def save(estimator, path):
    """Write ``estimator`` to ``path`` as a fastcal model file (atomically: temporary file, then rename)."""
    text = json.dumps(to_dict(estimator), allow_nan=False, indent=1)
    target = AtomicTarget(path, ".json")
    try:
        with open(target.tmp, "w", encoding="utf-8") as f:
            f.write(text)
        target.commit()
    except BaseException:
        target.abort()
        raise


def loads(text):
    """Rebuild an estimator from the text of a fastcal model file."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a fastcal model file: it is not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ValueError("invalid fastcal model: the JSON is nested too deeply") from None
    return from_dict(data)


def load(path):
    """The estimator in the model file at ``path`` (``ValueError`` for anything but a valid model file).

    Untyped here, below the calibrators: :func:`fastcal.load` names what it returns.
    """
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"not a fastcal model file: {path} is not UTF-8 text (a pickle or other binary?)") from None
    return loads(text)
