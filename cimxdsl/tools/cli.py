"""Shared helpers for the command-line tools: one-line errors, `--version` and progress bars."""

import argparse
import os
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import NoReturn

import rich.console
import rich.progress
import rich.text
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError


def version_line(tool: str) -> str:
    """`tool cimxdsl X, xDSL Y`: the package's version and the xDSL it runs on."""
    import cimxdsl

    return f"{tool} (cimxdsl) {cimxdsl.__version__}, xDSL {version('xdsl')}"


def add_version_option(parser: argparse.ArgumentParser) -> None:
    """`--version`: print `version_line` and exit 0."""
    parser.add_argument("--version", action="version", version=version_line(parser.prog))


class UserError(Exception):
    """An error caused by the user's input; reported as one line, without a traceback."""


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """`--backend` and `--array-device`: where the crossbar products run (`cimxdsl.device.backend`)."""
    from cimxdsl.device.backend import BACKENDS

    parser.add_argument(
        "--backend",
        default="numpy",
        choices=BACKENDS[:3],
        help="the array library the crossbar products run on (default: numpy; torch and cupy can use a GPU)",
    )
    parser.add_argument(
        "--array-device",
        metavar="DEVICE",
        help="the device of --backend: cpu, cuda or cuda:N (default: the host; cupy: cuda:0)",
    )


def check_positive(options: argparse.Namespace, *names: str) -> None:
    """A `UserError` naming the first option of `names` (attribute names) given below 1."""
    for name in names:
        value = getattr(options, name)
        if value is not None and value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")


def add_parallel_options(parser: argparse.ArgumentParser, what: str = "points") -> None:
    """`--jobs N` and `--scheduler ADDRESS`: where `what` run (local processes or a Dask cluster)."""
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help=f"run {what} in N local processes")
    parser.add_argument("--scheduler", metavar="ADDRESS", help=f"run {what} on a Dask cluster (tcp://host:8786)")


def check_parallel_options(options: argparse.Namespace) -> None:
    """A `UserError` for `--jobs` below 1 or given with `--scheduler`."""
    check_positive(options, "jobs")
    if options.scheduler and options.jobs != 1:
        raise UserError("give --jobs or --scheduler, not both")


def fail(tool: str, message: str) -> NoReturn:
    print(f"{tool}: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def run_reporting_errors(tool: str, body: Callable[[], object]) -> None:
    """Run `body`, turning every expected failure into a clear message and exit code 1."""
    try:
        body()
    except (ParseError, DiagnosticException) as e:
        # Parse errors already start with file:line:col and show the line.
        print(str(e).rstrip(), file=sys.stderr)
        raise SystemExit(1) from None
    except ArgSpecParseError as e:
        fail(tool, " ".join(str(e).split()))
    except BrokenPipeError:
        # the reader stopped early (`tool ... | head`): no message, and none when Python flushes at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    except (UserError, ValueError, OSError) as e:
        fail(tool, str(e))


class RateColumn(rich.progress.ProgressColumn):
    """Units finished per second (blank until there is a rate)."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit or "steps"

    def render(self, task: rich.progress.Task) -> rich.text.Text:
        speed = task.finished_speed or task.speed
        return rich.text.Text("" if speed is None else f"{speed:.2f} {self.unit}/s")


class Progress:
    """Progress on stderr. On a terminal: a `rich` bar with the count, rate, elapsed time and ETA,
    redrawn in place and removed when done. Otherwise (a pipe, a CI log): with `lines`, one plain
    line per tenth of the work; without, nothing."""

    def __init__(self, unit: str = "", enabled: bool = True, lines: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.unit = unit
        self.enabled = enabled
        self.lines = lines
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self.shown_tenth = -1
        self.bar: rich.progress.Progress | None = None
        self.task: rich.progress.TaskID | None = None
        self.sized = False

    def __call__(self, done: int, total: int) -> None:
        """`done` of `total` units are finished (the callback form, as `explore(progress=...)`)."""
        self.step("", done, total)

    def step(self, label: str, done: int = 0, total: int | None = None) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.draw(label, done, total)
        elif self.lines and total and (tenth := 10 * done // total) > self.shown_tenth:
            self.shown_tenth = tenth
            elapsed = time.perf_counter() - self.start
            print(f"{label}{' ' if label else ''}{done}/{total} {self.unit}  {elapsed:.1f} s", file=self.stream)

    def draw(self, label: str, done: int, total: int | None) -> None:
        """Redraw the bar; a step of unknown size (total None) shows only a pulse and the time."""
        sized = total is not None
        if self.bar is not None and sized != self.sized:
            self.finish()
        if self.bar is None:
            counts = (rich.progress.MofNCompleteColumn(), rich.progress.TextColumn(self.unit), RateColumn(self.unit))
            times = (rich.progress.TextColumn("ETA"), rich.progress.TimeRemainingColumn())
            self.bar = rich.progress.Progress(
                rich.progress.TextColumn("{task.description}"),
                rich.progress.BarColumn(),
                *(counts if sized else ()),
                rich.progress.TimeElapsedColumn(),
                *(times if sized else ()),
                console=rich.console.Console(file=self.stream, force_terminal=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(label, total=total)
            self.sized = sized
        self.bar.update(self.task, description=label, completed=done, total=total)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
