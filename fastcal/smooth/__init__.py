r"""Smooth ECE (Błasiok & Nakkiran 2023): kernel-smoothed calibration error and reliability curve.

With predictions :math:`f_i \in [0, 1]`, outcomes :math:`y_i \in \{0, 1\}`,
weights :math:`w_i` (:math:`W = \sum_i w_i`) and the Gaussian kernel of width
:math:`\sigma` reflected at 0 and 1,

.. math::

    K_\sigma(t, s) = \sum_{j \in \mathbb{Z}} \varphi_\sigma(t - s - 2j) + \varphi_\sigma(t + s - 2j)
                   = 1 + 2 \sum_{k \ge 1} e^{-\pi^2 k^2 \sigma^2 / 2} \cos(\pi k t) \cos(\pi k s),

the smooth ECE at bandwidth :math:`\sigma` is

.. math::

    \mathrm{smECE}_\sigma = \frac{1}{W} \int_0^1 \Big| \sum_i w_i K_\sigma(t, f_i) (f_i - y_i) \Big| \, dt,

and the smooth ECE is :math:`\mathrm{smECE}_{\sigma^*}` at the bandwidth
:math:`\sigma^* = \mathrm{smECE}_{\sigma^*}`. :math:`K_\sigma` is the heat
kernel on [0, 1] with reflecting ends, so :math:`K_a K_b = K_{\sqrt{a^2+b^2}}`
and :math:`\mathrm{smECE}_\sigma` is non-increasing in :math:`\sigma`: the
fixed point is unique, and a bracketing root finder finds it.

How it is computed (:func:`grid_sums`, then :func:`smooth_ece_from_grid`):
one parallel pass bins the sums of :math:`w`, :math:`w y` and
:math:`w (f - y)` onto :data:`GRID` cells by linear binning (fixed chunks of
rows, merged in chunk order: the same bits on any number of threads; see
:mod:`fastcal.smooth._kernels` for the three additions per row). A pyramid
of halved grids is built from it on demand, each level the linear binning
of the nodes of the level below (weights 3/4 and 1/4). A bandwidth is
evaluated on the coarsest level with at most :math:`\sigma/256` per cell:
its cosine spectrum (a DCT, computed once per level) is multiplied by
:math:`e^{-\pi^2 k^2 \sigma^2/2}` (exact coefficients of :math:`K_\sigma`,
no truncation of the kernel) and transformed back onto an evaluation grid
of at least 128 points per :math:`\sigma`, where :math:`\int_0^1|\cdot|` of
the piecewise-linear interpolant is taken exactly. At the usual bandwidths
(0.01 to 0.3) a step of the root finder costs two DCTs of a few thousand
points, independent of the number of rows.

This module sits below :mod:`fastcal.metrics` and validates its own input.
The Dask version (:func:`fastcal.dask.smooth_ece`) adds up :func:`grid_sums`
of each chunk and calls :func:`smooth_ece_from_grid`.

Internal API: :data:`GRID`, :data:`SIGMA_MIN`, :func:`grid_sums` (with its
:data:`CHUNK_ROWS` and :func:`round_chunks`), :func:`merge_grids`,
:func:`smooth_ece_from_grid`, :func:`check_inputs`.

The functions are in :mod:`fastcal.smooth._ece`, on the kernels of
:mod:`fastcal.smooth._kernels`.
"""

from .._exports import publish
from ._ece import SmoothECEResult, smooth_ece

# The internal API of the drivers over rows (fastcal.metrics) and the warm-ups (documented in _ece): the grid sums of
# a chunk, their merge and the smooth ECE from them, the bandwidth's check, the rows per chunk of the grid sums.
from ._ece import CHUNK_ROWS, check_bandwidth, grid_sums, merge_grids, smooth_ece_from_grid

__all__ = ["SmoothECEResult", "smooth_ece"]

# Their public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
