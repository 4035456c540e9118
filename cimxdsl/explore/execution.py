"""The evaluation of points, and where they run: in this process, in local worker processes, or on a
Dask cluster.

`evaluate_point` never raises for a bad point: the error is recorded in the point's rows. All three
places call `evaluate_part` on the same `Context` and points, and results are put back in
point order, so a sweep gives identical rows whichever way it runs. Points are handed out grouped
by compiled program, so a worker mostly reuses the program it compiled last. With more workers than
points, each point's data set is split into shards of consecutive chunks, one task each, merged
in order (`rows.point_rows`): a single point on a large data set uses the whole cluster.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, ProcessPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager
from typing import Any

from cimxdsl.device import DeviceConfig
from cimxdsl.device.threads import cores, set_default_threads, using_threads
from cimxdsl.explore.chunks import Chunk, ChunksResult, run_chunks
from cimxdsl.explore.context import Context
from cimxdsl.explore.points import Point, compile_key, compiled_program, device_seed, is_random
from cimxdsl.explore.rows import point_rows
from cimxdsl.explore.sweep import CostModel, device_settings

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


# ---- evaluation of one point -----------------------------------------------------------------------
def point_config(context: Context, point: Point) -> DeviceConfig:
    """The base device with the point's settings (validated) and the sweep's cost model applied."""
    return configure(context.base, context.cost, point.values)


def configure(base: DeviceConfig, cost: CostModel, settings: dict[str, Any]) -> DeviceConfig:
    """`base` with the device fields of `settings` and `cost` applied."""
    return cost.apply(base.replace(**device_settings(settings)), base)


def evaluate_point(context: Context, point: Point) -> list[dict]:
    """One row per seed of the point: accuracy, agreement with the float model, latency, energy by
    component and event counts, or the error that stopped it."""
    return point_rows(context, point, [evaluate_part(context, point, chunks) for chunks in context.shards()])


def evaluate_part(context: Context, point: Point, chunks: list[Chunk]) -> str | list[ChunksResult | str]:
    """The point's runs on `chunks` of the data set, one per seed (or the error that stopped one),
    or the error of the point's settings."""
    try:
        config = point_config(context, point)
    except Exception as e:
        return describe_error(e)
    key = compile_key(context, point.values)
    try:
        backend = context.array_backend(point.index)
    except Exception as e:
        return describe_error(e)

    def program(batch: int):
        return compiled_program(context, key, batch)

    results: list[ChunksResult | str] = []
    for seed_index in range(context.seeds if is_random(config) else 1):
        seed = device_seed(context.seed, point.settings, seed_index)
        try:
            results.append(run_chunks(program, context.inputs, config.replace(seed=seed), chunks, backend))
        except Exception as e:
            results.append(describe_error(e))
    return results


def describe_error(error: Exception) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


# ---- where points run ---------------------------------------------------------------------------------
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
    with Evaluator(context, jobs, scheduler, threads) as evaluator:
        return evaluator.points(points, progress)


class Evaluator:
    """Where tasks run, opened once for many batches of them (a search's): serially here, in `jobs`
    local processes, or on the Dask cluster `scheduler` (the context is shipped to each worker
    once). Use as a context manager."""

    def __init__(self, context: Context, jobs: int = 1, scheduler=None, threads: int | None = None):
        self.context = context
        self.jobs = jobs
        self.scheduler = scheduler
        self.threads = threads
        self._stack = ExitStack()
        self._pool = self._client = self._shared = None

    def __enter__(self) -> Evaluator:
        if self.scheduler is not None:
            self._client = self._stack.enter_context(dask_client(self.scheduler))
            self._shared = self._client.scatter(self.context, broadcast=True, hash=False)
        elif self.jobs > 1:
            start = multiprocessing.get_context(START_METHOD)
            setup = (self.context, self.threads or max(1, cores() // self.jobs))
            self._pool = self._stack.enter_context(
                ProcessPoolExecutor(self.jobs, mp_context=start, initializer=set_worker_context, initargs=setup)
            )
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    @property
    def workers(self) -> int:
        """How many tasks run at once."""
        if self._client is not None:
            return max(1, len(self._client.scheduler_info()["workers"]))
        return self.jobs if self._pool is not None else 1

    def points(self, points: list[Point], progress: Progress | None = None) -> list[list[dict]]:
        """The rows of every point, in point order (handed out grouped by program, each point's
        data set sharded when there are more workers than points)."""
        order = sorted(points, key=lambda p: (p.program, p.index))
        tasks = shard_tasks(self.context, order, self.workers)
        done = self.run(tasks, progress)
        parts: dict[int, list] = {}
        for point, shard, _ in tasks:
            parts.setdefault(point.index, []).append(done[point.index, shard])
        return [point_rows(self.context, point, parts[point.index]) for point in points]

    def run(self, tasks: list[Task], progress: Progress | None = None) -> dict:
        """`evaluate_part` of every task, by (point index, shard)."""
        say = progress or (lambda done, total: None)
        if self._client is not None:
            return run_on_dask(self, tasks, say)
        if self._pool is not None:
            return run_in_pool(self._pool, tasks, say)
        return run_serially(self.context, tasks, say, self.threads)


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


def run_in_pool(pool: ProcessPoolExecutor, tasks: list[Task], say: Progress) -> dict:
    done = {}
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


LOST_RETRIES = 3
"""How many times tasks lost with a worker (and the context they read) are submitted again."""


def run_on_dask(evaluator: Evaluator, tasks: list[Task], say: Progress) -> dict:
    """Run `tasks` on the evaluator's cluster. A worker that dies takes its running tasks and its
    copy of the context with it: the scheduler runs the tasks again elsewhere; where it cancels
    them instead (the context lost), the context is scattered again and the tasks resubmitted."""
    from distributed import as_completed as dask_completed
    from distributed.scheduler import KilledWorker

    client = evaluator._client
    done: dict = {}
    for attempt in range(LOST_RETRIES + 1):
        run = uuid.uuid4().hex[:8]
        futures = {
            client.submit(
                evaluate_with_threads,
                evaluator._shared,
                point,
                chunks,
                evaluator.threads,
                pure=False,
                key=f"cimx-point-{point.index}-{shard}-{run}",
            ): (point.index, shard)
            for point, shard, chunks in tasks
            if (point.index, shard) not in done
        }
        lost = None
        for future in dask_completed(futures):
            try:
                done[futures[future]] = future.result()
            except (CancelledError, KilledWorker, OSError) as e:  # OSError: a connection closed
                lost = e
                continue
            say(len(done), len(tasks))
        if lost is None:
            return done
        if attempt < LOST_RETRIES:
            try:
                evaluator._shared = client.scatter(evaluator.context, broadcast=True, hash=False)
            except OSError as e:  # a worker that died while it was sent the context: try again
                lost = e
                time.sleep(1)
    raise RuntimeError(f"tasks lost with Dask workers {LOST_RETRIES + 1} times: {lost}")
