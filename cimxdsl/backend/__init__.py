"""The `pim` target's back end: the artifact directory in pimsim-nn's format (writer and reader),
the global-memory layout, and the instruction-level validator."""

from cimxdsl.backend.artifacts import ArtifactError, Artifacts, read_artifacts, write_artifacts
from cimxdsl.backend.validator import ExecutionError, ValidationResult, validate

__all__ = [
    "ArtifactError",
    "Artifacts",
    "ExecutionError",
    "ValidationResult",
    "read_artifacts",
    "validate",
    "write_artifacts",
]
