"""cimxdsl: an MLIR-compatible compiler and simulator for memristive-crossbar compute-in-memory
accelerators, built on xDSL."""

__version__ = "0.1.0"

_API = {"compile": "cimxdsl.api", "load": "cimxdsl.api"}
"""Functions of the Python API imported when first used (`import cimxdsl` stays light); they are
the functions themselves, with their signatures and docstrings."""


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'cimxdsl' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


def explore(*args, **kwargs):
    """See `cimxdsl.explore.explore`."""
    from cimxdsl.explore import explore as run_sweep

    return run_sweep(*args, **kwargs)
