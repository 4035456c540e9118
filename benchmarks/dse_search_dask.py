"""A search of 1,000 trials on a local Dask cluster of two workers, undisturbed and disturbed: one
worker killed while it runs a point (the scheduler runs the point again elsewhere, the nanny
restarts the worker), and the search's own process killed mid-run and started again (the study
resumes from its SQLite file). All three must find the same trials and the same front.

Cheap points (the digits CNN on its first 8 test images, a space of 432 points, so that most of
the later trials repeat a point and cost no simulation) keep the run short: the check is about the
search's bookkeeping, not the model.

    python benchmarks/dse_search_dask.py [--out build/dse_search_dask] [--trials 1000]
        [--disturbed-trials N] [--reuse]

A search's trials do not depend on how many it will make (each trial's sampler is seeded with its
number, and batches have a fixed size), so the disturbed runs may stop after their first
`--disturbed-trials` (a multiple of 4) and are compared with the same trials of the undisturbed
run, read back from its study; `--reuse` takes the undisturbed run from an earlier call.
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


def recorded(study: Path, count: int | None = None) -> dict:
    """The first `count` trials of a study (parameters, status, values) and the front among them."""
    import numpy as np
    import optuna

    from cimxdsl.explore.pareto import non_dominated

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    loaded = optuna.load_study(study_name="cim-explore", storage=f"sqlite:///{study}")
    attrs = loaded.user_attrs
    trials = sorted(loaded.trials, key=lambda t: t.number)
    rows = []
    for t in trials:
        record = attrs.get(f"trial {t.number:06d}")
        if record is None:  # stopped while it was being proposed: not a trial of the search
            continue
        rows.append([json.dumps(t.params, sort_keys=True), record["status"], record["values"]])
    rows = rows[:count]
    done = [r for r in rows if r[2] is not None]
    signs = np.array([-1.0 if o in ("accuracy", "agreement") else 1.0 for o in SPACE["objectives"]])
    values = np.array([r[2] for r in done]) * signs
    front = sorted({done[i][0] for i in np.flatnonzero(non_dominated(values))}) if done else []
    return {"trials": rows, "front": front, "simulated": len({r[0] for r in rows})}


def remove(path: Path) -> None:
    """A file and, for a study, its write-ahead log."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


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
    parser.add_argument("--disturbed-trials", type=int)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--only-driver", action="store_true", help="only the run whose process is killed")
    options = parser.parse_args()
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    parser_trials = options.disturbed_trials or options.trials
    report = {"trials": options.trials, "disturbed_trials": parser_trials}

    if not (options.reuse and trials_in(out / "calm.db") >= options.trials):
        remove(out / "calm.db")
        calm_run = search(out / "calm.db", options.trials)
        report["undisturbed_seconds"] = calm_run["seconds"]
    calm = recorded(out / "calm.db", options.trials)
    print(f"undisturbed: {len(calm['trials'])} trials, {calm['simulated']} distinct points", flush=True)
    report["undisturbed"] = {"simulated": calm["simulated"], "front": calm["front"]}
    prefix = recorded(out / "calm.db", parser_trials)

    runs = ("worker_killed", "driver_killed") if not options.only_driver else ("driver_killed",)
    for name in ("driver.db", "driver.json") if options.only_driver else ("worker.db", "driver.db", "driver.json"):
        remove(out / name)
    if not options.only_driver:
        hit = search(out / "worker.db", parser_trials, kill_worker_after=parser_trials // 3)
        print(f"worker killed: {hit['killed']}, {hit['seconds']} s", flush=True)
        report["worker_killed"] = {"killed": hit["killed"], "seconds": hit["seconds"], **recorded(out / "worker.db")}

    # the search's process killed once a third of the trials are told, then started again
    study, result = out / "driver.db", out / "driver.json"
    command = [sys.executable, __file__, "--driver", str(study), str(parser_trials), str(result)]
    process = subprocess.Popen(command, start_new_session=True)
    while trials_in(study) < parser_trials // 3 and process.poll() is None:
        time.sleep(0.5)
    told_before = trials_in(study)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and its cluster
    process.wait()
    time.sleep(2)
    subprocess.run(command, check=True)
    resumed = json.loads(result.read_text())
    print(f"driver killed after {told_before} trials, resumed: {resumed['seconds']} s", flush=True)
    report["driver_killed"] = {"killed_after_trials": told_before, "seconds": resumed["seconds"], **recorded(study)}

    for name in runs:
        same_trials = report[name]["trials"] == prefix["trials"]
        same_front = report[name]["front"] == prefix["front"]
        report[name].update(same_trials=same_trials, same_front=same_front)
        report[name].pop("trials")
        count, points = len(prefix["trials"]), len(prefix["front"])
        print(f"{name}: same {count} trials {same_trials}, same front {same_front} ({points} points)")
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
