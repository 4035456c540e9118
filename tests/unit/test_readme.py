"""The README's tour runs as written: every command between `<!-- tour -->` and `<!-- /tour -->`
(```sh lines, ```python blocks) runs in order in a fresh directory holding a copy of `examples/`,
with the console scripts of this Python environment on the path, and exits 0; what the commands
claim to produce is checked. The console scripts run as lit runs the tools: each in a child that
`tests/filecheck/tool_server.py` forks from an interpreter that has imported what they import,
rather than in one that imports it all again."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOUR = re.compile(r"<!-- tour -->(.*?)<!-- /tour -->", re.S)
BLOCK = re.compile(r"```(sh|python)\n(.*?)```", re.S)
TIMEOUT_S = 300
TOOL_SERVER = ROOT / "tests" / "filecheck" / "tool_server.py"
TOOLS = ("cim-opt", "cim-run", "cim-compile", "cim-validate", "cim-explore")


@dataclass
class Step:
    kind: str  # "sh" or "python"
    text: str
    result: subprocess.CompletedProcess | None = None


def tour_steps(readme: str) -> list[Step]:
    """The tour's shell commands (one per line, `\\` continuations joined, comments dropped) and
    Python blocks, in order."""
    match = TOUR.search(readme)
    assert match, "README.md has no <!-- tour --> … <!-- /tour --> section"
    steps: list[Step] = []
    for kind, body in BLOCK.findall(match.group(1)):
        if kind == "python":
            steps.append(Step(kind, body))
            continue
        for line in body.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                steps.append(Step(kind, line.strip()))
    return steps


def environment() -> dict[str, str]:
    """This interpreter's scripts first on the path, and this checkout first on the import path."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env.pop("COLUMNS", None)
    return env


@contextmanager
def served_console_scripts(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """`env` with a directory first on its path that holds a stand-in for each tool's console script
    in this environment: it has the tool server run that very script (its import of the tool's
    `main` and its exit), in a child forked on the caller's streams, directory and environment."""
    scripts = Path(sys.executable).parent
    directory = Path(tempfile.mkdtemp(prefix="cimxdsl-tour-"))  # (short: a socket's path is at most 108 bytes)
    socket_path = directory / "socket"
    server = subprocess.Popen(
        [sys.executable, str(TOOL_SERVER), "serve", str(socket_path)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout.readline() == b"ready\n", "the tool server did not start"
        stand_ins = directory / "bin"
        stand_ins.mkdir()
        for tool in TOOLS:
            script = scripts / tool
            assert script.is_file(), f"this environment has no console script {tool}"
            client = [sys.executable, "-I", "-S", str(TOOL_SERVER), str(socket_path), str(script)]
            (stand_ins / tool).write_text(f'#!/bin/sh\nexec {shlex.join(client)} "$@"\n')
            (stand_ins / tool).chmod(0o755)
        yield {**env, "PATH": os.pathsep.join([str(stand_ins), env["PATH"]])}
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def tour(tmp_path_factory) -> tuple[Path, list[Step]]:
    """Run every step of the tour once, in order, in a fresh directory; stop at the first failure."""
    work = tmp_path_factory.mktemp("tour")
    shutil.copytree(ROOT / "examples", work / "examples", symlinks=False)
    steps = tour_steps(README.read_text())
    with served_console_scripts(environment()) as env:
        for step in steps:
            command = [sys.executable, "-c", step.text] if step.kind == "python" else ["bash", "-c", step.text]
            step.result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
            if step.result.returncode != 0:
                break
    return work, steps


def output(steps: list[Step], start: str) -> str:
    """The stdout of the first step that begins with `start`."""
    found = [s for s in steps if s.text.startswith(start)]
    assert found and found[0].result is not None, f"no tour step starts with {start!r}"
    return found[0].result.stdout


def test_every_tour_command_exits_0(tour):
    _, steps = tour
    assert len(steps) >= 12, f"the tour has only {len(steps)} steps"
    for step in steps:
        assert step.result is not None, f"not run (an earlier step failed): {step.text}"
        assert step.result.returncode == 0, (
            f"tour step failed with exit code {step.result.returncode}: {step.text}\n{step.result.stderr[-2000:]}"
        )


def test_tour_uses_only_shipped_files():
    """Every `examples/…` path the tour names is in the repository (nothing the reader must make)."""
    text = TOUR.search(README.read_text()).group(1)
    named = set(re.findall(r"examples/[\w./-]+\w", text))
    assert named, "the tour names no example file"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"the tour names files that are not shipped: {missing}"


def test_tour_device_keeps_the_digits_accuracy(tour):
    """Step 1's sample device (2-bit cells, 8-bit ADC) keeps the float accuracy within a point."""
    _, steps = tour
    line = next(
        (l for l in output(steps, "cim-compile examples/digits_cnn.onnx").splitlines() if "accuracy" in l), None
    )
    assert line, "step 1 printed no accuracy"
    float_accuracy, crossbar_accuracy = (float(x) for x in re.findall(r"([\d.]+)\s*%", line)[:2])
    assert float_accuracy > 90
    assert crossbar_accuracy >= float_accuracy - 1.0, line


def test_tour_outputs(tour):
    work, steps = tour
    assert all(s.result is not None and s.result.returncode == 0 for s in steps), "the tour failed"
    digits = work / "out" / "digits"
    for name in ("report.json", "import.mlir", "tile.mlir", "func.mlir", "model.cimx"):
        assert (digits / name).is_file(), f"cim-compile -o wrote no {name}"
    assert "top-1 agreement 100%" in output(steps, "cim-compile examples/digits_cnn.onnx --device examples/devices/tour.toml --random")

    lowered = (work / "out" / "mlp_lowered.mlir").read_text()
    assert "func.call @memristor_gemm" in lowered and "cinm." not in lowered and "cim.op" not in lowered
    source, crossbars = np.load(work / "out" / "source.npz"), np.load(work / "out" / "lowered.npz")
    inputs = [k for k in source.files if k.startswith("input_")]
    assert inputs and inputs == [k for k in crossbars.files if k.startswith("input_")]
    for key in inputs:  # the same random inputs (--seed) …
        np.testing.assert_array_equal(source[key], crossbars[key], err_msg=key)
    results = [[f[k] for k in f.files if not k.startswith("input_")] for f in (source, crossbars)]
    assert len(results[0]) == len(results[1]) == 1
    np.testing.assert_array_equal(*[r[0] for r in results])  # … and on a lossless ADC the same integers

    assert (work / "out" / "pim" / "config.json").is_file()
    assert "ok" in output(steps, "cim-validate")

    rows = (work / "out" / "sweep" / "results.csv").read_text().splitlines()
    assert len(rows) >= 3, "the sweep wrote fewer than two points"

    predicted, label = output(steps, "import numpy").split()[:2]
    assert predicted == label, "the crossbars misclassify the first test image"


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links no documentation"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"
