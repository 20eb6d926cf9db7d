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
