"""
Estimating shifted class priors
===============================

A model trained where its four classes are equally common is deployed where
they are not. From its probabilities on an unlabelled target sample and a
labelled held-out source sample, :func:`fastcal.estimate_label_shift`
estimates the target's priors: by EM on posteriors calibrated with
bias-corrected temperature scaling (the default), or by black-box shift
estimation (BBSE), with bootstrap intervals.
"""

import matplotlib.pyplot as plt
import numpy as np

import fastcal

rng = np.random.default_rng(0)
k = 4


def model_outputs(y):
    # an over-confident model with a bias towards the last class
    z = rng.normal(size=(y.size, k)) + 1.5 * np.eye(k)[y]
    z = 2.0 * z + np.array([-0.6, -0.2, 0.2, 0.6])
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


y_source = rng.integers(0, k, 5000)
proba_source = model_outputs(y_source)
truth = np.array([0.55, 0.25, 0.15, 0.05])
proba_target = model_outputs(rng.choice(k, size=5000, p=truth))

runs = {
    "EM on BCTS": dict(method="em"),
    "EM, uncalibrated": dict(method="em", calibrator=None),
    "BBSE (hard)": dict(method="bbse"),
    "BBSE (soft)": dict(method="bbse-soft"),
}

# %%
# Each estimate with its 95% bootstrap interval, against the true priors.

fig, ax = plt.subplots(figsize=(7, 4))
x = np.arange(k)
for i, (name, kwargs) in enumerate(runs.items()):
    res = fastcal.estimate_label_shift(y_source, proba_source, proba_target,
                                       n_bootstrap=200, random_state=0, **kwargs)
    err = np.abs(res.priors - truth).mean()
    ax.errorbar(x + 0.15 * (i - 1.5), res.priors,
                yerr=[res.priors - res.priors_low, res.priors_high - res.priors],
                fmt="o", capsize=3, label=f"{name} (mean abs. error {err:.3f})")
ax.scatter(x, truth, marker="_", s=600, color="black", label="truth", zorder=3)
ax.set_xticks(x, [f"class {j}" for j in x])
ax.set_ylabel("prior in the target population")
ax.legend(fontsize=8)
fig.tight_layout()
