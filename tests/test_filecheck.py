"""Runs the lit/filecheck suite under pytest: one pytest test per .mlir file, one lit run for all."""

import os
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "filecheck"
LIT_FILES = sorted(
    p for p in SUITE.rglob("*") if p.suffix in {".mlir", ".test"} and not {"inputs", "Output"} & set(p.parts)
)


LIT: dict[str, object] = {}
"""The one lit run of this pytest run: its process and the paths of its report and log."""


LIT_NICENESS = 10
"""How much lower lit (and what it starts) runs than the unit tests where they want the same core:
the unit tests take several times as long, in this one process, and wait for lit only at their end,
so lit takes the core they leave (on two cores, sharing theirs slowed them by half while lit ran)."""


def start_lit(paths: list[Path] | None = None) -> None:
    """Start the one lit run for `paths` (default: all files), if not started yet. The suite's
    conftest starts it, for the files whose tests are selected, when collection ends and runs these
    tests last, so that lit works beside the unit tests."""
    if LIT:
        return
    paths = [SUITE] if paths is None or set(paths) == set(LIT_FILES) else paths
    directory = Path(tempfile.mkdtemp(prefix="cimxdsl-lit-"))
    LIT["report"], LIT["log"] = directory / "results.xml", directory / "lit.log"
    with open(LIT["log"], "w") as log:
        LIT["process"] = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import os; os.nice({LIT_NICENESS}); from lit.main import main; main()",
                *map(str, paths),
                "-q",
                "--xunit-xml-output",
                str(LIT["report"]),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # (its own process group: `stop_lit` stops the tools it started too)
        )


def stop_lit() -> None:
    """Stop the lit run and what it started, if it is still running."""
    process = LIT.get("process")
    if isinstance(process, subprocess.Popen) and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()


@pytest.fixture(scope="session")
def lit_results() -> dict[str, str | None]:
    """Relative path of each lit test -> None if it passed, else lit's output for it."""
    start_lit()
    LIT["process"].wait()
    if not LIT["report"].exists():
        pytest.fail(f"lit wrote no report:\n{LIT['log'].read_text()}")
    results: dict[str, str | None] = {}
    for case in ET.parse(LIT["report"]).getroot().iter("testcase"):
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
