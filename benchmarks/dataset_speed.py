"""Images per second and peak memory of one `cim-explore` point on a data set larger than one batch:
a ResNet-20-shaped CIFAR model (random weights) on N random 32×32 images (labels: the float model's
predictions), evaluated in chunks of `--batch-size` in one process, in two local processes and on a
local Dask cluster of two workers (the point's chunks sharded across them). Each execution runs in
its own process, for its own peak memory (the process's and its children's, workers included).

    python benchmarks/dataset_speed.py [--images 10000] [--batch-size 500] [--mode exact|int8]
        [--device ideal] [--executions serial processes dask]
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EXECUTIONS = ("serial", "processes", "dask")


def write_inputs(directory: Path, images: int) -> dict:
    """The model and the data set in `directory`; the sweep of one point over them."""
    from benchmarks.model_zoo import resnet_cifar
    from cimxdsl.reference import float_predictions

    model = resnet_cifar()
    onnx.save(model, directory / "resnet20.onnx")
    inputs = np.random.default_rng(0).normal(size=(images, 3, 32, 32)).astype(np.float32)
    labels = float_predictions(model, inputs, 500)
    np.savez(directory / "data.npz", inputs=inputs, labels=labels, calibration=inputs[:16])
    return {"model": "resnet20.onnx", "data": "data.npz", "axes": {"adc_bits": [0]}}


def run_one(directory: Path, execution: str, batch_size: int, mode: str, device: str) -> dict:
    import cimxdsl.explore
    from cimxdsl.explore import load_sweep

    spec = json.loads((directory / "sweep.json").read_text())
    paths = {key: str(directory / spec[key]) for key in ("model", "data")}
    sweep = load_sweep({**spec, **paths, "mode": mode, "device": {"preset": device}, "batch_size": batch_size})
    start = time.perf_counter()
    if execution == "dask":
        from distributed import Client, LocalCluster

        with (
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            results = cimxdsl.explore(sweep, scheduler=client, plots=False)
    else:
        results = cimxdsl.explore(sweep, jobs=2 if execution == "processes" else 1, plots=False)
    seconds = time.perf_counter() - start
    row = results.rows[0]
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return {
        "execution": execution,
        "images": results.images,
        "seconds": seconds,
        "images_per_s": results.images / seconds,
        "peak_mib": peak / 1024,
        "status": row["status"],
        "agreement": row["agreement"],
        "error": row["error"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=10000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--mode", default="exact", choices=["exact", "int8"])
    parser.add_argument("--device", default="ideal")
    parser.add_argument("--executions", nargs="*", default=list(EXECUTIONS), choices=EXECUTIONS)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # an execution in this process, in --one's directory
    args = parser.parse_args()
    if args.one:
        directory, execution = args.one.split(":", 1)
        print(json.dumps(run_one(Path(directory), execution, args.batch_size, args.mode, args.device)))
        return
    with tempfile.TemporaryDirectory(prefix="cimx-dataset-") as tmp:
        directory = Path(tmp)
        (directory / "sweep.json").write_text(json.dumps(write_inputs(directory, args.images)))
        for execution in args.executions:
            options = ["--batch-size", str(args.batch_size), "--mode", args.mode, "--device", args.device]
            command = [sys.executable, __file__, "--one", f"{directory}:{execution}", *options]
            r = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            print(
                f"{execution}: {r['images']} images in {r['seconds']:.1f} s = {r['images_per_s']:.1f} images/s;"
                f" peak memory {r['peak_mib']:.0f} MiB; {r['status']} {r['error']}"
                f" (agreement with the float model {r['agreement']})",
                flush=True,
            )


if __name__ == "__main__":
    main()
