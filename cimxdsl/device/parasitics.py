"""IR drop: the effective conductances of a crossbar with resistive wires (docs/device-model.md).

One physical array of K rows and C columns of cells with conductances G (in units of one cell
step). Row i is driven at its first cell's end: its driver reaches cell (i, 0) through the source
resistance and one wire segment, neighbouring cells of a row are joined by a segment, and so are
neighbouring cells of a column; each column reaches its ADC (a virtual ground) after its last row
through one segment and the sink resistance. Every cell joins its row's node to its column's node.
Resistances are given in units of the cell's top-level resistance 1 / G_max (as in CrossSim's
normalised parasitics), so with G in steps a resistance r is r / (2**cell_bits - 1) there.

The network is linear, so the column currents are V @ G_eff for row voltages V: the effect of the
wires is a K×C matrix of effective conductances, computed once per programmed array and then read
like the conductances themselves. `effective_conductance` computes it exactly (`exact_conductance`:
nodal analysis, one sparse solve per driven row) or by a vectorised approximation
(`approximate_conductance`: the voltage drops of first order in the wire resistance, resummed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_MAX_CELLS = 64 * 64
"""Arrays of at most this many cells are solved exactly under `ir_drop_solver = "auto"`."""


@dataclass(frozen=True)
class Wires:
    """The resistances of one array, in units of 1 / G (G in cell steps)."""

    row: float
    col: float
    source: float
    sink: float

    @property
    def ideal(self) -> bool:
        return not (self.row or self.col or self.source or self.sink)


def effective_conductance(g: np.ndarray, wires: Wires, solver: str = "auto") -> np.ndarray:
    """The K×C effective conductances of array `g` (K×C) under `wires` (`solver`: exact, fast or
    auto, exact up to `EXACT_MAX_CELLS` cells)."""
    if wires.ideal:
        return g
    if solver == "exact" or (solver == "auto" and g.size <= EXACT_MAX_CELLS):
        return exact_conductance(g, wires)
    return approximate_conductance(g, wires)


# ---- exact: nodal analysis -----------------------------------------------------------------------
def _chain_nodes(count: int, lines: int, segment: float, terminal: float, first: int) -> tuple[np.ndarray, int]:
    """Unknown-node numbers (lines × count, from `first`; -1 for a node held at its terminal's
    voltage) of `lines` wires of `count` cells, joined by `segment`, reaching their terminal
    through `terminal` (both may be 0: the nodes merge, or are held)."""
    if segment == 0 and terminal == 0:
        return np.full((lines, count), -1), first
    if segment == 0:
        return np.repeat(np.arange(first, first + lines)[:, None], count, axis=1), first + lines
    return np.arange(first, first + lines * count).reshape(lines, count), first + lines * count


def exact_conductance(g: np.ndarray, wires: Wires, chunk: int = 64) -> np.ndarray:
    """G_eff by nodal analysis. With A the network's conductance matrix (node voltages x = A⁻¹ B d
    for row drives d, B the drivers' conductances into the nodes) and the column currents
    Σ_k G_kc (V_row − V_col) = F_cᵀ x + (the held row nodes' share), G_eff = Bᵀ A⁻¹ F: one solve
    per column, `chunk` columns at a time, A factorised once (sparse LU with SciPy when installed,
    else dense)."""
    k, c = g.shape
    g = np.asarray(g, np.float64)
    rows, n = _chain_nodes(c, k, wires.row, wires.source + wires.row, 0)  # row i, cell j
    cols_t, n = _chain_nodes(k, c, wires.col, wires.sink + wires.col, n)  # column j, cell i (from the ADC end)
    cols = cols_t[:, ::-1].T  # (K, C): node of cell (i, j) on its column; the ADC is after row K-1
    a_i: list[np.ndarray] = []
    a_j: list[np.ndarray] = []
    a_v: list[np.ndarray] = []
    rhs_i: list[np.ndarray] = []
    rhs_d: list[np.ndarray] = []
    rhs_v: list[np.ndarray] = []

    def stamp(p: np.ndarray, q: np.ndarray, cond: np.ndarray, drive_p: np.ndarray | None) -> None:
        """Conductances `cond` between nodes p and q (-1: held; p at the unit drive of row
        `drive_p`, q at 0 V)."""
        shape = np.broadcast_shapes(p.shape, q.shape, np.shape(cond), np.shape(0 if drive_p is None else drive_p))
        p, q, cond = (np.broadcast_to(a, shape).ravel() for a in (p, q, cond))
        both = (p >= 0) & (q >= 0) & (p != q)
        a_i.extend([p[both], q[both], p[both], q[both]])
        a_j.extend([p[both], q[both], q[both], p[both]])
        a_v.extend([cond[both], cond[both], -cond[both], -cond[both]])
        for node, other in ((p, q), (q, p)):
            alone = (node >= 0) & (other < 0)
            a_i.append(node[alone])
            a_j.append(node[alone])
            a_v.append(cond[alone])
        if drive_p is not None:  # a held row node drives the unknown node across
            held = (p < 0) & (q >= 0)
            rhs_i.append(q[held])
            rhs_d.append(np.broadcast_to(drive_p, shape).ravel()[held])
            rhs_v.append(cond[held])

    line = np.arange(k)[:, None]
    held = np.full((k, 1), -1)
    if wires.row:
        stamp(rows[:, :-1], rows[:, 1:], np.array(1 / wires.row), None)
    if wires.row + wires.source:
        stamp(held, rows[:, :1], np.array(1 / (wires.row + wires.source)), line)
    if wires.col:
        stamp(cols[:-1], cols[1:], np.array(1 / wires.col), None)
    if wires.col + wires.sink:
        stamp(cols[-1:], np.full((1, c), -1), np.array(1 / (wires.col + wires.sink)), None)
    stamp(rows, cols, g, np.broadcast_to(line, (k, c)))
    solve = _factorised(tuple(np.concatenate(a) for a in (a_i, a_j, a_v)), n)
    r_i, r_d, r_v = (np.concatenate(a) for a in (rhs_i, rhs_d, rhs_v))
    # F: each cell's current as a function of its unknown nodes, per column
    f_nodes, f_cols, f_vals = [], [], []
    for nodes, sign in ((rows, 1.0), (cols, -1.0)):
        known = nodes >= 0
        f_nodes.append(nodes[known])
        f_cols.append(np.broadcast_to(np.arange(c), (k, c))[known])
        f_vals.append(sign * g[known])
    f_nodes, f_cols, f_vals = (np.concatenate(a) for a in (f_nodes, f_cols, f_vals))
    out = g.copy() if (rows < 0).all() else np.zeros((k, c))  # held rows: each at its drive
    for first in range(0, c, chunk):
        count = min(chunk, c - first)
        rhs = np.zeros((n, count))
        mine = (f_cols >= first) & (f_cols < first + count)
        np.add.at(rhs, (f_nodes[mine], f_cols[mine] - first), f_vals[mine])
        y = solve(rhs) if n else rhs
        np.add.at(out[:, first : first + count], r_d, r_v[:, None] * y[r_i])
    return out


def _factorised(entries: tuple[np.ndarray, np.ndarray, np.ndarray], size: int):
    """A solver of the symmetric positive definite system given by COO `entries`: SciPy's sparse
    LU when SciPy is installed, else a dense NumPy solve."""
    i, j, v = entries
    try:
        from scipy.sparse import csc_matrix
        from scipy.sparse.linalg import splu
    except ImportError:  # pragma: no cover - SciPy is optional
        dense = np.zeros((size, size))
        np.add.at(dense, (i, j), v)
        return lambda rhs: np.linalg.solve(dense, rhs)
    lu = splu(csc_matrix((v, (i, j)), shape=(size, size)), permc_spec="MMD_AT_PLUS_A")  # symmetric: a symmetric ordering
    return lu.solve


# ---- fast: row ladders with first-order column feedback ----------------------------------------
def approximate_conductance(g: np.ndarray, wires: Wires) -> np.ndarray:
    """G_eff with each row solved exactly as a ladder and the columns to first order: the current
    I_ij of cell (i, j) raises column j's node at row k by I_ij R(i, k), R(i, k) = sink +
    col·(K − max(i, k)) the resistance the two share to the ADC, and the column's cells pass
    I_ij Σ_k G_kj R(i, k) = I_ij L_ij back, so the cell acts on its row as a conductance
    G_ij / (1 + L_ij) to ground; row i is then a ladder driven through source + row, with a segment
    between its cells, solved by the admittance recursion from its far end. O(K·C), vectorised
    over the rows (a loop over the C cells of a row)."""
    g = np.asarray(g, np.float64)
    k, c = g.shape
    reach = (k - np.arange(k))[:, None]  # K − i: the column segments from row i to the ADC
    above = np.cumsum(g, axis=0)  # Σ_{k ≤ i} G_kj
    weighted = g * reach
    below = weighted.sum(axis=0) - np.cumsum(weighted, axis=0)  # Σ_{k > i} G_kj (K − k)
    shunt = g / (1 + wires.sink * above[-1] + wires.col * (reach * above + below))
    admittance = np.empty_like(shunt)  # of the ladder from cell j to the far end
    admittance[:, -1] = shunt[:, -1]
    for j in range(c - 2, -1, -1):
        beyond = admittance[:, j + 1]
        admittance[:, j] = shunt[:, j] + beyond / (1 + wires.row * beyond)
    voltage = np.empty_like(shunt)
    voltage[:, 0] = 1 / (1 + (wires.source + wires.row) * admittance[:, 0])
    for j in range(1, c):
        voltage[:, j] = voltage[:, j - 1] / (1 + wires.row * admittance[:, j])
    return shunt * voltage
