"""`cim-explore`: results, plots and a progress line from a sweep file; one-line errors otherwise."""

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cimxdsl.tools.cim_explore import main
from cimxdsl.tools.cli import Progress

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
    assert progress and progress[-1].startswith("4/4 points  ") and progress[-1].endswith(" s")
    assert "\r" not in err and "\033" not in err  # a pipe gets plain lines, no redrawing


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
def test_bad_sweep_files_are_one_line_errors(tmp_path, monkeypatch, capsys, text, message):
    sweep = tmp_path / "bad.toml"
    sweep.write_text(text)
    monkeypatch.chdir(tmp_path)  # (where the default output directory would be made)
    with pytest.raises(SystemExit) as caught:
        main([str(sweep)])
    out, err = capsys.readouterr()
    assert caught.value.code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"cim-explore: error: {sweep}: "), err
    assert message in err
    assert not (tmp_path / "bad-results").exists()


def test_a_bad_sweep_file_is_a_one_line_error_of_the_command(tmp_path):
    """As above, from the command in a process of its own: its exit status and streams."""
    sweep = tmp_path / "bad.toml"
    sweep.write_text(SWEEP.replace("seeds = 2", "seeds = 0"))
    code, out, err = run_cli(str(sweep))
    assert code == 1 and out == ""
    assert err == f"cim-explore: error: {sweep}: 'seeds' must be a positive integer, got 0\n"


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


def test_progress_draws_a_bar_on_a_terminal_and_prints_tenths_otherwise():
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
    bar = Progress("points", lines=True, stream=plain)
    for done in range(1, 21):
        bar(done, 20)
    bar.finish()
    lines = plain.text.splitlines()
    assert [line.split()[0] for line in lines] == ["1/20"] + [f"{2 * i}/20" for i in range(1, 11)]
    assert "\033" not in plain.text and "\r" not in plain.text
    silent = Stream(tty=False)
    Progress("stages", stream=silent).step("compiling: tile", 3, 8)
    assert silent.text == ""
    terminal = Stream(tty=True)
    bar = Progress("points", stream=terminal)
    bar(1, 2)
    bar(2, 2)
    bar.finish()
    shown = re.sub(r"\033\[[0-9;?]*[A-Za-z]", "", terminal.text)
    assert "2/2 points" in shown and "ETA" in shown and "points/s" in shown
    assert terminal.text.count("\r\033[2K") >= 2 and terminal.text.endswith("\033[2K")  # redrawn, then removed


def test_the_installed_console_script_runs_a_sweep_and_reports_bad_input(tmp_path):
    script = shutil.which("cim-explore", path=str(Path(sys.executable).parent))
    assert script is not None
    sweep = tmp_path / "one.toml"
    sweep.write_text(SWEEP.replace("limit = 24", "limit = 8").replace("prog_noise = [0.0, 0.1]", ""))
    process = subprocess.run([script, str(sweep), "--no-plots"], capture_output=True, text=True, cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    assert "2 points, 2 runs, 1 compiled programs, 0 failed" in process.stdout
    with (tmp_path / "one-results" / "results.json").open() as file:
        results = json.load(file)
    assert [row["adc_bits"] for row in results["rows"]] == [0, 4] and results["sweep"]["images"] == 8
    lossless = results["rows"][0]
    assert lossless["status"] == "ok" and 0.0 <= lossless["accuracy"] <= 1.0
    bad = subprocess.run([script, str(sweep), "--jobs", "-1"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr == "cim-explore: error: --jobs must be a positive integer, got -1\n"
