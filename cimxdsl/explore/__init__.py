"""Design-space exploration: accuracy, latency and energy of a model over device parameters.

    import cimxdsl.explore
    results = cimxdsl.explore("examples/sweep_digits.toml", out_dir="out", jobs=2)
    results.summary          # one dict per point: accuracy mean/std over seeds, agreement, costs
    results.rows             # one dict per (point, seed)
    results.pareto           # the Pareto front of the sweep's objectives (default: energy, accuracy)

A sweep with `search = "random"` (or grid, tpe, nsga2, surrogate) proposes `trials` points with Optuna and
records them in a study (`study.db` in `out_dir`) that a later call resumes; `results.search` holds
its history (`cimxdsl.explore.search`).

The sweep format is documented in `cimxdsl.explore.sweep` and `docs/dse.md`. The package is callable
(`cimxdsl.explore(...)` is `cimxdsl.explore.explore(...)`).
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from cimxdsl.device.threads import check_threads
from cimxdsl.explore.results import ExploreResults
from cimxdsl.explore.sweep import Sweep, SweepError, load_sweep

__all__ = ["ExploreResults", "Sweep", "SweepError", "explore", "load_sweep", "write"]


def explore(
    sweep: dict | str | Path | Sweep,
    out_dir: str | Path | None = None,
    jobs: int = 1,
    scheduler=None,
    progress: Callable[[int, int], None] | None = None,
    plots: bool = True,
    threads: int | None = None,
    batch_size: int | None = None,
    study: str | Path | None = None,
) -> ExploreResults:
    """Run a sweep (a TOML path or a dict of the same shape) and return its results.

    `jobs` > 1 runs points in that many local processes; `scheduler` (a Dask scheduler address such
    as "tcp://host:8786", or a `distributed.Client`) runs them on a Dask cluster. The results are
    the same either way. With `out_dir`, results.csv, results.json and (with `plots`) PNG figures
    are written there. `progress(done, total)` is called as points finish. `threads`: the threads
    of each point's simulation (None: every core, shared among `jobs` local processes).
    `batch_size` (overrides the sweep's): the data set is evaluated in chunks of that many inputs,
    with the same accuracy and summed metrics; with more workers than points, a point's chunks are
    shared among them.

    A search (the sweep's `search` key) records its trials in the SQLite file `study` (default:
    `out_dir`/study.db; in memory without either) and resumes the study found there;
    `progress(done, total)` then counts trials.
    """
    from cimxdsl.explore.context import prepare_context
    from cimxdsl.explore.execution import Evaluator
    from cimxdsl.explore.points import expand_points

    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    check_threads(threads)
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    start = time.perf_counter()
    sweep = load_sweep(sweep)
    context = prepare_context(sweep, batch_size)
    history = None
    with Evaluator(context, jobs, scheduler, threads) as evaluator:
        if sweep.search is None:
            points = expand_points(sweep)
            rows = [row for rows in evaluator.points(points, progress) for row in rows]
        else:
            try:
                from cimxdsl.explore.search import STUDY_FILE, run_search
            except ModuleNotFoundError as e:
                if e.name != "optuna":
                    raise
                raise RuntimeError("a search needs optuna: pip install 'cimxdsl[explore]'") from None

            if study is None and out_dir is not None:
                study = Path(out_dir) / STUDY_FILE
            found = run_search(sweep, context, evaluator, study, progress)
            points, rows, history = found.points, found.rows, found.history
    float_accuracy = float((context.reference == context.labels).mean())
    if scheduler is not None:
        address = getattr(getattr(scheduler, "scheduler", None), "address", None)  # a Client's
        execution = {"execution": "dask", "scheduler": address or str(scheduler)}
    elif jobs > 1:
        execution = {"execution": "processes", "jobs": jobs}
    else:
        execution = {"execution": "serial"}
    results = ExploreResults(
        sweep=sweep,
        points=points,
        rows=rows,
        float_accuracy=float_accuracy,
        images=len(context.labels),
        run={**execution, "batch_size": context.batch_size, "seconds": round(time.perf_counter() - start, 3)},
        search=history,
    )
    if out_dir is not None:
        write(results, out_dir, plots=plots)
    return results


def write(results: ExploreResults, out_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """Write results.csv, results.json and (with `plots`) the PNG figures; returns the paths."""
    written = results.write(out_dir)
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise RuntimeError(
                "plots need matplotlib: pip install 'cimxdsl[explore]' (or skip them with --no-plots)"
            ) from None
        from cimxdsl.explore.plots import write_plots

        written.update(write_plots(results, Path(out_dir)))
    return written


class _CallableModule(types.ModuleType):
    """Lets `cimxdsl.explore(...)` call `explore` although `cimxdsl.explore` is this package."""

    def __call__(self, *args, **kwargs) -> ExploreResults:
        return explore(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
