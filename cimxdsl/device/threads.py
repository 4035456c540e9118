"""How many cores a simulation uses.

`using_threads(n)` runs a block with n threads: products run their chunks of rows (`map_chunks`,
`matmul`), and the host's element-wise passes their slices of rows (`map_rows`: element-wise ops,
im2col's copy, a product's input digits), on a pool of n threads while NumPy's BLAS keeps to one
thread, so that the two never
multiply (no oversubscription; a busy-waiting BLAS thread on a shared core costs far more than it
gives). The BLAS is the OpenBLAS NumPy loads; its thread count is set once per block through its
`openblas_set_num_threads` entry point (under the symbol prefix and suffix NumPy's build gives it).

Results do not depend on n: chunk boundaries are fixed (`MATMUL_ROWS` rows of a `matmul`, whatever
the thread count) and each chunk is one BLAS call on one thread, so every float is computed alike.
Across batches the same rows are not bitwise the same: OpenBLAS picks its kernel, hence the order
of a product's sums, by the operands' shapes (and by `OPENBLAS_CORETYPE`), so the rows of a product
of some rows differ from those of all rows by float rounding, at most 2·γ_K·(|x|·|w|) per element
for a K-term reduction (γ_K = K·u / (1 - K·u), u the unit roundoff; Higham, "Accuracy and Stability
of Numerical Algorithms", 2002, §3.1). Integer-valued products (int8 codes, the bit-sliced
crossbar's sums) are exact in float, hence the same whatever the order, batch or kernel.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache

import numpy as np

_state: dict[str, int | None] = {"threads": 1, "default": None, "active": 0}
POOL_PREFIX = "cimxdsl-pool"
_pool: dict[int, ThreadPoolExecutor] = {}


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@cache
def _blas() -> tuple[Callable, Callable] | None:
    """(get, set) of the thread count of the OpenBLAS NumPy has loaded, if it can be found."""
    import numpy  # noqa: F401  (loads the library)

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        library = ctypes.CDLL(path)
        for prefix in ("scipy_", ""):
            for suffix in ("64_", ""):
                get = getattr(library, f"{prefix}openblas_get_num_threads{suffix}", None)
                put = getattr(library, f"{prefix}openblas_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    return get, put
    return None


def blas_threads() -> int | None:
    """The BLAS's thread count, or None if it cannot be controlled."""
    blas = _blas()
    return None if blas is None else int(blas[0]())


@contextmanager
def _blas_limited(threads: int) -> Iterator[None]:
    blas = _blas()
    if blas is None:
        yield
        return
    before = int(blas[0]())
    blas[1](threads)
    try:
        yield
    finally:
        blas[1](before)


def check_threads(threads: int | None) -> int | None:
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return threads


def set_default_threads(threads: int | None) -> None:
    """The threads of `using_threads(None)` in this process (None: every core), e.g. a share of the
    cores for each of several worker processes."""
    _state["default"] = check_threads(threads)


@contextmanager
def using_threads(threads: int | None = None) -> Iterator[None]:
    """Run the block on `threads` threads (None: those of an enclosing block, else the process
    default, else every core)."""
    inherited = _state["threads"] if _state["active"] else None
    threads = check_threads(threads) or inherited or _state["default"] or cores()
    before = _state["threads"]
    _state["threads"] = threads
    _state["active"] += 1
    try:
        with _blas_limited(1):
            yield
    finally:
        _state["threads"] = before
        _state["active"] -= 1


def pool_threads() -> int:
    """The threads `map_chunks` runs on now (1 outside `using_threads`)."""
    return _state["threads"]


def map_chunks(work: Callable[[tuple], None], chunks: Iterable[tuple]) -> None:
    """`work` on every chunk (chunks must be independent): on the pool of the current thread
    count, or in order on one thread (also when called from the pool's own threads, which would
    otherwise wait for themselves)."""
    chunks = list(chunks)
    threads = min(_state["threads"], len(chunks))
    if threads <= 1 or threading.current_thread().name.startswith(POOL_PREFIX):
        for chunk in chunks:
            work(chunk)
        return
    pool = _pool.get(threads)
    if pool is None:
        pool = _pool[threads] = ThreadPoolExecutor(threads, thread_name_prefix=POOL_PREFIX)
    for _ in pool.map(work, chunks):
        pass


def map_rows(work: Callable[[slice], None], rows: int, least: int = 256) -> None:
    """`work` on consecutive slices of `range(rows)`, one per thread of the pool (of at least
    `least` rows): for element-wise host passes, whose results do not depend on the split."""
    if rows <= 0:
        return
    parts = max(1, min(_state["threads"], rows // max(least, 1)))
    size = -(-rows // parts)
    map_chunks(work, [slice(start, min(start + size, rows)) for start in range(0, rows, size)])


MATMUL_ROWS = 512
"""Rows of a chunk of `matmul`."""


def matmul(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """x @ w for a 2-D x, in chunks of `MATMUL_ROWS` rows on the pool (into `out` when given); the
    same chunks on one thread, so that the result does not depend on the thread count."""
    rows = x.shape[0]
    if rows <= MATMUL_ROWS:
        return np.matmul(x, w) if out is None else np.matmul(x, w, out=out)
    if out is None:
        out = np.empty((rows, w.shape[1]), np.result_type(x, w))
    map_chunks(lambda c: np.matmul(x[c[0] : c[1]], w, out=out[c[0] : c[1]]), _row_ranges(rows))
    return out


def _row_ranges(rows: int) -> list[tuple[int, int]]:
    return [(start, min(start + MATMUL_ROWS, rows)) for start in range(0, rows, MATMUL_ROWS)]
