"""The multiclass calibrators' driver over rows (fastcal.multiclass.rows.fit_softmax) on ListRows and on RawCut
(a backend that converts its rows in every pass, as Spark), against the in-memory fits.

Every cut of the rows into chunks (empty chunks, one row, many small chunks) must give the in-memory model: the
warm starts are the in-memory ones (the same subsample rows), and the passes' sums differ from the in-memory
kernels' only in the order of float64 additions (relative error a few n eps of the sums), so the solvers take
the same steps and stop at the same optimum; the probabilities then agree to 1e-10 (the issue's criterion; the
Newton stopping rule leaves a parameter error far below that after its last step, measured 1e-15). The errors
are the in-memory ones.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import fastcal
from fastcal._engine import ListRows
from fastcal.multiclass import rows as mrows

from . import naive_multiclass as naive
from .test_engine_drivers import RawCut

CALIBRATORS = [
    fastcal.TemperatureScaling(),
    fastcal.VectorScaling(),
    fastcal.BiasCorrectedTemperatureScaling(),
    fastcal.VectorScaling(input_type="probabilities"),
    fastcal.MatrixScaling(),
    fastcal.MatrixScaling(reg_lambda=0.01, reg_mu=0.01),
    fastcal.MatrixScaling(reg_lambda=0.1),
    fastcal.DirichletCalibration(),
    fastcal.DirichletCalibration(matrix_type="diagonal", reg_lambda=1e-3, reg_mu=1e-3),
    fastcal.DirichletCalibration(matrix_type="fixed_diagonal"),
]


def _needs_probabilities(cal):
    return isinstance(cal, fastcal.DirichletCalibration) or getattr(cal, "input_type", None) == "probabilities"


def _case(n, k, seed, probabilities, dtype=np.float64):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    y = np.argmax(0.7 * z + rng.gumbel(size=z.shape) + 0.3 * np.arange(k), axis=1)
    y[:k] = np.arange(k)  # every class present: no absent-class warning
    if probabilities:
        p = np.exp(z - z.max(axis=1, keepdims=True))
        z = p / p.sum(axis=1, keepdims=True)
    return z.astype(dtype), y, rng


def _chunks(X, y, w, cuts):
    return [(X[a:b], y[a:b], None if w is None else w[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _cuts(n, kind, rng):
    if kind == "one":
        return [0, n]
    if kind == "equal":
        return list(range(0, n, max(1, n // 7))) + [n]
    return sorted([0, 0, *rng.integers(0, n + 1, 9).tolist(), min(1, n), n, n])


def _same_model(got, ref, X):
    assert type(got) is type(ref) and got.get_params() == ref.get_params()
    assert ((got.n_classes_, got.n_features_in_, got.converged_, got.input_type_)
            == (ref.n_classes_, ref.n_features_in_, ref.converged_, ref.input_type_))
    assert abs(got.n_iter_ - ref.n_iter_) <= 1
    assert_allclose(got.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("cal", CALIBRATORS, ids=repr)
@pytest.mark.parametrize("kind", ["one", "equal", "random"])
@pytest.mark.parametrize("adapter", [ListRows, RawCut], ids=lambda a: a.__name__)
def test_every_cut_gives_the_in_memory_fit(cal, kind, adapter):
    X, y, rng = _case(3000, 4, 0, _needs_probabilities(cal))
    w = rng.uniform(0.1, 3.0, X.shape[0])
    ref = type(cal)(**cal.get_params()).fit(X, y, w)
    got = mrows.fit_softmax(adapter(_chunks(X, y, w, _cuts(X.shape[0], kind, rng))), n_columns=4, calibrator=cal)
    _same_model(got, ref, X)
    assert not hasattr(cal, "n_classes_")  # the calibrator given is not fitted


@pytest.mark.parametrize("cal", [fastcal.VectorScaling(), fastcal.MatrixScaling(), fastcal.TemperatureScaling(),
                                 fastcal.DirichletCalibration(reg_lambda=1e-3, reg_mu=1e-3)], ids=repr)
def test_the_warm_starts_subsamples_are_the_in_memory_ones(cal):
    # from 2^16 rows the Newton fit starts from every 16th row, and temperature scaling from a strided subsample:
    # taken across the chunks by global position, the same rows, so the same steps
    X, y, rng = _case(70_001, 3, 1, _needs_probabilities(cal))
    ref = type(cal)(**cal.get_params()).fit(X, y)
    got = mrows.fit_softmax(ListRows(_chunks(X, y, None, _cuts(X.shape[0], "random", rng))), n_columns=3,
                            calibrator=cal, weighted=False)
    _same_model(got, ref, X)
    assert got.n_iter_ == ref.n_iter_


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 400), k=st.integers(2, 4), seed=st.integers(0, 2**32 - 1), weighted=st.booleans(),
       f32=st.booleans(), ties=st.booleans(), cal=st.sampled_from(CALIBRATORS), kind=st.sampled_from(["equal", "random"]))
def test_hypothesis_sizes_ties_weights_dtypes(n, k, seed, weighted, f32, ties, cal, kind):
    X, y, rng = _case(n, k, seed, _needs_probabilities(cal), np.float32 if f32 else np.float64)
    if ties and not _needs_probabilities(cal):
        X = np.round(X)
    w = rng.integers(0, 4, n).astype(np.float64) if weighted else None
    if w is not None:
        w[:k] = 1.0
    with warnings.catch_warnings(record=True) as ref_warnings:
        warnings.simplefilter("always")
        ref = type(cal)(**cal.get_params()).fit(X, y, w)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        got = mrows.fit_softmax(ListRows(_chunks(X, y, w, _cuts(n, kind, rng))), n_columns=k, calibrator=cal,
                                weighted=weighted)
    assert [str(m.message) for m in got_warnings] == [str(m.message) for m in ref_warnings]
    if ref.converged_ and _well_posed(ref, X, y, w):
        _same_model(got, ref, X)


def _well_posed(ref, X, y, w):
    """Whether the in-memory fit is a unique, well-conditioned optimum: a relative change of 1e-12 in the weights
    (10^3 times the sums' rounding errors) moves its probabilities by at most 1e-9 and its parameters by at most
    1e-8 of their size.

    Small samples can have none: separable rows (a mean log-loss below 1e-3: the fit runs to parameters of
    ~100, stopped by its gradient test), or fewer distinct weighted rows than parameters (a flat direction, in
    which every sum's rounding moves the prediction on the other rows: 4e-5 on one of CI's cases). There any
    two orders of summation may stop at different models, the in-memory fit's own rows reversed included.
    """
    proba = ref.predict_proba(X)
    if naive.nearly_separable(proba, y, w):
        return False
    base = np.ones(X.shape[0]) if w is None else w
    wobble = base * (1 + 1e-12 * (-1.0) ** np.arange(X.shape[0]))
    moved = type(ref)(**ref.get_params()).fit(X, y, wobble)
    fitted = [name for name, value in vars(ref).items()
              if name.endswith("_") and isinstance(value, (float, np.ndarray))]
    return (np.max(np.abs(moved.predict_proba(X) - proba)) <= 1e-9
            and all(np.all(np.abs(getattr(moved, name) - getattr(ref, name)) <= 1e-8 * (1 + np.abs(getattr(ref, name))))
                    for name in fitted))


def test_the_well_posed_check_sees_the_ci_cases():
    # stop 56's CI: n = 4, two weighted rows, separable (a) or equal with different labels (b); then four
    # separable probabilities, whose fit stops at scales of 7e4
    X = np.array([[-0.93378835, 2.05749791], [-0.56720357, 2.17654783], [-0.29387562, -1.24299275],
                  [1.05288469, -0.63155044]])
    y, w = np.array([0, 1, 0, 0]), np.array([1.0, 1.0, 0.0, 0.0])
    for X_case in (X, np.round(X)):
        ref = fastcal.VectorScaling().fit(X_case, y, w)
        assert ref.converged_ and not _well_posed(ref, X_case, y, w)
    X, y, _ = _case(4, 2, 14, True, np.float32)
    cal = fastcal.VectorScaling(input_type="probabilities")
    assert not _well_posed(cal.fit(X, y), X, y, None)
    X, y, _ = _case(400, 3, 0, False)
    assert _well_posed(fastcal.VectorScaling().fit(X, y), X, y, None)


def test_one_column_of_decision_values():
    rng = np.random.default_rng(3)
    x = rng.normal(size=2000) * 3
    y = (rng.random(2000) < 1 / (1 + np.exp(-0.5 * x))).astype(int)
    for cal in (fastcal.TemperatureScaling(), fastcal.VectorScaling(), fastcal.MatrixScaling()):
        ref = type(cal)(**cal.get_params()).fit(x, y)
        for X in (x, x[:, None]):
            got = mrows.fit_softmax(ListRows(_chunks(X, y, None, _cuts(2000, "random", rng))), n_columns=1,
                                    calibrator=cal, weighted=False)
            _same_model(got, ref, x)


@pytest.mark.parametrize("change, cal", [
    (lambda X, y, w: (X, np.where(y == 2, 5, y), w), fastcal.VectorScaling()),
    (lambda X, y, w: (X, y + 0.5, w), fastcal.MatrixScaling()),
    (lambda X, y, w: (np.where(X > 3, np.nan, X), y, w), fastcal.TemperatureScaling()),
    (lambda X, y, w: (X * 1.01, y, w), fastcal.DirichletCalibration()),
    (lambda X, y, w: (X - 0.5, y, w), fastcal.DirichletCalibration()),
    (lambda X, y, w: (X, y, -w), fastcal.VectorScaling()),
    (lambda X, y, w: (X, y, 0 * w), fastcal.BiasCorrectedTemperatureScaling()),
    (lambda X, y, w: (X[:0], y[:0], w[:0]), fastcal.VectorScaling()),
    (lambda X, y, w: (X * 1e101, y, w), fastcal.MatrixScaling()),
], ids=["label outside", "label not an integer", "NaN", "rows not summing to 1", "not in [0, 1]",
        "negative weight", "zero weights", "no rows", "logits too large"])
def test_errors_are_the_in_memory_ones(change, cal):
    X, y, rng = _case(500, 3, 4, _needs_probabilities(cal))
    X, y, w = change(X, y, rng.uniform(0.5, 2.0, 500))
    with pytest.raises(ValueError) as expected:
        type(cal)(**cal.get_params()).fit(X, y, w)
    for adapter in (ListRows, RawCut):
        with pytest.raises(ValueError) as got:
            mrows.fit_softmax(adapter(_chunks(X, y, w, _cuts(X.shape[0], "random", rng))), n_columns=3,
                              calibrator=cal)
        assert str(got.value) == str(expected.value)


def test_an_absent_class_warns_as_in_memory():
    X, y, _ = _case(1000, 3, 5, False)
    y = np.where(y == 2, 1, y)
    with pytest.warns(UserWarning, match="class 2 has no row of positive weight") as ref_warnings:
        fastcal.VectorScaling().fit(X, y)
    with pytest.warns(UserWarning, match="class 2 has no row of positive weight") as got_warnings:
        mrows.fit_softmax(ListRows(_chunks(X, y, None, [0, 400, 1000])), n_columns=3,
                          calibrator=fastcal.VectorScaling(), weighted=False)
    assert got_warnings[0].filename == ref_warnings[0].filename == __file__  # the user's line
