"""scikit-learn's estimator checks (``parametrize_with_checks``) on every fastcal estimator.

IsotonicRegression, PlattScaling, BetaCalibration and HistogramBinning take
1-D scores (probabilities for the last two) and say so in their tags
(``one_d_array``, as scikit-learn's own IsotonicRegression): scikit-learn's
checks generate 2-D data only and skip such estimators with a
``SkipTestWarning``, which this test asserts, so that a change of their tags
is seen; their scikit-learn conventions are tested in test_isotonic.py,
test_platt.py, test_beta.py, test_histogram.py and test_api.py. CalibratedClassifierCV is a classifier and
runs every check (around LogisticRegression). TemperatureScaling (and VectorScaling,
BiasCorrectedTemperatureScaling and MatrixScaling, which read their input the same way) takes one
column of logits per class and labels that are column indices (as the
calibrators inside CalibratedClassifierCV get them): it runs every check and
fails, deliberately, only those listed in ``TEMPERATURE_LABELS``, whose data
names a third column of a two-column X (labels 0..2, or 1..2), where
it raises a ValueError naming y instead of reading a column that does not
exist. VectorScaling, BiasCorrectedTemperatureScaling and MatrixScaling also fail the four
checks of ``ABSENT_CLASSES``, whose X has more columns (classes) than y has
labels: they warn that those classes' biases have no finite optimum (unless a penalty
holds the biases: MatrixScaling(reg_lambda=0.1, reg_mu=0.1) passes them). DirichletCalibration
takes probabilities, and the checks that fit it feed arbitrary reals: it passes the
checks of ``DIRICHLET_PASSING`` (construction, parameters, validation) and fails every other one with
a ValueError saying that X must hold probabilities; its fit is MatrixScaling's, whose
checks run in full. The lists are strict, so that a check that starts passing must be
taken off them.
"""

import warnings

import pytest
from sklearn.exceptions import SkipTestWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

import fastcal
from fastcal.calibration import CalibratedClassifierCV

#: Checks whose data TemperatureScaling refuses, deliberately: labels 0..2 or 1..2 for two columns of X.
TEMPERATURE_LABELS = (
    "check_estimators_fit_returns_self", "check_estimators_overwrite_params", "check_readonly_memmap_input",
    "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series", "check_sample_weights_shape",
)


#: Checks whose data leaves columns of X (classes) without a row, which VectorScaling and
#: BiasCorrectedTemperatureScaling report in a warning (that class's bias has no finite optimum), deliberately.
ABSENT_CLASSES = ("check_n_features_in_after_fitting", "check_positive_only_tag_during_fit",
                  "check_sample_weight_equivalence_on_dense_data", "check_estimators_nan_inf")


#: The checks DirichletCalibration passes: those that do not fit it to the checks' (non-probability) X.
DIRICHLET_PASSING = (
    "check_array_api_input", "check_complex_data", "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_cloneable", "check_estimator_repr", "check_estimator_sparse_array",
    "check_estimator_sparse_matrix", "check_estimator_sparse_tag", "check_estimator_tags_renamed",
    "check_estimators_empty_data_messages", "check_estimators_unfitted", "check_fit1d", "check_get_params_invariance",
    "check_mixin_order", "check_no_attributes_set_in_init", "check_parameters_default_constructible",
    "check_requires_y_none", "check_set_params", "check_valid_tag_types",
)

#: The multiclass calibrators with a bias per class.
_BIASED = (fastcal.VectorScaling, fastcal.BiasCorrectedTemperatureScaling, fastcal.MatrixScaling)


def _biases_penalised(estimator):
    if not isinstance(estimator, fastcal.MatrixScaling):
        return False
    return estimator.reg_mu != 0 if estimator.reg_mu is not None else estimator.reg_lambda != 0


def _expected_failures(estimator):
    failures = {}
    if isinstance(estimator, fastcal.DirichletCalibration):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_NOT_INHERITED, category=UserWarning)
            names = {check.func.__name__ for _, check in estimator_checks_generator(estimator, legacy=True)}
        return {name: "X must hold probabilities; the check's X does not" for name in names - set(DIRICHLET_PASSING)}
    if isinstance(estimator, (fastcal.TemperatureScaling, *_BIASED)):
        failures.update({name: "labels are column indices of X; the check's y (0..2 or 1..2) names a third column "
                               "of a two-column X" for name in TEMPERATURE_LABELS})
    if isinstance(estimator, _BIASED) and not _biases_penalised(estimator):
        failures.update({name: "the check's y leaves columns of X (classes) without a row: a warning says their "
                               "biases have no finite optimum" for name in ABSENT_CLASSES})
    return failures


# fastcal's estimators follow scikit-learn's conventions without inheriting from
# its BaseEstimator (import fastcal does not import scikit-learn), which scikit-learn notes.
_NOT_INHERITED = "Estimator .* does not inherit from `sklearn.base.BaseEstimator`"
pytestmark = [
    pytest.mark.filterwarnings(f"ignore:{_NOT_INHERITED}:UserWarning"),
    # scikit-learn's own type_of_target, on the all-inf y of check_supervised_y_no_nan (then it raises).
    pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning"),
]

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=_NOT_INHERITED, category=UserWarning)
    _checks = parametrize_with_checks(
        [fastcal.TemperatureScaling(), fastcal.VectorScaling(), fastcal.BiasCorrectedTemperatureScaling(),
         fastcal.MatrixScaling(), fastcal.MatrixScaling(reg_lambda=0.1, reg_mu=0.1), fastcal.DirichletCalibration(),
         CalibratedClassifierCV(LogisticRegression(), cv=3)],
        expected_failed_checks=_expected_failures,
        xfail_strict=True,
    )


@_checks
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", [fastcal.IsotonicRegression(), fastcal.PlattScaling(), fastcal.BetaCalibration(),
                                       fastcal.HistogramBinning()], ids=repr)
def test_one_d_estimators_are_tagged_as_such(estimator):
    tags = get_tags(estimator)
    assert tags.input_tags.one_d_array and not tags.input_tags.two_d_array
    with pytest.warns(SkipTestWarning, match="requires input"):
        checks = [check.func.__name__ for _, check in estimator_checks_generator(estimator, legacy=True, mark="skip")]
    assert checks == ["check_estimator_cloneable"]  # nothing that feeds it 2-D data
