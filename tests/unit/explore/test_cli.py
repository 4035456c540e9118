"""`cim-explore`: results, plots and a progress line from a sweep file; one-line errors otherwise."""

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cimxdsl.tools.cim_explore import ProgressLine, main

SWEEP = """\
model = "digits"
data = "digits"
limit = 24
seeds = 2
[device]
preset = "cinnamon"
[axes]
adc_bits = [0, 4]
prog_noise = [0.0, 0.1]
"""


def run_cli(*args: str) -> tuple[int, str, str]:
    process = subprocess.run(
        [sys.executable, "-m", "cimxdsl.tools.cim_explore", *args], capture_output=True, text=True, check=False
    )
    return process.returncode, process.stdout, process.stderr


def test_a_sweep_writes_results_plots_and_shows_progress(tmp_path):
    sweep = tmp_path / "tiny.toml"
    sweep.write_text(SWEEP)
    code, out, err = run_cli(str(sweep), "-o", str(tmp_path / "out"), "--jobs", "2")
    assert code == 0, err
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == [
        "accuracy_vs_adc_bits.png",
        "accuracy_vs_prog_noise.png",
        "energy_vs_accuracy.png",
        "results.csv",
        "results.json",
    ]
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert len(rows) == 1 + 2 + 1 + 2 and {r["status"] for r in rows} == {"ok"}
    assert "4 points, 6 runs, 1 compiled programs, 0 failed" in out and "(processes)" in out
    assert "adc_bits=4, prog_noise=0.1" in out
    progress = [line for line in err.splitlines() if "points" in line]
    assert progress and progress[-1].startswith("[" + "#" * 24 + "] 4/4 points")


def test_default_output_directory_is_named_after_the_sweep(tmp_path, monkeypatch):
    sweep = tmp_path / "named.toml"
    sweep.write_text(SWEEP.replace("prog_noise = [0.0, 0.1]", ""))
    monkeypatch.chdir(tmp_path)
    main([str(sweep), "--no-plots", "-q"])
    assert sorted(p.name for p in (tmp_path / "named-results").iterdir()) == ["results.csv", "results.json"]


@pytest.mark.parametrize(
    "text, message",
    [
        (SWEEP.replace("adc_bits", "adc_bit"), "axis 'adc_bit' is not a device parameter (did you mean 'adc_bits'?)"),
        (SWEEP.replace('model = "digits"', 'model = "missing.onnx"'), "'model': no such file 'missing.onnx'"),
        (SWEEP.replace("seeds = 2", "seeds = 0"), "'seeds' must be a positive integer, got 0"),
        (SWEEP + "[cost]\nadc = 3\n", "cost.adc must be one of fixed, linear, exponential, got 3"),
        ("model = [\n", "is not valid TOML"),
    ],
)
def test_bad_sweep_files_are_one_line_errors(tmp_path, text, message):
    sweep = tmp_path / "bad.toml"
    sweep.write_text(text)
    code, out, err = run_cli(str(sweep))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"cim-explore: error: {sweep}: "), err
    assert message in err
    assert not (tmp_path / "bad-results").exists()


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SWEEP)
    for args, message in (
        (["--jobs", "0"], "--jobs must be a positive integer, got 0"),
        (["--jobs", "2", "--scheduler", "tcp://127.0.0.1:1"], "give --jobs or --scheduler, not both"),
    ):
        with pytest.raises(SystemExit) as caught:
            main([str(sweep), *args])
        assert caught.value.code == 1
        assert capsys.readouterr().err == f"cim-explore: error: {message}\n"
    with pytest.raises(SystemExit):
        main([str(tmp_path / "none.toml")])
    assert "no such file" in capsys.readouterr().err


def test_progress_line_redraws_on_a_terminal_and_prints_tenths_otherwise():
    class Stream:
        def __init__(self, tty):
            self.text, self.tty = "", tty

        def isatty(self):
            return self.tty

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    plain = Stream(tty=False)
    bar = ProgressLine(stream=plain)
    for done in range(1, 21):
        bar(done, 20)
    lines = plain.text.splitlines()
    assert len(lines) == 11 and lines[-1].startswith("[########################] 20/20 points")
    terminal = Stream(tty=True)
    bar = ProgressLine(stream=terminal)
    bar(1, 2)
    bar(2, 2)
    bar.finish()
    assert terminal.text.count("\r\033[K") == 3 and "\n" not in terminal.text


def test_the_console_script_is_installed():
    script = shutil.which("cim-explore", path=str(Path(sys.executable).parent))
    assert script is not None
