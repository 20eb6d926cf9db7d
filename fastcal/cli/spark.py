"""``--spark``: ``fit``, ``apply`` and ``report`` read their input through Spark and compute with :mod:`fastcal.spark`.

The input is any path Spark reads as Parquet (``.parquet``) or CSV with a
header (``.csv``): one file or a directory of part files, local or on the
cluster's file system. ``fit`` writes the model file and ``report`` its
``.json``, ``.html`` or ``.png`` on the local file system, as without ``--spark``; ``apply``
writes its output through Spark (a directory of part files, ``.parquet`` or
``.csv``), into a temporary directory next to the target, renamed to the
target when the job has succeeded: an error, in the job or before it, leaves
no partial output (the target must be a local path for the rename).

Only what :mod:`fastcal.spark` computes exactly is offered: ``fit --method``
isotonic, centered-isotonic, sigmoid, beta and histogram; ``apply`` of their
models (``predict`` in the JVM); ``report`` (:func:`report`: the
numbers of :func:`fastcal.spark.calibration_report`,
:func:`fastcal.spark.corp_reliability`, :func:`fastcal.spark.segment_report`
and :func:`fastcal.spark.multicalibration_error`, written by
:mod:`.documents` as without ``--spark``; the pictures' CORP curve has no
band, whose resamples redraw every row). Other options raise a usage error
naming them. Rows have no
order in Spark, so data errors name the file and the column, not a row.

The session is ``SparkSession.builder.getOrCreate()`` (``spark-submit``'s
settings, or ``local[*]``), with ``--spark-master`` as its master when
given; a ``--spark-master`` URL ``sc://host:port`` is a Spark Connect server
(``SparkSession.builder.remote``), whose configuration is the server's. A
session this module created is stopped when the command ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time

from .._io import DataError, UsageError, check_output_dir, display_name, new_target
from . import documents
from .checks import MULTINOMIAL
from .options import group_columns_arg

#: What ``--spark`` reads and writes, by extension.
_FORMATS = (".parquet", ".csv")

#: The fit methods of fastcal.spark.
SPARK_METHODS = ("isotonic", "centered-isotonic", "sigmoid", "beta", "histogram", "multicalibration", *MULTINOMIAL)


def add_options(parser):
    """``--spark`` and ``--spark-master`` on a command's parser."""
    parser.add_argument("--spark", action="store_true",
                        help="read INPUT through Spark (.parquet or .csv with a header: a file or a directory) and "
                             "compute with fastcal.spark, exactly as in memory (see the Spark page of the docs)")
    parser.add_argument("--spark-master", metavar="URL",
                        help="with --spark: the Spark master (default: spark-submit's, or local[*]), or a Spark "
                             "Connect server, sc://host:port")


def check_options(args, unsupported):
    """Raise :class:`UsageError` when ``--spark-master`` comes without ``--spark``, or ``--spark`` with one of
    ``unsupported`` (``{option: is it given}``)."""
    if not args.spark:
        if args.spark_master is not None:
            raise UsageError("--spark-master needs --spark")
        return
    for option, given in unsupported.items():
        if given:
            raise UsageError(f"{option} is not available with --spark")
    if args.input == "-":
        raise UsageError("--spark reads a path Spark can read, not stdin")
    _format(args.input, "INPUT")


def _format(path, what):
    ext = os.path.splitext(path.rstrip("/"))[1].lower()
    if ext not in _FORMATS:
        raise UsageError(f"{path}: with --spark, {what} must be .parquet or .csv (a file or a directory of them)")
    return ext


def is_remote(args):
    """Whether ``--spark-master`` names a Spark Connect server (``sc://...``)."""
    return bool(args.spark_master) and args.spark_master.startswith("sc://")


def session_config(args, terminal):
    """The configuration of a session the command starts: Spark's console progress bars only where fastcal's own
    would show (stderr a ``terminal``, no ``--quiet``); Spark's Python workers run this interpreter, which has
    fastcal (by default they run python3 on PATH), unless PYSPARK_PYTHON says otherwise. None for a Spark Connect
    server: the server's settings hold (a client cannot set them)."""
    if is_remote(args):
        return {}
    config = {"spark.ui.showConsoleProgress": "true" if terminal and not getattr(args, "quiet", False) else "false"}
    if "PYSPARK_PYTHON" not in os.environ:
        config["spark.pyspark.python"] = sys.executable
    return config


@contextlib.contextmanager
def session(args):
    """The SparkSession of the command (created here, and then stopped at the end, unless one is active)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    builder = SparkSession.builder.appName("fastcal")
    if is_remote(args):
        builder = builder.remote(args.spark_master)
    elif args.spark_master:
        builder = builder.master(args.spark_master)
    for key, value in session_config(args, sys.stderr.isatty()).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()


def _first_line(exc):
    """The message of a Spark error, without its JVM stack trace."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _spark_errors():
    """The exception classes a failing Spark job or plan raises."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JJavaError)


def read(spark, path, columns, groups=(), option=None):
    """The DataFrame of ``path`` (Parquet or CSV with a header, by extension); a UsageError for a missing path or
    column. With ``option`` (``--group-col``, ``--segment-col``), ``groups`` is that option's text, its columns
    found among the file's (:func:`.options.group_columns_arg`: ``a,b`` several columns).

    The columns ``groups`` of a CSV file are typed as without ``--spark`` (:mod:`fastcal._io.groups`): integers,
    else numbers, else text, an empty cell null; Spark's own inference of other types (booleans, dates,
    timestamps) is undone by reading them as text.
    """
    ext = _format(path, "INPUT")
    try:
        if ext == ".parquet":
            df = spark.read.parquet(path)
        else:
            df = spark.read.csv(path, header=True, inferSchema=True)
    except _spark_errors() as exc:
        if "PATH_NOT_FOUND" in str(exc):
            raise UsageError(f"{path}: no such file or directory") from None
        raise DataError(f"{path}: {_first_line(exc)}") from None
    if option is not None:
        groups = group_columns_arg(groups, df.columns, option)
    for c in list(columns) + list(groups):
        if c not in df.columns:
            shown = ", ".join(df.columns[:20]) + (", ..." if len(df.columns) > 20 else "")
            raise UsageError(f"{display_name(path)}: no column {c!r} (columns: {shown})")
    if ext == ".csv" and groups:
        df = _csv_groups(spark, path, df, groups)
    return df


def _csv_groups(spark, path, df, groups):
    """``df`` (a CSV file read with Spark's inference) with its columns ``groups`` typed as fastcal types CSV
    group columns: integers (int, bigint) and numbers (double) as Spark infers them, any other type read again
    as text; an empty text the null (Spark reads a quoted empty field as an empty string)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    numeric = (T.IntegerType, T.LongType, T.DoubleType, T.StringType)
    retype = [c for c in groups if not isinstance(df.schema[c].dataType, numeric)]
    if retype:
        schema = T.StructType([T.StructField(f.name, T.StringType(), True) if f.name in retype else f
                               for f in df.schema.fields])
        try:
            df = spark.read.csv(path, header=True, schema=schema)
        except _spark_errors() as exc:
            raise DataError(f"{path}: {_first_line(exc)}") from None
    for c in dict.fromkeys(groups):
        if isinstance(df.schema[c].dataType, T.StringType):
            df = df.withColumn(c, F.when(F.col(c) == "", F.lit(None)).otherwise(F.col(c)))
    return df


def check_binary_labels(df, path, column):
    """A DataError naming ``column`` and a value unless every non-null label is 0 or 1 (one Spark job)."""
    from pyspark.sql import functions as F

    bad = df.where(~F.col(column).isin(0, 1)).select(column).limit(1).collect()
    if bad:
        raise DataError(f"{path}: column {column!r}: label {bad[0][0]!r} is not 0 or 1")


def fit(args, score_cols, timings, calibrator=None, segments=((), (), {}), multiclass=None):
    """The calibrator ``fastcal fit --spark`` asks for, fitted by :mod:`fastcal.spark` on the input's columns
    ``score_cols`` (several for the multiclass methods only); with ``calibrator`` (the unfitted calibrator, for
    ``--group-col``), a :class:`fastcal.GroupedCalibrator` of it (:func:`fastcal.spark.fit_grouped`);
    ``segments``: the segment columns, the numerical ones among them and the estimator's parameters of
    ``--method multicalibration`` (the columns typed as group columns); ``multiclass``: the unfitted multiclass
    calibrator of a multinomial method (:func:`fastcal.spark.fit_multiclass`, labels class indices)."""
    import fastcal.spark as fs

    if args.method not in SPARK_METHODS:
        raise UsageError(f"--method {args.method} is not available with --spark (only {', '.join(SPARK_METHODS)})")
    path = display_name(args.input)
    score_col = score_cols[0]
    columns = [*score_cols, args.label_col] + ([args.weight_col] if args.weight_col else [])
    segment_cols, numerical, params = segments
    with session(args) as spark:
        t0 = time.perf_counter()
        if segment_cols:  # fastcal.spark refuses a numerical one that is not numbers: bad data below
            df = read(spark, args.input, columns, list(segment_cols))
        else:
            df = read(spark, args.input, columns, args.group_col if calibrator is not None else None, "--group-col")
        if multiclass is None:
            check_binary_labels(df, path, args.label_col)
        timings["read and check (Spark)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        common = dict(weight_col=args.weight_col)
        try:
            if multiclass is not None:
                est = fs.fit_multiclass(multiclass, df, score_cols, args.label_col, **common)
            elif calibrator is not None:
                est = fs.fit_grouped(calibrator, df, score_col, args.label_col,
                                     _group_arg(args.group_col, df, "--group-col"),
                                     min_samples_per_group=args.min_group_rows, **common)
            elif args.method in ("isotonic", "centered-isotonic"):
                est = fs.fit_isotonic(df, score_col, args.label_col, increasing=args.increasing,
                                      out_of_bounds=args.out_of_bounds, y_min=args.y_min, y_max=args.y_max,
                                      centered=args.method == "centered-isotonic", **common)
            elif args.method == "sigmoid":
                est = fs.fit_platt(df, score_col, args.label_col, max_iter=args.max_iter, **common)
            elif args.method == "multicalibration":
                est = fs.fit_multicalibration(df, score_col, args.label_col, list(segment_cols),
                                              numerical=list(numerical), **params, **common)
            elif args.method == "beta":
                est = fs.fit_beta(df, score_col, args.label_col, parameters=args.parameters,
                                  max_iter=args.max_iter, **common)
            else:
                est = fs.fit_histogram(df, score_col, args.label_col, n_bins=args.n_bins, strategy=args.strategy,
                                       **common)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{path}: {exc}") from None
        except _spark_errors() as exc:
            raise DataError(f"{path}: {_first_line(exc)}") from None
        timings["fit (Spark)"] = time.perf_counter() - t0
    return est


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def apply(args, est, score_cols, output_col, timings, multiclass=False):
    """``fastcal apply --spark``: the input with ``output_col`` (:func:`fastcal.spark.predict`; a model fitted by
    group, on ``args.group_col``), or for a ``multiclass`` model the columns ``output_col_0 .. output_col_{k-1}``
    of the ``score_cols`` (:func:`fastcal.spark.predict_proba`), written by Spark."""
    import fastcal
    import fastcal.spark as fs

    one_d = (fastcal.IsotonicRegression, fastcal.PlattScaling, fastcal.BetaCalibration, fastcal.HistogramBinning)
    grouped = isinstance(est, fastcal.GroupedCalibrator)
    segmented = isinstance(est, fastcal.MulticalibrationCalibrator)
    if not (segmented or multiclass) and not isinstance(est.calibrator if grouped else est, one_d):
        raise UsageError(f"{args.model}: a {type(est).__name__} model is not available with --spark (isotonic, "
                         "sigmoid, beta, histogram, multicalibration and the multiclass models are)")
    out_ext = _format(args.output, "the output")
    if "://" in args.output and not args.output.startswith("file:"):
        raise UsageError(f"{args.output}: with --spark, the output must be a local path (it is renamed when "
                         "complete)")
    target = args.output[len("file:"):] if args.output.startswith("file:") else args.output
    target = target.rstrip("/") or target
    check_output_dir(target)
    path = display_name(args.input)
    with session(args) as spark:
        t0 = time.perf_counter()
        if segmented:  # the model's features, from the columns of their names (typed as group columns)
            df = read(spark, args.input, score_cols, est.feature_names_in_)
        else:
            df = read(spark, args.input, score_cols, args.group_col if grouped else None, "--group-col")
        group_col = _group_arg(args.group_col, df, "--group-col") if grouped else None
        if grouped:
            from .checks import check_group_columns

            check_group_columns(est, group_col if isinstance(group_col, list) else [group_col], args.model)
        if not score_cols:  # as without --spark: the only column, or "score"
            if len(df.columns) == 1 or "score" in df.columns:
                score_cols = [df.columns[0] if len(df.columns) == 1 else "score"]
            else:
                raise UsageError(f"{path}: say which column holds the scores with --score-col")
        out_cols = [f"{output_col}_{j}" for j in range(est.n_classes_)] if multiclass else [output_col]
        clash = [c for c in out_cols if c in df.columns]
        if clash:
            raise UsageError(f"{path}: already has a column {clash[0]!r}; choose another name with --output-col")
        try:
            if multiclass:
                out = fs.predict_proba(est, df, score_cols, out_cols)
            else:
                out = fs.predict(est, df, score_cols[0], output_col, group_col=group_col)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{path}: {exc}") from None
        # a null score fails the job, as a missing score fails the command without --spark (fastcal.spark.predict
        # itself gives null for null, as Spark's functions do)
        from pyspark.sql import functions as F

        missing = F.lit(None)
        for c in reversed(score_cols):  # the first null column's name, as without --spark
            missing = F.when(F.col(c).isNull(), F.lit(f"column {c!r}: missing value")).otherwise(missing)
        out = out.withColumn(out_cols[0], F.when(missing.isNotNull(), F.raise_error(missing))
                             .otherwise(F.col(out_cols[0])))
        # A new, empty directory next to the target (its unique name taken atomically), which Spark fills.
        holder = new_target(target, out_ext)
        tmp = holder.tmp
        holder.abort()
        ok = False
        try:
            writer = out.write.mode("error")  # "errorifexists" in Spark's words; a Connect client knows only "error"
            try:
                if out_ext == ".parquet":
                    writer.parquet(tmp)
                else:
                    writer.option("header", True).csv(tmp)
            except _spark_errors() as exc:
                raise DataError(f"{path}: {_first_line(exc)}") from None
            timings["read, calibrate and write (Spark)"] = time.perf_counter() - t0
            if grouped:
                _warn_unmatched(df, est, group_col, args.group_col, path)
            if segmented:
                _warn_unseen_values(df, est, path)
            from .signals import committing

            with committing():
                if os.path.lexists(target):
                    _remove(target)
                os.rename(tmp, target)
            ok = True
        finally:
            if not ok:
                _remove(tmp)


def _group_arg(text, df, option):
    """The ``group_col`` of :mod:`fastcal.spark` for the option's ``text``: a column name, or a list of several
    (``a,b``; :func:`.options.group_columns_arg`)."""
    names = group_columns_arg(text, df.columns, option)
    return names if len(names) > 1 else names[0]


def _is_group(df, columns, group):
    """The condition that a row of ``df`` is in ``group`` of the group columns ``columns`` (a name, or a list
    whose groups are tuples): equal values, None the missing value (null, and NaN in a float column), as
    :mod:`fastcal.spark` groups them."""
    import numpy as np
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(columns, list):
        condition = F.lit(True)
        for c, v in zip(columns, group):
            condition = condition & _is_group(df, c, v)
        return condition
    col = F.col(columns)
    if group is None or (isinstance(group, float) and group != group):
        rows = col.isNull()
        if isinstance(df.schema[columns].dataType, (T.FloatType, T.DoubleType)):
            rows = rows | F.isnan(col)
        return rows
    return col == F.lit(group.item() if isinstance(group, np.generic) else group)


def _warn_unmatched(df, est, columns, text, path):
    """The warning of ``fastcal apply`` (:func:`fastcal.cli.checks.warn_unmatched`) when there are rows and none
    has a group of the model ``est`` (a Spark job that stops at the first row that has one); ``columns`` the
    group column or columns, ``text`` the option's text."""
    from pyspark.sql import functions as F

    from .checks import warn_unmatched

    if not est.groups_:
        return
    several = isinstance(columns, list)
    if several:
        condition = F.lit(False)
        for g in est.groups_:
            if isinstance(g, tuple) and len(g) == len(columns):
                condition = condition | _is_group(df, columns, g)
    else:
        present = [g for g in est.groups_ if g is not None and not (isinstance(g, float) and g != g)]
        condition = F.col(columns).isin(present) if present else F.lit(False)
        if len(present) < len(est.groups_):
            condition = condition | _is_group(df, columns, None)
    if df.where(condition).limit(1).count() or not df.limit(1).count():
        return
    rows = df.select(*(columns if several else [columns])).distinct().limit(5).collect()
    warn_unmatched(path, text, est.groups_, [tuple(r) if several else r[0] for r in rows])


def _warn_unseen_values(df, est, path):
    """The warnings of ``fastcal apply`` of a multicalibration model (:class:`.apply.FeatureMatches`): for each
    feature of values (not binned) whose column has rows with a value (not null, not NaN) and none of them seen at
    fit; Spark jobs that stop at the first row found."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from .checks import warn_unmatched

    for name, kind in zip(est.feature_names_in_, est.feature_kinds_):
        if kind == "bins":
            continue
        col = F.col(name)
        has_value = col.isNotNull()
        if isinstance(df.schema[name].dataType, (T.FloatType, T.DoubleType)):
            has_value = has_value & ~F.isnan(col)
        fitted = est.feature_values(name)
        present = [v for v in fitted if v is not None]
        seen = has_value & col.isin(present) if present else F.lit(False)
        if df.where(seen).limit(1).count() or not df.where(has_value).limit(1).count():
            continue
        rows = df.where(has_value).select(name).distinct().limit(5).collect()
        warn_unmatched(path, name, fitted, [r[0] for r in rows], "values",
                       "no row with a value got that feature's corrections")


def _group_reports(df, args, columns, path):
    """``report_of(group)`` of :func:`.documents.segment_pictures`: :func:`fastcal.spark.calibration_report` of
    the rows of ``df`` whose ``--segment-col`` (``columns``: a name, or a list whose groups are tuples) is
    ``group`` (the missing group, None: its nulls, and NaNs in a float column, as
    :func:`fastcal.spark.segment_report` groups them)."""
    import fastcal.spark as fs

    def report_of(group):
        try:
            return fs.calibration_report(df.where(_is_group(df, columns, group)), args.label_col, args.score_col,
                                         weight_col=args.weight_col, n_bins=args.n_bins, strategy=args.strategy,
                                         slope=False)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{path}: {exc}") from None
        except _spark_errors() as exc:
            raise DataError(f"{path}: {_first_line(exc)}") from None

    return report_of


def report(args, timings):
    """``fastcal report --spark``: the report of ``fastcal report`` (:mod:`.documents`: .json, .html or .png) from
    :mod:`fastcal.spark`'s numbers: :func:`~fastcal.spark.calibration_report` of the input, and with
    ``--segment-col`` its :func:`~fastcal.spark.segment_report` and
    :func:`~fastcal.spark.multicalibration_error`. The pictures (.html, .png) are drawn from the report and the
    CORP curve with its consistency band (:func:`~fastcal.spark.corp_reliability`, as many resamples as without
    ``--spark``), which the .json report holds too. A worst group's picture is drawn from
    :func:`~fastcal.spark.calibration_report` of the rows of that group.
    Returns ``(report, segments, mce)``, the last two None without ``--segment-col``."""
    import fastcal.spark as fs

    kind = os.path.splitext(args.output)[1].lower()
    path = display_name(args.input)
    segments = mce = None
    with session(args) as spark:
        t0 = time.perf_counter()
        df = read(spark, args.input, [args.score_col, args.label_col] + ([args.weight_col] if args.weight_col
                                                                           else []),
                  args.segment_col, "--segment-col")
        segment_col = _group_arg(args.segment_col, df, "--segment-col") if args.segment_col else None
        check_binary_labels(df, path, args.label_col)
        try:
            rep = fs.calibration_report(df, args.label_col, args.score_col, weight_col=args.weight_col,
                                        n_bins=args.n_bins, strategy=args.strategy)
            corp = fs.corp_reliability(df, args.label_col, args.score_col, weight_col=args.weight_col,
                                       n_resamples=documents.band_resamples(rep.n), random_state=0)
            if args.segment_col:  # as without --spark (fastcal.cli.report)
                segments = fs.segment_report(df, args.label_col, args.score_col, segment_col,
                                             weight_col=args.weight_col, n_bins=args.n_bins)
                # each column its own segment feature, as without --spark
                features = segment_col if isinstance(segment_col, list) else [segment_col]
                mce = fs.multicalibration_error(df, args.label_col, args.score_col, features,
                                                weight_col=args.weight_col,
                                                max_values_per_segment_feature=max(2, len(segments.groups)))
        except (ValueError, TypeError) as exc:
            raise DataError(f"{path}: {exc}") from None
        except _spark_errors() as exc:
            raise DataError(f"{path}: {_first_line(exc)}") from None
        timings["compute (Spark)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        doc = {"input": path, "score_col": args.score_col, "label_col": args.label_col, "spark": True,
               "report": documents.json_ready(rep.to_dict()), "corp": documents.json_ready(corp.to_dict())}
        if segments is not None:
            doc.update(documents.segment_document(args.segment_col, segments, mce))
        # the worst groups' pictures of an .html report run Spark jobs: inside the session
        content = documents.render(kind, doc, rep, corp, f"{path}: {args.score_col} against {args.label_col}",
                                   args.segment_col, segments, mce,
                                   _group_reports(df, args, segment_col, path) if segments is not None else None)
    documents.write(args.output, kind, content)
    timings["write"] = time.perf_counter() - t0
    return rep, segments, mce
