"""Transformer figures: a BERT-base-shaped encoder (12 layers, hidden 768, 12 heads,
sequence 128, post-norm, exact GELU) and a GPT-2-small-shaped decoder stack (12 causal pre-norm
blocks, hidden 768, 12 heads, sequence 128, tanh GELU; the token and position embeddings and the
final LayerNorm, no LM head), random weights, built with `onnx.helper` on int64 token ids. Per model:

- compile time through `-p memristor` (target ≤ 60 s);
- simulation on `ideal` in exact mode at batch 1 as a ratio to onnxruntime's float run of the same
  model in the same process (target ≤ 5×), with the max relative error;
- int8 bit-sliced on `cinnamon` with 8-bit weights and inputs and an 8-bit ADC, against the
  slice-work bound 1.5 × input slices × cells per weight × arrays per weight × onnxruntime, and its
  time on one thread (CPU time) against the time of its slice products alone at NumPy's float32
  GEMM rate (`benchmarks/slice_bound.py`; target ≤ 1.5×);
- the crossbar writes per inference attention's products cause under `--placement host` and
  `crossbar`, with each run's total writes.

Both sides run on one thread (OpenBLAS and onnxruntime's intra-op pool): on the shared 2-core
development machine, multithreaded BLAS on 128×128 tiles spent 20× longer spinning than computing.

    python benchmarks/transformer_figures.py [--models bert gpt2] [--layers 12] [--devices ideal cinnamon-8bit]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cimxdsl
from benchmarks.crossbar_gemm import best_time
from benchmarks.slice_bound import bound_seconds, recorded_products
from cimxdsl.device import preset

VOCAB = {"bert": 30522, "gpt2": 50257}
DEVICES = {
    "ideal": (preset("ideal"), "exact"),
    "cinnamon-8bit": (preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8), "int8"),
}


class Builder:
    """Nodes and initializers of one graph, with fresh names."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def constant(self, value: np.ndarray) -> str:
        name = f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, *shape: int, scale: float = 0.02, mean: float = 0.0) -> str:
        return self.constant((mean + scale * self.rng.standard_normal(shape, np.float32)).astype(np.float32))

    def op(self, kind: str, *inputs: str, outputs: int = 1, **attributes) -> str | list[str]:
        self.count += 1
        names = [f"{kind.lower()}{self.count}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(kind, list(inputs), names, name=names[0], **attributes))
        return names[0] if outputs == 1 else names

    def linear(self, x: str, k: int, n: int) -> str:
        return self.op("Add", self.op("MatMul", x, self.weight(k, n)), self.weight(n))

    def layer_norm(self, x: str, hidden: int) -> str:
        gamma, beta = self.weight(hidden, scale=0.1, mean=1.0), self.weight(hidden, scale=0.1)
        return self.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=1e-5)


def attention(b: Builder, q: str, k: str, v: str, seq: int, hidden: int, heads: int, causal: bool) -> str:
    """Multi-head attention on [1, seq, hidden] projections: Q·Kᵀ and P·V per head."""
    split = b.constant(np.array([1, seq, heads, hidden // heads], np.int64))
    q, k, v = (b.op("Reshape", x, split) for x in (q, k, v))
    q, v = (b.op("Transpose", x, perm=[0, 2, 1, 3]) for x in (q, v))
    scores = b.op("MatMul", q, b.op("Transpose", k, perm=[0, 2, 3, 1]))
    scores = b.op("Div", scores, b.constant(np.array(np.sqrt(hidden // heads), np.float32)))
    if causal:
        allowed = b.op("Cast", b.op("Trilu", b.constant(np.ones((seq, seq), np.int64)), upper=0), to=TensorProto.BOOL)
        scores = b.op("Where", allowed, scores, b.constant(np.array(-1e4, np.float32)))
    context = b.op("MatMul", b.op("Softmax", scores, axis=-1), v)
    merged = b.op("Transpose", context, perm=[0, 2, 1, 3])
    return b.op("Reshape", merged, b.constant(np.array([1, seq, hidden], np.int64)))


def gelu_erf(b: Builder, x: str) -> str:
    """x · ½ · (1 + erf(x / √2)), as the TorchScript exporter writes `nn.GELU()`."""
    erf = b.op("Erf", b.op("Div", x, b.constant(np.array(np.sqrt(2.0), np.float32))))
    one, half = b.constant(np.array(1.0, np.float32)), b.constant(np.array(0.5, np.float32))
    return b.op("Mul", b.op("Mul", x, b.op("Add", erf, one)), half)


def transformer(kind: str, layers: int = 12, hidden: int = 768, heads: int = 12, seq: int = 128) -> onnx.ModelProto:
    """`kind` "bert": post-norm encoder layers; "gpt2": causal pre-norm blocks and a final LayerNorm."""
    b, causal = Builder(seed=0), kind == "gpt2"
    tokens = b.op("Gather", b.weight(VOCAB[kind], hidden), "ids", axis=0)
    positions = b.op("Gather", b.weight(seq, hidden), b.constant(np.arange(seq, dtype=np.int64)[None]), axis=0)
    x = b.op("Add", tokens, positions)
    if not causal:
        x = b.layer_norm(x, hidden)
    for _ in range(layers):
        a = b.layer_norm(x, hidden) if causal else x
        if causal:
            q, k, v = b.op("Split", b.linear(a, hidden, 3 * hidden), outputs=3, axis=2, num_outputs=3)
        else:
            q, k, v = (b.linear(a, hidden, hidden) for _ in range(3))
        x = b.op("Add", x, b.linear(attention(b, q, k, v, seq, hidden, heads, causal), hidden, hidden))
        a = b.layer_norm(x, hidden)
        if not causal:
            x = a
        up = b.linear(a, hidden, 4 * hidden)
        activated = b.op("Gelu", up, approximate="tanh") if causal else gelu_erf(b, up)
        x = b.op("Add", x, b.linear(activated, 4 * hidden, hidden))
        if not causal:
            x = b.layer_norm(x, hidden)
    if causal:
        x = b.layer_norm(x, hidden)
    graph = helper.make_graph(
        b.nodes,
        kind,
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, hidden])],
        b.initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20 if causal else 17)])


def figures(name: str, model: onnx.ModelProto, device: str, placement: str, repeat: int) -> str:
    config, mode = DEVICES[device]
    rng = np.random.default_rng(1)
    ids = rng.integers(0, VOCAB[name], (1, 128)).astype(np.int64)
    calibration = [[rng.integers(0, VOCAB[name], (1, 128)).astype(np.int64)] for _ in range(2)]
    start = time.perf_counter()
    compiled = cimxdsl.compile(model, device=config, mode=mode, calibration=calibration, placement=placement)
    compile_seconds = time.perf_counter() - start
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    reference = session.run(None, {"ids": ids})[0]
    compiled(ids)  # warm-up: weights that fit stay resident
    ort = best_time(lambda: session.run(None, {"ids": ids}), repeat)
    ours = best_time(lambda: compiled(ids), repeat)
    error = np.abs(compiled(ids) - reference).max() / np.abs(reference).max()
    budget = 5.0 if config.exact else 1.5 * config.input_slices * config.cells_per_weight * config.arrays_per_crossbar
    report = compiled.report()
    products = report["runtime_products"]
    bound = ""
    if not config.exact:  # one thread against the slice products alone
        compiled.threads = 1
        alone = best_time(lambda: compiled(ids), repeat, time.process_time)
        compiled.threads = None
        slices = bound_seconds(recorded_products(compiled, ids), repeat)
        bound = f" {alone:8.3f}s {slices:8.3f}s {alone / slices:6.2f}x"
    return (
        f"{name:>5} {device:>14} {placement:>9} {compile_seconds:8.1f}s {ort:8.3f}s {ours:8.3f}s"
        f" {ours / ort:6.1f}x {budget:5.0f}x {error:9.1e} {products['writes']:>8} {report['total']['writes']:>8}{bound}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["bert", "gpt2"], choices=["bert", "gpt2"])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--devices", nargs="+", default=sorted(DEVICES), choices=sorted(DEVICES))
    parser.add_argument("--placements", nargs="+", default=["host", "crossbar"], choices=["host", "crossbar"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'model':>5} {'device':>14} {'placement':>9} {'compile':>9} {'ort':>9} {'ours':>9} {'ratio':>7} {'bound':>6}"
        f" {'rel err':>9} {'attn wr':>8} {'writes':>8} {'1 thread':>9} {'slices':>9} {'/bound':>7}",
        flush=True,
    )
    for name in args.models:
        model = transformer(name, layers=args.layers)
        for device in args.devices:
            for placement in args.placements:
                print(figures(name, model, device, placement, args.repeat), flush=True)


if __name__ == "__main__":
    main()
