"""Shared helpers for the command-line tools: one-line errors and a progress line."""

import sys
from collections.abc import Callable
from typing import NoReturn

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError


class UserError(Exception):
    """An error caused by the user's input; reported as one line, without a traceback."""


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
    except (UserError, ValueError, OSError) as e:
        fail(tool, str(e))


class Progress:
    """A one-line progress indicator on stderr (only when it is a terminal, unless forced)."""

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def step(self, label: str, done: int | None = None, total: int | None = None) -> None:
        if not self.enabled:
            return
        count = f" {done}/{total}" if total else ""
        print(f"\r\033[K{label}{count}", end="", file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.enabled:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
