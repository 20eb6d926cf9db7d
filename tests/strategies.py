"""Hypothesis strategies shared by the test modules."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DTYPES = st.sampled_from([np.float32, np.float64])


@st.composite
def scores_and_labels(draw, min_size=1, max_size=300, binary=True, weighted=False, dtype=None):
    """``(x, y, w)``: scores with optional heavy ties, labels (0/1 or real) and optional weights.

    Ties come from drawing the scores from a small pool of values; ``w`` is
    None or positive weights (with some zeros when ``weighted == "zeros"``).
    """
    n = draw(st.integers(min_size, max_size))
    dtype = draw(DTYPES) if dtype is None else dtype
    n_distinct = draw(st.sampled_from([1, 2, 5, 50, 10**6]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1.0, 1e-3, 1e3]))
    pool = rng.normal(size=min(n_distinct, max(n, 1))) * scale
    x = rng.choice(pool, size=n).astype(dtype)
    if binary:
        p = 1 / (1 + np.exp(-x.astype(np.float64) / scale))
        y = (rng.random(n) < p).astype(draw(st.sampled_from([np.float64, np.int64, np.uint8, bool])))
    else:
        y = draw(hnp.arrays(np.float64, n, elements=st.floats(-1e3, 1e3, allow_nan=False)))
    w = None
    if weighted:
        w = rng.uniform(0.1, 3.0, n)
        if weighted == "zeros" and n > 1:
            w[rng.random(n) < 0.2] = 0.0
            w[0] = 1.0
    return x, y, w


@st.composite
def probabilities(draw, min_size=1, max_size=400, weighted=False):
    """``(y, p, w)``: probabilities with ties, values exactly on bin edges, 0 and 1; labels; weights."""
    n = draw(st.integers(min_size, max_size))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["continuous", "few", "edges", "extremes", "concentrated"]))
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        p = rng.random(n)
    elif kind == "few":
        p = rng.choice(rng.random(draw(st.integers(1, 4))), n)
    elif kind == "edges":  # multiples of 1/k: exactly on uniform bin edges
        k = draw(st.sampled_from([2, 3, 5, 10, 15]))
        p = rng.integers(0, k + 1, n) / k
    elif kind == "extremes":
        p = rng.choice([0.0, 1.0, 0.5, 1e-300, 1 - 1e-16, 1e-8], n)
    else:
        p = rng.random(n) * 1e-3
    p = p.astype(dtype)
    label_dtype = draw(st.sampled_from([np.uint8, np.int64, bool, np.float64]))
    y = (rng.random(n) < p.astype(np.float64) * 0.8 + 0.1).astype(label_dtype)
    w = None
    if weighted:
        w = rng.uniform(0.1, 3.0, n)
        if weighted == "zeros" and n > 1:
            w[rng.random(n) < 0.3] = 0.0
            w[0] = 1.0
    return y, p, w


#: Label sets of k classes, in sorted order: what ``class_probabilities`` names the classes with.
LABEL_KINDS = ("range", "gapped", "wide", "strings", "floats")


def class_labels(kind, k, rng):
    """``k`` sorted, distinct labels: 0..k-1, gapped or negative integers, integers wider apart than any
    sample count, strings, or integral floats."""
    if kind == "range":
        return np.arange(k)
    if kind == "gapped":
        return np.sort(rng.choice(np.arange(-40, 40), k, replace=False))
    if kind == "wide":
        return np.arange(k, dtype=np.int64) * 10**9 - 7
    if kind == "strings":
        return np.array(sorted(rng.choice(["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen"], k, replace=False)))
    return np.arange(k, dtype=np.float64) * 2.0 - 1.0


@st.composite
def class_probabilities(draw, min_size=1, max_size=300, min_classes=2, max_classes=6, normalised=False):
    """``(y, P, w, labels)``: an (n, k) matrix of class probabilities, labels, weights or None, and the
    ``labels`` argument (None, or every class in sorted order; always given when ``y`` lacks a class).

    Rows are softmaxes of Gaussian logits (of several scales), repeated rows (ties), one-hot and near one-hot
    rows (exact 0 and 1), or, unless ``normalised``, rows summing to 0.9 instead of 1; labels are drawn from
    the rows (so that scores carry information) or uniformly.
    """
    n = draw(st.integers(min_size, max_size))
    k = draw(st.integers(min_classes, max_classes))
    dtype = draw(DTYPES)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["softmax", "ties", "extremes"] + ([] if normalised else ["unnormalised"])))
    logits = rng.normal(size=(n, k)) * draw(st.sampled_from([0.1, 1.0, 5.0, 40.0]))
    if kind == "ties":
        logits = np.round(logits[rng.integers(0, max(1, min(n, 4)), n)], 1)
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    if kind == "extremes":
        hot = np.eye(k)[rng.integers(0, k, n)]
        P = np.where(rng.random((n, 1)) < 0.5, hot, 0.9 * hot + 0.1 / k)
    if kind == "unnormalised":
        P *= 0.9
    P = P.astype(dtype)
    if draw(st.booleans()):
        cum = np.cumsum(P.astype(np.float64), axis=1)
        codes = np.minimum((rng.random((n, 1)) * cum[:, -1:] > cum).sum(axis=1), k - 1)
    else:
        codes = rng.integers(0, k, n)
    classes = class_labels(draw(st.sampled_from(LABEL_KINDS)), k, rng)
    y = classes[codes]
    all_present = np.unique(codes).size == k
    labels = None if all_present and draw(st.booleans()) else classes.tolist()
    w = rng.uniform(0.1, 3.0, n) if draw(st.booleans()) else None
    return y, P, w, labels
