"""One reading of class labels for every function that takes an (n, k) matrix (``fastcal._core.labels``).

The columns are the classes in sorted order: those of ``labels``, else the
distinct labels of ``y``, which must then be k. The same data must give the
same answer whatever the labels are called, and a ``y`` that lacks a class
must be refused without ``labels`` by every function alike (no function may
fall back on reading labels as column indices: 1-based labels without the
last class would be misread).
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fastcal

def _terms(d):
    return np.array([d.score, d.miscalibration, d.discrimination, d.uncertainty])


FUNCS = {
    "log_loss": lambda y, P, **kw: fastcal.log_loss(y, P, **kw),
    "brier_score_loss": lambda y, P, **kw: fastcal.brier_score_loss(y, P, **kw),
    "expected_calibration_error": lambda y, P, **kw: fastcal.expected_calibration_error(y, P, **kw),
    "calibration_curve": lambda y, P, **kw: np.concatenate(fastcal.calibration_curve(y, P, **kw)),
    "score_decomposition": lambda y, P, **kw: _terms(fastcal.score_decomposition(y, P, **kw)),
    "corp_reliability": lambda y, P, **kw: fastcal.corp_reliability(y, P, **kw).y,
    "smooth_ece": lambda y, P, **kw: fastcal.smooth_ece(y, P, **kw).ece,
    # scikit-learn's roc_auc_score refuses unsorted labels (the last test's warning is an error there).
    "roc_auc_score": lambda y, P, **kw: fastcal.roc_auc_score(y, P, multi_class="ovr", **kw),
}


def _problem(k, seed, n=400):
    """Class codes 0 .. k - 1 and (n, k) probabilities whose argmax is the class 60% of the time."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k), size=n)
    return np.where(rng.random(n) < 0.6, P.argmax(axis=1), rng.integers(0, k, n)), P


@pytest.mark.parametrize("name", FUNCS)
def test_names_of_the_classes_do_not_matter(name):
    f = FUNCS[name]
    k = 4
    codes, P = _problem(k, seed=1)
    expected = f(codes, P)
    names = np.array(["ant", "bee", "cat", "dog"])
    for y, labels in ((codes + 1, [1, 2, 3, 4]), (names[codes], names), (codes * 10 - 5, [-5, 5, 15, 25])):
        assert_array_equal(f(y, P), expected)
        assert_array_equal(f(y, P, labels=labels), expected)
    assert_array_equal(f(codes, P, labels=range(k)), expected)


@pytest.mark.parametrize("name", FUNCS)
def test_a_missing_class_needs_labels_everywhere(name):
    f = FUNCS[name]
    k = 4
    codes, P = _problem(k, seed=2)
    codes[codes == k - 1] = 0  # the last class is absent
    for y in (codes, codes + 1):
        with pytest.raises(ValueError, match=r"has 3 classes \(\{.*\}\) but .* has 4 columns.*pass labels"):
            f(y, P)
    if name == "roc_auc_score":  # an absent class has no AUC: an error here (README), NaN in scikit-learn
        with pytest.raises(ValueError, match=r"ROC AUC of class \{4\} against the rest is not defined"):
            f(codes + 1, P, labels=[1, 2, 3, 4])
        return
    expected = f(codes, P, labels=range(k))
    assert_array_equal(f(codes + 1, P, labels=[1, 2, 3, 4]), expected)
    # Unsorted labels: the columns are still the sorted classes, with scikit-learn's warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_array_equal(f(codes, P, labels=[3, 2, 1, 0]), expected)
    assert [str(w.message)[:22] for w in caught] == ["labels are not sorted:"]
    # The warning points at the line that called fastcal (the lambda's).
    assert (caught[0].filename, caught[0].lineno) == (__file__, f.__code__.co_firstlineno)
