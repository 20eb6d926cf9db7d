"""scikit-learn's estimator checks (``parametrize_with_checks``) on every fastcal estimator.

IsotonicRegression and PlattScaling take 1-D scores and say so in their tags
(``one_d_array``, as scikit-learn's own IsotonicRegression): scikit-learn's
checks generate 2-D data only and skip such estimators with a
``SkipTestWarning``, which this test asserts, so that a change of their tags
is seen; their scikit-learn conventions are tested in test_isotonic.py,
test_platt.py and test_api.py. CalibratedClassifierCV is a classifier and
runs every check (around LogisticRegression). TemperatureScaling
(one column of logits per class, labels as column indices) does not pass the
checks listed in ``TEMPERATURE_OPEN`` yet: they are open work (issue 12),
listed so that they run, and strict, so that a check that starts passing
must be taken off the list.
"""

import warnings

import pytest
from sklearn.exceptions import SkipTestWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

import fastcal
from fastcal.calibration import CalibratedClassifierCV

#: Checks TemperatureScaling does not pass yet (issue 12): labels must be column
#: indices of X, messages for sparse/complex/object/empty input, n_features_in_,
#: sample_weight containers.
TEMPERATURE_OPEN = (
    "check_complex_data", "check_dtype_object",
    "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimator_sparse_tag",
    "check_estimators_empty_data_messages", "check_estimators_fit_returns_self",
    "check_estimators_overwrite_params", "check_fit2d_1feature", "check_fit2d_predict1d", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_readonly_memmap_input", "check_requires_y_none",
    "check_sample_weights_not_an_array", "check_sample_weights_not_overwritten",
    "check_sample_weights_pandas_series", "check_sample_weights_shape",
)


def _expected_failures(estimator):
    if isinstance(estimator, fastcal.TemperatureScaling):
        return {name: "not yet conformant (issue 12)" for name in TEMPERATURE_OPEN}
    return {}


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
        [fastcal.TemperatureScaling(), CalibratedClassifierCV(LogisticRegression(), cv=3)],
        expected_failed_checks=_expected_failures,
        xfail_strict=True,
    )


@_checks
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", [fastcal.IsotonicRegression(), fastcal.PlattScaling()], ids=repr)
def test_one_d_estimators_are_tagged_as_such(estimator):
    tags = get_tags(estimator)
    assert tags.input_tags.one_d_array and not tags.input_tags.two_d_array
    with pytest.warns(SkipTestWarning, match="requires input"):
        checks = [check.func.__name__ for _, check in estimator_checks_generator(estimator, legacy=True, mark="skip")]
    assert checks == ["check_estimator_cloneable"]  # nothing that feeds it 2-D data
