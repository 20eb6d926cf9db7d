"""Every parallel public path gives the same bits at 1, 2, 3, 8 and 16 threads (inputs above the parallel threshold).

fastcal's contract (fastcal/_parallel.py): the tasks a call is cut into depend
on the input's size alone, float reductions merge fixed chunks in chunk order,
and integer reductions are exact, so the thread count can change nothing. Each
case runs once per thread count, in this thread (``set_num_threads``), and the
results are compared with ``==`` on their bits (NaN equal to NaN).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fastcal
from fastcal._core import parallel as _parallel

from .threads import num_threads

THREADS = (1, 2, 3, 8, 16)
#: Above the parallel threshold, and not a multiple of the task size: many tasks, an uneven last one.
N = 3 * _parallel.PARALLEL_MIN_SIZE + 12_345


def _data(n=N, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 3.0, n).astype(dtype)
    y = (rng.random(n) < p**1.3).astype(np.int64)
    w = rng.uniform(0.2, 3.0, n)
    p[::7] = np.round(p[::7], 2)  # ties
    return y, p, w


def _bits(value):
    """A comparable form of a result: floats by their bits, arrays by their bytes, containers element by element."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _bits(dataclasses.astuple(value))
    if hasattr(value, "_asdict"):
        return _bits(tuple(value._asdict().values()))
    if isinstance(value, dict):
        return tuple((k, _bits(v)) for k, v in sorted(value.items()))
    if isinstance(value, (tuple, list)):
        return tuple(_bits(v) for v in value)
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (float, np.floating)):
        return np.float64(value).tobytes()
    if hasattr(value, "__dict__"):
        return _bits({k: v for k, v in vars(value).items() if not k.startswith("_")})
    return value


def _same_at_every_thread_count(func):
    results = []
    for t in THREADS:
        with num_threads(t):
            results.append(_bits(func()))
    for t, r in zip(THREADS[1:], results[1:]):
        assert r == results[0], f"{t} threads differ from 1 thread"


Y, P, W = _data()
Y32, P32, _ = _data(dtype=np.float32, seed=1)


def _matrix(k=4, seed=2):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(N // 2, k))
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, N // 2)
    return y, P, logits


YK, PK, ZK = _matrix()


def _segments(n=N, seed=3):
    rng = np.random.default_rng(seed)
    return {"a": rng.choice(["x", "y", "z", "u"], n, p=[0.4, 0.3, 0.2, 0.1]), "b": rng.integers(0, 5, n),
            "c": rng.normal(size=n)}


SEG = _segments()
#: A group per row: 40 groups of uneven sizes (a few below GroupedCalibrator's minimum), and many tasks of groups.
GROUPS = np.random.default_rng(4).zipf(1.6, N) % 40

CASES = {
    "brier_score_loss": lambda: fastcal.brier_score_loss(Y, P, sample_weight=W),
    "log_loss": lambda: fastcal.log_loss(Y, P, sample_weight=W),
    "log_loss multiclass": lambda: fastcal.log_loss(YK, PK),
    "brier multiclass": lambda: fastcal.brier_score_loss(YK, PK),
    "brier_decomposition": lambda: fastcal.brier_decomposition(Y, P, sample_weight=W),
    "calibration_curve uniform": lambda: fastcal.calibration_curve(Y, P, n_bins=15),
    "calibration_curve quantile": lambda: fastcal.calibration_curve(Y, P, n_bins=15, strategy="quantile"),
    "calibration_curve quantile f32 weighted": lambda: fastcal.calibration_curve(
        Y32, P32, n_bins=40, strategy="quantile", sample_weight=W),
    "ece": lambda: [fastcal.expected_calibration_error(Y, P, norm=norm) for norm in ("l1", "l2", "max")],
    "ece quantile weighted": lambda: fastcal.expected_calibration_error(Y, P, strategy="quantile", sample_weight=W),
    # weighted 0/1 and real-valued targets: the range partition's radix rows, the PAV's runs of equal means
    "isotonic weighted f32": lambda: fastcal.IsotonicRegression().fit(P32, Y32, sample_weight=W),
    "isotonic real-valued": lambda: fastcal.IsotonicRegression().fit(P, P + 0.5 * Y),
    "roc_auc unweighted": lambda: fastcal.roc_auc_score(Y, P),
    "roc_auc unweighted f32": lambda: fastcal.roc_auc_score(Y32, P32),
    "roc_auc weighted": lambda: fastcal.roc_auc_score(Y, P, sample_weight=W),
    "roc_auc partial": lambda: fastcal.roc_auc_score(Y, P, max_fpr=0.3),
    "roc_auc ovr": lambda: fastcal.roc_auc_score(YK, PK, multi_class="ovr"),
    "calibration_report": lambda: fastcal.calibration_report(Y, P, sample_weight=W),
    "smooth_ece": lambda: fastcal.smooth_ece(Y, P),
    "smooth_ece weighted f32": lambda: fastcal.smooth_ece(Y32, P32, sample_weight=W),
    "score_decomposition": lambda: fastcal.score_decomposition(Y, P),
    "score_decomposition weighted log": lambda: fastcal.score_decomposition(Y, P, sample_weight=W,
                                                                            scoring="log_loss"),
    "corp_reliability": lambda: fastcal.corp_reliability(Y, P),
    "platt_scaling": lambda: fastcal.platt_scaling(P, Y),
    "platt_scaling weighted": lambda: fastcal.platt_scaling(P, Y, sample_weight=W),
    "calibration_slope_intercept": lambda: fastcal.calibration_slope_intercept(Y, P),
    "correct_negative_sampling": lambda: fastcal.correct_negative_sampling(P, 0.1),
    "correct_negative_sampling f32": lambda: fastcal.correct_negative_sampling(P32, 0.3),
    "adjust_priors binary": lambda: fastcal.adjust_priors(P, [0.3, 0.7], [0.5, 0.5]),
    "adjust_priors multiclass": lambda: fastcal.adjust_priors(PK, [0.1, 0.2, 0.3, 0.4], [0.25] * 4),
    "estimate_priors_em": lambda: fastcal.estimate_priors_em(PK, [0.25] * 4),
    "estimate_priors_em binary": lambda: fastcal.estimate_priors_em(P, 0.3),
    "estimate_priors_em binary f32 plain": lambda: fastcal.estimate_priors_em(P32, 0.3, accelerate=False),
    "multicalibration_error": lambda: fastcal.multicalibration_error(Y, P, SEG, numerical=["c"]),
    "multicalibration_error weighted f32": lambda: fastcal.multicalibration_error(
        Y32, P32, SEG, numerical=["c"], sample_weight=W, max_values_per_segment_feature=5),
    # the one-segment case of the multicalibration error's passes
    "ecce": lambda: fastcal.ecce(Y, P),
    "ecce weighted f32": lambda: fastcal.ecce(Y32, P32, sample_weight=W),
    "segment_report": lambda: fastcal.segment_report(Y, P, GROUPS),
    "segment_report weighted f32": lambda: fastcal.segment_report(Y32, P32, SEG["a"], sample_weight=W),
    "GroupedCalibrator fit": lambda: fastcal.GroupedCalibrator(fastcal.PlattScaling()).fit(P, Y, GROUPS,
                                                                                          sample_weight=W),
    # the weighted batched isotonic fit's sort of (group, cut score, position) keys, float32 scores
    "GroupedCalibrator isotonic fit weighted f32": lambda: fastcal.GroupedCalibrator(
        min_samples_per_group=500).fit(P32, Y32, GROUPS, sample_weight=W),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_bits_at_every_thread_count(name):
    _same_at_every_thread_count(CASES[name])


def _fitted(make, x, y, **fit):
    with num_threads(1):
        return make().fit(x, y, **fit)


PREDICTIONS = {
    "PlattScaling": lambda: (_fitted(fastcal.PlattScaling, P, Y), P),
    "BetaCalibration": lambda: (_fitted(fastcal.BetaCalibration, P, Y), P),
    "IsotonicRegression": lambda: (_fitted(fastcal.IsotonicRegression, P[:5000], Y[:5000]), P),
    "VennAbers": lambda: (_fitted(fastcal.VennAbers, P[:5000], Y[:5000]), P),
    "TemperatureScaling": lambda: (_fitted(fastcal.TemperatureScaling, ZK[:5000], YK[:5000]), ZK),
    "HistogramBinning": lambda: (_fitted(fastcal.HistogramBinning, P[:5000], Y[:5000]), P),
    "GroupedCalibrator": lambda: (_fitted(fastcal.GroupedCalibrator, P, Y, groups=GROUPS), P),
}


@pytest.mark.parametrize("name", sorted(PREDICTIONS))
def test_predictions_same_bits_at_every_thread_count(name):
    model, x = PREDICTIONS[name]()
    predict = model.predict_proba if name in ("VennAbers", "TemperatureScaling") else model.predict
    if name == "GroupedCalibrator":
        _same_at_every_thread_count(lambda: predict(x, GROUPS))
    else:
        _same_at_every_thread_count(lambda: predict(x))


def test_grouped_calibrator_fits_same_bits_at_every_thread_count():
    """Every group's isotonic fit (and the global one), on any thread count, from weighted rows."""
    def fit():
        model = fastcal.GroupedCalibrator(min_samples_per_group=500).fit(P, Y, GROUPS, sample_weight=W)
        assert len(model.groups_) > 10  # many groups, fitted on fastcal's threads
        return model  # compared by its fitted attributes, each calibrator's too

    _same_at_every_thread_count(fit)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", ["PlattScaling", "BetaCalibration", "TemperatureScaling", "VennAbers",
                                  "IsotonicRegression", "HistogramBinning"])
def test_fits_same_bits_at_every_thread_count(name, weighted):
    make = getattr(fastcal, name)
    x, y = (ZK, YK) if name == "TemperatureScaling" else (P, Y)
    fit = {"sample_weight": W[:len(y)]} if weighted else {}
    _same_at_every_thread_count(lambda: make().fit(x, y, **fit))


def test_task_bounds_depend_on_the_size_alone():
    assert _parallel.task_bounds(10) == [0, 10]
    assert _parallel.task_bounds(_parallel.PARALLEL_MIN_SIZE - 1) == [0, _parallel.PARALLEL_MIN_SIZE - 1]
    n = 10**7
    b = _parallel.task_bounds(n)
    assert b[0] == 0 and b[-1] == n and len(b) - 1 == n // _parallel.TASK_ROWS  # dozens of tasks
    assert max(np.diff(b)) - min(np.diff(b)) <= 1
    # items standing for many rows each: cut by the rows, never into more ranges than items
    assert _parallel.task_bounds(5, rows=n) == _parallel.split(5, 5)
    assert len(_parallel.task_bounds(1000, rows=n)) - 1 == n // _parallel.TASK_ROWS
    for t in THREADS:
        with num_threads(t):
            assert _parallel.task_bounds(n) == b


def test_parallel_for_runs_every_task_once_dynamically():
    n = 40 * _parallel.TASK_ROWS + 3
    seen = []

    def kernel(out, lo, hi):
        seen.append((lo, hi))
        out[lo:hi] += 1
        return hi - lo

    for t in THREADS:
        seen.clear()
        out = np.zeros(n, dtype=np.int64)
        with num_threads(t):
            got = _parallel.parallel_for(kernel, n, out)
        assert sum(got) == n and (out == 1).all()
        if t == 1:
            assert seen == [(0, n)]  # the serial twin: one call
        else:
            b = _parallel.task_bounds(n)
            assert sorted(seen) == list(zip(b[:-1], b[1:]))


def test_parallel_accumulate_buffers_at_most_one_per_thread():
    n = 30 * _parallel.TASK_ROWS + 5
    x = np.arange(n, dtype=np.int64) % 97

    def kernel(values, buf, lo, hi):
        np.add.at(buf, values[lo:hi], 1)

    expected = np.bincount(x, minlength=97)
    for t in THREADS:
        with num_threads(t):
            bufs = _parallel.parallel_accumulate(kernel, n, x, buffer=lambda: np.zeros(97, dtype=np.int64))
        assert 1 <= len(bufs) <= t
        assert (sum(bufs) == expected).all()
