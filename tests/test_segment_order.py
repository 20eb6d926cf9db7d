"""The segment metrics are functions of the multiset of rows: any order of the same rows, at any thread count,
gives the same bits (ties in scores included); and a group of zero weight has no ECCE, sigma or p-value."""

import contextlib

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from fastcal import ecce, multicalibration_error, segment_report

from .threads import MANY, num_threads

_REPORT_COLUMNS = ("n", "weight_sum", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce",
                   "ecce_sigma", "pvalue", "brier", "log_loss", "auc")
_MCE_FIELDS = ("mce", "mce_sigma", "mce_pvalue", "mce_relative", "mde", "mde_relative", "global_ecce",
               "global_ecce_sigma", "global_ecce_pvalue")


@contextlib.contextmanager
def _small_sizes():
    """Test-sized inputs cut into many chunks of rows, score ranges and scan blocks, as 10^7 rows are, and their
    large groups of equal scores ordered in chunks (set and restored here: hypothesis runs many examples per call
    of a test)."""
    from fastcal._core import parallel as _parallel
    from fastcal._coding import Sizes

    before = _parallel.PARALLEL_MIN_SIZE, _parallel.TASK_ROWS, Sizes.RANGE_ROWS, Sizes.TIE_ROWS
    _parallel.PARALLEL_MIN_SIZE, _parallel.TASK_ROWS, Sizes.RANGE_ROWS, Sizes.TIE_ROWS = 1 << 6, 1 << 5, 1 << 4, 1 << 5
    try:
        yield
    finally:
        _parallel.PARALLEL_MIN_SIZE, _parallel.TASK_ROWS, Sizes.RANGE_ROWS, Sizes.TIE_ROWS = before


@st.composite
def _tied_rows(draw):
    """``(y, p, w, segments)``: scores from a pool of 1 to 30 values (heavy ties; some rounded to 2 decimals),
    labels, weights (None, spread over many magnitudes, or with zeros) and two categorical and one numerical
    feature of few values."""
    n = draw(st.integers(2, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    pool = draw(st.sampled_from(["pool", "rounded"]))
    if pool == "pool":
        p = rng.choice(rng.uniform(size=draw(st.integers(1, 30))), n)
    else:
        p = np.round(rng.uniform(size=n), 2)
    p = p.astype(dtype)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    kind = draw(st.sampled_from([None, "spread", "zeros"]))
    w = None
    if kind == "spread":  # sums of these round at every addition
        w = rng.uniform(0.1, 3.0, n) * 10.0 ** rng.integers(-3, 4, n)
    elif kind == "zeros":
        w = np.where(rng.uniform(size=n) < 0.3, 0.0, rng.exponential(size=n))
        w[0] = 1.0
    # at most max_values_per_segment_feature (4) values of each categorical one: no category collapsed (which keeps
    # the first to appear among equally frequent ones)
    segments = {"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n), "c": rng.integers(0, 6, n) * 0.5}
    return y, p, w, segments


def _permuted(perm, y, p, w, segments):
    return y[perm], p[perm], None if w is None else w[perm], {k: v[perm] for k, v in segments.items()}


def _bits(x):
    return np.asarray(x, dtype=np.float64).tobytes()


def _all_metrics(y, p, w, segments):
    """Every value of the three segment metrics on these rows, as bytes."""
    out = {}
    e = ecce(y, p, sample_weight=w)
    for name in ("ecce", "std", "ecce_sigma", "pvalue"):
        out[f"ecce.{name}"] = _bits(getattr(e, name))
    r = multicalibration_error(y, p, segments, sample_weight=w, numerical=["c"], min_samples_per_segment=1,
                               max_values_per_segment_feature=4)
    for name in _MCE_FIELDS:
        out[f"mce.{name}"] = _bits(getattr(r, name))
    # MCGrad's segments come in order of first appearance along the sorted scores (ties: by row): compared by value
    for i, values in enumerate(r.segment_values):
        out[f"mce.segment {sorted(values.items())}"] = (
            int(r.segment_n[i]), _bits([r.segment_ecce[i], r.segment_ecce_sigma[i], r.segment_pvalue[i]]))
    report = segment_report(y, p, segments["a"], sample_weight=w)
    for name in _REPORT_COLUMNS:
        out[f"report.{name}"] = _bits(getattr(report, name))
    return out


@settings(max_examples=40, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate))  # no shrinking: slow
@given(_tied_rows(), st.randoms(use_true_random=False))
def test_row_order_and_threads_change_no_bit(data, random):
    """The rows in another order (a random permutation and the reverse), on 1 and on several threads, give the
    same bits of every value of ``ecce``, ``multicalibration_error`` and ``segment_report``."""
    y, p, w, segments = data
    perm = np.array(random.sample(range(p.shape[0]), p.shape[0]))
    with _small_sizes():
        with num_threads(1):
            ref = _all_metrics(y, p, w, segments)
            shuffled = _all_metrics(*_permuted(perm, y, p, w, segments))
        with num_threads(MANY):
            reversed_ = _all_metrics(*_permuted(np.arange(p.shape[0])[::-1], y, p, w, segments))
    assert shuffled == ref
    assert reversed_ == ref


@pytest.mark.parametrize("tie_rows", [1, 7, 100])
def test_large_tie_groups_ordered_in_chunks_change_no_bit(monkeypatch, tie_rows):
    """Weighted groups of equal scores of more than ``Sizes.TIE_ROWS`` rows (here a third of the rows at 0, and
    groups of hundreds of rows) are ordered in chunks merged on several threads: the same bits as when each is
    ordered whole by the task that sorts its score range, on 1 and on several threads, for the rows in any order."""
    from fastcal._coding import Sizes

    rng = np.random.default_rng(11)
    n = 6000
    p = np.where(rng.uniform(size=n) < 0.3, 0.0, np.round(rng.uniform(size=n), 1))
    y = (rng.uniform(size=n) < 0.4).astype(np.int64)
    w = rng.uniform(0.1, 3.0, n) * 10.0 ** rng.integers(-3, 4, n)
    w[::13] = 0.5  # rows of equal weights (equal keys) in a group
    segments = {"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n), "c": rng.integers(0, 6, n) * 0.5}
    with _small_sizes():
        monkeypatch.setattr(Sizes, "TIE_ROWS", n)  # every group ordered whole
        with num_threads(1):
            ref = _all_metrics(y, p, w, segments)
        monkeypatch.setattr(Sizes, "TIE_ROWS", tie_rows)
        perm = rng.permutation(n)
        with num_threads(1):
            assert _all_metrics(y, p, w, segments) == ref
        with num_threads(MANY):
            assert _all_metrics(*_permuted(perm, y, p, w, segments)) == ref


def test_rounded_scores_one_value_per_order():
    """5000 rows of scores rounded to 2 decimals: three orders of the rows, one value of each metric (the
    unweighted ECCE took three values before)."""
    rng = np.random.default_rng(7)
    n = 5000
    p = np.round(rng.uniform(size=n), 2)
    y = (rng.uniform(size=n) < p ** 1.1).astype(np.int64)
    w = rng.exponential(size=n)
    segments = {"a": rng.integers(0, 4, n), "b": rng.choice(["x", "y", "z"], n), "c": rng.uniform(size=n)}
    for weights in (None, w):
        results = [_all_metrics(*_permuted(rng.permutation(n), y, p, weights, segments)) for _ in range(3)]
        assert results[1] == results[0]
        assert results[2] == results[0]


@pytest.mark.parametrize("labels", [[0, 1, 1, 0, 1, 0], [0, 1, 1, 0, 0, 0]])
def test_segment_report_zero_weight_group_has_no_ecce(labels):
    """A group whose weights are all 0 has no ECCE, sigma or p-value (NaN, as its base rate and AUC), not a sigma
    that reads as calibrated or as miscalibrated; the other group keeps its values."""
    p = np.array([0.2, 0.4, 0.6, 0.3, 0.7, 0.5])
    y = np.array(labels)
    g = np.array([0, 0, 0, 1, 1, 1])
    w = np.array([1.0, 2.0, 1.0, 0.0, 0.0, 0.0])
    r = segment_report(y, p, g, sample_weight=w)
    assert r.n[1] == 3 and r.weight_sum[1] == 0.0
    for name in ("ecce", "ecce_sigma", "pvalue", "base_rate", "auc"):
        assert np.isnan(getattr(r, name)[1]), name
    alone = ecce(y[:3], p[:3], sample_weight=w[:3])
    assert (r.ecce[0], r.ecce_sigma[0], r.pvalue[0]) == pytest.approx((alone.ecce, alone.ecce_sigma, alone.pvalue),
                                                                      rel=1e-14)


@pytest.mark.parametrize("cuts", [[0, 6], [0, 3, 6], [0, 1, 4, 6]])
def test_engine_segment_report_zero_weight_group(cuts):
    """The backends' report by segment (each partition of whole groups reports in memory) on a group of zero
    weight, alone in its partition or not: NaN ECCE, sigma and p-value, and the in-memory report's bits (the
    rows of each group are the same, in another order)."""
    from fastcal._engine import ListRows
    from fastcal.multicalibration import rows as eseg

    p = np.array([0.2, 0.4, 0.4, 0.3, 0.7, 0.7])
    y = np.array([0, 1, 0, 1, 1, 0])
    w = np.array([1.0, 2.0, 0.5, 0.0, 0.0, 0.0])
    g = np.array([0, 0, 0, 1, 1, 1])
    ref = segment_report(y[::-1], p[::-1], g[::-1], sample_weight=w[::-1])
    rows = ListRows([(p[a:b], y[a:b], w[a:b], g[a:b]) for a, b in zip(cuts[:-1], cuts[1:])])
    for n_partitions in (1, 2):
        got = eseg.segment_report(rows, x_dtype=p.dtype, weighted=True, n_partitions=n_partitions)
        assert got.groups == ref.groups
        for name in _REPORT_COLUMNS:
            np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
        assert np.isnan(got.ecce_sigma[1]) and np.isnan(got.pvalue[1])
