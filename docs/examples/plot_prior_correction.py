"""
Undoing negative undersampling
==============================

Rare positives are often modelled on a sample that keeps every positive and
only a fraction ``r`` of the negatives. The model's probabilities then
overstate the positive rate by a factor that Bayes' rule undoes exactly:
``p / (p + (1 - p) / r)``. The ranking, and so the AUC, is unchanged.
"""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import fastcal
from fastcal.plot import probability_histogram, reliability_diagram

X, y = make_classification(n_samples=60_000, n_features=10,
                           weights=[0.97, 0.03], flip_y=0.01,
                           random_state=0)

# Keep every positive and 10% of the negatives for training.
rate = 0.1
rng = np.random.default_rng(0)
keep = (y == 1) | (rng.random(y.size) < rate)
model = LogisticRegression(max_iter=1000).fit(X[keep], y[keep])

p = model.predict_proba(X)[:, 1]
q = fastcal.correct_negative_sampling(p, rate)
print(f"true rate {y.mean():.4f}")
print(f"mean prediction: before {p.mean():.4f}, after {q.mean():.4f}")
auc_p, auc_q = fastcal.roc_auc_score(y, p), fastcal.roc_auc_score(y, q)
print(f"AUC: before {auc_p:.4f}, after {auc_q:.4f}")

# %%
# The predictions before and after the correction, and where the true rate is.

fig, ax = probability_histogram({"before": p, "after": q},
                                base_rate=y.mean(), log=True)

# %%
# Reliability, on quantile bins so that every bin holds data.

fig, (ax, hist_ax) = reliability_diagram(
    y, {"before": p, "after": q}, n_bins=10, strategy="quantile")
