"""The bottom of fastcal, below the engine: what every module may use.

- :mod:`~fastcal._core.labels`, :mod:`~fastcal._core.validation`: label
  coding; the checks of the data (arrays, weights, probabilities), each
  error a ``ValueError`` or ``TypeError`` naming the argument.
- :mod:`~fastcal._core.math_kernels`, :mod:`~fastcal._core.pav_kernels`:
  the helpers kernels may import (vectorisable exp and log, order keys; the
  PAV stack); :mod:`~fastcal._core.jit` covers them in the kernels' cache keys.
- :mod:`~fastcal._core.jit`, :mod:`~fastcal._core.parallel`: every Numba
  option (the ``kernel`` decorator); fastcal's own threads and fixed chunks.
- :mod:`~fastcal._core.params`, :mod:`~fastcal._core.results`,
  :mod:`~fastcal._core.errors`: parameter tables, result objects, exceptions
  and warnings.

Each is a public-named module of this private package: the other packages
import them by name (``from .._core.validation import ...``). Their order is
a contract in ``pyproject.toml``.
"""
