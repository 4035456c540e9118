"""Pareto fronts and hypervolumes of points with several objectives (NumPy only).

Values are rows of an [n, d] array in which every objective is minimised (negate the ones to
maximise). The hypervolume of a set is the measure of the region it dominates below a reference
point (Zitzler and Thiele, "Multiobjective optimization using evolutionary algorithms — a
comparative case study", 1998); it grows when the front improves in any objective.
"""

from __future__ import annotations

import numpy as np


def non_dominated(values: np.ndarray) -> np.ndarray:
    """A mask of the rows no other row dominates (no worse in every objective, better in one);
    equal rows are all kept."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return np.zeros(0, bool)
    no_worse = (values[:, None, :] <= values[None, :, :]).all(axis=2)  # [j, i]: j no worse than i
    better = (values[:, None, :] < values[None, :, :]).any(axis=2)
    return ~(no_worse & better).any(axis=0)


def hypervolume(values: np.ndarray, reference: np.ndarray) -> float:
    """The volume dominated by `values` and bounded by `reference` (rows not below the reference in
    every objective add nothing). Exact, by slicing along the last objective."""
    values = np.asarray(values, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if values.size == 0:
        return 0.0
    inside = values[(values < reference).all(axis=1)]
    if len(inside) == 0:
        return 0.0
    return float(_volume(inside[non_dominated(inside)], reference))


def _volume(points: np.ndarray, reference: np.ndarray) -> float:
    if points.shape[1] == 1:
        return float(reference[0] - points[:, 0].min())
    if points.shape[1] == 2:
        order = np.lexsort((points[:, 1], points[:, 0]))
        xs, ys = points[order, 0], np.minimum.accumulate(points[order, 1])
        widths = np.diff(np.append(xs, reference[0]))
        return float(np.sum(widths * (reference[1] - ys)))
    order = np.argsort(points[:, -1], kind="stable")
    points = points[order]
    cuts = np.append(points[:, -1], reference[-1])
    total = 0.0
    for i in range(len(points)):
        depth = cuts[i + 1] - cuts[i]
        if depth > 0:
            total += depth * _volume(points[: i + 1, :-1], reference[:-1])
    return total


def normalise(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """`values` mapped so that `low` is 0 and `high` is 1 in each objective (a flat objective: 0)."""
    span = np.where(np.asarray(high) > np.asarray(low), np.asarray(high) - np.asarray(low), 1.0)
    return (np.asarray(values, dtype=float) - low) / span


REFERENCE = 1.1
"""The reference point of normalised hypervolumes, a little beyond the worst value (1) so that the
extreme points of a front count."""


def hypervolume_history(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The normalised hypervolume of the first k rows' front for k = 1..n (NaN rows: trials with no
    feasible result, which add nothing)."""
    values = normalise(values, low, high)
    reference = np.full(values.shape[1], REFERENCE)
    history = np.zeros(len(values))
    front = np.zeros((0, values.shape[1]))
    volume = 0.0
    for k, row in enumerate(values):
        if not np.isnan(row).any() and not (front <= row).all(axis=1).any():
            front = np.vstack([front[~(row <= front).all(axis=1)], row])
            volume = hypervolume(front, reference)
        history[k] = volume
    return history
