"""lit configuration: runs every .mlir test with the project's tools, without installing it."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

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
# The BLAS thread count the suite's runner chose (tests/conftest.py), which lit does not pass on itself.
if "OPENBLAS_NUM_THREADS" in os.environ:
    config.environment["OPENBLAS_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"]

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


def tool_server() -> str:
    """Start `tool_server.py` for this run (each tool command then costs a fork, not an interpreter
    importing xDSL and the package); its socket's path."""
    directory = tempfile.mkdtemp(prefix="cimxdsl-tools-")
    path = os.path.join(directory, "socket")
    script = os.path.join(config.test_source_root, "tool_server.py")
    server = subprocess.Popen(
        [sys.executable, script, "serve", path],
        env=config.environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    if server.stdout.readline() != b"ready\n":
        raise RuntimeError("the tool server did not start")

    def stop():
        server.terminate()
        server.wait()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(stop)
    return path


client = f"{sys.executable} -I -S {os.path.join(config.test_source_root, 'tool_server.py')} {tool_server()}"
for tool in ("cim-opt", "cim-run", "cim-compile", "cim-validate", "cim-explore"):
    module = tool.replace("-", "_")
    config.substitutions.append((tool, f"{client} cimxdsl.tools.{module}"))
