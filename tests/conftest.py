"""The lit suite runs beside the unit tests: started when collection ends, its pytest tests last.

The suite's processes (this one, lit's, the tools and workers they start) keep NumPy's OpenBLAS to one
thread unless `OPENBLAS_NUM_THREADS` is set: they share the machine's cores with each other, and a
BLAS thread busy-waiting for a core another process holds costs far more than it gives (a small
product took more than ten times as long on two shared cores). A run keeps the BLAS to one thread
itself (`using_threads`), so this changes only the products tests call outside one; what the thread
count does is tested in tests/unit/device/test_threads.py, which sets it."""

import os

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before anything in this process loads NumPy


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lit = [item for item in items if item.nodeid.startswith("tests/test_filecheck.py::")]
    if lit and not config.option.collectonly:
        items.sort(key=lambda item: item.nodeid.startswith("tests/test_filecheck.py::"))
        lit[0].module.start_lit()
