"""A tool whose reader stops early (`tool ... | head -1`) ends without an error message."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
BIN = Path(sys.executable).parent


def test_a_reader_that_stops_early_gets_no_error():
    # `head -c 1` closes the pipe after one byte; the report cim-run prints after its results then finds no reader
    command = f"{BIN}/cim-run {ROOT}/examples/mlp.mlir --device ideal --random-inputs --report"
    result = subprocess.run(f"{command} | head -c 1 >/dev/null", shell=True, capture_output=True, text=True)
    assert result.stderr == ""
