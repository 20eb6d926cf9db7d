"""Worked example: undo negative undersampling of a rare-event classifier.

The study: 100,000 rows from ``sklearn.datasets.make_classification``
with 1% positives (plus 5% of labels flipped at random, so the positive rate is
about 3.4%), all positives and 10% of the negatives kept for training, a
logistic regression fitted on that sample and evaluated on all 100,000 rows.

Sampling: the negatives kept are ``round(rate * n_negatives)`` rows drawn
without replacement by ``numpy.random.default_rng(42).choice``, so the sample
holds exactly the fraction ``rate`` of the negatives (up to rounding), and the
correction uses that same ``rate``.

Trained on the sample, the model predicts probabilities for a population with
about 10 times more positives per negative than the real one: the mean
prediction is several times the true rate. :func:`fastcal.correct_negative_sampling`
brings it back to the true rate, and leaves the AUC unchanged, because the
correction is strictly increasing.

Run with ``python -m fastcal.examples.undersampling``. Needs scikit-learn.
"""

from __future__ import annotations

import numpy as np

from fastcal import correct_negative_sampling, negative_sampling_logit_offset

__all__ = ["run"]


def run(verbose=True, *, rate=0.1, seed=42, return_predictions=False, n_samples=100_000):
    """Run the study; return its figures as a dict.

    ``n_samples`` rows (100,000 in the study; the demo asks for fewer when
    its ``--n`` is smaller).

    Returns
    -------
    dict
        ``true_rate`` (positive rate of all rows), ``mean_before`` /
        ``mean_after`` (mean predicted probability on all rows before and after
        the correction), ``auc_before`` / ``auc_after``, ``mean_bias_shift``
        (mean prediction of the model whose intercept was shifted by
        :func:`fastcal.negative_sampling_logit_offset`), ``n_train`` (rows in
        the undersample), ``rate``; with ``return_predictions``, also ``y``
        (all labels), ``p_before`` and ``p_after`` (the predictions).
    """
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    X, y = make_classification(
        n_samples=n_samples,
        n_features=20,
        n_informative=10,
        n_redundant=5,
        weights=[0.99, 0.01],
        flip_y=0.05,
        random_state=42,
    )
    rng = np.random.default_rng(seed)
    negatives = np.flatnonzero(y == 0)
    kept = rng.choice(negatives, size=round(rate * negatives.size), replace=False)
    train = np.sort(np.concatenate([np.flatnonzero(y == 1), kept]))

    model = LogisticRegression(max_iter=1000).fit(X[train], y[train])
    p_before = model.predict_proba(X)[:, 1]
    p_after = correct_negative_sampling(p_before, rate)

    # The same correction folded into the intercept.
    model.intercept_ = model.intercept_ + negative_sampling_logit_offset(rate)
    p_shift = model.predict_proba(X)[:, 1]

    figures = {
        "true_rate": float(y.mean()),
        "mean_before": float(p_before.mean()),
        "mean_after": float(p_after.mean()),
        "auc_before": float(roc_auc_score(y, p_before)),
        "auc_after": float(roc_auc_score(y, p_after)),
        "mean_bias_shift": float(p_shift.mean()),
        "n_train": int(train.size),
        "rate": rate,
    }
    if return_predictions:
        figures.update(y=y, p_before=p_before, p_after=p_after)
    if verbose:
        print(f"negatives undersampled at r = {rate}: {train.size:,} training rows of {y.size:,}; "
              f"true positive rate {figures['true_rate']:.4f}")
        print(f"mean prediction: before {figures['mean_before']:.4f}, after {figures['mean_after']:.4f} "
              f"(intercept shifted: {figures['mean_bias_shift']:.4f}); AUC before / after "
              f"{figures['auc_before']:.4f} / {figures['auc_after']:.4f}")
    return figures


if __name__ == "__main__":
    run()
