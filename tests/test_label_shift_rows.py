"""The label-shift estimate over rows (fastcal.label_shift.rows, the driver of every backend) on ListRows, and on Dask
(fastcal.dask.estimate_label_shift), against the in-memory fastcal.estimate_label_shift.

Counts (hard C, the source priors, the hard prediction frequencies) are exact, so hard BBSE and RLLS equal the
in-memory estimate bit for bit, and so do their bootstrap intervals (the same multinomial draws from the same
statistics). Soft sums are added in another order: a few ulp of each sum, amplified by the solve of C (its
condition number, about 10 here): 1e-12 is a bound with room. The calibrator's fit (1e-10 in probability, see
tests/test_multiclass_rows.py) and the EM (tol = 1e-8 on the priors' change) stop at the same optimum: 1e-8.
"""

import dask
import dask.array as da
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
import fastcal.dask as fd
from benchmarks import label_shift_study as study
from fastcal._engine import ListRows
from fastcal.label_shift import rows as lrows

METHODS = ["em", "bbse", "bbse-soft", "rlls", "rlls-soft"]


def _case(seed, k=4):
    rng = np.random.default_rng(seed)
    ys, ps = study.sample(np.full(k, 1.0 / k), 3000, rng)
    _, pt = study.sample(rng.dirichlet(np.ones(k) * 2), 4000, rng)
    return ys, ps, pt, rng


def _cut(n, rng):
    return sorted([0, 0, *rng.integers(0, n + 1, 6).tolist(), n])


def _rows(ys, ps, pt, rng):
    a, b = _cut(ys.shape[0], rng), _cut(pt.shape[0], rng)
    source = ListRows([(ps[i:j], ys[i:j]) for i, j in zip(a[:-1], a[1:])])
    target = ListRows([(pt[i:j],) for i, j in zip(b[:-1], b[1:])])
    return source, target


def _tolerance(method, calibrator):
    """See the module docstring: a fitted calibrator or the EM, soft sums, or counts alone."""
    if method == "em" or calibrator == "vector":
        return 1e-8
    return 1e-12 if method.endswith("-soft") else 0.0


@pytest.mark.parametrize("calibrator", ["auto", None, "vector"])
@pytest.mark.parametrize("method", METHODS)
def test_every_method_equals_in_memory(method, calibrator):
    ys, ps, pt, rng = _case(0)
    ref = fastcal.estimate_label_shift(ys, ps, pt, method=method, calibrator=calibrator)
    got = lrows.estimate_label_shift(*_rows(ys, ps, pt, rng), n_classes=4, method=method, calibrator=calibrator)
    tol = _tolerance(method, calibrator)
    for name in ("priors", "weights", "source_priors", "confusion_matrix"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=0, atol=tol, err_msg=name)
    assert_array_equal(got.source_priors, ref.source_priors)  # counts
    assert got.condition_number == pytest.approx(ref.condition_number, rel=1e-8)
    assert (got.method, got.converged) == (ref.method, ref.converged)
    assert (got.calibrator is None) == (ref.calibrator is None)
    if ref.calibrator is not None:
        assert type(got.calibrator) is type(ref.calibrator)
        assert_allclose(got.calibrator.predict_proba(pt), ref.calibrator.predict_proba(pt), rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["bbse", "rlls"])
def test_the_bootstrap_of_the_sufficient_statistics_is_the_in_memory_one(method):
    ys, ps, pt, rng = _case(1)
    ref = fastcal.estimate_label_shift(ys, ps, pt, method=method, n_bootstrap=40, random_state=3)
    got = lrows.estimate_label_shift(*_rows(ys, ps, pt, rng), n_classes=4, method=method, n_bootstrap=40,
                                     random_state=3)
    assert_array_equal(got.priors_low, ref.priors_low)
    assert_array_equal(got.priors_high, ref.priors_high)


def test_errors_are_the_in_memory_ones():
    ys, ps, pt, rng = _case(2)
    k = ps.shape[1]
    cases = [
        (dict(ys=ys + k), r"y_source must hold class indices in 0 \.\. 3"),
        (dict(pt=pt * 0.5), "The rows of proba_target must sum to 1 .*; 4000 rows do not"),
        (dict(ps=ps * 2), r"proba_source must hold probabilities in \[0, 1\]"),
        (dict(ys=np.minimum(ys, k - 2)), "y_source has no row of class 3"),
        (dict(method="rlls-typo"), "method"),
        (dict(pt=pt[:0]), "proba_target must have at least 1 row"),
    ]
    for change, match in cases:
        args = {"ys": ys, "ps": ps, "pt": pt, "method": "em", **change}
        with pytest.raises(ValueError, match=match):
            fastcal.estimate_label_shift(args["ys"], args["ps"], args["pt"], method=args["method"])
        with pytest.raises(ValueError, match=match):
            lrows.estimate_label_shift(*_rows(args["ys"], args["ps"], args["pt"], rng), n_classes=k,
                                       method=args["method"])
    with pytest.raises(ValueError, match="n_bootstrap: over a backend's rows"):
        lrows.estimate_label_shift(*_rows(ys, ps, pt, rng), n_classes=k, n_bootstrap=10)
    with pytest.raises(TypeError, match="calibrator must be"):
        lrows.estimate_label_shift(*_rows(ys, ps, pt, rng), n_classes=k, calibrator=object())


def test_on_dask():
    ys, ps, pt, _ = _case(3)
    with dask.config.set(scheduler="synchronous"):
        for method in ("em", "bbse-soft"):
            ref = fastcal.estimate_label_shift(ys, ps, pt, method=method)
            got = fd.estimate_label_shift(da.from_array(ys, chunks=700), da.from_array(ps, chunks=(900, 2)),
                                          da.from_array(pt, chunks=(1100, 4)), method=method)
            assert_allclose(got.priors, ref.priors, rtol=0, atol=_tolerance(method, "auto"))
        ref = fastcal.estimate_label_shift(ys, ps, pt, method="bbse", n_bootstrap=20, random_state=0)
        got = fd.estimate_label_shift(ys, da.from_array(ps, chunks=(900, 4)), da.from_array(pt, chunks=1000),
                                      method="bbse", n_bootstrap=20, random_state=0)
        assert_array_equal(got.priors_low, ref.priors_low)
        with pytest.raises(ValueError, match="proba_target has 3 classes"):
            fd.estimate_label_shift(ys, da.from_array(ps), da.from_array(pt[:, :3]))
        with pytest.raises(ValueError, match="Inconsistent numbers of samples: y_source has 2999"):
            fd.estimate_label_shift(ys[1:], da.from_array(ps), da.from_array(pt))


def test_an_ill_conditioned_confusion_matrix_warns_at_the_users_line():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 3000)
    p = np.empty((3000, 3))
    p[:, 0] = 0.2 + 0.6 * (y == 0)
    p[:, 1] = (1.0 - p[:, 0]) / 2 + 1e-3 * ((y == 1) - 1.0 * (y == 2))
    p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
    with dask.config.set(scheduler="synchronous"):
        with pytest.warns(UserWarning, match="condition number") as record:
            fd.estimate_label_shift(da.from_array(y, chunks=1000), da.from_array(p, chunks=1000),
                                    da.from_array(p, chunks=1000), method="bbse-soft")
    assert record[0].filename == __file__


@pytest.mark.parametrize("method, calibrator", [("em", "auto"), ("bbse-soft", "vector"), ("rlls", None)])
def test_a_backend_converting_in_every_pass(method, calibrator):
    from .test_engine_drivers import RawCut

    ys, ps, pt, rng = _case(4)
    source, target = _rows(ys, ps, pt, rng)
    ref = fastcal.estimate_label_shift(ys, ps, pt, method=method, calibrator=calibrator)
    got = lrows.estimate_label_shift(RawCut(source.chunks), RawCut(target.chunks), n_classes=4, method=method,
                                     calibrator=calibrator)
    assert_allclose(got.priors, ref.priors, rtol=0, atol=_tolerance(method, calibrator))
