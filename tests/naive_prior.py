"""Naive NumPy references for fastcal.prior (the textbook formulas, no care for speed or edge cases)."""

from __future__ import annotations

import numpy as np


def naive_correct_negative_sampling(p, rate):
    """p / (p + (1 - p) / r), in float64."""
    p = np.asarray(p, dtype=np.float64)
    return p / (p + (1.0 - p) / rate)


def _as_vector(prior):
    prior = np.asarray(prior, dtype=np.float64)
    return np.array([1.0 - prior, prior]) if prior.ndim == 0 else prior


def naive_adjust_priors(proba, train_priors, new_priors):
    """Saerens et al. (2002) with known priors: reweight by new/train and renormalise each row."""
    train, new = _as_vector(train_priors), _as_vector(new_priors)
    proba = np.asarray(proba, dtype=np.float64)
    w = new / train
    if proba.ndim <= 1:
        num = w[1] * proba
        return num / (num + w[0] * (1.0 - proba))
    q = proba * w
    return q / q.sum(axis=1, keepdims=True)


def naive_estimate_priors_em(proba, train_priors, max_iter=1000, tol=1e-8):
    """The EM loop of Saerens et al. (2002), written directly: returns (priors, proba, n_iter, converged)."""
    train = _as_vector(train_priors)
    proba = np.asarray(proba, dtype=np.float64)
    binary = proba.ndim == 1
    P = np.column_stack([1.0 - proba, proba]) if binary else proba
    pi = train.copy()
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        q = P * (pi / train)
        q /= q.sum(axis=1, keepdims=True)
        new = q.mean(axis=0)
        new /= new.sum()
        delta = np.max(np.abs(new - pi))
        pi = new
        if delta <= tol:
            converged = True
            break
    q = P * (pi / train)
    q /= q.sum(axis=1, keepdims=True)
    return pi, (q[:, 1] if binary else q), n_iter, converged
