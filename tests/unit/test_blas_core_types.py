"""The tests that compare products across thread counts, batches and chunks pass with each of
OpenBLAS's x86-64 kernels, which sum in different orders: each is run in a subprocess with
`OPENBLAS_CORETYPE` set (the one place the suite sets it)."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AFFECTED = [
    "tests/unit/device/test_threads.py",
    "tests/unit/explore/test_chunks.py::test_chunk_outputs_equal_the_whole_batch",
    "tests/unit/explore/test_chunks.py::test_exact_mode_chunks_agree_with_one_batch_within_float_rounding",
    "tests/unit/frontend/test_compile.py::test_int8_quantization_does_not_depend_on_the_batch_compiled_for",
]
CORE_TYPES = {"Haswell": {"avx2", "fma"}, "SkylakeX": {"avx512f", "avx512bw", "avx512dq", "avx512vl"}, "Zen": {"avx2"}}
"""Each core type and the instructions its kernels need."""
REPORTED = {"Haswell": {"haswell"}, "SkylakeX": {"skylakex"}, "Zen": {"zen", "haswell"}}
"""The core names OpenBLAS reports for each (builds whose Zen kernels are Haswell's say Haswell)."""
CORE_NAME = """
import ctypes, numpy
paths = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower() and "/" in line}
for path in sorted(paths):
    library = ctypes.CDLL(path)
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename"):
        if hasattr(library, name):
            getattr(library, name).restype = ctypes.c_char_p
            print(getattr(library, name)().decode())
            raise SystemExit
"""
"""Prints the core type of the OpenBLAS NumPy loaded."""


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as info:
        return next((set(line.split(":", 1)[1].split()) for line in info if line.startswith("flags")), set())


def unusable(core: str) -> str | None:
    """Why `core`'s kernels cannot run here, or None."""
    if platform.machine() != "x86_64" or not os.path.exists("/proc/cpuinfo"):
        return "OpenBLAS core types of x86-64 Linux"
    if missing := CORE_TYPES[core] - cpu_flags():
        return f"this CPU lacks {', '.join(sorted(missing))} for OpenBLAS's {core} kernels"
    return None


@pytest.fixture(scope="module")
def affected_runs(tmp_path_factory):
    """The affected tests under each usable core type, every one started at once (a process each, so
    they run side by side where there are cores for it): core type -> (process, output file)."""
    directory = tmp_path_factory.mktemp("core-types")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *AFFECTED]
    runs = {}
    for core in (c for c in CORE_TYPES if unusable(c) is None):
        output = directory / f"{core}.log"
        with open(output, "w") as log:
            env = {**os.environ, "OPENBLAS_CORETYPE": core}
            runs[core] = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        runs[core] = (runs[core], output)
    yield runs
    for process, _ in runs.values():
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("core", list(CORE_TYPES))
def test_products_compared_across_splits_agree_under_each_blas_core_type(core, affected_runs):
    if reason := unusable(core):
        pytest.skip(reason)
    env = {**os.environ, "OPENBLAS_CORETYPE": core}
    name = subprocess.run([sys.executable, "-c", CORE_NAME], env=env, capture_output=True, text=True, check=True)
    if name.stdout.strip():  # an OpenBLAS that reports its core type uses the one set
        assert name.stdout.strip().lower() in REPORTED[core]
    process, output = affected_runs[core]
    returncode = process.wait(timeout=300)
    assert returncode == 0, output.read_text()[-6000:]
