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


@pytest.hookimpl(trylast=True)  # after `-k`/`-m` have deselected: lit starts only for its tests left
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lit = [item for item in items if item.nodeid.startswith("tests/test_filecheck.py::")]
    if lit and not config.option.collectonly:
        items.sort(key=lambda item: item.nodeid.startswith("tests/test_filecheck.py::"))
        STARTED.append(lit[0].module)
        lit[0].module.start_lit([item.callspec.params["path"] for item in lit])


STARTED: list = []
"""The module that started the lit run (tests/test_filecheck.py), once it has."""


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A lit run nobody waited for (the run stopped before its tests: `-x`, an interrupt) is
    stopped with the session rather than left running."""
    for module in STARTED:
        module.stop_lit()
