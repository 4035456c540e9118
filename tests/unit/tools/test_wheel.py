"""A regular (non-editable) install of the wheel runs the demo sweep on the bundled model and data.

The wheel is built offline from a copy of the package (no build isolation) and installed without its
dependencies into a fresh venv that borrows the test environment's dependencies (a `.pth` line; the
editable install there is not seen), so the installed package is the only cimxdsl on the path.
"""

import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SWEEP = """\
model = "digits"
data = "digits"
calibration = "digits-train"
limit = 8
[device]
preset = "ideal"
[axes]
crossbars = [16]
"""


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    process = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False, **kwargs)
    assert process.returncode == 0, process.stdout + process.stderr
    return process


def test_installed_wheel_runs_the_bundled_demo(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT / "cimxdsl", source / "cimxdsl", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", tmp_path / "dist", source)
    (wheel,) = (tmp_path / "dist").glob("cimxdsl-*.whl")

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    dependencies = [sysconfig.get_path("purelib"), *site.getsitepackages()]
    (purelib / "test_dependencies.pth").write_text("\n".join(dict.fromkeys(dependencies)) + "\n")
    run(*pip, "--python", python, "install", "--no-deps", "--no-index", wheel)

    work = tmp_path / "work"  # not the repository: nothing of the source tree is importable from here
    work.mkdir()
    where = run(python, "-c", "import cimxdsl.data as d; print(d.__file__); print(d.DIGITS_MODEL)", cwd=work).stdout
    assert all(line.startswith(str(purelib)) for line in where.split()), where
    (work / "sweep.toml").write_text(SWEEP)
    explored = run(venv / "bin" / "cim-explore", "sweep.toml", "--no-plots", "-q", cwd=work)
    assert "1 points, 1 runs, 1 compiled programs, 0 failed" in explored.stdout
    assert (work / "sweep-results" / "results.csv").read_text().count("\n") == 2
    compiled = run(venv / "bin" / "cim-compile", where.split()[1], "--device", "ideal", "--random-inputs", cwd=work)
    assert "device: ideal" in compiled.stdout
