"""Kernel micro-benchmarks (pytest-benchmark): the engines under the public functions, one call each.

``make bench-kernels`` times them (``--benchmark-enable``) and writes
``benchmarks/results/kernels.json``; ``make test`` runs each once with the
timing disabled (``--benchmark-disable`` in pyproject's addopts), so they
cannot rot. The side-by-side comparisons with the peers are
``benchmarks/compare*.py`` (``make bench``); the asv suite is
``benchmarks/bench_*.py`` (``make asv``).
"""

import numpy as np
import pytest

from fastcal import _binning, correct_negative_sampling, platt
from fastcal.isotonic import pav_fit

N = 1 << 20


@pytest.fixture(scope="module", params=[np.float64, np.float32], ids=["float64", "float32"])
def data(request):
    rng = np.random.default_rng(0)
    s = rng.normal(0, 2, N).astype(request.param)
    y = (rng.random(N) < 1 / (1 + np.exp(-s / 2))).astype(np.uint8)
    p = (1 / (1 + np.exp(-s))).astype(request.param)
    return s, y, p


def test_pav(benchmark, data):
    s, y, _ = data
    order = np.argsort(s, kind="stable")
    xs, ys = np.ascontiguousarray(s[order]), np.ascontiguousarray(y[order])
    sw, *_ = benchmark(pav_fit, xs, ys, None, 1.0)
    assert 0 < sw.shape[0] <= N


def test_newton_pass(benchmark, data):
    s, y, _ = data
    run_pass = platt.array_pass(s, y, None)
    targets = (1.0, 0.0, 0.0, 1.0)
    sums = benchmark(run_pass, 0.0, 0.25, -1.0, 0.0, targets, True)
    assert np.all(np.isfinite(sums)) and sums[5] > 0  # curvature


def test_prior_correction_in_place(benchmark, data):
    _, _, p = data
    q = p.copy()
    out = benchmark(correct_negative_sampling, q, 0.999999, out=q)
    assert out is q


def test_bin_stats(benchmark, data):
    _, y, p = data
    edges = np.linspace(0.0, 1.0, 11)
    table = benchmark(_binning.bin_stats, p, y, None, edges, brier=True)
    assert table[:, _binning.W].sum() == N
