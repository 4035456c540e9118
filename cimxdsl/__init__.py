"""cimxdsl: an MLIR-compatible compiler and simulator for memristive-crossbar
compute-in-memory accelerators, built on xDSL."""

__version__ = "0.1.0"
