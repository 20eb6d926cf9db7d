"""
Finding and fixing a miscalibrated segment
==========================================

A model can be well calibrated on the whole and off in one segment: here,
one country on one device, where its probabilities are too high. The
overall reliability diagram hides it. This example finds the segment by its
values, shows it, and repairs it with one calibrator per country and device,
fitted on one half of the rows and checked on the other; then repairs every
segment at once with MulticalibrationCalibrator.
"""

import matplotlib.pyplot as plt
import numpy as np

import fastcal
from fastcal import BetaCalibration, GroupedCalibrator
from fastcal.plot import reliability_diagram, segment_sigmas

rng = np.random.default_rng(0)
n = 400_000
country = rng.choice(["de", "es", "fr", "it", "us"], n, p=[0.25, 0.15, 0.2, 0.15, 0.25])
device = rng.choice(["android", "ios", "web"], n)
p = rng.beta(2, 5, n)  # the model's probabilities
# the truth: calibrated everywhere but on iOS in Spain, where the model is over-confident
bad = (country == "es") & (device == "ios")
y = rng.uniform(size=n) < np.where(bad, p ** 1.6, p)

train, test = np.arange(n) < n // 2, np.arange(n) >= n // 2
print(f"overall ECE {fastcal.expected_calibration_error(y, p):.4f}, "
      f"mean prediction {p.mean():.4f} against a base rate {y.mean():.4f}")

# %%
# The multicalibration error looks at every segment of the two features
# and their crossings at once; its sigma says whether the worst is beyond
# chance, and ``worst`` names the segments by their values.

segments = {"country": country, "device": device}
mce = fastcal.multicalibration_error(y, p, segments, max_values_per_segment_feature=5)
print(f"multicalibration error: {mce.mce_sigma:.1f} sigma (p-value {mce.mce_pvalue:.1e})")
print(mce.worst(3))

# %%
# The report by segment (the crossing of the two columns, one row per
# country and device, the worst first) gives each cell's calibration,
# discrimination and losses.

report = fastcal.segment_report(y, p, [country, device])
print(report.worst(4))
fig, ax = segment_sigmas(report, top=15, title="ECCE of each cell, in standard deviations")

# %%
# One calibrator per country and device (beta calibration, whose family holds
# this miscalibration), fitted on the first half, repairs the cell; on the
# held-out half, the multicalibration error falls from tens of sigmas to a
# few, near what the true probabilities themselves show (the largest of many
# segments' sigmas is a few sigmas by chance alone).

cal = GroupedCalibrator(BetaCalibration(), min_samples_per_group=1000)
cal.fit(p[train], y[train], [country[train], device[train]])
q = cal.predict(p[test], [country[test], device[test]])

held_out = {name: column[test] for name, column in segments.items()}
before = fastcal.multicalibration_error(y[test], p[test], held_out, max_values_per_segment_feature=5)
after = fastcal.multicalibration_error(y[test], q, held_out, max_values_per_segment_feature=5)
truth = fastcal.multicalibration_error(y[test], np.where(bad, p ** 1.6, p)[test], held_out,
                                      max_values_per_segment_feature=5)
print(f"held out: {before.mce_sigma:.1f} sigma before (p-value {before.mce_pvalue:.1e}), "
      f"{after.mce_sigma:.1f} sigma after (p-value {after.mce_pvalue:.2f}); "
      f"the true probabilities: {truth.mce_sigma:.1f} sigma (p-value {truth.mce_pvalue:.2f})")
cell = bad[test]
print(f"the cell, held out: ECE {fastcal.expected_calibration_error(y[test][cell], p[test][cell]):.4f} before, "
      f"{fastcal.expected_calibration_error(y[test][cell], q[cell]):.4f} after")

# %%
# The cell's reliability before and after, on the held-out rows.

fig, (ax, hist_ax) = reliability_diagram(
    y[test][cell], {"before": p[test][cell], "after": q[cell]}, n_bins=10, strategy="quantile",
    title="Spain, iOS (held out)")

# %%
# Repairing every segment at once
# -------------------------------
#
# One calibrator per cell needs the cell named in advance, and fragments
# the data when there are many cells. :class:`~fastcal.MulticalibrationCalibrator`
# repairs every segment that the multicalibration error measures, at once:
# a sparse logit offset per segment (the lasso keeps the segments that are
# not off at exactly 0), the penalty chosen on held-out log loss. It needs
# the scores and the segment columns only.

mcal = fastcal.MulticalibrationCalibrator(max_values_per_segment_feature=5)
mcal.fit(p[train], y[train], {name: column[train] for name, column in segments.items()})
q_all = mcal.predict(p[test], held_out)
repaired = fastcal.multicalibration_error(y[test], q_all, held_out, max_values_per_segment_feature=5)
print(f"held out, every segment repaired at once: {repaired.mce_sigma:.1f} sigma "
      f"(p-value {repaired.mce_pvalue:.2f}); the offsets it kept:")
kept = np.flatnonzero(mcal.offsets_[:, 0])
for s in kept[np.argsort(-np.abs(mcal.offsets_[kept, 0]))][:4]:
    print(f"  {mcal.segment_values_[s] or 'all rows'}: {mcal.offsets_[s, 0]:+.3f}")

# %%
# The segments' sigmas on the held-out rows, before and after: each bar is a
# segment's ECCE in standard deviations, the dashed line the 5% level of one test.

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5), sharex=True)
segment_sigmas(before, top=10, ax=left, title="before (held out)")
segment_sigmas(repaired, top=10, ax=right, title="after MulticalibrationCalibrator")
