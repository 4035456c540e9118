"""Where points run: in this process, in local worker processes, or on a Dask cluster.

All three call `runner.evaluate_point` on the same `Context` and points, and results are put back in
point order, so a sweep gives identical rows whichever way it runs. Points are handed out grouped
by compiled program, so a worker mostly reuses the program it compiled last.
"""

from __future__ import annotations

import multiprocessing
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed

from cimxdsl.device.threads import cores, set_default_threads, using_threads
from cimxdsl.explore.runner import Context, Point, evaluate_point

Progress = Callable[[int, int], None]

START_METHOD = "fork" if sys.platform.startswith("linux") else "spawn"
"""How local workers start. fork: fast, and scripts need no `if __name__ == "__main__"` guard (the
workers only run NumPy and the interpreter, no threads of the parent). Elsewhere spawn, which
re-imports the calling script in each worker: guard the script's entry point."""

CONNECT_TIMEOUT = "10s"
"""How long to try to reach a Dask scheduler."""

_worker_context: Context | None = None


def run_points(
    context: Context,
    points: list[Point],
    jobs: int = 1,
    scheduler=None,
    progress: Progress | None = None,
    threads: int | None = None,
) -> list[list[dict]]:
    """The rows of every point, in point order. `scheduler`: a Dask scheduler address or a
    `distributed.Client`; else `jobs` > 1 local processes; else serially here. `threads`: the
    threads of each point's runs (None: every core here and on a Dask worker, the cores divided
    among local processes)."""
    say = progress or (lambda done, total: None)
    order = sorted(points, key=lambda p: (p.program, p.index))
    if scheduler is not None:
        done = run_on_dask(context, order, scheduler, say, threads)
    elif jobs > 1:
        done = run_in_processes(context, order, jobs, say, threads or max(1, cores() // jobs))
    else:
        done = {}
        with using_threads(threads):
            for point in order:
                done[point.index] = evaluate_point(context, point)
                say(len(done), len(points))
    return [done[point.index] for point in points]


def run_in_processes(
    context: Context, points: list[Point], jobs: int, say: Progress, threads: int
) -> dict[int, list[dict]]:
    start = multiprocessing.get_context(START_METHOD)
    done: dict[int, list[dict]] = {}
    setup = (context, threads)
    with ProcessPoolExecutor(jobs, mp_context=start, initializer=set_worker_context, initargs=setup) as pool:
        futures = {pool.submit(evaluate_in_worker, point): point for point in points}
        for future in as_completed(futures):
            done[futures[future].index] = future.result()
            say(len(done), len(points))
    return done


def set_worker_context(context: Context, threads: int | None = None) -> None:
    global _worker_context
    _worker_context = context
    set_default_threads(threads)


def evaluate_in_worker(point: Point) -> list[dict]:
    assert _worker_context is not None, "worker started without a context"
    return evaluate_point(_worker_context, point)


def evaluate_with_threads(context: Context, point: Point, threads: int | None) -> list[dict]:
    with using_threads(threads):
        return evaluate_point(context, point)


def run_on_dask(
    context: Context, points: list[Point], scheduler, say: Progress, threads: int | None = None
) -> dict[int, list[dict]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise RuntimeError(
            "running on a Dask scheduler needs dask[distributed]: pip install 'cimxdsl[explore]'"
        ) from None
    own = not isinstance(scheduler, Client)
    if own:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as e:
            raise RuntimeError(f"cannot connect to the Dask scheduler at '{scheduler}': {e}") from None
    else:
        client = scheduler
    try:
        shared = client.scatter(context, broadcast=True, hash=False)
        run = uuid.uuid4().hex[:8]
        futures = {
            client.submit(
                evaluate_with_threads, shared, point, threads, pure=False, key=f"cimx-point-{point.index}-{run}"
            ): point
            for point in points
        }
        done: dict[int, list[dict]] = {}
        for future in dask_completed(futures):
            done[futures[future].index] = future.result()
            say(len(done), len(points))
        return done
    finally:
        if own:
            client.close()
