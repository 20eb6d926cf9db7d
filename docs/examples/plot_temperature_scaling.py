"""
Temperature scaling of a multiclass model
=========================================

A multiclass model whose logits are three times too large is over-confident.
Temperature scaling fits one number, the temperature ``T``, and divides the
logits by it: the most probable class never changes, the confidence does.
We compare the top-label reliability before and after, binned and smoothed.
"""

import numpy as np

import fastcal
from fastcal.plot import reliability_diagram

rng = np.random.default_rng(0)
n, k = 20_000, 5
true_logits = rng.normal(0.0, 1.5, size=(n, k))
true_p = np.exp(true_logits - true_logits.max(axis=1, keepdims=True))
true_p /= true_p.sum(axis=1, keepdims=True)
# Draw each row's class from its true probabilities.
u = rng.random(n)[:, None]
y = np.minimum((u > np.cumsum(true_p, axis=1)).sum(axis=1), k - 1)
logits = 3.0 * true_logits  # the model is three times too sure

ts = fastcal.TemperatureScaling().fit(logits[: n // 2], y[: n // 2])
print(f"fitted temperature {ts.temperature_:.3f} (the truth: 3)")

test_logits, y_test = logits[n // 2:], y[n // 2:]
P_raw = np.exp(test_logits - test_logits.max(axis=1, keepdims=True))
P_raw /= P_raw.sum(axis=1, keepdims=True)
P_cal = ts.predict_proba(test_logits)
labels = np.arange(k)
for name, P in {"raw": P_raw, "temperature": P_cal}.items():
    ece = fastcal.expected_calibration_error(y_test, P, n_bins=15,
                                             labels=labels)
    loss = fastcal.log_loss(y_test, P, labels=labels)
    print(f"{name:12s} top-label ECE {ece:.4f}, log loss {loss:.4f}")

# %%
# Top-label reliability: the largest probability of each row against whether
# its class is the true one. The confidences are at least 1/k = 0.2 and
# the raw model's pile up near 1, so quantile bins (equal counts) keep every
# point on enough rows.

models = {"raw": P_raw, "temperature": P_cal}
fig, (ax, hist_ax) = reliability_diagram(y_test, models, n_bins=15,
                                         strategy="quantile", labels=labels)

# %%
# The smooth version (smooth ECE, Błasiok & Nakkiran 2023) needs no bins.
# The histogram shows where the data are: where there are none (below 0.2,
# and below about 0.25 for the calibrated model) the smoothed curve has no
# data to follow, so read it only above the histogram's support.

fig, (ax, hist_ax) = reliability_diagram(y_test, models, method="smooth",
                                         labels=labels)
