"""Two papers' claims reproduced in their own synthetic settings: RLLS's weights (Azizzadenesheli et al. 2019) and
Dirichlet calibration with ODIR (Kull et al. 2019).

``python -m benchmarks.multiclass_papers [--shifts 100] [--replicates 40]`` runs both studies and prints their
tables:

- :func:`rlls_errors`: the mean squared error of the importance weights ``w = q / p`` estimated by hard and soft
  BBSE and RLLS (and RLLS without its regulariser) on a miscalibrated k = 10 model, a small source sample and
  Dirichlet-shifted target priors;
- :func:`dirichlet_losses`: the held-out log loss and classwise-ECE of temperature, vector and matrix scaling and of
  Dirichlet calibration (unregularised, and with ODIR chosen by cross-validation) on scores whose class-conditional
  distributions are Dirichlet, against the Bayes posterior.

:func:`rlls_guide_sentences` and :func:`dirichlet_guide_sentences` make the user guide's sentences from the studies'
results; ``tests/test_multiclass_papers.py`` checks the claims that hold with margins from the Monte-Carlo error.

References
----------
Azizzadenesheli, K., Liu, A., Yang, F. and Anandkumar, A. (2019). Regularized Learning for Domain Adaptation under
Label Shifts. ICLR.

Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song, H. and Flach, P. (2019). Beyond temperature
scaling: Obtaining well-calibrated multi-class probabilities with Dirichlet calibration. NeurIPS.

Lipton, Z. C., Wang, Y.-X. and Smola, A. (2018). Detecting and Correcting for Label Shift with Black Box
Predictors. ICML.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy.special import gammaln

import fastcal
from fastcal.label_shift._rlls import rlls_delta

from .label_shift_study import model_outputs

# ---------------------------------------------------------------------------------------------------------------
# RLLS (Azizzadenesheli et al. 2019)
# ---------------------------------------------------------------------------------------------------------------

#: Classes of the label-shift study (the paper's CIFAR-10 and MNIST have ten).
K_SHIFT = 10
#: The source sample's size (small: the paper's regime where C is uncertain) and the targets' sizes.
N_SOURCE = 1000
N_TARGETS = (200, 1000, 5000)
#: The Dirichlet concentrations of the target priors (smaller: larger shifts).
ALPHAS = (0.1, 1.0)

#: The weight estimators compared, with the arguments of :func:`fastcal.estimate_label_shift` (no calibrator; RLLS at
#: its default ``rlls_alpha``, and at 0: the same constrained problem without the regulariser).
WEIGHT_ESTIMATORS = {
    "BBSE (hard)": dict(method="bbse"),
    "RLLS (hard)": dict(method="rlls"),
    "RLLS (hard), Delta=0": dict(method="rlls", rlls_alpha=0.0),
    "BBSE (soft)": dict(method="bbse-soft"),
    "RLLS (soft)": dict(method="rlls-soft"),
}


def shift_sample(priors, n, rng):
    """``(y, p)``: ``n`` rows of classes drawn from ``priors`` and the miscalibrated model's probabilities
    (:func:`benchmarks.label_shift_study.model_outputs`, here with ``len(priors)`` classes)."""
    y = rng.choice(len(priors), size=n, p=priors)
    return y, model_outputs(y, rng, len(priors))


def rlls_errors(n_shifts=100, *, alphas=ALPHAS, n_source=N_SOURCE, n_targets=N_TARGETS, k=K_SHIFT, seed=0,
                estimators=None):
    r"""The squared error of the importance weights of BBSE and RLLS under Dirichlet-shifted target priors.

    Azizzadenesheli et al.'s (2019) setting: a fixed black-box classifier, a labelled source sample with uniform
    priors :math:`p`, and unlabelled target samples whose priors :math:`q` are drawn from a symmetric
    Dirichlet(alpha) (smaller alpha: larger shifts, many classes almost absent); the importance weights are
    :math:`w = q / p`. Their claim (their experiments on CIFAR-10 and MNIST): RLLS's weights have a lower mean
    squared error than BBSE's, most of all when the samples are small (and the weighted ERM on them is better;
    not reproduced here: this study measures the weights only). Here the classifier is the over-confident,
    biased k-class model of :mod:`benchmarks.label_shift_study` (about half of its predictions right for
    k = 10), the source has ``n_source`` rows and each shift one target sample of every size in ``n_targets``
    (the same source sample and priors for all sizes). RLLS runs at fastcal's default regulariser,
    ``rlls_alpha=0.01`` times the paper's bound on the error of C (:func:`fastcal.label_shift._rlls.rlls_delta`),
    as in the authors' code; "RLLS (hard), Delta=0" is the same constrained problem without the regulariser.

    Parameters
    ----------
    n_shifts : int
        Target priors drawn per alpha.
    alphas : sequence of float
        The Dirichlet concentrations.
    n_source : int
        Rows of the source sample (drawn anew for each shift).
    n_targets : sequence of int
        Rows of the target samples.
    k : int
        Classes.
    seed : int
        The random numbers'.
    estimators : dict or None
        ``{name: keyword arguments of fastcal.estimate_label_shift}``; None: :data:`WEIGHT_ESTIMATORS`.

    Returns
    -------
    dict
        ``{(alpha, n_target): {name: ndarray of shape (n_shifts,)}}``: per shift, the mean over the classes of
        :math:`(\hat w_j - w_j)^2`, with :math:`\hat w` the result's ``weights`` and :math:`w = q / p`.
    """
    estimators = WEIGHT_ESTIMATORS if estimators is None else estimators
    rng = np.random.default_rng(seed)
    source_priors = np.full(k, 1.0 / k)
    out = {(a, nt): {name: np.empty(n_shifts) for name in estimators} for a in alphas for nt in n_targets}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # conditioning warnings (a small source sample)
        for a in alphas:
            for s in range(n_shifts):
                ys, ps = shift_sample(source_priors, n_source, rng)
                q = rng.dirichlet(np.full(k, a))
                w = q / source_priors
                for nt in n_targets:
                    _, pt = shift_sample(q, nt, rng)
                    for name, kwargs in estimators.items():
                        est = fastcal.estimate_label_shift(ys, ps, pt, calibrator=None, **kwargs).weights
                        out[a, nt][name][s] = np.mean((est - w) ** 2)
    return out


def paired(a, b):
    """``(mean, standard error)`` of the paired differences ``a - b`` (one per independent replicate)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.shape[0]))


def smallest_singular_value(k=K_SHIFT, n=200_000, seed=0):
    """The smallest singular value of the model's joint confusion matrix ``C[i, j] = P_s(yhat = i, y = j)`` under
    uniform source priors, from ``n`` rows: RLLS's solution is BBSE's (when that has w >= 0) exactly when its
    regulariser Delta is at most the sample C's smallest singular value (the subgradient condition at the kink)."""
    rng = np.random.default_rng(seed)
    y, p = shift_sample(np.full(k, 1.0 / k), n, rng)
    C = np.bincount(p.argmax(axis=1) * k + y, minlength=k * k).reshape(k, k) / n
    return float(np.linalg.svd(C, compute_uv=False).min())


def rlls_table(errors):
    """The printed table of :func:`rlls_errors`: the mean squared error of each estimator, and BBSE's less RLLS's
    (hard) with its standard error."""
    names = list(next(iter(errors.values())))
    lines = [f"{'alpha':>5s} {'n_target':>8s} " + " ".join(f"{n:>20s}" for n in names)
             + f" {'BBSE - RLLS (hard)':>22s}"]
    for (a, nt), errs in errors.items():
        gain, se = paired(errs["BBSE (hard)"], errs["RLLS (hard)"])
        lines.append(f"{a:5g} {nt:8d} " + " ".join(f"{errs[n].mean():20.4f}" for n in names)
                     + f" {gain:13.4f} +- {se:.4f}")
    return "\n".join(lines)


def rlls_guide_sentences(errors, n_source=N_SOURCE, k=K_SHIFT):
    """The sentences for docs/user_guide/label_shift.md made from :func:`rlls_errors` (its default run): the
    hard estimators' errors at the largest shift and the smallest and largest target, and at alpha = 1."""
    alphas = sorted({a for a, _ in errors})
    sizes = sorted({nt for _, nt in errors})
    small, large, lo, hi = alphas[0], alphas[-1], sizes[0], sizes[-1]
    n_shifts = next(iter(errors[small, lo].values())).shape[0]
    at = {key: {n: float(v.mean()) for n, v in errs.items()} for key, errs in errors.items()}
    g_lo, se_lo = paired(errors[small, lo]["BBSE (hard)"], errors[small, lo]["RLLS (hard)"])
    g_hi, se_hi = paired(errors[small, hi]["BBSE (hard)"], errors[small, hi]["RLLS (hard)"])
    g_eq, se_eq = paired(errors[large, lo]["BBSE (hard)"], errors[large, lo]["RLLS (hard)"])
    g_0, se_0 = paired(errors[small, lo]["BBSE (hard)"], errors[small, lo]["RLLS (hard), Delta=0"])
    agree = "agree" if abs(g_eq) <= 2.0 * se_eq else "differ"
    delta = rlls_delta(k, n_source)
    return (f"With {n_source} source rows of a ten-class model and target priors drawn from a Dirichlet({small:g}) "
            f"({n_shifts} shifts), the mean squared error of the weights q / p is "
            f"{at[small, lo]['RLLS (hard)']:.3f} for RLLS against {at[small, lo]['BBSE (hard)']:.3f} for BBSE with "
            f"{lo} target rows (a paired difference of {g_lo:.3f} +- {se_lo:.3f}), and "
            f"{at[small, hi]['RLLS (hard)']:.3f} against {at[small, hi]['BBSE (hard)']:.3f} with {hi} "
            f"({g_hi:.3f} +- {se_hi:.3f}); for the soft estimators {at[small, lo]['RLLS (soft)']:.3f} against "
            f"{at[small, lo]['BBSE (soft)']:.3f} with {lo}. The gain comes from RLLS's constraint w >= 0 (BBSE clips "
            f"its negative weights afterwards), not from its regulariser: with rlls_alpha=0 the error is "
            f"{at[small, lo]['RLLS (hard), Delta=0']:.3f} ({g_0:.3f} +- {se_0:.3f} below BBSE's). The default "
            f"regulariser, Delta = {delta:.4f}, is below "
            f"the smallest singular value of the confusion matrix C ({smallest_singular_value(k):.3f}), and then "
            f"RLLS returns BBSE's weights whenever these are all non-negative: under milder shifts, a "
            f"Dirichlet({large:g}), the two {agree} ({at[large, lo]['RLLS (hard)']:.3f} against "
            f"{at[large, lo]['BBSE (hard)']:.3f} with {lo} target rows, a difference of {g_eq:.3f} +- {se_eq:.3f})")


# ---------------------------------------------------------------------------------------------------------------
# Dirichlet calibration (Kull et al. 2019)
# ---------------------------------------------------------------------------------------------------------------

#: Classes, calibration and test rows of the Dirichlet study.
KS = (3, 5, 10)
N_CAL = 2000
N_TEST = 20_000
#: The ODIR penalty's grid (lambda = mu) and the folds of its cross-validation on the calibration set.
ODIR_GRID = (1e-4, 1e-3, 1e-2, 1e-1)
ODIR_FOLDS = 3
#: The methods of :func:`dirichlet_losses`, in the printed order.
CALIBRATION_METHODS = ("uncalibrated", "temperature", "vector", "matrix", "Dirichlet", "Dirichlet ODIR",
                       "Bayes (true map)")


def dirichlet_problem(k, rng):
    """``(A, priors)``: the class-conditional Dirichlet parameters (row j: those of class j's scores) and the priors.

    The off-diagonal ``A[j, i]`` are U(0.5, 1.5), the diagonal that plus U(1.5, 4) (each class's scores lean towards
    it, by an amount of its own); the priors are a Dirichlet(5, ..., 5) draw."""
    A = rng.uniform(0.5, 1.5, size=(k, k)) + np.diag(rng.uniform(1.5, 4.0, size=k))
    return A, rng.dirichlet(np.full(k, 5.0))


def dirichlet_sample(A, priors, n, rng):
    """``(y, s)``: ``n`` classes drawn from ``priors`` and scores ``s | y = j ~ Dirichlet(A[j])``."""
    k = priors.shape[0]
    y = rng.choice(k, size=n, p=priors)
    s = np.empty((n, k))
    for j in range(k):
        rows = y == j
        s[rows] = rng.dirichlet(A[j], size=int(rows.sum()))
    s = np.maximum(s, 1e-300)  # a Dirichlet draw can underflow to 0
    return y, s / s.sum(axis=1, keepdims=True)


def bayes_posteriors(A, priors, s):
    r"""The true calibration map: :math:`P(y = j \mid s) \propto \pi_j \mathrm{Dir}(s; A_j)`, i.e.
    :math:`\mathrm{softmax}((A - 1) \log s + \log \pi - \log B(A_j))`, a Dirichlet calibration map."""
    log_beta = gammaln(A).sum(axis=1) - gammaln(A.sum(axis=1))
    u = np.log(s) @ (A - 1.0).T + (np.log(priors) - log_beta)
    u -= u.max(axis=1, keepdims=True)
    p = np.exp(u)
    return p / p.sum(axis=1, keepdims=True)


def centred_logits(s):
    """The logits the scaling methods read from scores without logits: ``log(s + 1e-12)`` less its row mean (the
    inverse softmax; fastcal's :class:`~fastcal.VectorScaling` reads probabilities so)."""
    z = np.log(s + 1e-12)
    return z - z.mean(axis=1, keepdims=True)


def log_loss(y, p):
    """The mean log loss (:func:`fastcal.metrics.log_loss`, its columns the classes 0 .. k - 1)."""
    return fastcal.metrics.log_loss(y, p, labels=np.arange(p.shape[1]))


def classwise_ece(y, p, n_bins=15):
    """Kull et al.'s classwise-ECE: the mean over the classes of the ECE of each column (``n_bins`` equal-width bins;
    15, the paper's), by
    :func:`fastcal.expected_calibration_error` with ``multiclass="classwise"``."""
    return float(np.mean(fastcal.expected_calibration_error(y, p, multiclass="classwise", n_bins=n_bins,
                                                            labels=np.arange(p.shape[1]))))


def odir_cv(make, X, y, rng, grid=ODIR_GRID, folds=ODIR_FOLDS):
    """The ``reg`` of ``grid`` whose ``make(reg)`` has the lowest log loss summed over ``folds`` random folds of
    ``(X, y)`` (each fitted on the other folds)."""
    fold = rng.permutation(y.shape[0]) % folds
    k = X.shape[1]
    scores = []
    for reg in grid:
        total = 0.0
        for f in range(folds):
            train, test = fold != f, fold == f
            model = make(reg).fit(X[train], y[train])
            total += fastcal.metrics.log_loss(y[test], model.predict_proba(X[test]), labels=np.arange(k),
                                              normalize=False)
        scores.append(total)
    return grid[int(np.argmin(scores))]


def dirichlet_losses(n_replicates=40, *, ks=KS, n_cal=N_CAL, n_test=N_TEST, seed=0, grid=ODIR_GRID,
                     folds=ODIR_FOLDS):
    r"""Held-out log loss and classwise-ECE of the multiclass calibrators on class-conditionally Dirichlet scores.

    Kull et al.'s (2019) setting: if the scores of each class are Dirichlet distributed,
    :math:`s \mid y = j \sim \mathrm{Dir}(\alpha_j)`, the true calibration map
    :math:`P(y \mid s) \propto \pi_j \mathrm{Dir}(s; \alpha_j)` is a Dirichlet calibration map,
    :math:`\mathrm{softmax}(W \log s + b)`; their experimental claim: Dirichlet calibration
    with ODIR is on average the best in log loss and classwise-ECE against temperature, vector and matrix scaling
    (and the uncalibrated scores). Here, per replicate and k, a problem of :func:`dirichlet_problem`, ``n_cal``
    calibration rows and ``n_test`` test rows. The scores have no logits: temperature, vector and matrix scaling
    read the centred log-scores (:func:`centred_logits`; matrix scaling on the uncentred log-scores would be
    Dirichlet calibration itself). Dirichlet calibration is fastcal's :class:`~fastcal.DirichletCalibration`,
    full W, unregularised, and with ODIR at ``reg_lambda = reg_mu`` chosen from ``grid`` by ``folds``-fold
    cross-validation of the log loss on the calibration rows (:func:`odir_cv`; the paper chooses lambda and mu by
    cross-validation too). "Bayes (true map)" is the posterior itself
    (:func:`bayes_posteriors`), the floor.

    Parameters
    ----------
    n_replicates : int
        Problems per k (each its own Dirichlet parameters, priors, calibration and test samples).
    ks : sequence of int
        The numbers of classes.
    n_cal, n_test : int
        Rows of the calibration and test samples.
    seed : int
        The random numbers'.
    grid : sequence of float
        The ODIR penalties tried (``reg_lambda = reg_mu``).
    folds : int
        The cross-validation's folds.

    Returns
    -------
    dict
        ``{k: {method: ndarray of shape (n_replicates, 2)}}``: the test log loss and classwise-ECE of each of
        :data:`CALIBRATION_METHODS`; and under the key ``("reg", k)`` the ODIR penalty chosen in each replicate,
        an ndarray of shape (n_replicates,).
    """
    rng = np.random.default_rng(seed)
    out = {}
    for k in ks:
        res = {m: np.empty((n_replicates, 2)) for m in CALIBRATION_METHODS}
        regs = np.empty(n_replicates)
        for r in range(n_replicates):
            A, priors = dirichlet_problem(k, rng)
            yc, sc = dirichlet_sample(A, priors, n_cal, rng)
            yt, st = dirichlet_sample(A, priors, n_test, rng)
            zc, zt = centred_logits(sc), centred_logits(st)
            reg = odir_cv(lambda v: fastcal.DirichletCalibration(reg_lambda=v, reg_mu=v), sc, yc, rng, grid, folds)
            regs[r] = reg
            preds = {
                "uncalibrated": st,
                "temperature": fastcal.TemperatureScaling(input_type="logits").fit(zc, yc).predict_proba(zt),
                "vector": fastcal.VectorScaling(input_type="logits").fit(zc, yc).predict_proba(zt),
                "matrix": fastcal.MatrixScaling(input_type="logits").fit(zc, yc).predict_proba(zt),
                "Dirichlet": fastcal.DirichletCalibration().fit(sc, yc).predict_proba(st),
                "Dirichlet ODIR": (fastcal.DirichletCalibration(reg_lambda=reg, reg_mu=reg).fit(sc, yc)
                                   .predict_proba(st)),
                "Bayes (true map)": bayes_posteriors(A, priors, st),
            }
            for m, p in preds.items():
                res[m][r] = log_loss(yt, p), classwise_ece(yt, p)
        out[k] = res
        out["reg", k] = regs
    return out


def dirichlet_margins(losses, reference="Dirichlet ODIR"):
    """``{k: {method: ((mean, se) of the log loss, (mean, se) of the classwise-ECE)}}``: each method's paired
    difference from ``reference``'s over the replicates (positive: ``reference`` is better)."""
    out = {}
    for k in (key for key in losses if not isinstance(key, tuple)):
        ref = losses[k][reference]
        out[k] = {m: (paired(losses[k][m][:, 0], ref[:, 0]), paired(losses[k][m][:, 1], ref[:, 1]))
                  for m in CALIBRATION_METHODS if m != reference}
    return out


def free_parameters(k):
    """The free parameters of an unregularised full Dirichlet map on k classes: k(k + 1) less the k + 1 that leave
    the probabilities unchanged (a vector added to every row of W, a number to every bias): k^2 - 1."""
    return k * k - 1


def dirichlet_table(losses):
    """The printed table of :func:`dirichlet_losses`: each method's mean log loss and classwise-ECE per k, the
    unregularised Dirichlet map's excess log loss over the Bayes posterior against its asymptotic expectation
    (k^2 - 1) / (2 n_cal), and the ODIR penalties chosen."""
    ks = [key for key in losses if not isinstance(key, tuple)]
    lines = [f"{'method':18s} " + " ".join(f"{'log loss k=' + str(k):>13s} {'cw-ECE':>7s}" for k in ks)]
    for m in CALIBRATION_METHODS:
        lines.append(f"{m:18s} " + " ".join(f"{losses[k][m][:, 0].mean():13.4f} {losses[k][m][:, 1].mean():7.4f}"
                                             for k in ks))
    return "\n".join(lines)


def dirichlet_excess(losses, n_cal=N_CAL):
    """``{k: (mean, standard error, expected)}``: the unregularised Dirichlet map's excess test log loss over the
    Bayes posterior, and its asymptotic expectation :math:`(k^2 - 1) / (2 n_{cal})` (a well-specified maximum
    likelihood fit of d free parameters loses d / (2n) in expected log loss)."""
    out = {}
    for k in (key for key in losses if not isinstance(key, tuple)):
        mean, se = paired(losses[k]["Dirichlet"][:, 0], losses[k]["Bayes (true map)"][:, 0])
        out[k] = (mean, se, free_parameters(k) / (2.0 * n_cal))
    return out


def dirichlet_guide_sentences(losses, n_cal=N_CAL, n_test=N_TEST):
    """The sentences for docs/user_guide/calibrators.md made from :func:`dirichlet_losses` (its default run)."""
    ks = [key for key in losses if not isinstance(key, tuple)]
    n_rep = losses[ks[0]]["Dirichlet"].shape[0]
    k = ks[-1]
    L = {m: losses[k][m].mean(axis=0) for m in CALIBRATION_METHODS}
    excess = dirichlet_excess(losses, n_cal)
    ex = ", ".join(f"{excess[j][0]:.4f} for k = {j} ({excess[j][2]:.4f})" for j in ks)
    best = sum(int(min(CALIBRATION_METHODS[:-1], key=lambda m: losses[j][m][:, 0].mean())
                   in ("Dirichlet", "Dirichlet ODIR")) for j in ks)
    where = "every k" if best == len(ks) else f"{best} of the {len(ks)} values of k"
    odir, odir_se = paired(losses[k]["Dirichlet"][:, 0], losses[k]["Dirichlet ODIR"][:, 0])
    if abs(odir) <= 2.0 * odir_se:
        versus = "ODIR and the unregularised fit are level within two standard errors"
    else:
        versus = f"ODIR {'beats' if odir > 0 else 'loses to'} the unregularised fit"
    return (f"On scores whose class-conditional distributions are Dirichlet (k = {', '.join(map(str, ks))}; "
            f"{n_rep} problems each, {n_cal} calibration and {n_test} test rows), the true calibration map is a "
            f"Dirichlet map, and Dirichlet calibration had the lowest test log loss of the calibrators for "
            f"{where}: with k = {k}, {L['Dirichlet ODIR'][0]:.3f} with ODIR and {L['Dirichlet'][0]:.3f} without, "
            f"against {L['matrix'][0]:.3f} for matrix scaling, {L['vector'][0]:.3f} for vector scaling, "
            f"{L['temperature'][0]:.3f} for temperature scaling, {L['uncalibrated'][0]:.3f} uncalibrated and "
            f"{L['Bayes (true map)'][0]:.3f} for the true map; its classwise-ECE {L['Dirichlet ODIR'][1]:.4f} "
            f"with ODIR against {L['matrix'][1]:.4f}, {L['vector'][1]:.4f} and {L['temperature'][1]:.4f} for "
            f"matrix, vector and temperature scaling. {versus} (a paired difference in log loss of "
            f"{odir:.4f} +- {odir_se:.4f} at k = {k}); the unregularised fit's excess log loss over the true map "
            f"is close to the (k^2 - 1) / (2n) of a well-specified fit of k^2 - 1 parameters: {ex}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shifts", type=int, default=100, help="target priors per alpha (RLLS study)")
    parser.add_argument("--replicates", type=int, default=40, help="problems per k (Dirichlet study)")
    args = parser.parse_args(argv)
    t = time.perf_counter()
    errors = rlls_errors(args.shifts)
    print(f"RLLS vs BBSE: mean squared error of the weights w = q / p, k = {K_SHIFT}, {N_SOURCE} source rows, "
          f"{args.shifts} Dirichlet(alpha) shifts ({time.perf_counter() - t:.0f} s)")
    print(rlls_table(errors))
    print()
    print(rlls_guide_sentences(errors))
    print()
    t = time.perf_counter()
    losses = dirichlet_losses(args.replicates)
    print(f"Dirichlet calibration: test log loss and classwise-ECE, {args.replicates} problems per k, {N_CAL} "
          f"calibration and {N_TEST} test rows ({time.perf_counter() - t:.0f} s)")
    print(dirichlet_table(losses))
    print("paired differences from Dirichlet ODIR (method less ODIR, +- standard error): log loss; classwise-ECE")
    for k, margins in dirichlet_margins(losses).items():
        print(f"k={k}: " + "; ".join(f"{m} {ll[0]:+.4f} +- {ll[1]:.4f}, {ece[0]:+.4f} +- {ece[1]:.4f}"
                                    for m, (ll, ece) in margins.items()
                                    if m != "uncalibrated"))
    for k, (mean, se, expected) in dirichlet_excess(losses).items():
        regs = losses["reg", k]
        print(f"k={k}: Dirichlet's excess log loss over the true map {mean:.4f} +- {se:.4f} (expected "
              f"{expected:.4f}); ODIR penalties chosen: "
              + ", ".join(f"{v:g} x{c}" for v, c in zip(*np.unique(regs, return_counts=True))))
    print()
    print(dirichlet_guide_sentences(losses))


if __name__ == "__main__":
    main()
