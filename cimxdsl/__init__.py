"""cimxdsl: an MLIR-compatible compiler and simulator for memristive-crossbar
compute-in-memory accelerators, built on xDSL."""

__version__ = "0.1.0"


def compile(*args, **kwargs):
    """See `cimxdsl.api.compile`."""
    from cimxdsl.api import compile as compile_model

    return compile_model(*args, **kwargs)


def load(path):
    """See `cimxdsl.api.load`."""
    from cimxdsl.api import load as load_model

    return load_model(path)


def explore(*args, **kwargs):
    """See `cimxdsl.explore.explore`."""
    from cimxdsl.explore import explore as run_sweep

    return run_sweep(*args, **kwargs)
