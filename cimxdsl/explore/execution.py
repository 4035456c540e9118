"""Where points run: in this process, in local worker processes, or on a Dask cluster.

All three call `runner.evaluate_part` on the same `Context` and points, and results are put back in
point order, so a sweep gives identical rows whichever way it runs. Points are handed out grouped
by compiled program, so a worker mostly reuses the program it compiled last. With more workers than
points, each point's data set is split into shards of consecutive chunks, one task each, merged
in order (`runner.point_rows`): a single point on a large data set uses the whole cluster.
"""

from __future__ import annotations

import multiprocessing
import sys
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager

from cimxdsl.device.threads import cores, set_default_threads, using_threads
from cimxdsl.explore.chunks import Chunk
from cimxdsl.explore.runner import Context, Point, evaluate_part, point_rows

Progress = Callable[[int, int], None]

START_METHOD = "fork" if sys.platform.startswith("linux") else "spawn"
"""How local workers start. fork: fast, and scripts need no `if __name__ == "__main__"` guard (the
workers only run NumPy and the interpreter, no threads of the parent). Elsewhere spawn, which
re-imports the calling script in each worker: guard the script's entry point."""

CONNECT_TIMEOUT = "10s"
"""How long to try to reach a Dask scheduler."""

_worker_context: Context | None = None

Task = tuple[Point, int, list[Chunk]]
"""A point, the index of its shard and the shard's chunks."""


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
        with dask_client(scheduler) as client:
            tasks = shard_tasks(context, order, max(1, len(client.scheduler_info()["workers"])))
            done = run_on_dask(context, tasks, client, say, threads)
    elif jobs > 1:
        tasks = shard_tasks(context, order, jobs)
        done = run_in_processes(context, tasks, jobs, say, threads or max(1, cores() // jobs))
    else:
        tasks = shard_tasks(context, order, 1)
        done = run_serially(context, tasks, say, threads)
    parts: dict[int, list] = {}
    for point, shard, _ in tasks:
        parts.setdefault(point.index, []).append(done[point.index, shard])
    return [point_rows(context, point, parts[point.index]) for point in points]


def shard_tasks(context: Context, points: list[Point], workers: int) -> list[Task]:
    """The tasks of `points`: each point's data set in as many shards as there are workers per
    point (at least one)."""
    parts = max(1, workers // max(1, len(points)))
    return [(point, i, chunks) for point in points for i, chunks in enumerate(context.shards(parts))]


def run_serially(context: Context, tasks: list[Task], say: Progress, threads: int | None) -> dict:
    done = {}
    with using_threads(threads):
        for point, shard, chunks in tasks:
            done[point.index, shard] = evaluate_part(context, point, chunks)
            say(len(done), len(tasks))
    return done


def run_in_processes(context: Context, tasks: list[Task], jobs: int, say: Progress, threads: int) -> dict:
    start = multiprocessing.get_context(START_METHOD)
    done = {}
    setup = (context, threads)
    with ProcessPoolExecutor(jobs, mp_context=start, initializer=set_worker_context, initargs=setup) as pool:
        futures = {pool.submit(evaluate_in_worker, point, chunks): (point.index, shard) for point, shard, chunks in tasks}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            say(len(done), len(tasks))
    return done


def set_worker_context(context: Context, threads: int | None = None) -> None:
    global _worker_context
    _worker_context = context
    set_default_threads(threads)


def evaluate_in_worker(point: Point, chunks: list[Chunk]):
    assert _worker_context is not None, "worker started without a context"
    return evaluate_part(_worker_context, point, chunks)


def evaluate_with_threads(context: Context, point: Point, chunks: list[Chunk], threads: int | None):
    with using_threads(threads):
        return evaluate_part(context, point, chunks)


@contextmanager
def dask_client(scheduler) -> Iterator:
    """A `distributed.Client` of `scheduler` (an address, closed at the end, or a client)."""
    try:
        from distributed import Client
    except ImportError:
        raise RuntimeError(
            "running on a Dask scheduler needs dask[distributed]: pip install 'cimxdsl[explore]'"
        ) from None
    if isinstance(scheduler, Client):
        yield scheduler
        return
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as e:
        raise RuntimeError(f"cannot connect to the Dask scheduler at '{scheduler}': {e}") from None
    try:
        yield client
    finally:
        client.close()


def run_on_dask(context: Context, tasks: list[Task], client, say: Progress, threads: int | None = None) -> dict:
    from distributed import as_completed as dask_completed

    shared = client.scatter(context, broadcast=True, hash=False)
    run = uuid.uuid4().hex[:8]
    futures = {
        client.submit(
            evaluate_with_threads,
            shared,
            point,
            chunks,
            threads,
            pure=False,
            key=f"cimx-point-{point.index}-{shard}-{run}",
        ): (point.index, shard)
        for point, shard, chunks in tasks
    }
    done = {}
    for future in dask_completed(futures):
        done[futures[future]] = future.result()
        say(len(done), len(tasks))
    return done
