"""The lit suite runs beside the unit tests: started when collection ends, its pytest tests last."""

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lit = [item for item in items if item.nodeid.startswith("tests/test_filecheck.py::")]
    if lit and not config.option.collectonly:
        items.sort(key=lambda item: item.nodeid.startswith("tests/test_filecheck.py::"))
        lit[0].module.start_lit()
