"""asv benchmarks for fastcal.prior (prior correction), with the NumPy expressions as peers.

Each class builds its data and warms the JIT in ``setup``. Runs directly too:
``python -m benchmarks.bench_prior`` times every benchmark once.
"""

from __future__ import annotations

import warnings

import numpy as np

from fastcal import adjust_priors, correct_negative_sampling, estimate_priors_em
from fastcal.prior import ConvergenceWarning

from ._harness import DTYPES, QUICK, SIZES, miscalibrated_scores, warm_rows

RATE = 0.1
K_CLASSES = 10
#: (n, k) matrices: 10^8 elements at most, like the largest 1-D case.
ROWS = [10**2, 10**3] if QUICK else [10**3, 10**5, 10**7]


def _proba_matrix(n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    return logits.astype(dtype)


class TimeCorrectNegativeSampling:
    params = [SIZES, DTYPES]
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.p, _ = miscalibrated_scores(n, dtype)
        self.out = self.p.copy()  # probabilities: time_fastcal_in_place corrects it with rate 1 (no change)
        m = warm_rows(n)
        correct_negative_sampling(self.p[:m], RATE)
        correct_negative_sampling(self.p[:m], RATE, out=self.out[:m])
        correct_negative_sampling(self.out[:m], 1.0, out=self.out[:m])  # in place: another kernel

    def time_fastcal(self, n, dtype):
        correct_negative_sampling(self.p, RATE)

    def time_fastcal_out(self, n, dtype):
        correct_negative_sampling(self.p, RATE, out=self.out)

    def time_fastcal_in_place(self, n, dtype):
        correct_negative_sampling(self.out, 1.0, out=self.out)  # rate 1 keeps the data unchanged

    def time_numpy(self, n, dtype):
        p = self.p
        p / (p + (1 - p) / RATE)

    def time_copy(self, n, dtype):
        np.copyto(self.out, self.p)


class TimeAdjustPriorsBinary:
    params = [SIZES, DTYPES]
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.p, _ = miscalibrated_scores(n, dtype, seed=1)
        adjust_priors(self.p[: warm_rows(n)], 0.5, 0.05)

    def time_fastcal(self, n, dtype):
        adjust_priors(self.p, 0.5, 0.05)

    def time_numpy(self, n, dtype):
        p = self.p
        w1, w0 = 0.05 / 0.5, 0.95 / 0.5
        w1 * p / (w1 * p + w0 * (1 - p))


class TimeAdjustPriorsMulticlass:
    params = [ROWS, DTYPES]
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.proba = _proba_matrix(n, K_CLASSES, dtype)
        rng = np.random.default_rng(2)
        self.train = rng.dirichlet(np.ones(K_CLASSES))
        self.new = rng.dirichlet(np.ones(K_CLASSES))
        self.w = (self.new / self.train).astype(dtype)
        adjust_priors(self.proba[: warm_rows(n)], self.train, self.new)

    def time_fastcal(self, n, dtype):
        adjust_priors(self.proba, self.train, self.new)

    def time_numpy(self, n, dtype):
        q = self.proba * self.w
        q /= q.sum(axis=1, keepdims=True)


class TimeEstimatePriorsEM:
    params = [ROWS, DTYPES]
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.proba = _proba_matrix(n, K_CLASSES, dtype, seed=3)
        self.train = np.full(K_CLASSES, 1.0 / K_CLASSES)
        self._em(self.proba[: warm_rows(n)])

    def _em(self, proba):
        with warnings.catch_warnings():  # a fixed number of iterations: no convergence expected
            warnings.simplefilter("ignore", ConvergenceWarning)
            estimate_priors_em(proba, self.train, max_iter=20, tol=1e-300)

    def time_fastcal_20_iterations(self, n, dtype):
        self._em(self.proba)

    def time_numpy_20_iterations(self, n, dtype):
        P, train = self.proba, self.train
        pi = train
        for _ in range(20):
            q = P * (pi / train)
            q /= q.sum(axis=1, keepdims=True)
            pi = q.mean(axis=0)


if __name__ == "__main__":  # pragma: no cover - manual run
    import time

    for cls in [TimeCorrectNegativeSampling, TimeAdjustPriorsBinary, TimeAdjustPriorsMulticlass, TimeEstimatePriorsEM]:
        for n in cls.params[0][:2]:
            for dtype in cls.params[1]:
                bench = cls()
                bench.setup(n, dtype)
                for name in [m for m in dir(bench) if m.startswith("time_")]:
                    t0 = time.perf_counter()
                    getattr(bench, name)(n, dtype)
                    print(f"{cls.__name__}.{name}(n={n}, {dtype}): {time.perf_counter() - t0:.6f} s")
