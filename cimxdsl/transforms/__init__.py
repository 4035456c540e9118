"""The cimxdsl passes, one module per pass."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Lazy factories for every cimxdsl pass, keyed by pass name (aliases included)."""
    return {}
