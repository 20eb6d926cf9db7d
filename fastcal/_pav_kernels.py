"""The stack of pool adjacent violators, shared by the kernels that fit isotonic regressions.

The one copy of the PAV step: :mod:`fastcal.isotonic._kernels` (the isotonic
fit, and through it Venn-Abers and the CORP decomposition of
:mod:`fastcal.isotonic._pav`) and :mod:`fastcal._decomposition_kernels` (the
resampled fits of the CORP reliability bands) push their groups with
:func:`push_block`. Like :mod:`fastcal._math_kernels`, a helper module that
kernels may import: :mod:`fastcal._jit` adds its text to their cache keys.
"""

from __future__ import annotations

from ._jit import kernel


@kernel
def push_block(sw, swy, xf, xl, top, w, wy, first, last):
    """Push a block (weight ``w``, weighted sum ``wy``, scores ``first .. last``) on the PAV stack.

    The stack holds blocks of pooled groups: total weight ``sw``, weighted
    sum ``swy``, first and last score ``xf``/``xl``. While the block below has
    a mean at least the new one's (compared as ``swy[t]·w >= wy·sw[t]``, which
    weights > 0 make equivalent to comparing the means, and which is exact for
    counts), the two are pooled. Returns the new height. This is the classic
    stack form of pool adjacent violators: every group is pushed once and
    popped at most once, so a pass is O(n).
    """
    while top > 0 and swy[top - 1] * w >= wy * sw[top - 1]:
        top -= 1
        w += sw[top]
        wy += swy[top]
        first = xf[top]
    sw[top] = w
    swy[top] = wy
    xf[top] = first
    xl[top] = last
    return top + 1
