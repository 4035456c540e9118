"""How a pass fails on bad input: one line, `pass-name: message`, with the op it stopped at."""

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException


def pass_error(name: str, message: str, op: Operation | None = None) -> PassFailedException:
    """`name: message ('op.name')`, prefixed with `file:line:col: ` when the op has a location."""
    if op is None:
        return PassFailedException(f"{name}: {message}")
    location = op.location
    place = ""
    if isinstance(location, FileLineColLoc):
        place = f"{location.filename.data}:{location.line.data}:{location.column.data}: "
    return PassFailedException(f"{place}{name}: {message} ('{op.name}')")
