"""``fastcal apply``: apply a model file to a data file, batch by batch.

The output has the input's columns, untouched, plus the calibrated
probabilities (a ``.npy`` output: the probabilities only), written atomically
by a :class:`fastcal._io.Writer`. Only the score columns are parsed: CSV to
CSV copies every record's bytes, Parquet keeps its Arrow columns (see
:meth:`fastcal._io.Reader.pieces`).
"""

from __future__ import annotations

import os
import time

import numpy as np

from .._io import DataError, UsageError, display_name, open_input, open_output
from .checks import check_group_columns, segment_features, warn_unmatched
from .options import columns_arg, group_columns_arg, parse_priors
from . import spark
from .progress import Progress
from .signals import committing


def cmd_apply(args, progress_enabled, timings):
    """Write the input with calibrated probabilities to ``args.output`` (a command: see :func:`fastcal.cli.main`)."""
    import fastcal

    if args.prior_rate is not None and args.priors is not None:
        raise UsageError("give --prior-rate or --priors, not both")
    if not os.path.isfile(args.model):
        raise UsageError(f"{args.model}: no such file")
    try:
        est = fastcal.load(args.model)
    except ValueError as exc:
        raise DataError(f"{args.model}: {exc}") from None
    priors = parse_priors(args.priors) if args.priors is not None else None
    grouped = isinstance(est, fastcal.GroupedCalibrator)
    segmented = isinstance(est, fastcal.MulticalibrationCalibrator)
    spark.check_options(args, {"--prior-rate": args.prior_rate is not None, "--priors": priors is not None})
    if grouped and not args.group_col:
        raise UsageError(f"{args.model}: a model fitted by group needs --group-col (the column of the groups)")
    if args.group_col and not grouped:
        raise UsageError(f"{args.model}: --group-col is for models fitted with --group-col; this one is a "
                         f"{type(est).__name__}")
    segment_cols = list(est.feature_names_in_) if segmented else []
    numerical = [name for name, kind in zip(segment_cols, est.feature_kinds_) if kind != "categorical"] \
        if segmented else []
    multiclass = hasattr(est, "n_classes_") and not hasattr(est, "X_thresholds_")
    if args.spark:
        score_cols = columns_arg(args.score_col)
        if len(score_cols) > 1 and not multiclass:
            raise UsageError(f"a {type(est).__name__} model takes one --score-col, got {len(score_cols)}")
        spark.apply(args, est, score_cols, args.output_col, timings, multiclass)
        return
    reader = open_input(args.input, args.batch_rows)
    path = display_name(args.input)
    score_cols = columns_arg(args.score_col)
    if not score_cols:
        if len(reader.names) == 1:
            score_cols = list(reader.names)
        elif "score" in reader.names:
            score_cols = ["score"]
        else:
            raise UsageError(f"{path}: say which column holds the scores with --score-col")
    group_cols = group_columns_arg(args.group_col, reader.names, "--group-col") if grouped else []
    reader.require(score_cols + group_cols + segment_cols)
    if grouped:
        check_group_columns(est, group_cols, args.model)
    if multiclass:
        k = est.n_classes_
        out_cols = [f"{args.output_col}_{j}" for j in range(k)]
    else:
        if len(score_cols) > 1:
            raise UsageError(f"a {type(est).__name__} model takes one --score-col, got {len(score_cols)}")
        out_cols = [args.output_col]
    clash = [c for c in out_cols if c in reader.names]
    if clash:
        raise UsageError(f"{path}: already has a column {clash[0]!r}; choose another name with --output-col")
    if grouped or segmented:
        reader.prepare_groups(group_cols + segment_cols)
    matches = Matches(est, args.group_col) if grouped else FeatureMatches(est) if segmented else None
    writer = open_output(args.output, out_cols)
    progress = Progress(f"calibrating {path}", reader.n_rows, progress_enabled)
    t_read = t_compute = t_write = 0.0
    ok = False
    try:
        offset = 0
        t0 = time.perf_counter()
        for piece in reader.pieces():
            t1 = time.perf_counter()
            t_read += t1 - t0
            if not piece.n:  # an input without rows: the output gets the columns only
                p = np.empty((0, len(out_cols)) if multiclass else 0)
            else:
                groups = piece_groups(piece, group_cols, path) if grouped else None
                segments = segment_features({name: piece.groups(name, path) for name in segment_cols}, numerical,
                                            path, offset) if segmented else None
                p = calibrate(est, [piece.numbers(c, path) for c in score_cols], multiclass, args, priors, path,
                              offset, groups, matches, segments)
            if multiclass:
                new = {c: np.ascontiguousarray(p[:, j]) for j, c in enumerate(out_cols)}
            else:
                new = {out_cols[0]: p}
            t2 = time.perf_counter()
            t_compute += t2 - t1
            writer.write_piece(piece, new)
            t0 = time.perf_counter()
            t_write += t0 - t2
            offset += piece.n
            progress.update(piece.n)
        progress.close()
        t0 = time.perf_counter()
        with committing():
            writer.commit()
        t_write += time.perf_counter() - t0
        ok = True
    finally:
        if not ok:
            writer.abort()
    timings.update(read=t_read, compute=t_compute, write=t_write)
    if matches is not None:
        matches.warn(path)


def piece_groups(piece, names, path):
    """The groups of one piece in the columns ``names``: the column for one name, a list of columns for several
    (a row's group the tuple of its values)."""
    columns = [piece.groups(name, path) for name in names]
    return columns[0] if len(columns) == 1 else columns


def _keep_few(kept, values, k):
    """Add to ``kept`` (a dict, in order of appearance) the distinct ``values`` until it holds ``k`` (for messages;
    1 and "1" are two values)."""
    for v in values:
        if len(kept) >= k:
            break
        kept.setdefault((type(v) is str, v), v)


class FeatureMatches:
    """The rows of a file whose value of each feature of the multicalibration model ``est`` was seen at fit (features
    of values, not binned), counted piece by piece: :meth:`warn` writes a warning on stderr for each feature of
    which there are rows and not one was seen (no row got that feature's corrections)."""

    def __init__(self, est, k=5):
        self.est, self.k = est, k
        self.matched = dict.fromkeys(est.feature_names_in_, 0)
        self.values = {name: {} for name in est.feature_names_in_}

    def add(self, matches):
        for name, (matched, values) in matches.items():
            self.matched[name] += matched
            _keep_few(self.values[name], values, self.k)

    def warn(self, path):
        for name in self.est.feature_names_in_:  # rows with a value (not missing), none of them seen at fit
            if self.values[name] and not self.matched[name]:
                fitted = self.est.feature_values(name)
                if fitted:
                    warn_unmatched(path, name, fitted, list(self.values[name].values()), "values",
                                   "no row with a value got that feature's corrections")


class Matches:
    """The rows of a file whose group has a calibrator of its own in the grouped model ``est``, counted piece by
    piece: :meth:`warn` writes a warning on stderr when there are rows and not one of them has."""

    def __init__(self, est, column, k=5):
        self.est, self.column, self.k = est, column, k
        self.rows = self.matched = 0
        self.values = {}  # a few distinct groups of the rows, in order of appearance

    def add(self, n, matched, values):
        self.rows += n
        self.matched += matched
        _keep_few(self.values, values, self.k)

    def warn(self, path):
        if self.rows and not self.matched and self.est.groups_:
            warn_unmatched(path, self.column, self.est.groups_, list(self.values.values()))


def calibrate(est, cols, multiclass, args, priors, path, offset, groups=None, matches=None, segments=None):
    """Calibrated probabilities of the score columns ``cols`` of one piece (rows ``offset + 1`` on); with
    ``groups``, those of a grouped model, its matches counted by ``matches`` (a :class:`Matches`); with
    ``segments`` (name -> column), those of a :class:`fastcal.MulticalibrationCalibrator`."""
    import fastcal
    from ..grouped import predict_matched

    X = cols[0] if len(cols) == 1 else np.column_stack(cols)
    try:
        if groups is not None:
            p, matched, values = predict_matched(est, X, groups)
            matches.add(X.shape[0], matched, values)
        elif segments is not None:
            from ..multicalibration import predict_matched as predict_segments

            p, found = predict_segments(est, X, segments)
            matches.add(found)
        else:
            p = est.predict_proba(X) if multiclass else est.predict(X)
        if args.prior_rate is not None:
            p = fastcal.correct_negative_sampling(p, args.prior_rate)
        if priors is not None:
            p = fastcal.adjust_priors(p, priors[0], priors[1])
    except ValueError as exc:
        raise DataError(f"{path}: rows {offset + 1}..{offset + X.shape[0]}: {exc}") from None
    return p
