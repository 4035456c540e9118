"""GPU check: the crossbar products on an array backend (PyTorch or CuPy on a GPU) against NumPy.

1. Equality. Every product shape of the model zoo (ResNet-18/50, VGG-19, MobileNetV2 at 224×224,
   a BERT-base layer's linear maps; K capped at 4608 rows and N at 256 columns: the tiles' layout,
   not their count) on random integer weights and inputs: the bit-sliced products with the 8-bit
   ADC and with a lossless one, and the exact device's integer products, on the backend bitwise
   those of NumPy. Any difference fails the run.
2. Figures. Bit-sliced ResNet-50 (`cinnamon`: 8-bit weights and inputs in 2-bit cells and 2-bit
   DACs, 8-bit ADC, 128×128 arrays, a crossbar per tile so that every weight stays resident) at
   224×224: ms per image at batch 32 and at batch 1; BERT-base-shaped (12 layers, sequence 128) per
   inference; each on the backend and on NumPy (all the machine's cores) in the same run, after
   one warm-up call that programs the tiles. With each time: the share spent in the stacked sliced
   products, and the share moving inputs to the device and results back.
3. CPU threads. Bit-sliced ResNet-18-shaped at batch 16 on NumPy from 1 to 16 threads
   (`cimxdsl.device.threads.using_threads`).

`--quick` shrinks everything (64×64 images, 4 images a batch, 2 BERT layers, 1 and 2 threads, a
few rows a shape) for a run of a minute or two; `--skip` leaves parts out. Prints a table and
writes JSON (`--json`).

    python benchmarks/gpu_check.py --backend torch --array-device cuda:0 [--quick] [--json gpu_check.json]
    python benchmarks/gpu_check.py --backend cupy [--skip bert threads]
"""

import argparse
import json
import platform
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cimxdsl
import cimxdsl.device.crossbar as crossbar
import cimxdsl.device.threads as threads_module
import cimxdsl.interpreters.layer_products as layer_products
import cimxdsl.interpreters.numeric as numeric
from benchmarks.model_zoo import MODELS
from cimxdsl.device import Device, kernels, preset
from cimxdsl.device.backend import ArrayBackend, array_backend
from cimxdsl.device.crossbar import exact_matmul, program_tile, sliced_product, stack_tiles
from cimxdsl.device.threads import cores, using_threads

CONFIG = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8)
"""8-bit weights and inputs in 2-bit cells and 2-bit DACs, an 8-bit ADC, 128×128 arrays."""
RESIDENT = 1 << 15
"""Crossbars of the figures' device: one per tile, so no tile is written again after the first call."""
PARTS = ("equality", "resnet50", "bert", "threads")


# ---- 1. equality on the model zoo's shapes --------------------------------------------------------
def zoo_shapes(size: int) -> list[tuple[str, int, int]]:
    """(model, K, N) of every product of the zoo's models (one per distinct K × N), and BERT-base's."""
    found: dict[tuple[int, int], str] = {}
    for name in ("resnet18", "resnet50", "vgg19", "mobilenetv2"):
        model = MODELS[name](size=size)
        weights = {t.name: t.dims for t in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Conv" and node.input[1] in weights:
                out, per_group, kh, kw = weights[node.input[1]]
                group = next((a.i for a in node.attribute if a.name == "group"), 1)
                found.setdefault((per_group * kh * kw, out // group), name)
            elif node.op_type in ("Gemm", "MatMul") and node.input[1] in weights:
                k, n = weights[node.input[1]]
                transposed = any(a.name == "transB" and a.i for a in node.attribute)
                found.setdefault((n, k) if transposed else (k, n), name)
    for k, n in ((768, 768), (768, 3072), (3072, 768)):
        found.setdefault((k, n), "bert")
    return [(model, k, n) for (k, n), model in found.items()]


def tiled_stack(w: np.ndarray, config, backend: ArrayBackend):
    kt, nt = config.tile_shape
    grid = [
        [program_tile(w[a : a + kt, b : b + nt], config) for b in range(0, w.shape[1], nt)]
        for a in range(0, w.shape[0], kt)
    ]
    return stack_tiles(grid, None, config, backend)


def equality(backend: ArrayBackend, rows: int, size: int) -> dict:
    """Bitwise comparisons with NumPy on every zoo shape; the first difference fails the run."""
    rng = np.random.default_rng(0)
    configs = {"8-bit ADC": CONFIG, "lossless ADC": CONFIG.replace(adc_bits=0)}
    checked, start = 0, time.perf_counter()
    shapes = zoo_shapes(size)
    for model, k, n in shapes:
        k, n = min(k, 4608), min(n, 256)
        w = rng.integers(-127, 128, (k, n))
        x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
        x[::2] = np.abs(x[::2].astype(np.int16)).clip(0, 127)  # rows without a negative entry too
        for label, config in configs.items():
            expected = sliced_product(x, tiled_stack(w, config, array_backend("numpy")), config)
            got = sliced_product(x, tiled_stack(w, config, backend), config)
            if not np.array_equal(got, expected):
                raise SystemExit(f"FAIL: {model} {k}x{n} {label}: {int((got != expected).sum())} entries differ")
            checked += 1
        if not np.array_equal(exact_matmul(x, w, backend=backend), x.astype(np.int64) @ w):
            raise SystemExit(f"FAIL: {model} {k}x{n}: the exact integer product differs")
        checked += 1
    return {"shapes": len(shapes), "products": checked, "rows": rows, "seconds": time.perf_counter() - start}


# ---- 2. figures -----------------------------------------------------------------------------------
def synchronizer(backend: ArrayBackend):
    """A function that waits for the backend's queued kernels (a GPU runs them asynchronously)."""
    if backend.name == "torch" and not backend.on_host:
        import torch

        return lambda: torch.cuda.synchronize(backend.handle)
    if backend.name == "cupy":
        return lambda: backend.handle.synchronize()
    return lambda: None


class Clock:
    """Seconds spent in the stacked sliced products and in the moves to and from the device (after
    waiting for the kernels queued before a move, so that a move's time is its own)."""

    def __init__(self, backend: ArrayBackend):
        self.products = self.moves = 0.0
        self.depth = {"products": 0, "moves": 0}
        self.synchronize = synchronizer(backend)

    @contextmanager
    def watching(self):
        product, asarray, to_numpy = crossbar.sliced_product, ArrayBackend.asarray, ArrayBackend.to_numpy

        def timed(function, field):
            def wrapper(*args, **kwargs):
                if field == "moves":
                    self.synchronize()
                self.depth[field] += 1
                start = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    self.depth[field] -= 1
                    if not self.depth[field]:  # (the outermost call: a product within a product counts once)
                        setattr(self, field, getattr(self, field) + time.perf_counter() - start)

            return wrapper

        # a layer's stacked product, and a crossbar's own (`Device.mvm`)
        crossbar.sliced_product = layer_products.sliced_product = timed(product, "products")
        ArrayBackend.asarray, ArrayBackend.to_numpy = timed(asarray, "moves"), timed(to_numpy, "moves")
        try:
            yield self
        finally:
            crossbar.sliced_product = layer_products.sliced_product = product
            ArrayBackend.asarray, ArrayBackend.to_numpy = asarray, to_numpy


def timed_runs(model, inputs: list[np.ndarray], device: Device, repeat: int) -> dict:
    """The best of `repeat` calls on `device` (its tiles programmed by an earlier call)."""
    best, shares, outputs = np.inf, None, None
    for _ in range(repeat):
        with Clock(device.backend).watching() as clock:
            start = time.perf_counter()
            outputs = model.run(*inputs, device=device).outputs
            seconds = time.perf_counter() - start
        if seconds < best:
            best, shares = seconds, (clock.products / seconds, clock.moves / seconds)
    return {"seconds": best, "products_share": shares[0], "moves_share": shares[1], "outputs": outputs}


def figure(label: str, model, inputs: list[np.ndarray], per: int, backend: ArrayBackend, args) -> dict:
    """The model on the backend and on NumPy (the same programmed tiles: `Device.on_backend`),
    seconds per `per` items (images or inferences)."""
    row = {"figure": label, "batch": per, "compile_s": model.compile_seconds_total}
    device = Device(model.device, backend=backend)
    start = time.perf_counter()
    first = model.run(*inputs, device=device).outputs  # programs the tiles (on the host) and moves them
    row["first_call_s"] = time.perf_counter() - start
    ours = timed_runs(model, inputs, device, args.repeat)
    row["backend"] = {k: v for k, v in ours.items() if k != "outputs"}
    row["backend"]["ms_per_item"] = 1e3 * ours["seconds"] / per
    row["repeatable"] = all(np.array_equal(a, b) for a, b in zip(first, ours["outputs"], strict=True))
    if not args.no_numpy:
        with using_threads(None):  # every core
            reference = timed_runs(model, inputs, device.on_backend("numpy"), 1)
        row["numpy"] = {k: v for k, v in reference.items() if k != "outputs"}
        row["numpy"]["ms_per_item"] = 1e3 * reference["seconds"] / per
        row["equal_to_numpy"] = all(
            np.array_equal(a, b) for a, b in zip(ours["outputs"], reference["outputs"], strict=True)
        )
        row["numpy_over_backend"] = reference["seconds"] / ours["seconds"]
    return row


def compiled(model: onnx.ModelProto, calibration, batch: int | None, backend: ArrayBackend):
    start = time.perf_counter()
    result = cimxdsl.compile(
        model, device=CONFIG.replace(crossbars=RESIDENT), calibration=calibration, batch=batch, crossbars=RESIDENT,
        backend=backend.name, array_device=backend.device,
    )  # fmt: skip
    result.compile_seconds_total = time.perf_counter() - start
    return result


def profiles(model, inputs: list[np.ndarray], backend: ArrayBackend, folder: Path) -> None:
    """One steady call under cProfile (the host's Python, top functions by own and by cumulative
    time) and, on PyTorch, one under its profiler (the device's kernels by total time) into `folder`."""
    import cProfile
    import io
    import pstats

    folder.mkdir(parents=True, exist_ok=True)
    device = Device(model.device, backend=backend)
    for _ in range(2):  # programs the tiles, and books what the first call found (the second call)
        model.run(*inputs, device=device)
    profile = cProfile.Profile()
    profile.runcall(model.run, *inputs, device=device)
    text = io.StringIO()
    for key in ("tottime", "cumulative"):
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(40)
    (folder / "host_profile.txt").write_text(text.getvalue())
    if backend.name == "torch":
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if not backend.on_host:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as kernels:
            model.run(*inputs, device=device)
            synchronizer(backend)()
        sort = "self_cuda_time_total" if not backend.on_host else "self_cpu_time_total"
        (folder / "kernel_profile.txt").write_text(kernels.key_averages().table(sort_by=sort, row_limit=40))


def resnet50_figures(backend: ArrayBackend, args) -> list[dict]:
    size = 64 if args.quick else 224
    model = MODELS["resnet50"](size=size, width=16 if args.quick else 64)
    rng = np.random.default_rng(1)
    calibration = rng.normal(size=(1, 3, size, size)).astype(np.float32)
    rows = []
    for batch in args.batches:
        program = compiled(model, calibration, batch, backend)
        x = rng.normal(size=(batch, 3, size, size)).astype(np.float32)
        if args.profile:  # (the first batch's)
            profiles(program, [x], backend, Path(args.profile))
            print(f"  profiles of ResNet-50 at batch {batch} in {args.profile}", flush=True)
            args.profile = None
            if args.profile_only:
                continue
        rows.append(figure(f"ResNet-50 {size}x{size} bit-sliced, ms/image", program, [x], batch, backend, args))
        print(format_row(rows[-1]), flush=True)
    return rows


def bert_figure(backend: ArrayBackend, args) -> list[dict]:
    from benchmarks.transformer_figures import VOCAB, transformer

    layers = 2 if args.quick else args.bert_layers
    model = transformer("bert", layers=layers)
    rng = np.random.default_rng(2)
    ids = rng.integers(0, VOCAB["bert"], (1, 128)).astype(np.int64)
    calibration = [[rng.integers(0, VOCAB["bert"], (1, 128)).astype(np.int64)] for _ in range(2)]
    program = compiled(model, calibration, None, backend)
    row = figure(
        f"BERT-base-shaped ({layers} layers, seq 128) bit-sliced, ms/inference", program, [ids], 1, backend, args
    )
    print(format_row(row), flush=True)
    return [row]


# ---- 3. CPU threads --------------------------------------------------------------------------------
def thread_scaling(args) -> dict:
    """Seconds of a bit-sliced ResNet-18-shaped call per thread count (and per packed chunk size per
    thread, `--chunk-mib`), with the share of the call spent in the pool's chunks (`map_chunks`:
    the products' and the host's element-wise passes): what threads can divide."""
    size, batch = (64, 4) if args.quick else (224, 16)
    passes = "one compiled pass (Numba)" if kernels.one_pass() else "NumPy passes (no Numba)"
    print(f"threads: a bit-sliced product's ADC and shift-and-add in {passes}", flush=True)
    model = MODELS["resnet18"](size=size, width=16 if args.quick else 64)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(batch, 3, size, size)).astype(np.float32)
    program = compiled(model, x[:1], batch, array_backend("numpy"))
    device = Device(program.device)
    expected = program.run(x, device=device).outputs  # warm-up: programs the tiles
    default, mapped, pooled = crossbar.PACKED_CHUNK_BYTES, threads_module.map_chunks, [0.0]
    users = (crossbar, threads_module, numeric)  # (the products' chunks and the host's passes)

    def timed_map(work, chunks):
        start = time.perf_counter()
        mapped(work, chunks)
        pooled[0] += time.perf_counter() - start

    runs = []
    for module in users:
        module.map_chunks = timed_map
    try:
        for mib in args.chunk_mib or [default >> 20]:
            crossbar.PACKED_CHUNK_BYTES = mib << 20
            for threads in args.threads:
                with using_threads(threads):
                    pooled[0], start = 0.0, time.perf_counter()
                    outputs = program.run(x, device=device).outputs
                    seconds = time.perf_counter() - start
                same = all(np.array_equal(a, b) for a, b in zip(outputs, expected, strict=True))
                runs.append(
                    {"chunk_mib": mib, "threads": threads, "seconds": seconds, "pooled": pooled[0], "equal": same}
                )
                print(
                    f"  ResNet-18 {size}x{size} batch {batch} bit-sliced on NumPy, {mib:>3} MiB chunks, "
                    f"{threads:>2} threads: {seconds:8.2f} s ({pooled[0] / seconds:.0%} in the pool); equal: {same}",
                    flush=True,
                )
    finally:
        crossbar.PACKED_CHUNK_BYTES = default
        for module in users:
            module.map_chunks = mapped
    return {"size": size, "batch": batch, "cores": cores(), "runs": runs}


# ---- the report ------------------------------------------------------------------------------------
def format_row(row: dict) -> str:
    ours = row["backend"]
    text = (
        f"  {row['figure']} (batch {row['batch']}): backend {ours['ms_per_item']:.1f} "
        f"(products {ours['products_share']:.0%}, moves {ours['moves_share']:.0%}, "
        f"first call {row['first_call_s']:.1f} s)"
    )
    if "numpy" in row:
        text += (
            f"; numpy {row['numpy']['ms_per_item']:.1f} ({row['numpy_over_backend']:.1f}x the backend's time); "
            f"outputs equal: {row['equal_to_numpy']}"
        )
    return text + f"; compile {row['compile_s']:.0f} s"


def machine(backend: ArrayBackend) -> dict:
    found = {
        "backend": backend.name,
        "device": backend.device,
        "cpu_cores": cores(),
        "python": platform.python_version(),
    }
    if backend.name == "torch":
        import torch

        found["torch"] = torch.__version__
        if backend.device.startswith("cuda"):
            found["gpu"] = torch.cuda.get_device_name(backend.handle)
    elif backend.name == "cupy":
        import cupy

        found["cupy"] = cupy.__version__
        found["gpu"] = cupy.cuda.runtime.getDeviceProperties(backend.handle.id)["name"].decode()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="torch", choices=["torch", "cupy", "numpy", "array_api_strict"])
    parser.add_argument("--array-device", default=None, help="cpu, cuda, cuda:N (default: the backend's)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a run of a minute or two")
    parser.add_argument("--skip", nargs="+", default=[], choices=PARTS)
    parser.add_argument("--batches", type=int, nargs="+", default=None, help="ResNet-50 batches (default: 32 1)")
    parser.add_argument("--bert-layers", type=int, default=12)
    parser.add_argument("--threads", type=int, nargs="+", default=None, help="(default: 1 2 4 8 16)")
    parser.add_argument("--repeat", type=int, default=2, help="timed calls on the backend (the best counts)")
    parser.add_argument("--no-numpy", action="store_true", help="leave out the NumPy runs of the figures")
    parser.add_argument("--json", default="gpu_check.json", metavar="FILE")
    parser.add_argument("--profile", metavar="DIR", help="profiles of the first ResNet-50 batch into DIR")
    parser.add_argument("--profile-only", action="store_true", help="with --profile: no ResNet-50 figures")
    parser.add_argument(
        "--chunk-mib", type=int, nargs="+", default=None,
        help="packed chunk sizes (MiB per thread of the pool) the thread scaling runs at (default: the model's)",
    )  # fmt: skip
    args = parser.parse_args()
    args.batches = args.batches or ([4, 1] if args.quick else [32, 1])
    args.threads = args.threads or ([1, 2] if args.quick else [1, 2, 4, 8, 16])
    backend = array_backend(args.backend, args.array_device)
    report = {"machine": machine(backend), "quick": args.quick, "config": CONFIG.name}
    print(f"gpu check: {report['machine']}", flush=True)
    start = time.perf_counter()

    def save() -> None:  # after each part, so that a run cut short keeps what it measured
        report["seconds"] = time.perf_counter() - start
        Path(args.json).write_text(json.dumps(report, indent=2, default=float))

    if "equality" not in args.skip:
        report["equality"] = equality(backend, 8 if args.quick else 64, 224)
        e = report["equality"]
        print(
            f"  equality: {e['products']} products on {e['shapes']} shapes bitwise equal to NumPy "
            f"({e['seconds']:.0f} s)",
            flush=True,
        )
        save()
    figures = report["figures"] = []
    if "resnet50" not in args.skip:
        figures += resnet50_figures(backend, args)
        save()
    if "bert" not in args.skip:
        figures += bert_figure(backend, args)
        save()
    if "threads" not in args.skip:
        report["threads"] = thread_scaling(args)
    save()
    print(f"done in {report['seconds']:.0f} s; JSON in {args.json}")
    if any(not f.get("equal_to_numpy", True) or not f["repeatable"] for f in figures):
        raise SystemExit("FAIL: a figure's outputs differ from NumPy's or between calls")


if __name__ == "__main__":
    main()
