"""Runs the lit/filecheck suite under pytest: one pytest test per .mlir file, one lit run for all."""

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "filecheck"
LIT_FILES = sorted(
    p for p in SUITE.rglob("*") if p.suffix in {".mlir", ".test"} and not {"inputs", "Output"} & set(p.parts)
)


@pytest.fixture(scope="session")
def lit_results(tmp_path_factory) -> dict[str, str | None]:
    """Relative path of each lit test -> None if it passed, else lit's output for it."""
    report = tmp_path_factory.mktemp("lit") / "results.xml"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from lit.main import main; main()",
            str(SUITE),
            "-q",
            "--xunit-xml-output",
            str(report),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    results: dict[str, str | None] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        failure = case.find("failure")
        directory = case.get("classname", "").removeprefix("cimxdsl").lstrip(".")
        name = f"{directory}/{case.get('name')}" if directory else case.get("name", "")
        results[name] = None if failure is None else (failure.text or "failed")
    return results


@pytest.mark.parametrize("path", LIT_FILES, ids=lambda p: str(p.relative_to(SUITE)))
def test_lit(path: Path, lit_results: dict[str, str | None]):
    name = str(path.relative_to(SUITE))
    assert name in lit_results, f"lit did not run {name}"
    output = lit_results[name]
    assert output is None, output
