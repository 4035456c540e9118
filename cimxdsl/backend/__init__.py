"""The `pim` target's back end: the artifact directory in pimsim-nn's format written from the
instruction-level IR `pim-codegen` produces, or from its packed code (`emit`), and read back
(`artifacts`), the global-memory layout, the artifact validator and the performance estimate. It
reads what the passes produced and imports none of them."""

from cimxdsl.backend.artifacts import ArtifactError, Artifacts, read_artifacts, write_artifacts
from cimxdsl.backend.emit import artifacts_of, write_program
from cimxdsl.backend.validator import ExecutionError, ValidationResult, validate

__all__ = [
    "ArtifactError",
    "Artifacts",
    "ExecutionError",
    "ValidationResult",
    "artifacts_of",
    "read_artifacts",
    "validate",
    "write_artifacts",
    "write_program",
]
