"""Isotonic regression: against SciPy, scikit-learn, a naive reference and the invariants."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.optimize
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.isotonic import IsotonicRegression as SkIsotonicRegression

from fastcal import IsotonicRegression, NotFittedError, isotonic_regression
from fastcal.isotonic import _kernels as kernels
from fastcal._core import pav_kernels as pav_kernels
from fastcal._core import parallel as _parallel
from fastcal._engine import sort as _sort
from fastcal.isotonic import _pav
from fastcal import isotonic as isotonic_module
from fastcal._core.validation import as_label_array

from . import naive_isotonic as naive
from .strategies import scores_and_labels
from .threads import in_pieces, serial_and_parallel

HYPO = settings(max_examples=60, deadline=None)
EPS = np.finfo(np.float64).eps


def tol(dtype, y, x=None):
    """Tolerance on the fitted values and predictions of two isotonic fits of ``y`` (at scores ``x``) that sum in
    other orders.

    float64: a fitted value is sum(w y) / sum(w) over at most n rows; each sum, in any order, is within
    (n - 1) eps of sum(w |y|) resp. sum(w) (Higham), so two fits differ by up to 4 n eps max|y|, and
    interpolating between knots adds a few eps max|y|. float32: the values are rounded to float32.
    """
    if np.dtype(dtype) == np.float64:
        y = np.asarray(y, dtype=np.float64)
        # Among subnormals the relative bound fails: each operation errs by up to half the smallest
        # subnormal, absolutely (hypothesis: one row, target 2.2e-313, weight 0.8, w * y / w is 1 ulp off).
        # scikit-learn interpolates with np.interp, whose slope dy / dx can be subnormal, and its rounding is then
        # multiplied by t - x[j], up to the span of x (hypothesis: targets 1.1e-308 and 0 at x 494 apart, the
        # predictions 4.6e-322 apart).
        span = 0.0 if x is None else float(np.ptp(np.asarray(x, dtype=np.float64))) if np.size(x) else 0.0
        ulps = (4 * y.size + 8 + span) * np.finfo(np.float64).smallest_subnormal
        return dict(rtol=0, atol=(4 * y.size + 8) * EPS * np.max(np.abs(y), initial=0.0) + ulps)
    return dict(rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# isotonic_regression: the scipy.optimize drop-in
# ---------------------------------------------------------------------------


def test_worked_example():
    # Hand-computed: (3, 2) pool to 2.5 and (4, 3.5) to 3.75.
    res = isotonic_regression([1.0, 3.0, 2.0, 4.0, 3.5, 5.0])
    assert_allclose(res.x, [1, 2.5, 2.5, 3.75, 3.75, 5])
    assert_array_equal(res.blocks, [0, 1, 3, 5, 6])
    assert_allclose(res.weights, [1, 2, 2, 1])


def test_weighted_example():
    # Weighted pooling: (1*3 + 3*1) / 4 = 1.5.
    res = isotonic_regression([3.0, 1.0, 4.0], weights=[1.0, 3.0, 2.0])
    assert_allclose(res.x, [1.5, 1.5, 4.0])
    assert_allclose(res.weights, [4.0, 2.0])
    assert_array_equal(res.blocks, [0, 2, 3])


@given(
    n=st.integers(1, 400),
    seed=st.integers(0, 2**32 - 1),
    ties=st.booleans(),
    weighted=st.booleans(),
    increasing=st.booleans(),
)
@HYPO
def test_same_bits_as_scipy(n, seed, ties, weighted, increasing):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    if ties:
        y = np.round(y)
    w = rng.uniform(0.1, 5, n) if weighted else None
    ours = isotonic_regression(y, weights=w, increasing=increasing)
    theirs = scipy.optimize.isotonic_regression(y, weights=w, increasing=increasing)
    assert_array_equal(ours.x, theirs.x)
    assert_array_equal(ours.weights, theirs.weights)
    assert_array_equal(ours.blocks, theirs.blocks)
    assert ours.x.dtype == ours.weights.dtype == np.float64


@given(n=st.integers(1, 60), seed=st.integers(0, 2**32 - 1), weighted=st.booleans())
@HYPO
def test_against_naive_and_invariants(n, seed, weighted):
    rng = np.random.default_rng(seed)
    y = rng.integers(-3, 4, n).astype(float)
    w = rng.uniform(0.5, 2, n) if weighted else np.ones(n)
    res = isotonic_regression(y, weights=w if weighted else None)
    assert_allclose(res.x, naive.pav(y, w), rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(res.x) >= 0)
    # Balance: each block's weighted mean is its fitted value, so the weighted sums agree.
    assert_allclose(np.sum(w * res.x), np.sum(w * y), rtol=1e-12, atol=1e-9)
    assert_allclose(np.add.reduceat(w, res.blocks[:-1]), res.weights, rtol=1e-12)
    # Decreasing fit of y is the negated increasing fit of -y.
    dec = isotonic_regression(y, weights=w if weighted else None, increasing=False)
    assert_allclose(dec.x, -isotonic_regression(-y, weights=w if weighted else None).x, atol=1e-12)
    assert np.all(np.diff(dec.x) <= 0)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16, np.float32, np.float64, bool])
def test_dtypes(dtype):
    y = np.array([3, 1, 2, 0, 5, 4]).astype(dtype)
    res = isotonic_regression(y)
    assert res.x.dtype == np.float64
    assert_array_equal(res.x, scipy.optimize.isotonic_regression(y).x)


def test_input_not_overwritten_readonly_and_strided():
    rng = np.random.default_rng(0)
    base = rng.normal(size=40)
    y = base[::2]
    w = rng.uniform(1, 2, 40)[::2]
    y_copy, w_copy = y.copy(), w.copy()
    y.flags.writeable = False
    res = isotonic_regression(y, weights=w, increasing=False)
    assert_array_equal(y, y_copy)
    assert_array_equal(w, w_copy)
    assert_array_equal(res.x, scipy.optimize.isotonic_regression(y_copy, weights=w_copy, increasing=False).x)


def test_scalar_and_list_input():
    assert_array_equal(isotonic_regression(3.0).x, [3.0])
    assert_array_equal(isotonic_regression([2, 1]).x, [1.5, 1.5])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(y=np.ones((3, 2))), "one dimension"),
        (dict(y=np.ones(3), weights=np.ones(4)), "equal length"),
        (dict(y=np.ones(3), weights=[1.0, 0.0, 1.0]), "strictly positive"),
        (dict(y=np.ones(3), weights=[1.0, -1.0, 1.0]), "strictly positive"),
        (dict(y=np.ones(3), weights=[1.0, np.nan, 1.0]), "weights must be finite"),
        (dict(y=[1.0, np.nan]), "y must be finite"),
        (dict(y=[1.0, np.inf]), "y must be finite"),
        (dict(y=[]), "at least 1"),
        (dict(y=[1.0], increasing="yes"), "increasing"),
    ],
)
def test_isotonic_regression_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        isotonic_regression(**kwargs)


def test_isotonic_regression_type_error():
    with pytest.raises(TypeError, match="y must be a numeric"):
        isotonic_regression(np.array(["a", "b"]))


# ---------------------------------------------------------------------------
# IsotonicRegression: the scikit-learn drop-in
# ---------------------------------------------------------------------------


def assert_same_as_sklearn(x, y, w=None, exact=None, **params):
    """Fit both; same knots (``exact``: default for unweighted 0/1 labels) or the same function."""
    if exact is None:
        exact = w is None and set(np.unique(y)) <= {0, 1}
    ours = IsotonicRegression(**params).fit(x, y, sample_weight=w)
    theirs = SkIsotonicRegression(**params).fit(x, y, sample_weight=w)
    t = tol(ours.X_thresholds_.dtype, y, x)
    assert ours.increasing_ == theirs.increasing_
    assert ours.X_thresholds_.dtype == theirs.X_thresholds_.dtype
    assert ours.y_thresholds_.dtype == theirs.y_thresholds_.dtype
    if exact:
        assert_array_equal(ours.X_thresholds_, theirs.X_thresholds_)
        assert_allclose(ours.y_thresholds_, theirs.y_thresholds_, **t)
    else:
        # Real-valued or weighted targets: where two fitted values agree to the
        # last bit in one summation order and not in the other, one side keeps a
        # knot the other drops. The functions are still the same: both are
        # linear between the union of the knots, and agree on all of them.
        knots = np.union1d(ours.X_thresholds_, theirs.X_thresholds_)
        assert_allclose(ours.predict(knots), theirs.predict(knots), **t)
    assert ours.X_min_ == theirs.X_min_ and ours.X_max_ == theirs.X_max_
    lo, hi = float(np.min(x)), float(np.max(x))
    span = max(hi - lo, 1.0)
    T = np.concatenate([np.linspace(lo - 0.1 * span, hi + 0.1 * span, 257), np.asarray(x, dtype=float)])
    if params.get("out_of_bounds") == "raise":
        T = np.clip(T, ours.X_min_, ours.X_max_)
    pred = ours.predict(T)
    expected = theirs.predict(T)
    assert pred.dtype == expected.dtype
    assert_allclose(pred, expected, equal_nan=True, **t)
    return ours


@given(data=scores_and_labels(binary=True), increasing=st.sampled_from([True, False, "auto"]),
       oob=st.sampled_from(["nan", "clip", "raise"]))
@HYPO
def test_binary_labels_match_sklearn(data, increasing, oob):
    x, y, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's own spearman warnings on tiny or constant input
        assert_same_as_sklearn(x, y, increasing=increasing, out_of_bounds=oob)


@given(data=scores_and_labels(binary=False, weighted="zeros", dtype=np.float64),
       increasing=st.booleans(), bounds=st.sampled_from([(None, None), (-5.0, None), (None, 5.0), (-10.0, 10.0)]))
@example(data=(np.array([-1430.87302286, -936.54771632]), np.array([1.11253693e-308, 0.0]),
               np.array([1.0, 2.18443699])), increasing=False, bounds=(None, None))  # a subnormal slope in np.interp
@HYPO
def test_weighted_real_targets_match_sklearn(data, increasing, bounds):
    x, y, w = data
    assert_same_as_sklearn(x, y, w, increasing=increasing, y_min=bounds[0], y_max=bounds[1], out_of_bounds="clip")


@given(n=st.integers(1, 300), seed=st.integers(0, 2**32 - 1), increasing=st.booleans(),
       n_distinct=st.sampled_from([1, 3, 20, 1000]), bounds=st.sampled_from([(None, None), (-1.0, 2.0)]))
@HYPO
def test_exact_weighted_targets_match_sklearn(n, seed, increasing, n_distinct, bounds):
    # Integer targets and dyadic weights keep every sum exact, but not scikit-learn's block means: it divides
    # as it pools, so a block whose mean is 0 can come out as 1.4e-17 and keep a knot that fastcal (comparing
    # exact sums) drops (found by hypothesis: n=126, seed=126, decreasing). So the fits are compared as
    # functions, at the union of the knots, as for real-valued targets.
    rng = np.random.default_rng(seed)
    x = rng.choice(rng.normal(size=n_distinct), n)
    y = rng.integers(-3, 4, n).astype(float)
    w = rng.choice([0.0, 0.5, 1.0, 1.5, 4.0], n)
    w[0] = 1.0
    assert_same_as_sklearn(x, y, w, exact=False, increasing=increasing, y_min=bounds[0], y_max=bounds[1])


@given(n=st.integers(1, 60), seed=st.integers(0, 2**32 - 1), increasing=st.booleans(),
       n_distinct=st.sampled_from([1, 3, 20, 1000]))
@HYPO
def test_thresholds_match_naive(n, seed, increasing, n_distinct):
    # Integer targets and dyadic weights keep the sums exact, so the knots
    # agree to the bit; the naive reference averages rounded group means, so
    # its values may differ in the last bit.
    rng = np.random.default_rng(seed)
    x = rng.choice(rng.normal(size=n_distinct), n)
    y = rng.integers(-3, 4, n).astype(float)
    w = rng.choice([0.0, 0.5, 1.0, 1.5, 4.0], n)
    w[0] = 1.0
    ours = IsotonicRegression(increasing=increasing).fit(x, y, sample_weight=w)
    xs, ys = naive.isotonic_fit(x, y, w, increasing=increasing)
    assert_array_equal(ours.X_thresholds_, xs)
    # both sides sum w * (rounded group mean) over <= n groups, in their own orders: (n + 2) eps max|y| apart
    assert_allclose(ours.y_thresholds_, ys, rtol=0, atol=(n + 2) * EPS * np.abs(y).max())
    T = np.linspace(x.min() - 1, x.max() + 1, 101)
    assert_allclose(ours.predict(T), naive.interpolate(xs, ys, T), equal_nan=True, rtol=0, atol=1e-12)


@pytest.mark.parametrize("pos_rate", [0.5, 0.01, 0.99])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_input_paths_match_sklearn(pos_rate, dtype):
    # Large enough for several chunks of the engine (range partition, sorts and PAV per chunk).
    n = 600_000
    rng = np.random.default_rng(7)
    x = rng.random(n).astype(dtype)
    y = (rng.random(n) < pos_rate * 2 * x).astype(np.uint8)
    assert _pav.chunk_count(n) > 1
    assert_same_as_sklearn(x, y, out_of_bounds="clip")
    assert_same_as_sklearn(x, y, increasing=False)
    # Weighted 0/1 labels and unweighted real-valued targets take the radix sort carrying them; weighted
    # real-valued targets the threaded argsort and gather.
    assert_same_as_sklearn(x, y, rng.uniform(0.5, 1, n))
    assert_same_as_sklearn(x, y * 2.5 + x, increasing=False)
    assert_same_as_sklearn(x, y * 2.5 + x, rng.uniform(0.5, 1, n))
    # Sorted scores skip the sort.
    order = np.argsort(x, kind="stable")
    assert_same_as_sklearn(x[order], y[order])


def test_many_ties_and_chained_close_scores():
    # Scores closer than float64 resolution are pooled; chains are pooled relative to the first.
    eps = np.finfo(np.float64).resolution
    x = np.array([0.0, 0.4 * eps, 0.8 * eps, 1.2 * eps, 1.0, 1.0, 1.0, 2.0, 2.0 + 0.5 * eps, 3.0])
    y = np.array([0, 1, 0, 1, 1, 0, 1, 0, 1, 1.0])
    assert_same_as_sklearn(x, y)
    assert_same_as_sklearn(np.repeat([0.1, 0.5, 0.9], 1000), np.tile([0, 1], 1500))


def test_close_pivot_does_not_split_a_tie_group():
    # Large input whose scores are packed tighter than eps around the middle:
    # the two-thread fit must not cut a tie group in half.
    n = 400_000
    eps = np.finfo(np.float64).resolution
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.random(n // 2), 0.5 + eps * 0.01 * np.arange(n // 2)])
    y = (rng.random(n) < 0.5).astype(np.uint8)
    assert_same_as_sklearn(x, y)


def _thread_count_data(n, dtype, seed=5):
    """Scores packed tighter than eps around the middle (the chunk cuts must search, or give up), a large tie
    group, signed zeros; real-valued targets and weights whose sums show any change of order in the last bits."""
    eps = np.finfo(dtype).resolution
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.random(n // 2), 0.5 + eps * 0.01 * np.arange(n - n // 2)]).astype(dtype)
    rng.shuffle(x)
    x[::9] = 0.25  # a large tie group
    x[::13] = -0.0
    x[::17] = 0.0
    y01 = (rng.random(n) < np.clip(x, 0, 1)).astype(np.uint8)
    return x, y01, rng.random(n) + x, rng.uniform(0.1, 3.0, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("centered", [False, True])
def test_same_bits_at_any_thread_count(monkeypatch, dtype, centered):
    # Every path of the engine (0/1, weighted 0/1, real-valued, weighted real-valued, sorted input), cut into
    # many chunks: the thresholds are the same to the last bit at 1, 2, 3, 8 and 16 threads, and step fits
    # match scikit-learn.
    from .threads import num_threads

    n = 40_000
    monkeypatch.setattr(_pav, "CHUNK_ROWS", 1 << 10)  # ~40 chunks
    monkeypatch.setattr(_parallel, "PARALLEL_MIN_SIZE", 1 << 10)  # the sorts' passes cut in ranges too
    x, y01, yr, w = _thread_count_data(n, dtype)
    order = np.argsort(x, kind="stable")
    cases = [(x, y01, None), (x, y01, w), (x, yr, None), (x, yr, w), (x[order], y01[order], None),
             (x[order], yr[order], w[order])]
    for xc, yc, wc in cases:
        fits = []
        for threads in (1, 2, 3, 8, 16):
            with num_threads(threads):
                fits.append(IsotonicRegression(centered=centered).fit(xc, yc, sample_weight=wc))
        for fit in fits[1:]:
            assert_array_equal(fit.X_thresholds_.view(np.uint8), fits[0].X_thresholds_.view(np.uint8))
            assert_array_equal(fit.y_thresholds_.view(np.uint8), fits[0].y_thresholds_.view(np.uint8))
        if not centered:
            assert_same_as_sklearn(xc, yc, wc)


def test_same_bits_at_any_thread_count_default_chunks():
    # The engine's own chunk size (several chunks of CHUNK_ROWS rows), 0/1 and weighted labels.
    from .threads import num_threads

    n = 5 * _pav.CHUNK_ROWS
    rng = np.random.default_rng(9)
    x = rng.random(n)
    y = (rng.random(n) < x).astype(np.uint8)
    w = rng.uniform(0.1, 3.0, n)
    for wc in (None, w):
        fits = []
        for threads in (1, 2, 3, 8, 16):
            with num_threads(threads):
                fits.append(IsotonicRegression().fit(x, y, sample_weight=wc))
        for fit in fits[1:]:
            assert_array_equal(fit.X_thresholds_, fits[0].X_thresholds_)
            assert_array_equal(fit.y_thresholds_.view(np.uint8), fits[0].y_thresholds_.view(np.uint8))


@given(data=scores_and_labels(max_size=3000), chunk_rows=st.sampled_from([1, 7, 64, 1 << 20]))
@settings(max_examples=60, deadline=None)
def test_chunked_binary_fit_same_bits_as_one_pass(data, chunk_rows):
    # Unweighted 0/1 labels: counts are exact, so any chunking (down to one row per chunk, cuts forced to
    # search and to give up among ties) gives the blocks of one pass over the scores sorted as a whole.
    x, y, _ = data
    labels = as_label_array(y, "y")
    if not set(np.unique(labels).tolist()) <= {0, 1}:
        labels = (labels > np.median(labels)).astype(np.uint8)
    order = np.argsort(x, kind="stable")
    xs = x[order] + x.dtype.type(0.0)
    n = x.shape[0]
    eps = _pav.resolution(x.dtype)
    for sign in (1.0, -1.0):
        stack = (np.empty(n), np.empty(n), np.empty(n, x.dtype), np.empty(n, x.dtype))
        nb = pav_kernels.pav_sorted(xs, labels[order], np.empty(0), 0, eps, sign, *stack)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(_pav, "CHUNK_ROWS", chunk_rows)
            got = _pav.summarise(x, labels, None, sign)
        for a, b in zip(got, stack):
            assert_array_equal(a, b[:nb])


def stable_argsort_blocks(x, labels, w, sign):
    """PAV blocks as fastcal computed them before the sort carried targets: ``np.argsort(kind="stable")``,
    gather (-0.0 made +0.0), then the engine's fit of sorted scores (:func:`~fastcal._core.pav_kernels.pav_sorted`
    on the same chunks: the chunks depend on the sorted scores alone)."""
    order = np.argsort(x, kind="stable")
    xs = x[order] + x.dtype.type(0.0)
    return _pav.summarise(xs, labels[order], None if w is None else w[order], sign)


@given(data=st.one_of(scores_and_labels(max_size=3000), scores_and_labels(max_size=3000, binary=False)), weight_dtype=st.sampled_from([np.float32, np.float64]),
       signed_zeros=st.booleans(), sign=st.sampled_from([1.0, -1.0]), radix_min=st.sampled_from([0, 64, 1 << 12]),
       weighted=st.booleans())
@settings(max_examples=120, deadline=None)
def test_carried_sort_path_same_bits_as_stable_argsort(data, weight_dtype, signed_zeros, sign, radix_min, weighted):
    # Weighted 0/1 labels and unweighted real-valued targets are carried through the radix sort as one
    # float64 per row. Same rows in the same order, so the same sums to the last bit as the stable argsort
    # path, at every thread count: the sort's ranges (parallel threshold lowered by serial_and_parallel)
    # and the two-thread PAV (its threshold lowered here) are cut within these sizes. Unweighted 0/1 labels
    # are sorted per class by the same radix keys: the same tie-group scores (-0.0 made +0.0) and counts.
    x, y, _ = data
    binary = set(np.unique(y)) <= {0, 1}
    n = x.shape[0]
    rng = np.random.default_rng(n)
    if signed_zeros:
        zeros = rng.random(n) < 0.3
        x[zeros] = rng.choice(np.array([-0.0, 0.0], dtype=x.dtype), zeros.sum())
    labels = as_label_array(y, "y")
    w = rng.uniform(0.1, 3.0, n).astype(weight_dtype) if binary and weighted else None
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_sort, "RADIX_MIN_SIZE", radix_min)
        m.setattr(_pav, "CHUNK_ROWS", 1 << 8)
        expected = stable_argsort_blocks(x, labels, w, sign)
        for got in serial_and_parallel(isotonic_module.pav_fit, x, labels, w, sign):
            for a, b in zip(got, expected):
                assert a.dtype == b.dtype
                if kernels.is_sorted(x):  # sorted input is fitted as it is, -0.0 kept
                    assert_array_equal(a, b)
                else:
                    assert_array_equal(a.view(np.uint8), b.view(np.uint8))  # bits: +0.0 is not -0.0


@given(data=scores_and_labels(max_size=500, weighted=True), sign=st.sampled_from([1.0, -1.0]))
@HYPO
def test_pav_sorted_label_decodings_same_bits_as_labels_and_weights(data, sign):
    # Both decodings of signed weights (the fit picks one by dtype, for speed), on either dtype.
    x, y, w = data
    n = x.shape[0]
    order = np.argsort(x, kind="stable")
    xs, labels, ws = x[order], as_label_array(y, "y")[order], w[order]
    ws64 = ws.astype(np.float64)
    carried = np.where(labels != 0, -ws64, ws64)
    eps = x.dtype.type(np.finfo(x.dtype).resolution)
    fits = []
    for kind in (None, 1, 2):
        stack = (np.empty(n), np.empty(n), np.empty(n, x.dtype), np.empty(n, x.dtype))
        if kind is None:
            nb = pav_kernels.pav_sorted(xs, labels, ws, 0, eps, sign, *stack)
        else:
            nb = pav_kernels.pav_sorted(xs, carried, carried[:0], kind, eps, sign, *stack)
        fits.append([a[:nb] for a in stack])
    for fit in fits[1:]:
        for a, b in zip(fit, fits[0]):
            assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_auto_direction_and_warning():
    x = np.arange(100.0)
    iso = IsotonicRegression(increasing="auto").fit(x, -x)
    assert iso.increasing_ is False
    assert np.all(np.diff(iso.predict(x)) <= 0)
    assert IsotonicRegression(increasing="auto").fit(x, x).increasing_ is True
    rng = np.random.default_rng(0)
    noise = rng.normal(size=100)
    with pytest.warns(UserWarning, match="Confidence interval of the Spearman"):
        IsotonicRegression(increasing="auto").fit(x, noise)


def test_zero_weights_dropped():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    y = np.array([10.0, 0.0, 1.0, 2.0, -10.0])
    w = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
    iso = IsotonicRegression().fit(x, y, sample_weight=w)
    assert iso.X_min_ == 1.0 and iso.X_max_ == 3.0
    assert_allclose(iso.predict([1.0, 2.0, 3.0]), [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"Sample weights must contain at least one non-zero number \(sample_weight"):
        IsotonicRegression().fit(x, y, sample_weight=np.zeros(5))


def test_out_of_bounds_modes():
    x = np.array([0.0, 1.0, 2.0])
    y = np.array([0.0, 0.5, 1.0])
    assert_array_equal(IsotonicRegression(out_of_bounds="nan").fit(x, y).predict([-1, 3]), [np.nan, np.nan])
    assert_array_equal(IsotonicRegression(out_of_bounds="clip").fit(x, y).predict([-1, 3]), [0.0, 1.0])
    iso = IsotonicRegression(out_of_bounds="raise").fit(x, y)
    assert_array_equal(iso.predict([0.0, 2.0]), [0.0, 1.0])
    with pytest.raises(ValueError, match="below the interpolation range"):
        iso.predict([-1.0])
    with pytest.raises(ValueError, match="above the interpolation range"):
        iso.predict([2.5])


def test_single_threshold_predicts_constant_like_sklearn():
    for oob in ("nan", "clip", "raise"):
        ours = IsotonicRegression(out_of_bounds=oob).fit([1.0, 1.0], [0.0, 1.0])
        theirs = SkIsotonicRegression(out_of_bounds=oob).fit([1.0, 1.0], [0.0, 1.0])
        assert_array_equal(ours.predict([0.0, 1.0, 5.0]), theirs.predict([0.0, 1.0, 5.0]))


@pytest.mark.parametrize("fit_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("predict_dtype", [np.float32, np.float64, np.int64])
def test_prediction_dtype_follows_sklearn(fit_dtype, predict_dtype):
    x = np.array([1, 2, 3, 4], dtype=fit_dtype)
    y = np.array([0, 1, 0, 1])
    ours = IsotonicRegression().fit(x, y).predict(np.array([1, 2, 3], dtype=predict_dtype))
    theirs = SkIsotonicRegression().fit(x, y).predict(np.array([1, 2, 3], dtype=predict_dtype))
    assert ours.dtype == theirs.dtype == fit_dtype
    assert_allclose(ours, theirs)


@pytest.mark.parametrize(
    "xs",
    [
        np.array([-1e308, -1.0, 0.0, 1e308]),  # range too wide to cut into cells
        np.array([0.0, 5e-324, 1e-323, 2e-323]),  # subnormal range
        np.array([0.0, 1.0]),
        np.concatenate([np.linspace(0, 1e-9, 500), [1e9]]),  # knots crowded into one cell
        np.array([0.0, 1e-15, 2e-15]),  # steep: slope 1e300 / 1e-15 overflows
    ],
)
@pytest.mark.parametrize("n_cells", [1, 2, 16, 1 << 12])
def test_lookup_table_edge_ranges(xs, n_cells):
    ys = np.linspace(0.0, 1.0 if xs[-1] > 1e-14 else 1e300, xs.shape[0])
    rng = np.random.default_rng(0)
    T = np.concatenate([xs, rng.choice(xs, 200) * rng.uniform(0.5, 1.5, 200), [xs[0] - 1, xs[-1]]])
    T = T[np.isfinite(T)]
    table, scale = kernels.build_lookup(xs, n_cells)
    out = np.empty_like(T)
    kernels.predict(T, xs, ys, table, scale, True, out, 0, T.shape[0])
    expected = naive.interpolate(xs, ys, T, out_of_bounds="clip")
    assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_parallel_prediction_equals_serial():
    rng = np.random.default_rng(5)
    x = rng.random(5000)
    y = (rng.random(5000) < x).astype(float)
    iso = IsotonicRegression().fit(x, y)
    T = rng.random(100_000) * 1.2 - 0.1
    table, scale = iso._lookup
    args = (T, iso.X_thresholds_, iso.y_thresholds_, table, scale, False)
    whole, pieces = np.empty_like(T), np.empty_like(T)
    kernels.predict(*args, whole, 0, T.shape[0])
    in_pieces(kernels.predict, T.shape[0], *args, pieces)
    assert_array_equal(whole, pieces)
    serial, parallel = serial_and_parallel(iso.predict, T)
    assert_array_equal(serial, whole)
    assert_array_equal(parallel, whole)


# ---------------------------------------------------------------------------
# Estimator conventions
# ---------------------------------------------------------------------------


def test_params_clone_pipeline_pickle():
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    iso = IsotonicRegression(y_min=0.0, out_of_bounds="clip")
    assert iso.get_params() == dict(centered=False, increasing=True, out_of_bounds="clip", y_max=None, y_min=0.0)
    assert repr(iso) == "IsotonicRegression(out_of_bounds='clip', y_min=0.0)"
    assert iso.set_params(y_max=1.0) is iso and iso.y_max == 1.0
    with pytest.raises(ValueError, match="Invalid parameter 'foo'"):
        iso.set_params(foo=1)
    cloned = clone(iso)
    assert cloned is not iso and cloned.get_params() == iso.get_params()

    rng = np.random.default_rng(1)
    x = rng.random(500)
    y = (rng.random(500) < x).astype(int)
    pipe = make_pipeline(IsotonicRegression(out_of_bounds="clip")).fit(x, y)
    assert_allclose(pipe.predict(x), IsotonicRegression(out_of_bounds="clip").fit(x, y).predict(x))
    iso.fit(x, y)
    restored = pickle.loads(pickle.dumps(iso))
    assert_array_equal(restored.predict(x), iso.predict(x))
    assert_array_equal(iso.fit_transform(x, y), iso.transform(x))
    assert_array_equal(iso.get_feature_names_out(), ["isotonicregression0"])


def test_fit_accepts_single_column_and_lists():
    iso = IsotonicRegression().fit([[1.0], [2.0], [3.0]], [0, 1, 1])
    assert_allclose(iso.predict([[1.5], [2.5]]), [0.5, 1.0])
    assert_allclose(iso.predict([[1.5], [2.5]]), SkIsotonicRegression().fit([[1.0], [2.0], [3.0]], [0, 1, 1]).predict([[1.5], [2.5]]))


def test_inputs_not_modified():
    rng = np.random.default_rng(2)
    x = rng.random(1000)
    y = (rng.random(1000) < x).astype(float)
    w = rng.uniform(0.0, 1.0, 1000)
    copies = [a.copy() for a in (x, y, w)]
    for a in (x, y, w):
        a.flags.writeable = False
    iso = IsotonicRegression(increasing=False).fit(x, y, sample_weight=w)
    iso.predict(x)
    IsotonicRegression().fit(x[::-1], y[::-1])  # negative strides
    for a, c in zip((x, y, w), copies):
        assert_array_equal(a, c)


@pytest.mark.parametrize(
    "params, X, y, w, exc, match",
    [
        ({}, np.ones((3, 2)), [0, 1, 1], None, ValueError, r"2d array with 1 feature; X has shape \(3, 2\)"),
        ({}, [], [], None, ValueError, "X must have at least 1"),
        ({}, [1.0, 2.0], [0, 1, 1], None, ValueError, r"inconsistent numbers of samples: \[2, 3\] \(X has 2, y has 3"),
        ({}, [1.0, np.nan], [0, 1], None, ValueError, "X must be finite"),
        ({}, [1.0, np.inf], [0, 1], None, ValueError, "X must be finite"),
        ({}, [1.0, 2.0], [0, np.nan], None, ValueError, "y must be finite"),
        ({}, [1.0, 2.0], np.ones((2, 2)), None, ValueError, "y must be a 1-D array"),
        ({}, [1.0, 2.0], [0, 1], [1.0, -1.0], ValueError, "sample_weight must be non-negative"),
        ({}, [1.0, 2.0], [0, 1], [1.0], ValueError, r"inconsistent numbers of samples: \[2, 2, 1\] \(X and y have 2, sample_weight has 1\)"),
        ({}, [1.0, 2.0], [0, 1], [1.0, np.nan], ValueError, "sample_weight must be finite"),
        ({}, ["a", "b"], [0, 1], None, TypeError, "X must be a numeric"),
        (dict(out_of_bounds="wrap"), [1.0, 2.0], [0, 1], None, ValueError, "out_of_bounds must be 'nan', 'clip' or 'raise'"),
        (dict(increasing="up"), [1.0, 2.0], [0, 1], None, ValueError, "increasing must be True, False or 'auto'"),
        (dict(increasing=1), [1.0, 2.0], [0, 1], None, ValueError, "increasing must be True, False or 'auto'"),
        (dict(y_min=1.0, y_max=0.0), [1.0, 2.0], [0, 1], None, ValueError, "y_min must not exceed y_max"),
        (dict(y_min=np.nan), [1.0, 2.0], [0, 1], None, ValueError, r"y_min must be a real number \(not NaN\) or None"),
        (dict(y_max="1"), [1.0, 2.0], [0, 1], None, TypeError, "y_max must be a real number"),
    ],
)
def test_fit_errors(params, X, y, w, exc, match):
    with pytest.raises(exc, match=match):
        IsotonicRegression(**params).fit(X, y, sample_weight=w)


def test_predict_errors():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        IsotonicRegression().predict([1.0])
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    iso = IsotonicRegression().fit([1.0, 2.0], [0, 1])
    with pytest.raises(ValueError, match="T must be finite"):
        iso.predict([np.nan])
    with pytest.raises(ValueError, match=r"2d array with 1 feature; T has shape"):
        iso.predict(np.ones((2, 2)))
    iso.out_of_bounds = "bogus"
    with pytest.raises(ValueError, match="out_of_bounds must be 'nan', 'clip' or 'raise'"):
        iso.predict([1.0])
    assert_array_equal(IsotonicRegression().fit([1.0, 2.0], [0, 1]).predict([]), np.empty(0))


@pytest.mark.parametrize("increasing", [True, False])
def test_pooling_blocks_of_score_ranges_equals_whole_fit(increasing):
    # The merge step that parallel and out-of-core fits rely on.
    rng = np.random.default_rng(11)
    x = np.round(rng.random(20_000), 4)
    y = (rng.random(20_000) < x).astype(np.uint8)
    w = rng.uniform(0.5, 2.0, 20_000)
    sign = 1.0 if increasing else -1.0
    cuts = [0.0, 0.25, 0.2501, 0.7, 1.1]
    parts = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        m = (x >= lo) & (x < hi)
        parts.append(isotonic_module.pav_fit(x[m], y[m], w[m], sign))
    pooled = IsotonicRegression(increasing=increasing)
    pooled.increasing_ = increasing
    pooled._set_blocks(_pav.merge(parts))
    whole = IsotonicRegression(increasing=increasing).fit(x, y, sample_weight=w)
    assert_array_equal(pooled.X_thresholds_, whole.X_thresholds_)
    # weighted means of 0/1 labels over <= n rows (terms of one sign), summed in other groupings
    assert_allclose(pooled.y_thresholds_, whole.y_thresholds_, rtol=4 * x.size * EPS, atol=0)
    assert (pooled.X_min_, pooled.X_max_) == (whole.X_min_, whole.X_max_)
