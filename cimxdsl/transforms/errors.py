"""How a pass fails on bad input: one line, `pass-name: message`, with the op it stopped at."""

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.dialects.utils import location_prefix


def pass_error(name: str, message: str, op: Operation | None = None) -> PassFailedException:
    """`name: message ('op.name')`, prefixed with `file:line:col: ` when the op has a location."""
    if op is None:
        return PassFailedException(f"{name}: {message}")
    return PassFailedException(f"{location_prefix(op)}{name}: {message} ('{op.name}')")
