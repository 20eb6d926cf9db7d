"""``fastcal fit``: fit a calibrator on columns of a file and save it as a JSON model file.

In memory by default; with ``--memory-budget``, out of core by the drivers of
:mod:`fastcal.outofcore` (isotonic, sigmoid and beta), in passes over the file.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .._io import (
    DataError,
    UsageError,
    check_numeric_column,
    check_output_dir,
    display_name,
    open_input,
    read_columns,
)
from .checks import MULTINOMIAL, check_labels, check_probabilities, check_weights, segment_features
from .options import NO_LIMIT, columns_arg, group_columns_arg, group_values
from . import spark
from .progress import Progress
from .signals import committing


#: The methods whose scores must be probabilities in [0, 1] (the others take any real scores).
_PROBABILITY_METHODS = ("beta", "histogram", "multicalibration")


def _estimator(args):
    import fastcal

    if args.method in ("isotonic", "centered-isotonic"):
        return fastcal.IsotonicRegression(increasing=args.increasing, out_of_bounds=args.out_of_bounds,
                                          y_min=args.y_min, y_max=args.y_max,
                                          centered=args.method == "centered-isotonic")
    if args.method == "venn-abers":
        return fastcal.VennAbers()
    if args.method == "sigmoid":
        return fastcal.PlattScaling(max_iter=args.max_iter)
    if args.method == "beta":
        return fastcal.BetaCalibration(parameters=args.parameters, max_iter=args.max_iter)
    if args.method == "histogram":
        return fastcal.HistogramBinning(n_bins=args.n_bins, strategy=args.strategy)
    if args.method == "multicalibration":
        return fastcal.MulticalibrationCalibrator(**multicalibration_params(args))
    if args.method == "vector":
        return fastcal.VectorScaling(max_iter=args.max_iter)
    if args.method == "bcts":
        return fastcal.BiasCorrectedTemperatureScaling(max_iter=args.max_iter)
    if args.method == "matrix":
        return fastcal.MatrixScaling(max_iter=args.max_iter, **_penalty(args))
    if args.method == "dirichlet":
        return fastcal.DirichletCalibration(max_iter=args.max_iter, matrix_type=args.matrix_type or "full",
                                            **_penalty(args))
    return fastcal.TemperatureScaling()


def _penalty(args):
    """``reg_lambda`` and ``reg_mu`` of ``--reg-lambda`` and ``--reg-mu`` (matrix and dirichlet)."""
    return {"reg_lambda": args.reg_lambda or 0.0, "reg_mu": args.reg_mu}


def _check_method_options(args):
    """The options of one method given with another: a UsageError."""
    own = {"--reg-lambda": (args.reg_lambda, ("matrix", "dirichlet")), "--reg-mu": (args.reg_mu, ("matrix", "dirichlet")),
           "--matrix-type": (args.matrix_type, ("dirichlet",))}
    for option, (value, methods) in own.items():
        if value is not None and args.method not in methods:
            raise UsageError(f"{option} is for --method {' or '.join(methods)}")


#: The options of ``fit --method multicalibration`` beside the columns: the estimator's parameters of the same names.
MULTICALIBRATION_OPTIONS = ("max_depth", "max_values_per_segment_feature", "min_samples_per_segment", "max_n_segments",
                            "n_buckets", "n_folds")


def multicalibration_params(args):
    """The estimator's parameters that the options of :data:`MULTICALIBRATION_OPTIONS` give (``none``: None); the
    others keep the estimator's defaults."""
    given = {name: getattr(args, name) for name in MULTICALIBRATION_OPTIONS if getattr(args, name) is not None}
    return {name: None if value == NO_LIMIT else value for name, value in given.items()}


def fastcal_grouped(est, min_rows):
    """``est`` wrapped in a :class:`fastcal.GroupedCalibrator` (``fastcal fit --group-col``)."""
    import fastcal

    return fastcal.GroupedCalibrator(est, min_samples_per_group=min_rows)


def describe(est):
    """What a fitted calibrator holds, in a few words: knots, bins or parameters (and groups, by group)."""
    import fastcal

    if isinstance(est, fastcal.GroupedCalibrator):
        return (f"{len(est.groups_)} groups with a calibrator of their own; global calibrator: "
                f"{describe(est.global_calibrator_)}")
    if isinstance(est, fastcal.IsotonicRegression):
        return f"{est.X_thresholds_.shape[0]} knots"
    if isinstance(est, fastcal.BetaCalibration):
        return f"a={est.a_:.6g}, b={est.b_:.6g}, c={est.c_:.6g}"
    if isinstance(est, fastcal.PlattScaling):
        return f"a={est.a_:.6g}, b={est.b_:.6g}"
    if isinstance(est, fastcal.TemperatureScaling):
        return f"beta={est.beta_:.6g}"
    if isinstance(est, fastcal.BiasCorrectedTemperatureScaling):
        return f"beta={est.beta_:.6g}, biases " + ", ".join(f"{v:.4g}" for v in est.biases_)
    if isinstance(est, fastcal.VectorScaling):
        return (f"scales {', '.join(f'{v:.4g}' for v in est.scales_)}; "
                f"biases {', '.join(f'{v:.4g}' for v in est.biases_)}")
    if isinstance(est, (fastcal.MatrixScaling, fastcal.DirichletCalibration)):
        return (f"W {est.coef_.shape[0]}x{est.coef_.shape[1]}, diagonal "
                f"{', '.join(f'{v:.4g}' for v in np.diagonal(est.coef_))}; "
                f"biases {', '.join(f'{v:.4g}' for v in est.intercept_)}")
    if isinstance(est, fastcal.HistogramBinning):
        return f"{est.bin_values_.shape[0]} bins"
    if isinstance(est, fastcal.MulticalibrationCalibrator):
        kept = int(np.count_nonzero(np.any(est.offsets_ != 0, axis=1)))
        return f"{est.offsets_.shape[0]} segments, {kept} with an offset; slope {est.slope_:.6g}"
    return f"{est.c_.shape[0]} distinct scores"  # VennAbers


def _summary(est, args, rows, timings):
    """The line ``fastcal fit`` prints on success (unless ``--quiet``)."""
    seconds = sum(timings.values())
    where = f" on {rows:,} rows" if rows is not None else ""
    print(f"fastcal fit: {args.method}{where}: {describe(est)}; {seconds:.2f} s; model written to {args.output}")


def cmd_fit(args, progress_enabled, timings):
    """Fit the calibrator ``args`` ask for and save it (a command: see :func:`fastcal.cli.main`)."""
    if args.method == "platt":
        args.method = "sigmoid"
    score_cols = columns_arg(args.score_col)
    if not score_cols:
        raise UsageError("fit needs --score-col")
    if len(score_cols) > 1 and args.method not in MULTINOMIAL:
        raise UsageError(f"--method {args.method} takes one --score-col, got {len(score_cols)}")
    if args.method == "dirichlet" and len(score_cols) == 1:
        raise UsageError("--method dirichlet takes one --score-col of probabilities per class (two or more); for "
                         "one column of probabilities, --method beta")
    _check_method_options(args)
    est = _estimator(args)
    out_fmt = os.path.splitext(args.output)[1].lower()
    if out_fmt != ".json":
        raise UsageError(f"{args.output}: the model file must be .json")
    check_output_dir(args.output)  # before the fit, not after
    segment_cols, numerical = _segment_options(args)
    spark.check_options(args, {"--memory-budget": args.memory_budget is not None})
    if args.spark:
        if args.group_col and args.method in MULTINOMIAL:
            raise UsageError(f"--group-col takes a calibrator of one score column, not {args.method}")
        est = spark.fit(args, score_cols, timings, calibrator=est if args.group_col else None,
                        segments=(segment_cols, numerical, multicalibration_params(args)),
                        multiclass=est if args.method in MULTINOMIAL else None)
        _save(est, args, timings)
        if not args.quiet:
            _summary(est, args, None, timings)
        return
    if args.memory_budget is not None and args.input == "-":
        raise UsageError("--memory-budget reads the input several times: give a file, not stdin")
    reader = open_input(args.input, args.batch_rows)
    numeric = score_cols + [args.label_col] + ([args.weight_col] if args.weight_col else [])
    group_cols = group_columns_arg(args.group_col, reader.names, "--group-col")
    cols = numeric + group_cols + segment_cols
    reader.require(cols)
    path = display_name(args.input)
    if args.group_col:
        if args.memory_budget is not None:
            raise UsageError("--group-col fits in memory: leave out --memory-budget")
        if args.method in MULTINOMIAL:
            raise UsageError(f"--group-col takes a calibrator of one score column, not {args.method}")
        est = fastcal_grouped(est, args.min_group_rows)
    if args.memory_budget is not None:
        if args.method in (*MULTINOMIAL, "venn-abers", "multicalibration"):
            raise UsageError("--memory-budget (out-of-core fitting) supports isotonic, centered-isotonic, sigmoid, "
                             "beta and histogram only")
        est, rows = _fit_out_of_core(args, reader, score_cols[0], progress_enabled, timings)
    else:
        t0 = time.perf_counter()
        data = read_columns(reader, cols, numeric, Progress(f"reading {path}", reader.n_rows, progress_enabled))
        timings["read"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        y = data[args.label_col]
        rows = len(y)
        if not len(y):
            raise DataError(f"{path}: no rows of data")
        n_classes = len(score_cols) if len(score_cols) > 1 else 2
        check_labels(y, path, args.label_col, "binary" if args.method == "venn-abers" else args.method, n_classes)
        if args.method in _PROBABILITY_METHODS:
            check_probabilities(data[score_cols[0]], path, score_cols[0])
        w = data[args.weight_col] if args.weight_col else None
        if w is not None:
            check_weights(w, path, args.weight_col)
        X = data[score_cols[0]] if len(score_cols) == 1 else np.column_stack([data[c] for c in score_cols])
        timings["validate"] = time.perf_counter() - t0
        Progress("", enabled=progress_enabled).status(f"fitting {args.method} on {len(y):,} rows")
        t0 = time.perf_counter()
        try:
            if args.group_col:
                est.fit(X, y, group_values(reader, data, group_cols), sample_weight=w)
            elif segment_cols:
                columns = {name: reader.group_column(data[name]) for name in segment_cols}
                est.fit(X, y, segment_features(columns, numerical, path), sample_weight=w, numerical=numerical)
            else:
                est.fit(X, y, sample_weight=w)
        except ValueError as exc:
            raise DataError(f"{path}: {exc}") from None
        timings["fit"] = time.perf_counter() - t0
    _save(est, args, timings)
    if not args.quiet:
        _summary(est, args, rows, timings)


def _segment_options(args):
    """``(segment columns, numerical ones)`` of ``--segment-col`` and ``--numerical-col``: given with
    ``--method multicalibration`` only, which needs the first; the numerical ones among the segment columns."""
    segment_cols = columns_arg([args.segment_col] if args.segment_col else [])
    numerical = columns_arg([args.numerical_col] if args.numerical_col else [])
    if args.method != "multicalibration":
        if segment_cols or numerical:
            raise UsageError("--segment-col and --numerical-col are for --method multicalibration (for a "
                             "calibrator per group, give --group-col)")
        given = [name for name in MULTICALIBRATION_OPTIONS if getattr(args, name) is not None]
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} is for --method multicalibration")
        return [], []
    if not segment_cols:
        raise UsageError("--method multicalibration needs --segment-col (the segment features, a,b,...)")
    if args.group_col:
        raise UsageError("--method multicalibration takes --segment-col, not --group-col")
    for cols, option in ((segment_cols, "--segment-col"), (numerical, "--numerical-col")):
        if len(set(cols)) != len(cols):
            raise UsageError(f"{option}: a column named twice")
    unknown = [c for c in numerical if c not in segment_cols]
    if unknown:
        raise UsageError(f"--numerical-col names {', '.join(unknown)}, not among --segment-col "
                         f"({', '.join(segment_cols)})")
    return segment_cols, numerical


def _save(est, args, timings):
    t0 = time.perf_counter()
    try:
        with committing():
            est.save(args.output)
    except (TypeError, ValueError) as exc:  # a model that cannot be saved (e.g. groups that are not JSON values)
        raise DataError(f"{args.output}: {exc}") from None
    timings["write"] = time.perf_counter() - t0


def _fit_out_of_core(args, reader, score_col, progress_enabled, timings):
    from .. import outofcore
    from .._engine.partition import fit_dtype

    path = display_name(args.input)
    numeric = [score_col, args.label_col] + ([args.weight_col] if args.weight_col else [])
    chunk_rows, part_rows = outofcore.budget_rows(args.memory_budget, None)
    reader.batch_rows = min(reader.batch_rows, chunk_rows)
    n_rows = reader.n_rows
    passes = {"n": 0}

    def factory():
        passes["n"] += 1
        progress = Progress(f"pass {passes['n']} over {path}", n_rows, progress_enabled)
        offset = 0
        for batch in reader.batches(numeric, numeric):
            x = check_numeric_column(batch[score_col], path, score_col, offset)
            y = check_numeric_column(batch[args.label_col], path, args.label_col, offset)
            check_labels(y, path, args.label_col, args.method, offset=offset)
            if args.method in _PROBABILITY_METHODS:
                check_probabilities(x, path, score_col, offset)
            w = None
            if args.weight_col:
                w = check_numeric_column(batch[args.weight_col], path, args.weight_col, offset)
                check_weights(w, path, args.weight_col, offset, positive_sum=False)
            offset += x.shape[0]
            progress.update(x.shape[0])
            yield x, y, w
        progress.close()

    if n_rows is None:  # CSV: count the rows first
        n_rows = reader.count_rows()
    if not n_rows:
        raise DataError(f"{path}: no rows of data")
    first = next(reader.batches([score_col], [score_col]), {score_col: np.empty(0)})[score_col]
    src = outofcore.Columns(factory, n_rows, fit_dtype(first.dtype), args.weight_col is not None, reader.batch_rows)
    t0 = time.perf_counter()
    try:
        if args.method in ("isotonic", "centered-isotonic"):
            params = dict(increasing=args.increasing, out_of_bounds=args.out_of_bounds, y_min=args.y_min,
                          y_max=args.y_max, centered=args.method == "centered-isotonic")
            est = outofcore.fit_isotonic_source(src, params, None, part_rows)
        elif args.method == "beta":
            est = outofcore.fit_beta_source(src, args.parameters, args.max_iter, None)
        elif args.method == "histogram":
            est = outofcore.fit_histogram_source(src, args.n_bins, args.strategy)
        else:
            est = outofcore.fit_platt_source(src, args.max_iter, None)
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    timings["fit (out of core, incl. reading)"] = time.perf_counter() - t0
    return est, n_rows
