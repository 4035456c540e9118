"""lit configuration: runs every .mlir test with the project's tools, without installing it."""

import os
import sys

import lit.formats

config.name = "cimxdsl"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "inputs"]

repo_root = os.path.abspath(os.path.join(config.test_source_root, "..", ".."))
config.environment["PYTHONPATH"] = repo_root
# Keep the venv's tools (filecheck) reachable.
config.environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + config.environment.get("PATH", "")
config.environment["PYTHONWARNINGS"] = "error::DeprecationWarning:cimxdsl"

# Substitutions apply in order: macros that expand to tool names come first.
config.substitutions.append(
    (
        "CIM_ROUNDTRIP",
        "cim-opt %s --split-input-file | cim-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(
    (
        "CIM_GENERIC_ROUNDTRIP",
        "cim-opt %s --split-input-file --print-op-generic | cim-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(("%python", sys.executable))
for tool in ("cim-opt", "cim-run", "cim-compile", "cim-validate", "cim-explore"):
    module = tool.replace("-", "_")
    config.substitutions.append((tool, f"{sys.executable} -m cimxdsl.tools.{module}"))
