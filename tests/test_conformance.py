"""scikit-learn's conventions for the drop-in IsotonicRegression (issue 12): the regressor protocol
(tags, ``score`` = R^2, ``cross_val_score``), ``set_output``, metadata routing, and scikit-learn's
error wording; compared with scikit-learn's own IsotonicRegression on the same data."""

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.isotonic import IsotonicRegression as SkIsotonic
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_score
from sklearn.utils import get_tags

import fastcal

rng = np.random.default_rng(12)
X = rng.random(120)
Y = (rng.random(120) < X).astype(np.float64)
W = rng.uniform(0.1, 3.0, 120)


def test_regressor_tags_and_score():
    est = fastcal.IsotonicRegression(out_of_bounds="clip")
    tags = get_tags(est)
    assert tags.estimator_type == "regressor" and tags.regressor_tags is not None
    est.fit(X[:80], Y[:80])
    # R^2 against scikit-learn's r2_score (float64 sums of 40 terms: agree to ~1e-15).
    pred = est.predict(X[80:])
    assert est.score(X[80:], Y[80:]) == pytest.approx(r2_score(Y[80:], pred), rel=1e-13, abs=1e-15)
    assert est.score(X[80:], Y[80:], sample_weight=W[80:]) == pytest.approx(
        r2_score(Y[80:], pred, sample_weight=W[80:]), rel=1e-13, abs=1e-15)
    # Constant y: 1.0 for a perfect prediction, else 0.0, as scikit-learn's force_finite.
    const = fastcal.IsotonicRegression().fit([0.0, 1.0], [1.0, 1.0])
    assert const.score([0.0, 1.0], [1.0, 1.0]) == 1.0 == SkIsotonic().fit([0.0, 1.0], [1.0, 1.0]).score(
        [0.0, 1.0], [1.0, 1.0])


@pytest.mark.parametrize("shape", ["1d", "column"])
def test_cross_val_score_as_scikit_learn(shape):
    Xs = X if shape == "1d" else X[:, None]
    cv = KFold(4, shuffle=True, random_state=0)
    ours = cross_val_score(fastcal.IsotonicRegression(out_of_bounds="clip"), Xs, Y, cv=cv)
    theirs = cross_val_score(SkIsotonic(out_of_bounds="clip"), Xs, Y, cv=cv)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_set_output_pandas():
    s = pd.Series(X[:6], index=list("abcdef"))
    est = fastcal.IsotonicRegression().set_output(transform="pandas")
    ours = est.fit_transform(s, Y[:6])
    theirs = SkIsotonic().set_output(transform="pandas").fit_transform(s, Y[:6])
    pd.testing.assert_frame_equal(ours, theirs)
    pd.testing.assert_frame_equal(est.transform(s), theirs)
    assert isinstance(est.predict(s), np.ndarray)  # predict is not a transform
    assert est.set_output(transform=None) is est and isinstance(est.transform(s), pd.DataFrame)
    assert isinstance(clone(est).fit(s, Y[:6]).transform(s), pd.DataFrame)
    assert isinstance(est.set_output(transform="default").transform(s), np.ndarray)
    with pytest.raises(ValueError, match="transform must be 'default' or 'pandas'"):
        est.set_output(transform="arrow")


def test_metadata_routing():
    cv = KFold(4, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        ours = fastcal.IsotonicRegression(out_of_bounds="clip").set_fit_request(sample_weight=True)
        ours.set_score_request(sample_weight=True)
        theirs = SkIsotonic(out_of_bounds="clip").set_fit_request(sample_weight=True)
        theirs.set_score_request(sample_weight=True)
        np.testing.assert_allclose(cross_val_score(ours, X, Y, cv=cv, params={"sample_weight": W}),
                                   cross_val_score(theirs, X, Y, cv=cv, params={"sample_weight": W}), rtol=1e-12)
        with pytest.raises(UnsetMetadataPassedError, match=r"IsotonicRegression\.set_fit_request"):
            cross_val_score(fastcal.IsotonicRegression(), X, Y, cv=cv, params={"sample_weight": W})
    with pytest.raises(TypeError, match="sample_weight must be True, False, None or an alias"):
        fastcal.IsotonicRegression().set_fit_request(sample_weight=3)
    # The other calibrators take the request for fit as well.
    for est in (fastcal.PlattScaling(), fastcal.TemperatureScaling()):
        assert est.set_fit_request(sample_weight="w") is est
        assert est.get_metadata_routing().fit.requests == {"sample_weight": "w"}


def test_import_fastcal_does_not_import_scikit_learn():
    code = ("import sys, fastcal; e = fastcal.IsotonicRegression().set_fit_request(sample_weight=True)"
            ".set_output(transform='default'); print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("call, ours, theirs", [
    (lambda m: m().fit(np.zeros(3), [0, 1]), "(X has 3, y has 2)",
     "Found input variables with inconsistent numbers of samples: [3, 2]"),
    (lambda m: m().fit(np.zeros((3, 2)), [0, 1, 1]), "X has shape (3, 2)",
     "Isotonic regression input X should be a 1d array or 2d array with 1 feature"),
    (lambda m: m().fit([0.0, 1.0], [0, 1]).predict(np.zeros((3, 2))), "T has shape (3, 2)",
     "Isotonic regression input X should be a 1d array or 2d array with 1 feature"),
    (lambda m: m().fit(np.arange(3.0), [0, 1, 1], sample_weight=np.zeros(3)), "(sample_weight is all zeros)",
     "Sample weights must contain at least one non-zero number"),
])
def test_error_wording(call, ours, theirs):
    with pytest.raises(ValueError, match=re.escape(theirs)):
        call(SkIsotonic)
    with pytest.raises(ValueError, match=re.escape(theirs)) as excinfo:
        call(fastcal.IsotonicRegression)
    assert ours in str(excinfo.value)


def test_shape_checked_before_fittedness():
    with pytest.raises(ValueError, match=r"1d array or 2d array with 1 feature; T has shape \(3, 2\)"):
        fastcal.IsotonicRegression().predict(np.zeros((3, 2)))
    with pytest.raises(fastcal.NotFittedError):
        fastcal.IsotonicRegression().predict(np.zeros(3))


# ---------------------------------------------------------------------------
# fastcal.dask's losses take (n, k) matrices, as the in-memory ones (issue 12)
# ---------------------------------------------------------------------------
def _matrix_case(n=600, k=4):
    r = np.random.default_rng(3)
    L = r.normal(size=(n, k))
    return np.exp(L) / np.exp(L).sum(axis=1, keepdims=True), r.integers(0, k, n), r.random(n)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("weighted", [False, True])
def test_dask_losses_of_class_matrices(k, weighted):
    import dask.array as da

    from fastcal import dask as fd

    P, y, w = _matrix_case(k=k)
    w = w if weighted else None
    Pd, yd = da.from_array(P, chunks=(130, 2)), da.from_array(y, chunks=170)  # misaligned chunks: realigned
    wd = None if w is None else da.from_array(w, chunks=77)
    rtol = P.shape[0] * np.finfo(np.float64).eps  # the same terms, added in another order
    for normalize in (True, False):
        assert fd.log_loss(yd, Pd, sample_weight=wd, normalize=normalize) == pytest.approx(
            fastcal.log_loss(y, P, sample_weight=w, normalize=normalize), rel=rtol)
    assert fd.brier_score_loss(yd, Pd, sample_weight=wd) == pytest.approx(
        fastcal.brier_score_loss(y, P, sample_weight=w), rel=rtol)
    # String labels, a NumPy matrix, a class absent from y_true with labels=.
    names = np.array(list("abcd"))[y]
    assert fd.log_loss(da.from_array(names, chunks=100), P) == pytest.approx(fastcal.log_loss(names, P), rel=rtol)
    keep = y != 0
    assert fd.brier_score_loss(da.from_array(y[keep], chunks=100), P[keep], labels=list(range(k))) == pytest.approx(
        fastcal.brier_score_loss(y[keep], P[keep], labels=list(range(k))), rel=rtol)


def test_dask_class_matrix_errors_and_warnings():
    import dask.array as da

    from fastcal import dask as fd

    P, y, _ = _matrix_case()
    yd = da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match=r"y_true has 4 classes \(\{0, 1, 2, 3\}\) but y_prob has 3 columns"):
        fd.log_loss(yd, da.from_array(P[:, :3], chunks=(100, 3)))
    with pytest.raises(ValueError, match="labels has 3 labels but y_prob has 4 columns"):
        fd.brier_score_loss(yd, da.from_array(P, chunks=(100, 4)), labels=[0, 1, 2])
    with pytest.raises(ValueError, match=r"y_true contains labels not in labels: \{3\}"):
        fd.log_loss(yd, P, labels=[0, 1, 2, 4])
    with pytest.raises(ValueError, match="Inconsistent numbers of samples: y_true has 600, y_prob has 599"):
        fd.log_loss(yd, P[:-1])
    with pytest.raises(ValueError, match="y_true must not contain missing values"):
        fd.log_loss(da.from_array(np.array([None, "a"] * 300, dtype=object), chunks=100), P[:, :2])
    with pytest.warns(UserWarning, match=r"The y_prob values do not sum to one: 600 of 600 rows") as record:
        fd.log_loss(yd, P * 0.9)
    assert len(record) == 1  # once, for all the chunks
