"""Train the bundled demo CNN on scikit-learn's 8x8 `digits` and export it as ONNX.

Architecture (1,898 weights):

    x[1,1,8,8] -> Conv 3x3 (1->8, pad 1) -> Relu -> MaxPool 2x2
               -> Conv 3x3 (8->16, pad 1) -> Relu -> MaxPool 2x2
               -> Flatten -> Gemm (64->10) -> logits[1,10]

Training is pure NumPy (im2col convolutions, softmax cross-entropy, Adam) with a
fixed seed. Writes into the package's bundled data (`cimxdsl/data/`, linked from
`examples/`): `digits_cnn.onnx`, `digits_test.npz` (the 360 held-out `inputs` and
`labels`, and 64 training images as `calibration`) and `digits_train.npz` (the
first 300 training `inputs` and `labels`, the same 64 as `calibration`).
`--data-only` writes the two data files from the split without training.

Dev-time dependencies: scikit-learn (data set and split) and onnxruntime (check).

    python examples/train_digits_cnn.py [--data-only]
"""

import os

# Tiny matmuls: multithreaded BLAS only adds contention. Must precede the NumPy import.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT_DIR = Path(__file__).resolve().parents[1] / "cimxdsl" / "data"
SEED = 0
TRAIN_EXAMPLES = 300
CALIBRATION_EXAMPLES = 64
EPOCHS = 30
BATCH = 32
LR = 0.005


# ---------------------------------------------------------------- data


def load_data():
    """Deterministic stratified 80/20 split of `digits`, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=SEED, stratify=y)


# ---------------------------------------------------------------- layers


def im2col(x, k=3, pad=1):
    """(N,C,H,W) -> (N*H*W, C*k*k) patches of a stride-1 'same' convolution."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))  # N,C,H,W,k,k
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * k * k)


def col2im(dcols, shape, k=3, pad=1):
    """Adjoint of `im2col`: scatter-add patch gradients back onto the input."""
    n, c, h, w = shape
    d = dcols.reshape(n, h, w, c, k, k).transpose(0, 3, 4, 5, 1, 2)  # N,C,k,k,H,W
    dxp = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=dcols.dtype)
    for i in range(k):
        for j in range(k):
            dxp[:, :, i : i + h, j : j + w] += d[:, :, i, j]
    return dxp[:, :, pad : pad + h, pad : pad + w]


def conv_forward(x, w, b):
    """Stride-1, pad-1 convolution; returns output and backward cache."""
    n, _, h, wd = x.shape
    cols = im2col(x)
    out = cols @ w.reshape(w.shape[0], -1).T + b
    return out.reshape(n, h, wd, -1).transpose(0, 3, 1, 2), (x.shape, cols, w)


def conv_backward(dout, cache):
    """Gradients of `conv_forward` w.r.t. input, weight and bias."""
    shape, cols, w = cache
    d = dout.transpose(0, 2, 3, 1).reshape(-1, w.shape[0])
    dw = (d.T @ cols).reshape(w.shape)
    dx = col2im(d @ w.reshape(w.shape[0], -1), shape)
    return dx, dw, d.sum(axis=0)


def pool_forward(x):
    """2x2 stride-2 max pool; cache is the one-hot argmax mask."""
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    mask = np.eye(4, dtype=x.dtype)[win.argmax(axis=-1)]
    return win.max(axis=-1), mask


def pool_backward(dout, mask):
    """Route each pooled gradient to the input that won the max."""
    n, c, h, w, _ = mask.shape
    d = mask * dout[..., None]
    return d.reshape(n, c, h, w, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, 2 * h, 2 * w)


# ---------------------------------------------------------------- model


def init_params(rng):
    """He-initialised weights, zero biases (float32)."""

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return {
        "w1": he((8, 1, 3, 3), 9),
        "b1": np.zeros(8, np.float32),
        "w2": he((16, 8, 3, 3), 72),
        "b2": np.zeros(16, np.float32),
        "fc_w": he((10, 64), 64),
        "fc_b": np.zeros(10, np.float32),
    }


def forward(p, x):
    """Logits for a batch (N,1,8,8) and the caches needed by `backward`."""
    c1, k1 = conv_forward(x, p["w1"], p["b1"])
    r1 = np.maximum(c1, 0)
    p1, m1 = pool_forward(r1)
    c2, k2 = conv_forward(p1, p["w2"], p["b2"])
    r2 = np.maximum(c2, 0)
    p2, m2 = pool_forward(r2)
    flat = p2.reshape(len(x), -1)
    logits = flat @ p["fc_w"].T + p["fc_b"]
    return logits, (k1, c1, m1, k2, c2, m2, p2.shape, flat)


def loss_and_grads(p, x, y):
    """Mean softmax cross-entropy and its gradients w.r.t. every parameter."""
    logits, (k1, c1, m1, k2, c2, m2, p2_shape, flat) = forward(p, x)
    z = logits - logits.max(axis=1, keepdims=True)
    prob = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.log(prob[np.arange(len(y)), y] + 1e-12).mean()
    dlogits = prob
    dlogits[np.arange(len(y)), y] -= 1
    dlogits /= len(y)
    g = {"fc_w": dlogits.T @ flat, "fc_b": dlogits.sum(axis=0)}
    d = pool_backward((dlogits @ p["fc_w"]).reshape(p2_shape), m2) * (c2 > 0)
    d, g["w2"], g["b2"] = conv_backward(d, k2)
    d = pool_backward(d, m1) * (c1 > 0)
    _, g["w1"], g["b1"] = conv_backward(d, k1)
    return loss, g


def predict(p, x):
    """Class predictions of the NumPy model."""
    return forward(p, x)[0].argmax(axis=1)


def train(p, x, y, rng):
    """Adam over shuffled mini-batches; updates `p` in place."""
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2, eps, step = 0.9, 0.999, 1e-8, 0
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x), BATCH):
            idx = order[start : start + BATCH]
            loss, g = loss_and_grads(p, x[idx], y[idx])
            total += loss * len(idx)
            step += 1
            for k in p:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
                mhat = m[k] / (1 - b1**step)
                vhat = v[k] / (1 - b2**step)
                p[k] = (p[k] - LR * mhat / (np.sqrt(vhat) + eps)).astype(np.float32)
        if epoch % 5 == 4 or epoch == EPOCHS - 1:
            print(f"epoch {epoch + 1:2d}  loss {total / len(x):.4f}")


# ---------------------------------------------------------------- export


def to_onnx(p) -> onnx.ModelProto:
    """The trained network as an opset-17 ONNX graph (Conv/Relu/MaxPool/Flatten/Gemm)."""
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", **pool),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", **pool),
        helper.make_node("Flatten", ["p2"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1, name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "digits_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in p.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="cimxdsl-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def onnx_predict(model: onnx.ModelProto, x):
    """Class predictions of `model` under onnxruntime, one image at a time."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.array([sess.run(["logits"], {"x": img[None]})[0].argmax() for img in x])


# ---------------------------------------------------------------- main


def write_data(x_tr, x_te, y_tr, y_te) -> None:
    """The test split and the first training images, each with the calibration images."""
    calibration = x_tr[:CALIBRATION_EXAMPLES].astype(np.float32)
    for name, x, y in (("test", x_te, y_te), ("train", x_tr[:TRAIN_EXAMPLES], y_tr[:TRAIN_EXAMPLES])):
        path = OUT_DIR / f"digits_{name}.npz"
        np.savez_compressed(path, inputs=x.astype(np.float32), labels=y.astype(np.int64), calibration=calibration)
        print(f"wrote {path.name} ({len(y)} images, {path.stat().st_size} B)")


def main():
    """Train, report accuracies, export and verify, write the artifacts."""
    x_tr, x_te, y_tr, y_te = load_data()
    if "--data-only" in sys.argv[1:]:
        write_data(x_tr, x_te, y_tr, y_te)
        return
    rng = np.random.default_rng(SEED)
    params = init_params(rng)
    t0 = time.perf_counter()
    train(params, x_tr, y_tr, rng)
    elapsed = time.perf_counter() - t0
    acc_tr = (predict(params, x_tr) == y_tr).mean()
    pred_te = predict(params, x_te)
    acc_te = (pred_te == y_te).mean()
    print(f"training time {elapsed:.1f} s")
    print(f"train accuracy {acc_tr:.4f} ({len(y_tr)} images)")
    print(f"test accuracy  {acc_te:.4f} ({len(y_te)} images)")

    model = to_onnx(params)
    ort_pred = onnx_predict(model, x_te)
    ort_acc = (ort_pred == y_te).mean()
    print(f"onnxruntime test accuracy {ort_acc:.4f}")
    assert np.array_equal(ort_pred, pred_te), "onnxruntime predictions differ from the NumPy model"

    onnx_path = OUT_DIR / "digits_cnn.onnx"
    onnx.save(model, onnx_path)
    print(f"wrote {onnx_path.name} ({onnx_path.stat().st_size} B)")
    write_data(x_tr, x_te, y_tr, y_te)


if __name__ == "__main__":
    main()
