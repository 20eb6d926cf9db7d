"""A check shared by the tests of ``calibration_report(..., slope=False)`` on every backend."""

import math

import numpy as np

#: The report's fields of the calibration slope's fit, which ``slope=False`` leaves out.
SLOPE_FIELDS = ("slope", "intercept", "calibration_in_the_large", "slope_se", "intercept_se", "slope_ci",
                "intercept_ci", "slope_converged")


def assert_same_but_the_slope(without, full, rtol=0.0, atol=0.0):
    """``without`` (``slope=False``) is ``full`` (the same rows, ``slope=True``) but for the slope's fields, which
    are NaN or None; the other numbers equal (``rtol`` and ``atol`` 0: to the bit), and ``without`` has no field
    of its own."""
    a, b = without.to_dict(), full.to_dict()
    assert a.keys() <= b.keys()
    for name in SLOPE_FIELDS:
        value = a.get(name)
        assert value is None or math.isnan(value), (name, value)
    for name in b.keys() - set(SLOPE_FIELDS):
        if isinstance(b[name], (bool, int, str)) or b[name] is None or rtol == atol == 0.0:
            np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)
        else:
            np.testing.assert_allclose(a[name], b[name], rtol=rtol, atol=atol, err_msg=name)
