"""
Calibrating an over-confident model
===================================

A model that claims ``sigmoid(s)`` while the truth is ``sigmoid(s / 2)`` is
over-confident: its probabilities are too close to 0 and 1. We calibrate it
with three methods on one half of the rows and compare reliability diagrams
on the other half.
"""

import matplotlib.pyplot as plt
import numpy as np

import fastcal
from fastcal.plot import reliability_diagram

rng = np.random.default_rng(0)
n = 40_000
s = rng.normal(0.0, 2.0, size=n)
y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.int8)
p = 1.0 / (1.0 + np.exp(-s))  # what the model claims

cal, test = slice(0, n // 2), slice(n // 2, n)

# %%
# Fit the calibrators on the calibration half
# --------------------------------------------
# Isotonic regression takes the probabilities as they are; Platt scaling is
# fitted on the logit of p (here it is then exactly the right model); beta
# calibration takes probabilities.

iso = fastcal.IsotonicRegression(out_of_bounds="clip").fit(p[cal], y[cal])
logit = np.log(p / (1.0 - p))
platt = fastcal.PlattScaling().fit(logit[cal], y[cal])
beta = fastcal.BetaCalibration().fit(p[cal], y[cal])

calibrated = {
    "model as is": p[test],
    "isotonic": iso.predict(p[test]),
    "Platt on logit(p)": platt.predict(logit[test]),
    "beta": beta.predict(p[test]),
}
for name, q in calibrated.items():
    ece = fastcal.expected_calibration_error(y[test], q)
    print(f"{name:18s} ECE {ece:.4f}")

# %%
# Binned reliability diagrams
# ---------------------------
# One panel per method, so that curves that lie on each other stay readable.
# The legend gives each curve's ECE.

fig, axes = plt.subplots(2, 2, figsize=(9, 8), sharex=True, sharey=True)
for ax, (name, q) in zip(axes.flat, calibrated.items()):
    reliability_diagram(y[test], {name: q}, n_bins=15, ax=ax,
                        show_histogram=False, title=name)
fig.tight_layout()

# %%
# The same without bins: CORP
# ---------------------------
# The CORP diagram is the isotonic recalibration of the predictions, with a
# 90% consistency band: where the curve of a calibrated model would lie.

fig, (ax, hist_ax) = reliability_diagram(
    y[test], {"model as is": p[test], "isotonic": calibrated["isotonic"]},
    method="corp", n_resamples=100, random_state=0,
)
