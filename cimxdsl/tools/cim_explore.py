"""`cim-explore`: sweep device parameters for a model and report accuracy, latency and energy per
point (results.csv, results.json and PNG plots), serially, in local processes or on a Dask cluster.
A sweep with `search = ...` proposes its points with Optuna and keeps its study in the output
folder (study.db): run the same command again to resume an interrupted search.
`cim-explore learn RESULTS...` trains a predictor of those objectives from results;
`cim-explore predict --predictor P MODEL` predicts the best configuration for a model without
simulating it."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cimxdsl.tools.cli import (
    Progress,
    UserError,
    add_parallel_options,
    add_version_option,
    check_parallel_options,
    check_positive,
    run_reporting_errors,
)


def main(args: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if args is None else args)
    if args and args[0] in ("learn", "predict"):
        from cimxdsl.tools.cim_explore_learn import learn_main, predict_main

        (learn_main if args[0] == "learn" else predict_main)(args[1:])
        return
    parser = argparse.ArgumentParser(
        prog="cim-explore",
        description=__doc__,
        epilog="cim-explore learn --help and cim-explore predict --help describe the predictor's commands",
    )
    parser.add_argument("sweep", help="a sweep file (TOML; see docs/dse.md)")
    parser.add_argument("-o", "--output-dir", help="where to write results and plots (default: <sweep>-results)")
    add_parallel_options(parser)
    parser.add_argument(
        "--threads", type=int, metavar="N", help="threads per point (default: every core, shared by --jobs)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="evaluate the data set in chunks of N inputs (default: the sweep's batch_size, else all at once)",
    )
    parser.add_argument("--no-plots", action="store_true", help="write only results.csv and results.json")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table")
    add_version_option(parser)
    options = parser.parse_args(args)

    def body() -> None:
        from cimxdsl.explore import SweepError, explore, load_sweep, write

        check_positive(options, "threads", "batch_size")
        check_parallel_options(options)

        def located(error: Exception) -> UserError:
            return UserError(str(error).replace("sweep file:", f"{options.sweep}:", 1))

        try:
            sweep = load_sweep(options.sweep)
        except SweepError as e:
            raise located(e) from None
        out_dir = Path(options.output_dir or f"{Path(options.sweep).stem}-results")
        progress = Progress("trials" if sweep.search else "points", enabled=not options.quiet, lines=True)
        try:
            results = explore(
                sweep,
                jobs=options.jobs,
                scheduler=options.scheduler,
                progress=progress,
                threads=options.threads,
                batch_size=options.batch_size,
                study=out_dir / "study.db" if sweep.search else None,
            )
        except (SweepError, RuntimeError) as e:
            raise located(e) from None
        finally:
            progress.finish()
        try:
            written = write(results, out_dir, plots=not options.no_plots)
        except RuntimeError as e:
            raise UserError(str(e)) from None
        if not options.quiet:
            print(results.table())
        programs = len({p.program for p in results.points})
        print(
            f"{len(results.points)} points, {len(results.rows)} runs, {programs} compiled programs, "
            f"{len(results.failed)} failed; float model {100 * results.float_accuracy:.2f} % on "
            f"{results.images} images; {results.run['seconds']:.1f} s ({results.run['execution']})"
        )
        if results.search is not None:
            trials = results.search["trials"]
            front = trials[-1]["front"] if trials else []
            print(
                f"search '{sweep.search}': {len(trials)} trials, {len(results.points)} points simulated "
                f"({len(results.pruned)} pruned), {len(front)} on the front, hypervolume "
                f"{trials[-1]['hypervolume'] if trials else 0:.4f}; study {out_dir / 'study.db'}"
            )
        print(f"wrote {', '.join(str(p) for p in written.values())}")

    run_reporting_errors("cim-explore", body)


if __name__ == "__main__":
    main(sys.argv[1:])
