"""The float import's handlers, one module per kind of op. Importing this package registers all of
them: `importer` is then the complete table."""

from cimxdsl.frontend.ops import math, nn, quant, shape, transformer
from cimxdsl.frontend.registry import importer

__all__ = ["importer", "math", "nn", "quant", "shape", "transformer"]
