"""The tests that compare products across thread counts, batches and chunks pass with each of
OpenBLAS's x86-64 kernels, which sum in different orders: each is run in a subprocess with
`OPENBLAS_CORETYPE` set (the one place the suite sets it; core types that OpenBLAS reports as one
core run the same kernels and share a run)."""

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


def reported_cores() -> dict[str, str]:
    """The core name the OpenBLAS NumPy loads reports with each usable core type set ("" where it
    reports none)."""
    runs = {
        core: subprocess.Popen(
            [sys.executable, "-c", CORE_NAME],
            env={**os.environ, "OPENBLAS_CORETYPE": core},
            stdout=subprocess.PIPE,
            text=True,
        )
        for core in CORE_TYPES
        if unusable(core) is None
    }
    names = {}
    for core, process in runs.items():
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 0, f"{core}: printing the core name failed"
        names[core] = out.strip().lower()
    return names


@pytest.fixture(scope="module")
def affected_runs(tmp_path_factory):
    """The affected tests under each usable core type, every run started at once (a process each,
    so they run side by side where there are cores for it): core type -> (the core name OpenBLAS
    reports, process, output file). Core types reported as one core (a build whose Zen kernels are
    Haswell's) share one run."""
    directory = tmp_path_factory.mktemp("core-types")
    # (none of them uses Hypothesis: its plugin is not loaded)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *AFFECTED]
    runs, started = {}, {}
    for core, name in reported_cores().items():
        kernels = name or core  # (an OpenBLAS that reports no core: a run for each core type)
        if kernels not in started:
            output = directory / f"{core}.log"
            with open(output, "w") as log:
                env = {**os.environ, "OPENBLAS_CORETYPE": core}
                process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            started[kernels] = (process, output)
        runs[core] = (name, *started[kernels])
    yield runs
    for process, _ in started.values():
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("core", list(CORE_TYPES))
def test_products_compared_across_splits_agree_under_each_blas_core_type(core, affected_runs):
    if reason := unusable(core):
        pytest.skip(reason)
    name, process, output = affected_runs[core]
    if name:  # an OpenBLAS that reports its core type uses the one set
        assert name in REPORTED[core]
    returncode = process.wait(timeout=300)
    assert returncode == 0, output.read_text()[-6000:]
