"""Small ONNX models built with onnx.helper from random weights, for the frontend tests."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs, outputs, initializers, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def small_cnn(seed: int = 0, channels: int = 4, size: int = 8, classes: int = 5) -> onnx.ModelProto:
    """Conv-BN-ReLU, max pool, a residual block, global average pool, Gemm, Softmax."""
    rng = np.random.default_rng(seed)
    c = channels
    init = {
        "w1": rng.normal(0, 0.5, (c, 3, 3, 3)),
        "b1": rng.normal(0, 0.1, c),
        "gamma": rng.uniform(0.5, 1.5, c),
        "beta": rng.normal(0, 0.1, c),
        "mean": rng.normal(0, 0.1, c),
        "var": rng.uniform(0.5, 1.5, c),
        "w2": rng.normal(0, 0.3, (c, c, 3, 3)),
        "w3": rng.normal(0, 0.3, (c, 1, 3, 3)),
        "fc": rng.normal(0, 0.5, (classes, c)),
        "fcb": rng.normal(0, 0.1, classes),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=c, name="depthwise"),
        helper.make_node("Add", ["c3", "p1"], ["res"], name="residual"),
        helper.make_node("GlobalAveragePool", ["res"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1, name="softmax"),
    ]
    return make_model(nodes, [("x", [1, 3, size, size])], [("y", [1, classes])], init)


def transformer_block(
    causal: bool, seed: int = 0, vocab: int = 40, seq: int = 8, hidden: int = 16, heads: int = 2, ffn: int = 32
) -> onnx.ModelProto:
    """One transformer block on int64 token ids [1, seq], as the exporters write it.

    `causal=False`: a BERT-style encoder block (post-norm LayerNormalization, Q/K/V MatMuls, exact
    GELU written with Erf). `causal=True`: a GPT-2-style decoder block (pre-norm LayerNorm written
    out with ReduceMean/Sub/Pow/Sqrt/Div, one QKV MatMul split in three, a causal mask from Trilu
    applied with Where, `Gelu(approximate="tanh")` at opset 20, a tied LM head). Positions come from
    Shape → Gather → Range (folded)."""
    rng = np.random.default_rng(seed)
    h, d = hidden, hidden // heads

    def weight(*shape, scale=0.3):
        return rng.normal(0, scale, shape).astype(np.float32)

    init = {
        "wte": weight(vocab, h, scale=1.0),
        "wpe": weight(seq, h, scale=0.5),
        "wo": weight(h, h),
        "bo": weight(h, scale=0.1),
        "w1": weight(h, ffn),
        "b1": weight(ffn, scale=0.1),
        "w2": weight(ffn, h),
        "b2": weight(h, scale=0.1),
        "ln1_g": 1 + weight(h, scale=0.1),
        "ln1_b": weight(h, scale=0.1),
        "ln2_g": 1 + weight(h, scale=0.1),
        "ln2_b": weight(h, scale=0.1),
        "heads_shape": np.array([1, seq, heads, d], np.int64),
        "hidden_shape": np.array([1, seq, h], np.int64),
        "scale": np.array(np.sqrt(d), np.float32),
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "axis1": np.array([1], np.int64),
        "half": np.array(0.5, np.float32),
        "one_f": np.array(1.0, np.float32),
        "rsqrt2": np.array(1 / np.sqrt(2), np.float32),
        "two": np.array(2.0, np.float32),
        "eps": np.array(1e-5, np.float32),
        "last": np.array([-1], np.int64),
        "ones": np.ones((seq, seq), np.float32),
        "masked": np.array(-1e4, np.float32),
    }
    node = helper.make_node
    nodes = [
        node("Shape", ["ids"], ["ids_shape"]),
        node("Gather", ["ids_shape", "one"], ["length"], axis=0),
        node("Range", ["zero", "length", "one"], ["positions"]),
        node("Gather", ["wte", "ids"], ["tokens"], name="token_embedding"),
        node("Gather", ["wpe", "positions"], ["places"], name="position_embedding"),
        node("Add", ["tokens", "places"], ["x"]),
    ]

    def layer_norm(x, gamma, beta, out):
        if not causal:
            nodes.append(node("LayerNormalization", [x, gamma, beta], [out], axis=-1, epsilon=1e-5))
            return
        nodes.extend(
            [
                node("ReduceMean", [x, "last"], [f"{out}_mean"]),
                node("Sub", [x, f"{out}_mean"], [f"{out}_centered"]),
                node("Pow", [f"{out}_centered", "two"], [f"{out}_square"]),
                node("ReduceMean", [f"{out}_square", "last"], [f"{out}_var"]),
                node("Add", [f"{out}_var", "eps"], [f"{out}_var_eps"]),
                node("Sqrt", [f"{out}_var_eps"], [f"{out}_std"]),
                node("Div", [f"{out}_centered", f"{out}_std"], [f"{out}_normed"]),
                node("Mul", [f"{out}_normed", gamma], [f"{out}_scaled"]),
                node("Add", [f"{out}_scaled", beta], [out]),
            ]
        )

    def linear(x, w, b, out):
        nodes.extend([node("MatMul", [x, w], [f"{out}_mm"], name=out), node("Add", [f"{out}_mm", b], [out])])

    def split_heads(x, out, perm):
        nodes.extend(
            [node("Reshape", [x, "heads_shape"], [f"{out}_4d"]), node("Transpose", [f"{out}_4d"], [out], perm=perm)]
        )

    attention_input = "x"
    if causal:
        layer_norm("x", "ln1_g", "ln1_b", "ln1")
        attention_input = "ln1"
        init["wqkv"], init["bqkv"] = weight(h, 3 * h), weight(3 * h, scale=0.1)
        linear("ln1", "wqkv", "bqkv", "qkv")
        nodes.append(node("Split", ["qkv"], ["q", "k", "v"], axis=2, num_outputs=3))
    else:
        for name in "qkv":
            init[f"w{name}"], init[f"b{name}"] = weight(h, h), weight(h, scale=0.1)
            linear(attention_input, f"w{name}", f"b{name}", name)
    split_heads("q", "qh", [0, 2, 1, 3])
    split_heads("k", "kt", [0, 2, 3, 1])
    split_heads("v", "vh", [0, 2, 1, 3])
    nodes.extend(
        [node("MatMul", ["qh", "kt"], ["scores_raw"], name="qk"), node("Div", ["scores_raw", "scale"], ["scores"])]
    )
    if causal:
        nodes.extend(
            [
                node("Trilu", ["ones"], ["lower"], upper=0),
                node("Cast", ["lower"], ["keep"], to=TensorProto.BOOL),
                node("Where", ["keep", "scores", "masked"], ["masked_scores"]),
            ]
        )
    nodes.extend(
        [
            node("Softmax", ["masked_scores" if causal else "scores"], ["probs"], axis=-1),
            node("MatMul", ["probs", "vh"], ["context_heads"], name="pv"),
            node("Transpose", ["context_heads"], ["context_t"], perm=[0, 2, 1, 3]),
            node("Reshape", ["context_t", "hidden_shape"], ["context"]),
        ]
    )
    linear("context", "wo", "bo", "attention")
    nodes.append(node("Add", [attention_input if not causal else "x", "attention"], ["residual1"]))
    if causal:
        layer_norm("residual1", "ln2_g", "ln2_b", "ln2")
        linear("ln2", "w1", "b1", "ffn_in")
        nodes.append(node("Gelu", ["ffn_in"], ["ffn_act"], approximate="tanh"))
        linear("ffn_act", "w2", "b2", "ffn_out")
        nodes.append(node("Add", ["residual1", "ffn_out"], ["hidden_out"]))
        init["wte_t"] = init["wte"].T.copy()
        nodes.append(node("MatMul", ["hidden_out", "wte_t"], ["y"], name="lm_head"))
        outputs = [("y", [1, seq, vocab])]
    else:
        layer_norm("residual1", "ln1_g", "ln1_b", "h1")
        linear("h1", "w1", "b1", "ffn_in")
        nodes.extend(
            [
                node("Mul", ["ffn_in", "rsqrt2"], ["ffn_scaled"]),
                node("Erf", ["ffn_scaled"], ["ffn_erf"]),
                node("Add", ["ffn_erf", "one_f"], ["ffn_erf1"]),
                node("Mul", ["ffn_in", "ffn_erf1"], ["ffn_gated"]),
                node("Mul", ["ffn_gated", "half"], ["ffn_act"]),
            ]
        )
        linear("ffn_act", "w2", "b2", "ffn_out")
        nodes.append(node("Add", ["h1", "ffn_out"], ["residual2"]))
        layer_norm("residual2", "ln2_g", "ln2_b", "y")
        outputs = [("y", [1, seq, h])]
    graph = helper.make_graph(
        nodes,
        "gpt2_block" if causal else "bert_block",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(v, k) for k, v in init.items() if any(k in n.input for n in nodes)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20 if causal else 17)])
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model
