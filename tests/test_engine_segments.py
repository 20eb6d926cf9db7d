"""The segment drivers (fastcal.multicalibration.rows) on ListRows against the in-memory functions.

The oracle is the in-memory function on the concatenated columns. Every
driver runs over many cuts of the same rows (one chunk, equal chunks, random
cuts with empty and one-row chunks, one row per chunk) and several numbers of
partitions, so that the input chunks split tie groups and groups and the
range partitions hold single rows or none. Tolerances: the ECCE's running
sums are float64 sums of the same terms in another order, so the error is a
few ``n`` eps of ``sum |w (y - p)|``, here (n <= 3000) under 1e-12 relative
to the ECCE; the report's columns are per-group sums of the same rows (a few
eps); counts and group order are exact.
"""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal._coding import group_bounds
from fastcal._engine import ListRows
from fastcal.multicalibration import mce_rows as emce
from fastcal.multicalibration import rows as eseg

RTOL = 1e-12


def _cuts(n, kind, rng):
    if kind == "one":
        return [0, n]
    if kind == "equal":
        return list(range(0, n, max(1, n // 7))) + [n]
    if kind == "rows":
        return list(range(n + 1))
    inner = rng.integers(0, n + 1, 9).tolist()
    return sorted([0, 0, *inner, min(1, n), n, n])


def _rows(cols, cuts):
    return ListRows([tuple(None if c is None else c[a:b] for c in cols) for a, b in zip(cuts[:-1], cuts[1:])])


def _data(n, seed, *, dtype=np.float64, weighted=False, ties=True, zeros=False):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, n)
    if ties:
        p = np.round(p, 2)  # many groups of equal probabilities
    p = p.astype(dtype)
    y = (rng.uniform(size=n) < np.where(np.arange(n) % 3 == 0, p ** 2, p)).astype(np.int64)
    w = None
    if weighted:
        w = rng.exponential(1.0, n)
        if zeros:
            w[rng.uniform(size=n) < 0.2] = 0.0
    return p, y, w


CASES = [
    dict(dtype=np.float64, weighted=False, ties=True),
    dict(dtype=np.float64, weighted=True, ties=True, zeros=True),
    dict(dtype=np.float32, weighted=True, ties=False),
    dict(dtype=np.float32, weighted=False, ties=True),
]


# ---------------------------------------------------------------------------
# ECCE and the calibration ratio.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", ["one", "equal", "random"])
@pytest.mark.parametrize("n_partitions", [None, 1, 3, 50])
def test_ecce_equals_in_memory(case, kind, n_partitions):
    p, y, w = _data(600, 1, **case)
    ref = fastcal.ecce(y, p, sample_weight=w)
    got = eseg.ecce(_rows((p, y, w), _cuts(600, kind, np.random.default_rng(2))), x_dtype=p.dtype,
                    weighted=w is not None, n_partitions=n_partitions)
    assert type(got) is type(ref)
    for name in ("ecce", "std", "ecce_sigma", "pvalue"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=RTOL, err_msg=name)


def test_ecce_one_row_per_chunk_and_partition():
    p, y, w = _data(40, 3, weighted=True, ties=True)
    ref = fastcal.ecce(y, p, sample_weight=w)
    got = eseg.ecce(_rows((p, y, w), _cuts(40, "rows", None)), x_dtype=p.dtype, weighted=True, n_partitions=40)
    assert_allclose(got.ecce, ref.ecce, rtol=RTOL)
    assert_allclose(got.ecce_sigma, ref.ecce_sigma, rtol=RTOL)


def test_ecce_partitions_hold_whole_tie_groups():
    """A tie group whose first rows are positive, in chunks that split it: one step of D (0), never the partial
    sum 1.5 that a range cutting the group would see; then 2 x (1 - 0.9)."""
    p = np.array([0.5] * 6 + [0.9] * 2)
    y = np.array([1, 1, 1, 0, 0, 0, 1, 1])
    ref = fastcal.ecce(y, p)
    assert ref.ecce == pytest.approx(0.2 / 8, rel=1e-14)  # the oracle, by hand
    for cuts in ([0, 3, 8], [0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 3, 3, 6, 8]):
        for n_partitions in (1, 2, 3, 8):
            got = eseg.ecce(_rows((p, y, None), cuts), x_dtype=p.dtype, weighted=False, n_partitions=n_partitions)
            assert got.ecce == pytest.approx(ref.ecce, rel=RTOL)


def test_ecce_calibrated_constant_is_zero():
    p = np.full(10, 0.5)
    y = np.array([1, 0] * 5)
    got = eseg.ecce(_rows((p, y, None), [0, 3, 3, 10]), x_dtype=p.dtype, weighted=False)
    ref = fastcal.ecce(y, p)
    assert (got.ecce, got.ecce_sigma, got.pvalue) == (ref.ecce, ref.ecce_sigma, ref.pvalue) == (0.0, 0.0, 1.0)


def test_ecce_weight_scale():
    p, y, w = _data(300, 4, weighted=True)
    rows = [0, 100, 170, 300]
    a = eseg.ecce(_rows((p, y, w), rows), x_dtype=p.dtype, weighted=True, n_partitions=3)
    b = eseg.ecce(_rows((p, y, w * 2.0**40), rows), x_dtype=p.dtype, weighted=True, n_partitions=3)
    c = eseg.ecce(_rows((p, y, w * 3e-7), rows), x_dtype=p.dtype, weighted=True, n_partitions=3)
    assert (a.ecce, a.std) == (b.ecce, b.std)  # a power of two: the same bits
    assert_allclose([c.ecce, c.std], [a.ecce, a.std], rtol=1e-15)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("adjust", [False, True])
def test_calibration_ratio_equals_in_memory(case, adjust):
    p, y, w = _data(500, 5, **case)
    ref = fastcal.calibration_ratio(y, p, sample_weight=w, adjust_unjoined=adjust)
    for kind in ("one", "random", "rows"):
        got = eseg.calibration_ratio(_rows((p, y, w), _cuts(500, kind, np.random.default_rng(6))), x_dtype=p.dtype,
                                     weighted=w is not None, adjust_unjoined=adjust)
        assert_allclose(got, ref, rtol=RTOL)


@pytest.mark.parametrize("case", CASES)
def test_single_pass_metrics_equal_in_memory(case):
    """normalized_entropy and proportional_ece: rows of the reductions table, their chunks' tables added in chunk
    order against one table of all the rows (sums of at most 500 terms: RTOL); the in-memory errors."""
    p, y, w = _data(500, 7, **case)
    for kind in ("one", "random", "rows"):
        rows = _rows((p, y, w), _cuts(500, kind, np.random.default_rng(8)))
        kw = dict(x_dtype=p.dtype, weighted=w is not None)
        assert_allclose(eseg.normalized_entropy(rows, **kw), fastcal.normalized_entropy(y, p, sample_weight=w),
                        rtol=RTOL)
        rows = _rows((p, y, w), _cuts(500, kind, np.random.default_rng(8)))
        assert_allclose(eseg.proportional_ece(rows, n_bins=13, **kw),
                        fastcal.proportional_ece(y, p, n_bins=13, sample_weight=w), rtol=RTOL)
    assert set(eseg.REDUCTIONS) == {"calibration_ratio", "normalized_entropy", "proportional_ece"}
    with pytest.raises(ValueError, match="one class only"):
        eseg.normalized_entropy(_rows((p, np.zeros_like(y), w), [0, 200, 500]), x_dtype=p.dtype, weighted=w is not None)
    with pytest.raises(ValueError, match="mean prediction is 0"):
        eseg.proportional_ece(_rows((np.zeros_like(p), y, w), [0, 200, 500]), x_dtype=p.dtype, weighted=w is not None)
    with pytest.raises(ValueError, match="n_bins"):
        eseg.proportional_ece(_rows((p, y, w), [0, 500]), x_dtype=p.dtype, weighted=w is not None, n_bins=0)


def test_inputs_are_not_modified_and_read_only_works():
    p, y, w = _data(200, 7, weighted=True)
    p = p[::-1]  # not contiguous
    for a in (p, y, w):
        a.flags.writeable = False
    copies = [a.copy() for a in (p, y, w)]
    eseg.ecce(_rows((p, y, w), [0, 50, 200]), x_dtype=p.dtype, weighted=True, n_partitions=2)
    eseg.segment_report(_rows((p, y, w, y * 3), [0, 50, 200]), x_dtype=p.dtype, weighted=True, n_partitions=2)
    for a, c in zip((p, y, w), copies):
        assert_array_equal(a, c)


@pytest.mark.parametrize("driver", ["ecce", "calibration_ratio"])
def test_errors_are_the_in_memory_ones(driver):
    f = getattr(eseg, driver)
    mem = getattr(fastcal, driver)
    good_p, good_y = np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1])
    bad = [
        (np.array([0.2, 1.7, 0.4]), good_y, None),  # probability out of range
        (good_p, np.array([0, 2, 1]), None),  # labels not 0/1
        (good_p, good_y, np.array([1.0, -1.0, 1.0])),  # negative weight
        (good_p, good_y, np.zeros(3)),  # all weights zero
        (np.array([0.2, np.nan, 0.4]), good_y, None),
    ]
    for p, y, w in bad:
        with pytest.raises(ValueError) as ref:
            mem(y, p, sample_weight=w)
        with pytest.raises(ValueError) as got:
            f(_rows((p, y, w), [0, 3]), x_dtype=p.dtype, weighted=w is not None)
        assert str(got.value) == str(ref.value)
        with pytest.raises(ValueError) as got:  # the values shown are the failing chunk's
            f(_rows((p, y, w), [0, 1, 3]), x_dtype=p.dtype, weighted=w is not None)
        assert str(got.value).split("(")[0].split(";")[0] == str(ref.value).split("(")[0].split(";")[0]
    with pytest.raises(ValueError) as ref:
        mem(np.empty(0), np.empty(0))
    with pytest.raises(ValueError) as got:
        f(ListRows([(np.empty(0), np.empty(0), None)]), x_dtype=np.float64, weighted=False)
    assert str(got.value) == str(ref.value)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples"):
        f(ListRows([(good_p, good_y[:2], None)]), x_dtype=np.float64, weighted=False)


def test_calibration_ratio_without_positives():
    p, y = np.array([0.2, 0.7]), np.array([0, 0])
    with pytest.raises(ValueError, match="no positive label"):
        eseg.calibration_ratio(_rows((p, y, None), [0, 1, 2]), x_dtype=p.dtype, weighted=False)


# ---------------------------------------------------------------------------
# The report by segment.
# ---------------------------------------------------------------------------


def _groups(kind, n, rng):
    if kind == "int":
        return rng.integers(-3, 9, n)
    if kind == "wide":
        return rng.choice([10**12, -5, 7, 10**15], n)
    if kind == "str":
        return rng.choice(["fr", "de", "u", "ab", "ba"], n)  # mixed lengths: chunks of <U1 and <U2
    if kind == "float":
        g = rng.choice([0.5, 1.5, -2.0, np.nan], n)
        return g
    if kind == "object":
        return np.array(rng.choice(["x", "y", "z", "w"], n).tolist(), dtype=object)
    if kind == "object_missing":
        g = np.array(rng.choice(["x", "y", "z"], n).tolist(), dtype=object)
        g[rng.uniform(size=n) < 0.1] = None
        return g
    if kind == "bool":
        return rng.uniform(size=n) < 0.3
    raise AssertionError(kind)


def _assert_same_report(got, ref, rtol=RTOL):
    assert type(got) is type(ref)
    assert len(got.groups) == len(ref.groups)
    for a, b in zip(got.groups, ref.groups):
        assert (a is None and b is None) or (a == b and type(a) is type(b)), (got.groups, ref.groups)
    assert_array_equal(got.n, ref.n)
    assert got.n.dtype == ref.n.dtype
    for name in ("weight_sum", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce", "ecce_sigma",
                 "pvalue", "brier", "log_loss", "auc"):
        a, b = getattr(got, name), getattr(ref, name)
        assert_array_equal(np.isnan(a), np.isnan(b), err_msg=name)
        keep = ~np.isnan(b)
        # p-values far in the tail: relative to themselves through sigma's rounding (d sf / sf ~ x^2 d x / x)
        tol = rtol * (1 + np.nan_to_num(ref.ecce_sigma[keep], posinf=0) ** 2) if name == "pvalue" else rtol
        a, b = a[keep], b[keep]
        finite = np.isfinite(b)
        assert_array_equal(a[~finite], b[~finite], err_msg=name)  # inf where sigma is 0 < ECCE
        tol = tol[finite] if np.ndim(tol) else tol
        close = np.abs(a[finite] - b[finite]) <= tol * np.abs(b[finite])
        assert close.all(), (name, a, b)


@pytest.mark.parametrize("gkind", ["int", "wide", "str", "float", "object", "object_missing", "bool"])
@pytest.mark.parametrize("kind", ["one", "equal", "random"])
def test_segment_report_equals_in_memory(gkind, kind):
    rng = np.random.default_rng(11)
    p, y, w = _data(700, 12, weighted=gkind in ("str", "object_missing", "int"), zeros=True)
    g = _groups(gkind, 700, rng)
    ref = fastcal.segment_report(y, p, g, sample_weight=w, n_bins=7)
    for n_partitions in (None, 1, 2, 5, 100):
        cuts = _cuts(700, kind, np.random.default_rng(13))
        got = eseg.segment_report(_rows((p, y, w, g), cuts), x_dtype=p.dtype, weighted=w is not None, n_bins=7,
                                  n_partitions=n_partitions)
        _assert_same_report(got, ref)


def test_segment_report_float32_one_row_per_chunk():
    rng = np.random.default_rng(14)
    p, y, w = _data(60, 15, dtype=np.float32, weighted=True)
    g = rng.integers(0, 9, 60)
    ref = fastcal.segment_report(y, p, g, sample_weight=w)
    got = eseg.segment_report(_rows((p, y, w, g), _cuts(60, "rows", None)), x_dtype=p.dtype, weighted=True,
                              n_partitions=60)
    _assert_same_report(got, ref)


def test_segment_report_group_of_zero_weight_alone_in_a_partition():
    p = np.array([0.1, 0.4, 0.6, 0.9, 0.3, 0.7])
    y = np.array([0, 1, 0, 1, 1, 0])
    w = np.array([1.0, 2.0, 0.0, 0.0, 1.0, 3.0])
    g = np.array([0, 0, 1, 1, 2, 2])
    ref = fastcal.segment_report(y, p, g, sample_weight=w)
    for n_partitions in (1, 3):
        got = eseg.segment_report(_rows((p, y, w, g), [0, 3, 6]), x_dtype=p.dtype, weighted=True,
                                  n_partitions=n_partitions)
        _assert_same_report(got, ref)
    assert got.weight_sum[1] == 0 and got.n[1] == 2


def test_segment_report_weight_scale():
    rng = np.random.default_rng(16)
    p, y, w = _data(400, 17, weighted=True)
    g = rng.integers(0, 5, 400)
    base = eseg.segment_report(_rows((p, y, w, g), [0, 150, 400]), x_dtype=p.dtype, weighted=True, n_partitions=3)
    for scale in (2.0**-30, 2.0**50):
        got = eseg.segment_report(_rows((p, y, w * scale, g), [0, 150, 400]), x_dtype=p.dtype, weighted=True,
                                  n_partitions=3)
        assert_array_equal(got.ecce, base.ecce)
        assert_array_equal(got.weight_sum, base.weight_sum * scale)
    got = eseg.segment_report(_rows((p, y, w * 0.3, g), [0, 150, 400]), x_dtype=p.dtype, weighted=True,
                              n_partitions=3)
    assert_allclose(got.ecce, base.ecce, rtol=1e-14)


def test_segment_report_errors():
    p, y, g = np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1]), np.array([1, 2, 1])
    with pytest.raises(ValueError) as ref:
        fastcal.segment_report(y, p, g[:2])
    with pytest.raises(ValueError) as got:
        eseg.segment_report(ListRows([(p, y, None, g[:2])]), x_dtype=p.dtype, weighted=False)
    assert "Inconsistent numbers of samples" in str(ref.value) and "Inconsistent numbers of samples" in str(got.value)
    for n_bins in (0, 2.5):
        with pytest.raises((ValueError, TypeError)) as ref:
            fastcal.segment_report(y, p, g, n_bins=n_bins)
        with pytest.raises(type(ref.value)) as got:
            eseg.segment_report(ListRows([(p, y, None, g)]), x_dtype=p.dtype, weighted=False, n_bins=n_bins)
        assert str(got.value) == str(ref.value)
    with pytest.raises(ValueError) as ref:
        fastcal.segment_report(np.array([0, 2, 1]), p, g)
    with pytest.raises(ValueError) as got:
        eseg.segment_report(ListRows([(p, np.array([0, 2, 1]), None, g)]), x_dtype=p.dtype, weighted=False)
    assert str(got.value) == str(ref.value)


def test_group_bounds():
    assert_array_equal(group_bounds(np.array([5, 5, 5, 5]), 2), [2])
    assert_array_equal(group_bounds(np.array([100, 1, 1]), 3), [1])  # never an empty range of groups
    assert group_bounds(np.array([3]), 4).shape == (0,)
    assert group_bounds(np.array([1, 1, 1]), 1).shape == (0,)
    assert math.isfinite(float(group_bounds(np.arange(1, 50), 7).sum()))


# ---------------------------------------------------------------------------
# The multicalibration error.
# ---------------------------------------------------------------------------


def _same_labels(a, b):
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    return a == b and type(a) is type(b)


def _assert_same_mce(got, ref, rtol=RTOL):
    assert len(got.segment_values) == len(ref.segment_values)
    for a, b in zip(got.segment_values, ref.segment_values):
        assert list(a) == list(b) and all(_same_labels(a[k], b[k]) for k in b), (a, b)
    assert_array_equal(got.segment_n, ref.segment_n)
    for name in ("segment_ecce", "segment_ecce_sigma"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=rtol, atol=0, err_msg=name)
    finite = np.isfinite(ref.segment_ecce_sigma)
    assert_allclose(got.segment_pvalue[finite], ref.segment_pvalue[finite],
                    rtol=rtol * (1 + ref.segment_ecce_sigma[finite].max() ** 2))
    for name in ("mce", "mce_sigma", "mce_relative", "mde", "mde_relative", "global_ecce", "global_ecce_sigma"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=rtol, err_msg=name)


def _features(n, rng):
    country = rng.choice(["fr", "de", "us", "it", "es"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    device = rng.integers(0, 4, n)
    age = rng.normal(40, 10, n)
    age[rng.uniform(size=n) < 0.05] = np.nan
    small = rng.choice([1.5, 2.5], n)  # numerical with few values: not binned
    obj = np.array(rng.choice(["a", "b", "c", "d"], n).tolist(), dtype=object)
    obj[rng.uniform(size=n) < 0.1] = None
    return {"country": country, "device": device, "age": age, "small": small, "obj": obj}


MCE_PARAMS = [
    dict(numerical=["age", "small"]),
    dict(numerical=["small", "age"], max_depth=2, max_values_per_segment_feature=4, min_samples_per_segment=5),
    dict(numerical=(), max_depth=None, max_n_segments=40),
    dict(numerical="age", max_values_per_segment_feature=2, min_samples_per_segment=0, max_n_segments=None),
]


@pytest.mark.parametrize("params", MCE_PARAMS)
@pytest.mark.parametrize("kind", ["one", "random"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multicalibration_error_equals_in_memory(params, kind, weighted):
    rng = np.random.default_rng(21)
    p, y, w = _data(1500, 22, weighted=weighted, zeros=True)
    feats = _features(1500, rng)
    names = list(feats)
    ref = fastcal.multicalibration_error(y, p, feats, sample_weight=w, **params)
    cuts = _cuts(1500, kind, np.random.default_rng(23))
    for n_partitions in (None, 4):
        got = emce.multicalibration_error(_rows((p, y, w, *feats.values()), cuts), x_dtype=p.dtype,
                                          weighted=weighted, names=names, n_partitions=n_partitions, **params)
        _assert_same_mce(got, ref)


def test_multicalibration_error_float32_one_row_per_chunk_and_no_features():
    rng = np.random.default_rng(24)
    p, y, w = _data(80, 25, dtype=np.float32, weighted=True)
    feats = {"g": rng.integers(0, 3, 80), "x": rng.uniform(size=80)}
    ref = fastcal.multicalibration_error(y, p, feats, sample_weight=w, numerical=["x"], min_samples_per_segment=2)
    got = emce.multicalibration_error(_rows((p, y, w, *feats.values()), _cuts(80, "rows", None)), x_dtype=p.dtype,
                                      weighted=True, names=list(feats), numerical=["x"], min_samples_per_segment=2,
                                      n_partitions=80)
    _assert_same_mce(got, ref)
    ref = fastcal.multicalibration_error(y, p, {})
    got = emce.multicalibration_error(_rows((p, y, None), [0, 40, 80]), x_dtype=p.dtype, weighted=False, names=[])
    _assert_same_mce(got, ref)


def test_multicalibration_error_value_order_across_chunks():
    """Values ordered by first appearance along the sorted predictions, ties of prediction by row: "b" first (its
    row 0 has the least p), then "a" (row 2, p tied with "c"'s row 5), then "c"."""
    p = np.array([0.1, 0.5, 0.2, 0.3, 0.4, 0.2, 0.6, 0.7])
    y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    g = np.array(["b", "c", "a", "b", "a", "c", "a", "b"])
    ref = fastcal.multicalibration_error(y, p, {"g": g}, min_samples_per_segment=0, max_values_per_segment_feature=5)
    assert [v.get("g") for v in ref.segment_values] == [None, "b", "a", "c"]
    for cuts in ([0, 3, 8], [0, 5, 6, 8], list(range(9))):
        got = emce.multicalibration_error(_rows((p, y, None, g), cuts), x_dtype=p.dtype, weighted=False,
                                          names=["g"], min_samples_per_segment=0, max_values_per_segment_feature=5)
        _assert_same_mce(got, ref)


def test_multicalibration_error_parameter_errors():
    p, y = np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1])
    rows = ListRows([(p, y, None, np.array([1, 2, 1]))])
    for kw in (dict(max_depth=-1), dict(max_values_per_segment_feature=0), dict(max_n_segments=1.5),
               dict(numerical=["nope"])):
        with pytest.raises((ValueError, TypeError)) as ref:
            fastcal.multicalibration_error(y, p, {"g": np.array([1, 2, 1])}, **kw)
        with pytest.raises(type(ref.value)) as got:
            emce.multicalibration_error(rows, x_dtype=p.dtype, weighted=False, names=["g"], **kw)
        assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("n_features", [6, 20])
def test_multicalibration_error_many_cells(n_features):
    """Cells numbered by np.unique of their mixed-radix numbers (10^6 combinations, past 4 per row) and of their
    rows of digits (10^20 combinations, past 2^62)."""
    rng = np.random.default_rng(26)
    p, y, w = _data(2000, 27, weighted=True)
    feats = {f"f{i}": rng.integers(0, 10, 2000) for i in range(n_features)}
    params = dict(max_values_per_segment_feature=10, max_depth=1 if n_features > 6 else 2, min_samples_per_segment=3)
    ref = fastcal.multicalibration_error(y, p, feats, sample_weight=w, **params)
    got = emce.multicalibration_error(_rows((p, y, w, *feats.values()), [0, 700, 1300, 2000]), x_dtype=p.dtype,
                                      weighted=True, names=list(feats), n_partitions=3, **params)
    _assert_same_mce(got, ref)
