"""A search of 1,000 trials on a local Dask cluster of two workers, undisturbed and disturbed: one
worker killed while it runs a point (the scheduler runs the point again elsewhere, the nanny
restarts the worker), and the search's own process killed mid-run and started again (the study
resumes from its SQLite file). All three must find the same trials and the same front.

Cheap points (the digits CNN on its first 8 test images, a space of 432 points, so that most of
the later trials repeat a point and cost no simulation) keep the run short: the check is about the
search's bookkeeping, not the model.

    python benchmarks/dse_search_dask.py [--out build/dse_search_dask] [--trials 1000]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SPACE = {
    "name": "digits on 8 images: ADC bits x range x DAC bits x cell bits x encoding (432 points)",
    "model": "digits",
    "data": "digits",
    "limit": 8,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {
        "adc_bits": {"min": 1, "max": 12},
        "adc_range": ["full", "static_column", "calibrated"],
        "dac_bits": [1, 2, 4],
        "cell_bits": [1, 2],
        "encoding": ["differential", "offset"],
    },
    "cost": {"adc": "linear", "adc_reference_bits": 8},
    "objectives": ["accuracy", "energy", "latency"],
    "search": "nsga2",
    "population": 40,
    "trials_per_batch": 4,
    "seed": 11,
}


def search(study: Path, trials: int, kill_worker_after: int | None = None) -> dict:
    """Run (or resume) the search on a fresh two-worker LocalCluster; optionally kill one worker
    while it runs a point once `kill_worker_after` trials are done."""
    from distributed import Client, LocalCluster

    import cimxdsl.explore

    killed = {}
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        armed = threading.Event()

        def killer() -> None:
            armed.wait()
            while not killed:
                busy = [w for w, tasks in client.processing().items() if tasks]
                if busy:
                    pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                    os.kill(pid, signal.SIGKILL)
                    killed.update(worker=busy[0], pid=pid, at=time.time())
                time.sleep(0.01)

        def progress(done: int, total: int) -> None:
            if kill_worker_after is not None and done >= kill_worker_after:
                armed.set()

        if kill_worker_after is not None:
            threading.Thread(target=killer, daemon=True).start()
        start = time.perf_counter()
        results = cimxdsl.explore({**SPACE, "trials": trials}, scheduler=client, study=study, progress=progress)
        seconds = time.perf_counter() - start
    return {
        "seconds": round(seconds, 1),
        "killed": killed,
        "trials": [[t["point"], t["status"], t["values"]] for t in results.search["trials"]],
        "front": sorted(
            json.dumps(p.values, sort_keys=True) for p in results.points if results.summary[p.index]["pareto"]
        ),
        "simulated": len(results.points),
    }


def driver(args: list[str]) -> None:
    """The search in this process (for the run whose process is killed)."""
    study, trials, report = Path(args[0]), int(args[1]), Path(args[2])
    report.write_text(json.dumps(search(study, trials)))


def trials_in(study: Path) -> int:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return len(optuna.load_study(study_name="cim-explore", storage=f"sqlite:///{study}").trials)
    except Exception:  # not created yet
        return 0


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--driver":
        driver(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/dse_search_dask"))
    parser.add_argument("--trials", type=int, default=1000)
    options = parser.parse_args()
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.db*"):
        old.unlink()
    report = {}

    calm = search(out / "calm.db", options.trials)
    print(f"undisturbed: {len(calm['trials'])} trials, {calm['simulated']} simulated, {calm['seconds']} s", flush=True)
    report["undisturbed"] = calm

    hit = search(out / "worker.db", options.trials, kill_worker_after=options.trials // 3)
    print(f"worker killed: {hit['killed']}, {hit['seconds']} s", flush=True)
    report["worker_killed"] = hit

    # the search's process killed once a third of the trials are told, then started again
    study, result = out / "driver.db", out / "driver.json"
    command = [sys.executable, __file__, "--driver", str(study), str(options.trials), str(result)]
    process = subprocess.Popen(command, start_new_session=True)
    while trials_in(study) < options.trials // 3 and process.poll() is None:
        time.sleep(0.5)
    told_before = trials_in(study)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and its cluster
    process.wait()
    time.sleep(2)
    subprocess.run(command, check=True)
    resumed = json.loads(result.read_text())
    resumed["killed_after_trials"] = told_before
    print(f"driver killed after {told_before} trials, resumed: {resumed['seconds']} s", flush=True)
    report["driver_killed"] = resumed

    for name in ("worker_killed", "driver_killed"):
        same_trials = report[name]["trials"] == calm["trials"]
        same_front = report[name]["front"] == calm["front"]
        report[name]["same_trials"], report[name]["same_front"] = same_trials, same_front
        print(f"{name}: same trials {same_trials}, same front {same_front} ({len(calm['front'])} points)")
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
