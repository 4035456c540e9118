"""Shared helpers for the command-line tools: source locations and one-line errors."""

import sys
from collections.abc import Callable
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.lexer import Span


def make_context() -> Context:
    """A context with every upstream dialect and ours registered (loaded lazily)."""
    from xdsl.dialects import get_all_dialects as upstream_dialects

    from cimxdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in {**upstream_dialects(), **get_all_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module_text(text: str, name: str) -> ModuleOp:
    """Parse and verify MLIR text; errors name the file, line and column of the failing op."""
    parser = LocatingParser(make_context(), text, name)
    module = parser.parse_module()
    try:
        module.verify()
    except DiagnosticException as e:
        raise UserError(f"{locate_failure(module, parser.op_spans)}{e}") from None
    return module


class UserError(Exception):
    """An error caused by the user's input; reported as one line, without a traceback."""


class LocatingParser(Parser):
    """A parser that remembers where each operation starts, to name it in verifier errors."""

    def __init__(self, ctx: Context, text: str | bytes, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self.op_spans: dict[Operation, Span] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self.op_spans[op] = start
        return op


def locate_failure(module: ModuleOp, op_spans: dict[Operation, Span], line_offset: int = 0) -> str:
    """`file:line:col: ` of the first op of `module` that does not verify (or its name)."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException:
            span = op_spans.get(op)
            if span is None:
                return f"in '{op.name}': "
            location = span.get_location()
            return f"{location.file}:{location.line + line_offset}:{location.col}: "
    return ""


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
