"""ONNX to standard MLIR: `func.func @main` on float tensors.

The model is upgraded to a recent opset and shape-inferred; initializers stay NumPy arrays and
become `arith.constant`s only where an op uses them. Nodes whose inputs are all constant (shape
arithmetic, `Constant`, …) are folded with ONNX's reference evaluator. BatchNormalization after a
convolution with constant weights is folded into it. Matrix products and convolutions become
`linalg.matmul`/`linalg.conv_2d_nchw_fchw` (a grouped convolution: one `linalg.conv_2d_ngchw_gfchw`),
offloaded later by `linalg-to-cinm`; the rest becomes host ops (see `builder.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import onnx.reference
from onnx import helper, numpy_helper, shape_inference, version_converter
from xdsl.dialects import arith, func, math, tosa
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.utils import dense_array, dense_attr
from cimxdsl.frontend.attributes import NodeAttributes, OnnxImportError, node_error, node_label
from cimxdsl.frontend.builder import IRBuilder, shape_of
from cimxdsl.frontend.pooling import Window, pool_window

TARGET_OPSET = 17
SHAPE_ONLY = {"Shape", "Size"}
"""Ops whose result depends only on the (static) shape of their input: folded to constants."""


def load_model(model: onnx.ModelProto | str | Path, batch: int | None = None) -> onnx.ModelProto:
    """Read, upgrade and shape-infer a model (a path or a `ModelProto`); `batch` sets the leading
    dimension of every graph input (the shapes inside are inferred again)."""
    if not isinstance(model, onnx.ModelProto):
        path = Path(model)
        try:
            model = onnx.load(str(path))
        except FileNotFoundError:
            raise OnnxImportError(f"cannot read '{path}': no such file") from None
        except Exception as e:  # onnx raises DecodeError and others for corrupt files
            raise OnnxImportError(f"cannot read '{path}': not a valid ONNX model ({type(e).__name__})") from None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), TARGET_OPSET)
    if opset < TARGET_OPSET:
        try:
            model = version_converter.convert_version(model, TARGET_OPSET)
        except Exception as e:
            raise OnnxImportError(f"cannot convert the model from opset {opset} to {TARGET_OPSET}: {e}") from None
    if batch is not None:
        model = with_batch(model, batch)
    for node in model.graph.node:
        NodeAttributes(node)  # the attributes first: their errors say more than shape inference's
    try:
        return infer_shapes(model)
    except Exception as e:
        raise OnnxImportError(f"shape inference failed: {str(e).splitlines()[0]}") from None


def infer_shapes(model: onnx.ModelProto, large: int = 1024) -> onnx.ModelProto:
    """A copy of `model` with inferred shapes. Inference runs on a light model whose initializers of
    more than `large` elements are graph inputs of the same type instead (weights are not copied
    through the inference; small ones stay for data propagation, e.g. reshape targets)."""
    graph = model.graph
    inputs = {i.name for i in graph.input}
    weights = [i for i in graph.initializer if int(np.prod(i.dims)) > large and i.name not in inputs]
    typed = [helper.make_tensor_value_info(i.name, i.data_type, i.dims) for i in weights]
    names = {i.name for i in weights}
    light_graph = helper.make_graph(
        graph.node,
        graph.name,
        [*graph.input, *typed],
        graph.output,
        [i for i in graph.initializer if i.name not in names],
        value_info=graph.value_info,
    )
    light = helper.make_model(light_graph, opset_imports=model.opset_import, ir_version=model.ir_version)
    light.functions.extend(model.functions)
    inferred = shape_inference.infer_shapes(light, strict_mode=True, data_prop=True)
    result = onnx.ModelProto()
    result.CopyFrom(model)
    for field in ("value_info", "output"):
        del getattr(result.graph, field)[:]
        getattr(result.graph, field).extend(getattr(inferred.graph, field))
    return result


def input_shape(info: onnx.ValueInfoProto) -> tuple[int, ...]:
    """The shape of a graph input as given (a symbolic dimension counts as 1)."""
    return tuple(d.dim_value if d.HasField("dim_value") else 1 for d in info.type.tensor_type.shape.dim)


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The inputs a caller gives: the graph inputs that are not initializers."""
    initializers = {init.name for init in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def with_batch(model: onnx.ModelProto, batch: int) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    initializers = {init.name for init in model.graph.initializer}
    for info in [*model.graph.input, *model.graph.output]:
        if info.name not in initializers and info.type.tensor_type.shape.dim:
            info.type.tensor_type.shape.dim[0].Clear()
            info.type.tensor_type.shape.dim[0].dim_value = batch
    del model.graph.value_info[:]
    return model


def initializer_array(init: onnx.TensorProto) -> np.ndarray:
    """An initializer's values; a payload that does not fit its type or dims is an import error."""
    try:
        return numpy_helper.to_array(init)
    except Exception as e:  # onnx raises ValueError, TypeError or its own errors for bad payloads
        dtype = onnx.TensorProto.DataType.Name(init.data_type)
        message = f"initializer '{init.name}' does not hold a {list(init.dims)} {dtype} tensor"
        raise OnnxImportError(f"{message}: {str(e).splitlines()[0]}") from None


def check_new_ops(node: onnx.NodeProto, last: Operation | None, block: Block, end: Operation | None = None) -> None:
    """Check the ops a node was translated to (after `last`, before `end`): a result of negative
    size is an import error naming the node."""
    for op in new_ops(last, block, end):
        for result in op.results:
            if isinstance(result.type, TensorType) and any(d < 0 for d in result.type.get_shape()):
                raise node_error(node, f"its result would have a negative size ({result.type})")


def verify_new_ops(node: onnx.NodeProto, last: Operation | None, block: Block, end: Operation | None = None) -> None:
    """Verify the ops a node was translated to (after `last`, before `end`): a node whose inputs do
    not fit together is an import error naming the node, not a verifier error on the whole module."""
    for op in new_ops(last, block, end):
        try:
            op.verify()
        except VerifyException as e:
            raise node_error(node, f"its inputs do not fit together ({str(e).splitlines()[0]})") from None


def new_ops(last: Operation | None, block: Block, end: Operation | None) -> Iterator[Operation]:
    op = block.first_op if last is None else last.next_op
    while op is not None and op is not end:
        yield op
        op = op.next_op


def np_to_onnx(dtype: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(dtype)


def gather_elements(node: onnx.NodeProto, data: np.ndarray, indices: np.ndarray) -> list[np.ndarray]:
    """GatherElements on constants (ONNX's reference picks one element per row once the axis is longer
    than `np.choose` takes, as a `[1, 512]` position buffer is, and wraps indices out of range).
    Indices that do not fit raise, and the node's run-time import says why."""
    axis = NodeAttributes(node).axis("axis", data.ndim)
    size = data.shape[axis]
    region = data[tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))]
    if region.shape[:axis] + region.shape[axis + 1 :] != indices.shape[:axis] + indices.shape[axis + 1 :]:
        raise ValueError("the indices do not fit the data")
    if indices.size and not -size <= indices.min() <= indices.max() < size:
        raise IndexError("an index is out of range")
    return [np.take_along_axis(region, np.where(indices < 0, indices + size, indices).astype(np.int64), axis)]


NUMPY_EVALUATIONS: dict[str, Callable[..., list[np.ndarray]]] = {"GatherElements": gather_elements}
"""Ops evaluated on constants with NumPy instead of ONNX's reference, where the reference is wrong."""


def evaluate_node(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Run one node on constant inputs with ONNX's reference implementation (or `NUMPY_EVALUATIONS`)."""
    if node.op_type in NUMPY_EVALUATIONS:
        return NUMPY_EVALUATIONS[node.op_type](node, *inputs)
    names = [n for n in node.input if n]
    feeds = {n: v for n, v in zip(node.input, inputs, strict=True) if n}
    graph = helper.make_graph(
        [node],
        "fold",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(feeds[n].dtype), feeds[n].shape)
            for n in names
        ],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output if o],
    )
    for version in (opset, onnx.defs.onnx_opset_version()):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
        try:
            return [np.asarray(v) for v in onnx.reference.ReferenceEvaluator(model).run(None, feeds)]
        except RuntimeError as e:
            # The reference has no implementation of this op at the model's opset: try the latest.
            if "No implementation" not in str(e) or version != opset:
                raise
    raise AssertionError("unreachable")


def fold_batch_norms(graph: onnx.GraphProto, constants: dict[str, np.ndarray]) -> None:
    """Fold `BatchNormalization(Conv(x, W, B))` into the conv when W is constant and the conv's
    output feeds only the BatchNormalization."""
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1
    producers = {o: node for node in graph.node for o in node.output}
    folded = []
    for node in graph.node:
        if node.op_type != "BatchNormalization" or len(node.output) != 1:
            continue
        conv = producers.get(node.input[0])
        if conv is None or conv.op_type != "Conv" or users.get(node.input[0]) != 1:
            continue
        operands = [conv.input[1], *node.input[1:5], *conv.input[2:3]]
        if not all(n in constants for n in operands if n) or len(node.input) < 5:
            continue
        channels = constants[conv.input[1]].shape[:1]
        if any(constants[n].shape != channels for n in operands[1:] if n):
            continue  # not per-channel vectors: left to the BatchNormalization import to report
        gamma, beta, mean, var = (constants[n].astype(np.float64) for n in node.input[1:5])
        scale = gamma / np.sqrt(var + NodeAttributes(node)["epsilon"])
        weights = constants[conv.input[1]].astype(np.float64)
        bias = constants[conv.input[2]].astype(np.float64) if len(conv.input) > 2 and conv.input[2] else 0.0
        weight_name, bias_name = f"{conv.name or conv.output[0]}_folded_w", f"{conv.name or conv.output[0]}_folded_b"
        constants[weight_name] = (weights * scale[:, None, None, None]).astype(np.float32)
        constants[bias_name] = ((bias - mean) * scale + beta).astype(np.float32)
        del conv.input[1:]
        conv.input.extend([weight_name, bias_name])
        conv.output[0] = node.output[0]
        folded.append(node)
    for node in folded:
        graph.node.remove(node)


class OnnxImporter:
    """Translates one ONNX graph, node by node, into a `func.func @main`."""

    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), TARGET_OPSET)
        self.constants: dict[str, np.ndarray] = {init.name: initializer_array(init) for init in self.graph.initializer}
        self.values: dict[str, SSAValue] = {}
        self.starts: list[tuple[onnx.NodeProto, Operation | None]] = []
        """Each imported node and the op before its first."""
        self.scale_hints: dict[str, tuple[np.ndarray, int]] = {}
        """ONNX constants that are dequantized integers: their scales and axis (kept by quantization)."""
        self.shapes = {info.name: info.type.tensor_type.shape for info in [*self.graph.value_info, *self.graph.output]}
        fold_batch_norms(self.graph, self.constants)

    # -- the graph ---------------------------------------------------------------------------------
    def run(self) -> ModuleOp:
        inputs = [i for i in self.graph.input if i.name not in self.constants]
        for info in inputs:
            kind = info.type.WhichOneof("value")
            if kind != "tensor_type":
                what = (kind or "undefined").removesuffix("_type")
                raise OnnxImportError(f"input '{info.name}' is of {what} type; only tensor inputs are supported")
        input_types = [
            TensorType(
                element_type(i.name, i.type.tensor_type.elem_type), self.static_shape(i.name, i.type.tensor_type.shape)
            )
            for i in inputs
        ]
        block = Block(arg_types=input_types)
        for arg, info in zip(block.args, inputs, strict=True):
            arg.name_hint = sanitize(info.name)
            self.values[info.name] = arg
        self.ir = IRBuilder(block)
        for node in self.graph.node:
            self.import_node(node)
        outputs = [self.value(o.name, "the graph output") for o in self.graph.output]
        self.ir.builder.insert(func.ReturnOp(*outputs))
        function = func.FuncOp("main", (input_types, [o.type for o in outputs]), Region(block))
        module = ModuleOp([function])
        self.verify(module, block)
        return module

    def verify(self, module: ModuleOp, block: Block) -> None:
        """Verify the module once; if it fails, name the first node whose ops fail."""
        try:
            module.verify()
        except VerifyException:
            ends = [last for _, last in self.starts[1:]]  # a node's last op: the op before the next node's
            for (node, last), end in zip(self.starts, [*ends, block.last_op], strict=True):
                if end is not None and end is not last:
                    verify_new_ops(node, last, block, end.next_op)
            raise
    def import_node(self, node: onnx.NodeProto) -> None:
        inputs = [self.constants.get(name) if name else None for name in node.input]
        if node.op_type == "Constant" or (
            node.input and all(v is not None or not n for v, n in zip(inputs, node.input, strict=True))
        ):
            if self.fold(node, inputs):
                return
        if node.op_type in SHAPE_ONLY and node.input[0] in self.values:
            shape = shape_of(self.values[node.input[0]])
            self.constants[node.output[0]] = evaluate_node(node, [np.zeros(shape, np.float32)], self.opset)[0]
            return
        handler = HANDLERS.get(node.op_type)
        if handler is None:
            raise OnnxImportError(
                f"unsupported ONNX op '{node.op_type}' (node '{node.name or node.output[0]}'); supported: "
                + ", ".join(sorted(HANDLERS))
            )
        self.ir.layer_name = sanitize(node.name or node.output[0])
        last = self.ir.builder.insertion_point.block.last_op
        results = handler(self, node, NodeAttributes(node))
        self.starts.append((node, last))
        check_new_ops(node, last, self.ir.builder.insertion_point.block)
        for name, value in zip(node.output, results, strict=False):
            if name:
                if not isinstance(value, BlockArgument):  # an input passed through keeps its name (`cim-run --input`)
                    value.name_hint = sanitize(name)
                self.values[name] = value

    def fold(self, node: onnx.NodeProto, inputs: list[np.ndarray | None]) -> bool:
        """Evaluate a node whose inputs are all constant; False when that fails and the node is to be
        imported as a run-time op instead (whose handler then checks the inputs and names what is wrong)."""
        try:
            values = evaluate_node(node, inputs, self.opset)
        except Exception as e:  # the reference raises IndexError, ValueError, … for inputs that do not fit
            if HANDLERS.get(node.op_type, constant_only) is not constant_only:
                return False
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise node_error(node, f"its constant inputs cannot be evaluated ({message})") from None
        for name, value in zip(node.output, values, strict=False):
            self.constants[name] = value
        if node.op_type == "DequantizeLinear":
            self.scale_hints[node.output[0]] = (np.asarray(inputs[1]), NodeAttributes(node)["axis"])
        return True

    # -- values ------------------------------------------------------------------------------------
    def value(self, name: str, user: str) -> SSAValue:
        """The SSA value of an ONNX tensor, materializing constants on first use."""
        if name in self.values:
            return self.values[name]
        if name in self.constants:
            array = self.constants[name]
            element = f32 if array.dtype.kind == "f" or name in self.scale_hints else numpy_element_type(array.dtype)
            self.values[name] = self.ir.constant(array.astype(np.float32) if element == f32 else array, element)
            if name in self.scale_hints:
                scales, axis = self.scale_hints[name]
                mark_scales(self.values[name], scales, axis % array.ndim)
            return self.values[name]
        raise OnnxImportError(f"{user} uses '{name}', which no node computes")

    def drop_if_unused(self, value: SSAValue) -> None:
        """Erase a materialized constant nothing uses (a later use materializes it again)."""
        if not value.uses and isinstance(value.owner, arith.ConstantOp):
            value.owner.detach()
            value.owner.erase()
            self.values = {name: v for name, v in self.values.items() if v is not value}

    def input(self, node: onnx.NodeProto, index: int) -> SSAValue:
        return self.value(node.input[index], node_label(node))

    def constant(self, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
        name = node.input[index] if index < len(node.input) else ""
        if name not in self.constants:
            raise node_error(node, f"{what} must be a constant")
        return self.constants[name]

    def optional_constant(self, node: onnx.NodeProto, index: int) -> np.ndarray | None:
        name = node.input[index] if index < len(node.input) else ""
        return self.constants.get(name) if name else None

    def static_shape(self, name: str, shape) -> tuple[int, ...]:
        dims = []
        for d in shape.dim:
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif not dims:
                dims.append(1)  # a symbolic batch dimension: compile for batch 1
            else:
                raise OnnxImportError(f"input '{name}' has a dynamic dimension '{d.dim_param}'; give static shapes")
        return tuple(dims)


ONNX_ELEMENT_TYPES = {
    onnx.TensorProto.FLOAT: f32,
    onnx.TensorProto.INT64: i64,
    onnx.TensorProto.INT32: i32,
    onnx.TensorProto.BOOL: i1,
}


def element_type(name: str, onnx_type: int) -> Attribute:
    """The MLIR element type of a graph input (floats are computed in f32)."""
    if onnx_type in (onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
        return f32  # 8-bit integers are held as float codes, exactly
    if onnx_type not in ONNX_ELEMENT_TYPES:
        dtype = onnx.TensorProto.DataType.Name(onnx_type)
        raise OnnxImportError(f"input '{name}' is {dtype}; supported inputs are float, int32, int64 and bool")
    return ONNX_ELEMENT_TYPES[onnx_type]


def numpy_element_type(dtype: np.dtype) -> Attribute:
    return {"i": {4: i32, 8: i64}.get(dtype.itemsize, i64), "b": i1}.get(dtype.kind, f32)


SCALES_ATTRIBUTE = "cimxdsl.scales"
"""On an op whose result is dequantized integers: their scales (and `cimxdsl.axis`), so that
quantization reuses a quantized model's scales instead of calibrating."""


def mark_scales(value: SSAValue, scales: np.ndarray, axis: int) -> None:
    owner = value.owner
    owner.attributes[SCALES_ATTRIBUTE] = dense_attr(np.asarray(scales, np.float32).reshape(-1), f32)
    owner.attributes["cimxdsl.axis"] = IntegerAttr(axis, i64)


def sanitize(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"v{cleaned}"


# ---- node handlers: (importer, node, attributes) -> output values ----------------------------------


def import_matmul(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    lhs, rhs = im.input(node, 0), im.input(node, 1)
    return [matmul(im, lhs, rhs, node)]


def matmul(im: OnnxImporter, lhs: SSAValue, rhs: SSAValue, node) -> SSAValue:
    """NumPy `matmul` semantics. A constant right operand is a linear layer: an (..., K) × (K, N)
    product folds the leading dimensions into the rows of one `linalg.matmul` (the tokens are the
    rows), a batched constant gives one per batch entry. Two run-time operands (attention's Q·Kᵀ
    and P·V) become one `linalg.batch_matmul`, computed on the host."""
    left, right = shape_of(lhs), shape_of(rhs)
    vector_left, vector_right = len(left) == 1, len(right) == 1
    if vector_left:
        lhs, left = im.ir.reshape(lhs, (1, left[0])), (1, left[0])
    if vector_right:
        rhs, right = im.ir.reshape(rhs, (right[0], 1)), (right[0], 1)
    weights = constant_array(rhs)
    batch = tuple(np.broadcast_shapes(left[:-2], right[:-2]))
    shape = (*batch, left[-2], right[-1])
    count = int(np.prod(batch))
    if weights is not None and len(right) == 2:
        rows = int(np.prod(left[:-1]))
        product = im.ir.matmul(im.ir.reshape(lhs, (rows, left[-1])), rhs)
        shape = (*left[:-1], right[1])
    else:
        lhs = im.ir.reshape(im.ir.broadcast(lhs, (*batch, *left[-2:])), (count, *left[-2:]))
        if weights is None:
            rhs = im.ir.reshape(im.ir.broadcast(rhs, (*batch, *right[-2:])), (count, *right[-2:]))
            product = im.ir.batch_matmul(lhs, rhs)
        else:
            matrices = np.broadcast_to(weights, (*batch, *right[-2:])).reshape(count, *right[-2:])
            products = []
            for b in range(count):
                a = im.ir.reshape(im.ir.slice(lhs, [b, 0, 0], [1, *left[-2:]]), left[-2:])
                w = im.ir.constant(matrices[b], rhs.type.element_type)
                products.append(im.ir.reshape(im.ir.matmul(a, w), (1, left[-2], right[-1])))
            product = im.ir.concat(products, 0)
    if vector_left:
        shape = shape[:-2] + shape[-1:]
    if vector_right:
        shape = shape[:-1]
    return im.ir.reshape(product, shape)


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The values of an `arith.constant` tensor (None for a run-time value)."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        return dense_array(owner.value)
    return None


def import_gemm(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    lhs = im.input(node, 0)
    if attrs["transA"]:
        lhs = im.ir.transpose(lhs, (1, 0))
    weights = im.optional_constant(node, 1)
    if weights is not None:
        weights = weights.T if attrs["transB"] else weights
        rhs = im.ir.constant((weights * attrs["alpha"]).astype(np.float32))
    else:
        rhs = im.input(node, 1)
        rhs = im.ir.transpose(rhs, (1, 0)) if attrs["transB"] else rhs
        if attrs["alpha"] != 1.0:
            rhs = im.ir.scalar_op(arith.MulfOp, rhs, attrs["alpha"])
    result = im.ir.matmul(lhs, rhs)
    if len(node.input) > 2 and node.input[2]:
        bias = im.input(node, 2)
        if not broadcasts_to(shape_of(bias), shape_of(result)):
            raise node_error(node, f"the bias {list(shape_of(bias))} does not broadcast to {list(shape_of(result))}")
        if attrs["beta"] != 1.0:
            bias = im.ir.scalar_op(arith.MulfOp, bias, attrs["beta"])
        result = im.ir.binary(arith.AddfOp, result, bias)
    return [result]


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to `target` in one direction (ONNX's unidirectional broadcasting)."""
    return len(shape) <= len(target) and all(d in (1, t) for d, t in zip(reversed(shape), reversed(target)))


def conv_pads(node, attrs, spatial: tuple[int, int], kernel, strides, dilations) -> list[int]:
    """ONNX pads [top, left, bottom, right], from `pads` or `auto_pad`."""
    auto = attrs["auto_pad"]
    if auto in ("NOTSET", "VALID"):
        return list(attrs["pads"]) if auto == "NOTSET" else [0, 0, 0, 0]
    pads = [0, 0, 0, 0]
    for axis in range(2):
        out = -(-spatial[axis] // strides[axis])
        total = max(0, (out - 1) * strides[axis] + dilations[axis] * (kernel[axis] - 1) + 1 - spatial[axis])
        small, large = total // 2, total - total // 2
        pads[axis], pads[axis + 2] = (small, large) if auto == "SAME_UPPER" else (large, small)
    return pads


def import_conv(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    result = convolution(im, node, attrs, im.input(node, 0), im.input(node, 1))
    if len(node.input) > 2 and node.input[2]:
        bias = im.ir.reshape(im.input(node, 2), (1, shape_of(result)[1], 1, 1))
        result = im.ir.binary(arith.AddfOp, result, bias)
    return [result]


def convolution(im: OnnxImporter, node, attrs, image: SSAValue, weights: SSAValue) -> SSAValue:
    """An NCHW convolution with the node's padding, strides, dilations and groups."""
    if len(shape_of(image)) != 4:
        raise node_error(node, "only 2-D convolutions (NCHW) are supported")
    if len(shape_of(weights)) != 4:
        raise node_error(node, f"the weights must be 4-d (F, C/group, KH, KW), got {list(shape_of(weights))}")
    f, c_group, kh, kw = shape_of(weights)
    channels = shape_of(image)[1]
    if channels != c_group * attrs["group"] or f % attrs["group"]:
        raise node_error(
            node, f"{channels} input channels and {f} filters of {c_group} channels do not fit group {attrs['group']}"
        )
    strides, dilations = attrs["strides"], attrs["dilations"]
    pads = conv_pads(node, attrs, shape_of(image)[2:], (kh, kw), strides, dilations)
    image = im.ir.pad(image, [0, 0, pads[0], pads[1]], [0, 0, pads[2], pads[3]])
    groups = attrs["group"]
    if groups == 1:
        return im.ir.conv(image, weights, strides, dilations)
    result = im.ir.grouped_conv(image, weights, groups, strides, dilations)
    im.drop_if_unused(weights)  # the constant was regrouped
    return result


INTEGER_OPS = {
    arith.AddfOp: arith.AddiOp,
    arith.SubfOp: arith.SubiOp,
    arith.MulfOp: arith.MuliOp,
    arith.DivfOp: arith.DivSIOp,
}
"""The integer op of each float op (int32/int64 tensors, as index arithmetic; division truncates)."""


def elementwise(kind) -> Callable:
    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        lhs, rhs = im.input(node, 0), im.input(node, 1)
        return [im.ir.binary(INTEGER_OPS[kind] if is_integer(lhs) else kind, lhs, rhs)]

    return handler


def import_sum(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    total = im.input(node, 0)
    for index in range(1, len(node.input)):
        total = im.ir.binary(arith.AddfOp, total, im.input(node, index))
    return [total]


def import_relu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.clamp(im.input(node, 0), 0.0, float(np.finfo(np.float32).max))]


def import_leaky_relu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    scaled = im.ir.scalar_op(arith.MulfOp, x, attrs["alpha"])
    kind = arith.MaximumfOp if attrs["alpha"] <= 1 else arith.MinimumfOp
    return [im.ir.insert(kind(x, scaled))]


def import_clip(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    bounds = [node.input[i] if i < len(node.input) else "" for i in (1, 2)]
    if any(name and name not in im.constants for name in bounds):
        for name, kind in zip(bounds, (arith.MaximumfOp, arith.MinimumfOp), strict=True):
            if name:
                x = im.ir.binary(kind, x, im.value(name, node_label(node)))
        return [x]
    limit = float(np.finfo(np.float32).max)
    low, high = im.optional_constant(node, 1), im.optional_constant(node, 2)
    low = float(low) if low is not None else attrs["min"] if attrs["min"] is not None else -limit
    high = float(high) if high is not None else attrs["max"] if attrs["max"] is not None else limit
    return [im.ir.clamp(x, low, high)]


def unary(kind) -> Callable:
    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        return [im.ir.unary(kind, im.input(node, 0))]

    return handler


def import_sigmoid(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.sigmoid(im.input(node, 0))]


def pool_geometry(node, attrs, image: SSAValue) -> tuple[list[int], list[int], list[int]]:
    """Kernel, strides and TOSA pads of a 2-D pooling node without dilations."""
    if len(shape_of(image)) != 4:
        raise node_error(node, "only 2-D pooling (NCHW) is supported")
    window = pool_window(node, attrs, shape_of(image))
    if any(d != 1 for d in window.dilations):
        raise node_error(node, "dilations are not supported")
    return list(window.kernel), list(window.strides), tosa_pads(window)


def tosa_pads(window: Window) -> list[int]:
    """TOSA pads [top, bottom, left, right] of 2-D windows; `ceil_mode`'s extension becomes extra
    bottom/right padding (which TOSA pooling does not count)."""
    (top, left), (bottom, right), (taller, wider) = window.begin, window.end, window.extension
    return [top, bottom + taller, left, right + wider]


def is_planar(window: Window) -> bool:
    """Whether TOSA's 2-D pooling computes these windows (2 spatial axes, no dilations)."""
    return len(window.size) == 2 and all(d == 1 for d in window.dilations)


def window_elements(im: OnnxImporter, image: SSAValue, window: Window, fill: float) -> SSAValue:
    """`[N, C, windows, kernel elements]`: the elements of every window (a gather from the image
    flattened), padding read as `fill`."""
    n, c = shape_of(image)[:2]
    size = int(np.prod(window.size))
    flat = im.ir.reshape(image, (n, c, size))
    padded = im.ir.concat([flat, im.ir.splat(fill, (n, c, 1), image.type.element_type)], 2)
    positions = window.flat_positions()
    return take(im, padded, im.ir.constant(np.where(positions < 0, size, positions), i64), 2)


def unflatten(im: OnnxImporter, pooled: SSAValue, window: Window) -> SSAValue:
    """`[N, C, windows, 1]` as `[N, C, *out]`."""
    return im.ir.reshape(pooled, (*shape_of(pooled)[:2], *window.out))


def import_max_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The maxima of the windows and, as the optional second output, where they are."""
    image = im.input(node, 0)
    window = pool_window(node, attrs, shape_of(image))
    indices = len(node.output) > 1 and bool(node.output[1])
    if is_planar(window) and not indices:
        return [im.ir.pool(tosa.MaxPool2DOp, image, list(window.kernel), list(window.strides), tosa_pads(window))]
    elements = window_elements(im, image, window, float(np.finfo(np.float32).min))
    maxima = im.ir.reduce(tosa.ReduceMaxOp, elements, 3)
    results = [unflatten(im, maxima, window)]
    if indices:
        results.append(unflatten(im, max_indices(im, elements, maxima, window, attrs["storage_order"]), window))
    return results


def max_indices(im: OnnxImporter, elements: SSAValue, maxima: SSAValue, window: Window, column_major: int) -> SSAValue:
    """`[N, C, windows, 1]`: for each window, ONNX's index of its first maximum (in the window's
    row-major order) in the input flattened row-major (with `storage_order` 1, the spatial
    dimensions column-major)."""
    n, c, count, kernel = shape_of(elements)
    order = im.ir.constant(np.arange(kernel), i64)
    unmatched = im.ir.splat(kernel, (kernel,), i64)
    first = im.ir.reduce(tosa.ReduceMinOp, im.ir.select(im.ir.compare(elements, maxima, "eq"), order, unmatched), 3)
    picks = im.ir.binary(arith.AddiOp, first, im.ir.constant(np.arange(count)[:, None] * kernel, i64))
    spatial = im.ir.gather(im.ir.constant(window.flat_positions(bool(column_major)).reshape(-1), i64), picks)
    planes = np.arange(n * c).reshape(n, c, 1, 1) * int(np.prod(window.size))
    return im.ir.binary(arith.AddiOp, spatial, im.ir.constant(planes, i64))


def import_average_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    image = im.input(node, 0)
    window = pool_window(node, attrs, shape_of(image))
    if not is_planar(window):
        sums = im.ir.reduce(tosa.ReduceSumOp, window_elements(im, image, window, 0.0), 3)
        counts = window.counts(bool(attrs["count_include_pad"])).reshape(1, 1, -1, 1)
        return [unflatten(im, im.ir.binary(arith.DivfOp, sums, im.ir.constant(counts)), window)]
    pads = tosa_pads(window)
    if attrs["count_include_pad"]:
        (top, left), (bottom, right) = window.begin, window.end
        image = im.ir.pad(image, [0, 0, top, left], [0, 0, bottom, right])
        pads = [0, window.extension[0], 0, window.extension[1]]  # what ceil_mode adds stays uncounted
    return [im.ir.pool(tosa.AvgPool2DOp, image, list(window.kernel), list(window.strides), pads)]


def import_lp_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`(Σ |x|^p)^(1/p)` over each window (padding adds 0)."""
    image = im.input(node, 0)
    window = pool_window(node, attrs, shape_of(image))
    powers = im.ir.scalar_op(math.PowFOp, im.ir.unary(math.AbsFOp, image), float(attrs["p"]))
    sums = im.ir.reduce(tosa.ReduceSumOp, window_elements(im, powers, window, 0.0), 3)
    return [unflatten(im, im.ir.scalar_op(math.PowFOp, sums, 1.0 / attrs["p"]), window)]


def spatial_axes(node, image: SSAValue) -> list[int]:
    rank = len(shape_of(image))
    if rank < 3 or 0 in shape_of(image)[2:]:
        raise node_error(node, f"the input must be [N, C, spatial…] and not empty, got {list(shape_of(image))}")
    return list(range(2, rank))


def import_global_average_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    image = im.input(node, 0)
    return [mean(im, image, spatial_axes(node, image))]


def import_global_max_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    image = im.input(node, 0)
    return [reduce_axes(im, tosa.ReduceMaxOp, image, spatial_axes(node, image))]


def import_batch_norm(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`(x - mean) · gamma / sqrt(var + eps) + beta` per channel (inference mode)."""
    if attrs["training_mode"]:
        raise node_error(node, "training mode is not supported")
    x = im.input(node, 0)
    rank = len(shape_of(x))
    channels = shape_of(x)[1]
    shape = (1, channels) + (1,) * (rank - 2)
    gamma, beta, mean, var = (im.ir.reshape(im.input(node, i), shape) for i in range(1, 5))
    deviation = im.ir.scalar_op(arith.AddfOp, var, attrs["epsilon"])
    scale = im.ir.binary(arith.DivfOp, gamma, im.ir.unary(math.SqrtOp, deviation))
    centered = im.ir.binary(arith.SubfOp, x, mean)
    return [im.ir.binary(arith.AddfOp, im.ir.binary(arith.MulfOp, centered, scale), beta)]


def output_shape(im: OnnxImporter, node) -> tuple[int, ...]:
    shape = im.shapes.get(node.output[0])
    if shape is None:
        raise node_error(node, "the output shape is unknown")
    return im.static_shape(node.output[0], shape)


def reshape_target(node, attrs, source: tuple[int, ...], target: np.ndarray) -> tuple[int, ...]:
    """ONNX Reshape's result shape: a 0 copies the source's dimension (unless `allowzero`), one -1
    takes what is left."""
    dims = [int(d) for d in target.reshape(-1)]
    if not attrs["allowzero"]:
        dims = [source[i] if d == 0 and i < len(source) else d for i, d in enumerate(dims)]
    known = int(np.prod([d for d in dims if d != -1]))
    if dims.count(-1) == 1 and known > 0:
        dims[dims.index(-1)] = int(np.prod(source)) // known
    if dims.count(-1) > 0 or any(d < 0 for d in dims) or int(np.prod(dims)) != int(np.prod(source)):
        raise node_error(node, f"cannot reshape {list(source)} into {[int(d) for d in target.reshape(-1)]}")
    return tuple(dims)


def import_reshape(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The target from the shape operand when it folded to a constant (shapes computed from the
    static input shapes), else from shape inference."""
    x = im.input(node, 0)
    target = im.optional_constant(node, 1)
    shape = output_shape(im, node) if target is None else reshape_target(node, attrs, shape_of(x), target)
    return [im.ir.reshape(x, shape)]


def squeeze(function: Callable) -> Callable:
    """Squeeze or Unsqueeze by `function` (NumPy's) on constant axes (Squeeze without axes: every
    dimension of 1); run-time axes take the shape inference's result."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        x = im.input(node, 0)
        given = node.input[1] if len(node.input) > 1 else ""
        if given and given not in im.constants:
            return [im.ir.reshape(x, output_shape(im, node))]
        axes = tuple(int(a) for a in np.ravel(im.constants[given])) if given else None
        try:  # on a zero-stride view of the input's shape: nothing is allocated
            shape = function(np.broadcast_to(np.empty((), np.int8), shape_of(x)), axes).shape
        except (ValueError, TypeError) as e:
            raise node_error(node, f"axes {axes} do not fit a {list(shape_of(x))} input ({e})") from None
        return [im.ir.reshape(x, shape)]

    return handler


def import_flatten(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    shape = shape_of(x)
    axis = attrs.axis("axis", len(shape), end=True)
    return [im.ir.reshape(x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))]


def import_transpose(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    permutation = attrs.permutation("perm", len(shape_of(x)))
    return [im.ir.transpose(x, permutation)]


def import_concat(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    values = [im.input(node, i) for i in range(len(node.input))]
    return [im.ir.concat(values, attrs.axis("axis", len(shape_of(values[0]))))]


def import_softmax(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    axis = attrs.axis("axis", len(shape_of(x)))
    shifted = im.ir.binary(arith.SubfOp, x, im.ir.reduce(tosa.ReduceMaxOp, x, axis))
    exponentials = im.ir.unary(math.ExpOp, shifted)
    return [im.ir.binary(arith.DivfOp, exponentials, im.ir.reduce(tosa.ReduceSumOp, exponentials, axis))]


def import_dropout(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The input, and a mask that keeps every element: inference, or training with ratio 0 (a
    training dropout of a positive ratio is random)."""
    x = im.input(node, 0)
    training = node.input[2] if len(node.input) > 2 else ""
    if training and (training not in im.constants or bool(im.constants[training])):
        ratio = im.optional_constant(node, 1)
        if ratio is None or float(ratio) != 0.0:
            raise node_error(node, "training mode (random dropout) is supported only with a constant ratio of 0")
    return [x, im.ir.constant(np.ones(shape_of(x), bool), i1)]


def import_identity(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.input(node, 0)]


def import_pad(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`constant` padding, or `edge`/`reflect`/`wrap`: a gather along each padded axis of the
    source index of every padded position."""
    given = [int(p) for p in im.constant(node, 1, "pads")]
    value = im.optional_constant(node, 2)
    x = im.input(node, 0)
    rank = len(shape_of(x))
    axes = im.optional_constant(node, 3)
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in np.ravel(axes)]
    if len(given) != 2 * len(axes):
        raise node_error(node, f"pads must have 2 entries per padded axis ({2 * len(axes)}), got {len(given)}")
    low, high = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        low[axis], high[axis] = given[i], given[i + len(axes)]
    if attrs["mode"] == "constant":
        return [im.ir.pad(x, low, high, float(value) if value is not None else 0.0)]
    if min(low + high) < 0:
        raise node_error(node, f"negative pads are supported in constant mode only, got {given}")
    for axis, (before, after) in enumerate(zip(low, high, strict=True)):
        if before or after:
            if shape_of(x)[axis] == 0:
                raise node_error(node, f"axis {axis} is empty: there is nothing to pad it with")
            source = np.pad(np.arange(shape_of(x)[axis]), (before, after), attrs["mode"])  # NumPy's modes are ONNX's
            x = take(im, x, im.ir.constant(source, i64), axis)
    return [x]


def import_lrn(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`x / (bias + alpha/size · Σ x²)^beta`, the sum over `size` neighbouring channels."""
    x = im.input(node, 0)
    n, c, h, w = shape_of(x)
    size = attrs["size"]
    squares = im.ir.reshape(im.ir.binary(arith.MulfOp, x, x), (n, 1, c, h * w))
    padded = im.ir.pad(squares, [0, 0, (size - 1) // 2, 0], [0, 0, size // 2, 0])
    window_mean = im.ir.pool(tosa.AvgPool2DOp, padded, [size, 1], [1, 1], [0, 0, 0, 0])
    scaled = im.ir.scalar_op(arith.MulfOp, im.ir.reshape(window_mean, (n, c, h, w)), attrs["alpha"])
    base = im.ir.scalar_op(arith.AddfOp, scaled, attrs["bias"])
    return [im.ir.binary(arith.DivfOp, x, im.ir.scalar_op(math.PowFOp, base, attrs["beta"]))]


# ---- quantized ONNX ops: integer tensors are held as float codes (exact for 8-bit values) ---------


def per_axis(im: OnnxImporter, values: np.ndarray | SSAValue, axis: int, rank: int) -> SSAValue:
    """A per-tensor or per-`axis` parameter shaped to broadcast over rank `rank`."""
    if isinstance(values, np.ndarray | np.generic | float | int):
        return im.ir.constant(along_axis(values, axis, rank))
    count = int(np.prod(shape_of(values)))
    shape = [1] * rank
    if count > 1:
        shape[axis % rank] = count
    return im.ir.reshape(values, shape)


Parameter = np.ndarray | SSAValue | None
"""A quantization parameter: a constant, a run-time value, or absent."""


def dequantize(im: OnnxImporter, codes: SSAValue, scale: Parameter, zero: Parameter, axis: int = 1) -> SSAValue:
    """`(q - zero) · scale`, marked with its scale when it is one constant."""
    rank = len(shape_of(codes))
    centered = codes if zero is None else im.ir.binary(arith.SubfOp, codes, per_axis(im, zero, axis, rank))
    value = im.ir.binary(arith.MulfOp, centered, per_axis(im, scale, axis, rank))
    if isinstance(scale, np.ndarray) and scale.size == 1:
        mark_scales(value, scale, axis % rank)
    return value


def quantize(
    im: OnnxImporter, x: SSAValue, scale: Parameter, zero: Parameter, dtype: np.dtype, axis: int = 1
) -> SSAValue:
    """`clip(round(x / scale) + zero)` to the range of the integer `dtype`."""
    rank = len(shape_of(x))
    scaled = im.ir.unary(math.RoundEvenOp, im.ir.binary(arith.DivfOp, x, per_axis(im, scale, axis, rank)))
    shifted = scaled if zero is None else im.ir.binary(arith.AddfOp, scaled, per_axis(im, zero, axis, rank))
    info = np.iinfo(dtype)
    return im.ir.clamp(shifted, float(info.min), float(info.max))


def parameter(im: OnnxImporter, node, index: int) -> Parameter:
    name = node.input[index] if index < len(node.input) else ""
    if not name:
        return None
    return im.constants[name] if name in im.constants else im.input(node, index)


def zero_point_dtype(im: OnnxImporter, node, index: int) -> np.dtype:
    """The integer type of a zero point (uint8 when absent), also for a run-time zero point."""
    name = node.input[index] if index < len(node.input) else ""
    if name in im.constants:
        return im.constants[name].dtype
    for info in im.graph.input:
        if info.name == name:
            return helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
    return np.dtype(np.uint8)


def import_quantize_linear(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    dtype = zero_point_dtype(im, node, 2)
    if dtype.kind not in "iu" or dtype.itemsize != 1:
        raise node_error(node, f"only 8-bit integers are supported, not {dtype}")
    x, scale, zero = im.input(node, 0), parameter(im, node, 1), parameter(im, node, 2)
    return [quantize(im, x, scale, zero, dtype, quantization_axis(attrs, x, scale))]


def import_dequantize_linear(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x, scale, zero = im.input(node, 0), parameter(im, node, 1), parameter(im, node, 2)
    return [dequantize(im, x, scale, zero, quantization_axis(attrs, x, scale))]


def quantization_axis(attrs: NodeAttributes, x: SSAValue, scale: Parameter) -> int:
    """The axis of per-axis scales (checked against the rank); per-tensor scales ignore it."""
    if attrs["block_size"]:
        raise node_error(attrs.node, f"blocked quantization (block_size {attrs['block_size']}) is not supported")
    count = scale.size if isinstance(scale, np.ndarray) else 1 if scale is None else int(np.prod(shape_of(scale)))
    return attrs.axis("axis", len(shape_of(x))) if count > 1 else attrs["axis"]


def along_axis(values, axis: int, rank: int) -> np.ndarray:
    """A per-tensor or per-`axis` parameter shaped to broadcast over rank `rank`."""
    values = np.asarray(values, np.float64)
    shape = [1] * rank
    if values.size > 1:
        shape[axis % rank] = values.size
    return values.reshape(shape)


def dequantized_operand(im: OnnxImporter, node, index: int, scale_index: int, axis: int) -> SSAValue:
    """Input `index` of a QLinear op as floats; constant integer weights stay a (marked) constant."""
    scale, zero = parameter(im, node, scale_index), parameter(im, node, scale_index + 1)
    name = node.input[index]
    if name not in im.constants or not all(isinstance(p, np.ndarray | None) for p in (scale, zero)):
        return dequantize(im, im.input(node, index), scale, zero, axis)
    codes = im.constants[name].astype(np.float64)
    if zero is not None:
        codes = codes - along_axis(zero, axis, codes.ndim)
    value = im.ir.constant((codes * along_axis(scale, axis, codes.ndim)).astype(np.float32))
    mark_scales(value, scale, axis % codes.ndim)
    return value


def import_qlinear_matmul(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    product = matmul(im, dequantized_operand(im, node, 0, 1, 1), dequantized_operand(im, node, 3, 4, 1), node)
    return [quantize(im, product, parameter(im, node, 6), parameter(im, node, 7), zero_point_dtype(im, node, 7))]


def import_qlinear_conv(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = dequantized_operand(im, node, 0, 1, 1)
    w = dequantized_operand(im, node, 3, 4, 0)
    result = convolution(im, node, attrs, x, w)
    if len(node.input) > 8 and node.input[8]:
        bias_scale = np.asarray(im.constant(node, 1, "the scale"), np.float64) * np.asarray(
            im.constant(node, 4, "the scale"), np.float64
        )
        bias = im.constant(node, 8, "the bias") * bias_scale
        result = im.ir.binary(arith.AddfOp, result, im.ir.constant(bias.reshape(1, -1, 1, 1)))
    return [quantize(im, result, parameter(im, node, 6), parameter(im, node, 7), zero_point_dtype(im, node, 7))]


def integer_operand(im: OnnxImporter, node, index: int, zero_index: int, axis: int) -> SSAValue:
    value = im.input(node, index)
    zero = parameter(im, node, zero_index)
    rank = len(shape_of(value))
    return value if zero is None else im.ir.binary(arith.SubfOp, value, per_axis(im, zero, axis, rank))


def import_matmul_integer(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [matmul(im, integer_operand(im, node, 0, 2, 0), integer_operand(im, node, 1, 3, -1), node)]


def import_conv_integer(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [convolution(im, node, attrs, integer_operand(im, node, 0, 2, 1), integer_operand(im, node, 1, 3, 0))]


# ---- transformer ops: embeddings, normalization, activations, masks -------------------------------


def is_integer(value: SSAValue) -> bool:
    return isinstance(value.type.element_type, IntegerType)


def import_gather(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`data` indexed along `axis` (embedding lookups)."""
    data = im.input(node, 0)
    shape = shape_of(data)
    axis = attrs.axis("axis", len(shape))
    return [take(im, data, index_operand(im, node, 1, np.array(shape[axis]), np.array(axis)), axis)]


def index_operand(im: OnnxImporter, node, index: int, sizes: np.ndarray, axes: np.ndarray) -> SSAValue:
    """Input `index` as i64 indices into axes `axes` of sizes `sizes` (both broadcast over the
    indices), negative ones counted from the end: constant indices are checked here, run-time ones
    when the gather runs (an index out of range is an error)."""
    constant = im.optional_constant(node, index)
    if constant is not None:
        indices = np.asarray(constant).astype(np.int64)
        sizes = np.broadcast_to(sizes, indices.shape)
        outside = (indices < -sizes) | (indices >= sizes)
        if outside.any():
            bad, axis, size = (int(a[outside].flat[0]) for a in (indices, np.broadcast_to(axes, indices.shape), sizes))
            raise node_error(node, f"index {bad} is out of range for axis {axis} of size {size}")
        return im.ir.constant(np.where(indices < 0, indices + sizes, indices), i64)
    value = im.input(node, index)
    if not is_integer(value) or value.type.element_type == i1:
        raise node_error(node, "the indices must be integers")
    value = convert(im, value, i64)
    sizes = im.ir.constant(np.broadcast_to(sizes, shape_of(value)), i64)
    wrapped = im.ir.binary(arith.AddiOp, value, sizes)
    # -size <= index < 0 exactly when 0 <= index + size < size, one unsigned comparison; an index out
    # of range stays as given, for the gather to report
    return im.ir.select(im.ir.compare(wrapped, sizes, "ult"), wrapped, value)


def operand_shape(im: OnnxImporter, node, index: int) -> tuple[int, ...]:
    """The shape of input `index`, a constant or a run-time value."""
    name = node.input[index]
    return np.shape(im.constants[name]) if name in im.constants else shape_of(im.input(node, index))


def import_gather_elements(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`data` at the indices along `axis` and, along the other axes, at each index's own position."""
    data = im.input(node, 0)
    shape = shape_of(data)
    rank = len(shape)
    axis = attrs.axis("axis", rank)
    positions = operand_shape(im, node, 1)
    if len(positions) != rank or any(p > d for a, (p, d) in enumerate(zip(positions, shape)) if a != axis):
        raise node_error(node, f"indices of shape {list(positions)} do not fit data of shape {list(shape)}")
    indices = im.ir.reshape(index_operand(im, node, 1, np.array(shape[axis]), np.array(axis)), (*positions, 1))
    grids = np.indices(positions)[..., None]
    columns = [indices if a == axis else im.ir.constant(grids[a], i64) for a in range(rank)]
    return [im.ir.gather_points(data, im.ir.concat(columns, rank))]


def import_gather_nd(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Slices of `data` at the coordinates along the last dimension of the indices, within each of
    the leading `batch_dims` entries."""
    data = im.input(node, 0)
    shape = shape_of(data)
    batch = attrs["batch_dims"]
    positions = operand_shape(im, node, 1)
    count = positions[-1] if positions else 0
    if not positions or batch >= len(positions) or batch + count > len(shape) or positions[:batch] != shape[:batch]:
        raise node_error(
            node, f"indices of shape {list(positions)} do not fit data of shape {list(shape)} (batch_dims {batch})"
        )
    axes = np.arange(batch, batch + count)
    coordinates = index_operand(im, node, 1, np.array(shape)[axes], axes)
    if batch:
        columns = [im.ir.constant(grid[..., None], i64) for grid in np.indices(positions[:-1])[:batch]]
        coordinates = im.ir.concat([*columns, coordinates], len(positions) - 1)
    return [im.ir.gather_points(data, coordinates)]


def take(im: OnnxImporter, data: SSAValue, indices: SSAValue, axis: int) -> SSAValue:
    """`np.take(data, indices, axis)` for indices in range: the axis is moved first for the gather."""
    rank = len(shape_of(data))
    order = [axis, *(d for d in range(rank) if d != axis)]
    gathered = im.ir.gather(im.ir.transpose(data, order), indices)
    count = len(shape_of(indices))
    # gathered is (*indices, *data without axis): put the index dimensions back at `axis`
    permutation = [*range(count, count + axis), *range(count), *range(count + axis, count + rank - 1)]
    return im.ir.transpose(gathered, permutation)


def reduce_axes(im: OnnxImporter, kind, x: SSAValue, axes) -> SSAValue:
    """A `tosa.reduce_*` over each of `axes`, the dimensions kept (as 1)."""
    for axis in axes:
        x = im.ir.reduce(kind, x, axis)
    return x


def mean(im: OnnxImporter, x: SSAValue, axes) -> SSAValue:
    """The mean over `axes`, the dimensions kept (as 1)."""
    count = int(np.prod([shape_of(x)[a] for a in axes]))
    return im.ir.scalar_op(arith.MulfOp, reduce_axes(im, tosa.ReduceSumOp, x, axes), 1.0 / max(count, 1))


def reduction_axes(im: OnnxImporter, node, attrs, rank: int) -> list[int] | None:
    """The axes of a Reduce* node (an attribute before opset 18, or ReduceSum's since 13, else an
    input); None when empty axes mean "no reduction"."""
    axes = attrs["axes"]
    if axes is None and len(node.input) > 1 and node.input[1]:
        axes = [int(a) for a in np.ravel(im.constant(node, 1, "axes"))]
    if not axes:
        return None if attrs["noop_with_empty_axes"] else list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise node_error(node, f"axes {list(axes)} must be in [{-rank}, {rank - 1}]")
    return sorted({a % rank for a in axes})


def reduction(reduce: Callable[[OnnxImporter, SSAValue, list[int]], SSAValue], empty: bool = True) -> Callable:
    """A Reduce* node: `reduce(im, x, axes)` keeps the reduced dimensions, dropped unless `keepdims`;
    `empty` tells whether a reduction over no elements is defined (a sum is, a maximum is not)."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        x = im.input(node, 0)
        shape = shape_of(x)
        axes = reduction_axes(im, node, attrs, len(shape))
        if axes is None:
            return [x]
        if not empty and any(shape[a] == 0 for a in axes):
            raise node_error(node, "a reduction over no elements is not supported")
        result = reduce(im, x, axes)
        return [
            result if attrs["keepdims"] else im.ir.reshape(result, [d for i, d in enumerate(shape) if i not in axes])
        ]

    return handler


def import_layer_norm(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`(x - mean) / sqrt(var + eps) · scale + bias` over the axes from `axis` on; also the mean and
    the inverse standard deviation (the optional outputs)."""
    x = im.input(node, 0)
    rank = len(shape_of(x))
    axes = list(range(attrs.axis("axis", rank), rank))
    centered = im.ir.binary(arith.SubfOp, x, mean_value := mean(im, x, axes))
    variance = mean(im, im.ir.binary(arith.MulfOp, centered, centered), axes)
    deviation = im.ir.unary(math.SqrtOp, im.ir.scalar_op(arith.AddfOp, variance, attrs["epsilon"]))
    inverse = im.ir.insert(arith.DivfOp(im.ir.splat(1.0, shape_of(deviation)), deviation))
    result = im.ir.binary(arith.MulfOp, im.ir.binary(arith.MulfOp, centered, inverse), im.input(node, 1))
    if len(node.input) > 2 and node.input[2]:
        result = im.ir.binary(arith.AddfOp, result, im.input(node, 2))
    return [result, mean_value, inverse]


def import_gelu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`x/2 · (1 + erf(x/√2))`, or with `approximate="tanh"` `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`."""
    x = im.input(node, 0)
    if attrs["approximate"] == "tanh":
        cube = im.ir.binary(arith.MulfOp, im.ir.binary(arith.MulfOp, x, x), x)
        inner = im.ir.binary(arith.AddfOp, x, im.ir.scalar_op(arith.MulfOp, cube, 0.044715))
        curve = im.ir.unary(math.TanhOp, im.ir.scalar_op(arith.MulfOp, inner, float(np.sqrt(2 / np.pi))))
    else:
        curve = im.ir.unary(math.ErfOp, im.ir.scalar_op(arith.MulfOp, x, float(1 / np.sqrt(2))))
    half = im.ir.scalar_op(arith.MulfOp, x, 0.5)
    return [im.ir.binary(arith.MulfOp, half, im.ir.scalar_op(arith.AddfOp, curve, 1.0))]


def float_input(im: OnnxImporter, node, index: int) -> SSAValue:
    value = im.input(node, index)
    if is_integer(value):
        raise node_error(node, "integer operands are not supported (models compute in float)")
    return value


def import_pow(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    base, exponent = float_input(im, node, 0), im.input(node, 1)
    if is_integer(exponent):
        exponent = convert(im, exponent, f32)
    return [im.ir.binary(math.PowFOp, base, exponent)]


def import_reciprocal(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = float_input(im, node, 0)
    return [im.ir.insert(arith.DivfOp(im.ir.splat(1.0, shape_of(x)), x))]


def import_neg(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    if is_integer(x):
        return [im.ir.insert(arith.SubiOp(im.ir.splat(0, shape_of(x), x.type.element_type), x))]
    return [im.ir.unary(arith.NegfOp, x)]


def float_unary(kind) -> Callable:
    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        return [im.ir.unary(kind, float_input(im, node, 0))]

    return handler


def import_is_nan(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = float_input(im, node, 0)
    return [im.ir.map(lambda a: arith.CmpfOp(a, a, "uno"), [x], i1)]


def import_is_inf(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`x` beyond the largest float32 (+∞, −∞ or either, by `detect_positive`/`detect_negative`)."""
    x = float_input(im, node, 0)
    largest = float(np.finfo(np.float32).max)
    positive, negative = attrs["detect_positive"], attrs["detect_negative"]
    if not positive and not negative:
        return [im.ir.constant(np.zeros(shape_of(x), bool), i1)]
    if positive and negative:
        return [im.ir.compare(im.ir.unary(math.AbsFOp, x), im.ir.splat(largest, shape_of(x)), "gt")]
    return [im.ir.compare(x, im.ir.splat(largest if positive else -largest, shape_of(x)), "gt" if positive else "lt")]


def logical(kind) -> Callable:
    """And, Or, Xor of booleans, with broadcasting."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        return [im.ir.binary(kind, boolean_input(im, node, 0), boolean_input(im, node, 1))]

    return handler


def import_not(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = boolean_input(im, node, 0)
    return [im.ir.binary(arith.XOrIOp, x, im.ir.constant(np.ones(shape_of(x), bool), i1))]


def boolean_input(im: OnnxImporter, node, index: int) -> SSAValue:
    value = im.input(node, index)
    if value.type.element_type != i1:
        raise node_error(node, f"the operands must be booleans, got {value.type.element_type}")
    return value


def import_where(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.select(im.input(node, 0), im.input(node, 1), im.input(node, 2))]


def comparison(predicate: str) -> Callable:
    """Equal (`eq`), Less (`lt`), Greater (`gt`), …: signed for integers, ordered for floats."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        lhs, rhs = im.input(node, 0), im.input(node, 1)
        if lhs.type.element_type != rhs.type.element_type:
            raise node_error(node, f"the operands differ in type ({lhs.type.element_type}, {rhs.type.element_type})")
        signed = "s" + predicate if predicate != "eq" and is_integer(lhs) else predicate
        return [im.ir.compare(lhs, rhs, signed)]

    return handler


def variadic(kind) -> Callable:
    """Max/Min of any number of float inputs, with broadcasting."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        result = float_input(im, node, 0)
        for index in range(1, len(node.input)):
            result = im.ir.binary(kind, result, float_input(im, node, index))
        return [result]

    return handler


def import_expand(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    target = [int(d) for d in np.ravel(im.constant(node, 1, "the shape"))]
    try:
        shape = np.broadcast_shapes(shape_of(x), tuple(target))
    except ValueError:
        raise node_error(node, f"{list(shape_of(x))} does not broadcast to {target}") from None
    return [im.ir.broadcast(x, shape)]


CAST_TYPES = {
    onnx.TensorProto.FLOAT: f32,
    onnx.TensorProto.DOUBLE: f32,
    onnx.TensorProto.FLOAT16: f32,
    onnx.TensorProto.INT64: i64,
    onnx.TensorProto.INT32: i32,
    onnx.TensorProto.BOOL: i1,
}
"""What Cast converts to (floats are computed in f32)."""


def import_cast(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    if attrs["to"] not in CAST_TYPES:
        raise node_error(node, f"casting to {onnx.TensorProto.DataType.Name(attrs['to'])} is not supported")
    return [convert(im, x, CAST_TYPES[attrs["to"]])]


def import_cast_like(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [convert(im, im.input(node, 0), im.input(node, 1).type.element_type)]


def convert(im: OnnxImporter, x: SSAValue, target: Attribute) -> SSAValue:
    """`x` as `target` elements: floats truncate towards zero, booleans are 0/1, non-zero is true."""
    source = x.type.element_type
    if source == target:
        return x
    if target == i1:
        return im.ir.compare(x, im.ir.splat(0, shape_of(x), source), "ne")
    if target == f32:
        kind = arith.UIToFPOp if source == i1 else arith.SIToFPOp
    elif source == f32:
        kind = arith.FPToSIOp
    elif source.width.data > target.width.data:
        kind = arith.TruncIOp
    else:
        kind = arith.ExtUIOp if source == i1 else arith.ExtSIOp
    return im.ir.map(lambda element: kind(element, target), [x], target)


def import_slice(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Constant starts, ends, axes and steps; negative steps read the elements in reverse (a gather)."""
    x = im.input(node, 0)
    shape = shape_of(x)
    rank = len(shape)
    starts, ends = (np.ravel(im.constant(node, i, name)).astype(np.int64) for i, name in ((1, "starts"), (2, "ends")))
    axes = im.optional_constant(node, 3)
    axes = np.arange(len(starts)) if axes is None else np.ravel(axes).astype(np.int64)
    steps = im.optional_constant(node, 4)
    steps = np.ones(len(starts), np.int64) if steps is None else np.ravel(steps).astype(np.int64)
    if not len(starts) == len(ends) == len(axes) == len(steps) or any(not -rank <= a < rank for a in axes):
        raise node_error(node, "starts, ends, axes and steps must have one entry per sliced axis")
    if (steps == 0).any():
        raise node_error(node, "steps must not be 0")
    ranges = [range(d) for d in shape]
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        ranges[axis % rank] = range(shape[axis % rank])[slice(int(start), int(end), int(step))]
    forward = [r if r.step > 0 else r[::-1] for r in ranges]
    offsets = [r.start if len(r) else 0 for r in forward]
    x = im.ir.slice(x, offsets, [len(r) for r in forward], [r.step if len(r) > 1 else 1 for r in forward])
    for axis, r in enumerate(ranges):
        if r.step < 0 and len(r) > 1:
            x = take(im, x, im.ir.constant(np.arange(len(r) - 1, -1, -1), i64), axis)
    return [x]


def import_split(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    axis = attrs.axis("axis", len(shape_of(x)))
    size = shape_of(x)[axis]
    given = im.constant(node, 1, "split") if len(node.input) > 1 and node.input[1] else None
    if given is None and attrs["split"] is not None:
        given = np.array(attrs["split"])
    if given is not None:
        sizes = [int(s) for s in np.ravel(given)]
    else:
        parts = attrs["num_outputs"] or len(node.output)
        chunk = -(-size // parts)
        sizes = [min(chunk, size - i * chunk) for i in range(parts)]
    if sum(sizes) != size or any(s < 0 for s in sizes):
        raise node_error(node, f"the parts {sizes} do not add up to the axis size {size}")
    outputs, offset = [], 0
    for part in sizes:
        offsets, extents = [0] * len(shape_of(x)), list(shape_of(x))
        offsets[axis], extents[axis] = offset, part
        outputs.append(im.ir.slice(x, offsets, extents))
        offset += part
    return outputs


def import_trilu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The upper (or lower) triangle of the last two dimensions, from diagonal `k` on; the rest 0."""
    x = im.input(node, 0)
    k = im.optional_constant(node, 1)
    k = 0 if k is None else int(np.ravel(k)[0])
    rows, cols = shape_of(x)[-2:]
    ones = np.ones((rows, cols), bool)
    mask = np.triu(ones, k) if attrs["upper"] else np.tril(ones, k)
    zeros = im.ir.splat(0, shape_of(x), x.type.element_type)
    return [im.ir.select(im.ir.constant(mask, i1), x, zeros)]


def constant_only(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Ops whose result shape depends on input values: supported only when those are constant."""
    raise node_error(node, "its inputs must be constants (the result's shape must be known when compiling)")


HANDLERS: dict[str, Callable[[OnnxImporter, onnx.NodeProto, dict], list[SSAValue]]] = {
    "QuantizeLinear": import_quantize_linear,
    "DequantizeLinear": import_dequantize_linear,
    "QLinearMatMul": import_qlinear_matmul,
    "QLinearConv": import_qlinear_conv,
    "MatMulInteger": import_matmul_integer,
    "ConvInteger": import_conv_integer,
    "MatMul": import_matmul,
    "Gemm": import_gemm,
    "Conv": import_conv,
    "Relu": import_relu,
    "LeakyRelu": import_leaky_relu,
    "Clip": import_clip,
    "Sigmoid": import_sigmoid,
    "Tanh": unary(math.TanhOp),
    "Add": elementwise(arith.AddfOp),
    "Sub": elementwise(arith.SubfOp),
    "Mul": elementwise(arith.MulfOp),
    "Div": elementwise(arith.DivfOp),
    "Sum": import_sum,
    "MaxPool": import_max_pool,
    "AveragePool": import_average_pool,
    "GlobalAveragePool": import_global_average_pool,
    "GlobalMaxPool": import_global_max_pool,
    "LpPool": import_lp_pool,
    "BatchNormalization": import_batch_norm,
    "Concat": import_concat,
    "Reshape": import_reshape,
    "Flatten": import_flatten,
    "Transpose": import_transpose,
    "Squeeze": squeeze(np.squeeze),
    "Unsqueeze": squeeze(np.expand_dims),
    "Softmax": import_softmax,
    "Dropout": import_dropout,
    "Identity": import_identity,
    "LRN": import_lrn,
    "Pad": import_pad,
    "Gather": import_gather,
    "GatherElements": import_gather_elements,
    "GatherND": import_gather_nd,
    "IsNaN": import_is_nan,
    "IsInf": import_is_inf,
    "And": logical(arith.AndIOp),
    "Or": logical(arith.OrIOp),
    "Xor": logical(arith.XOrIOp),
    "Not": import_not,
    "LayerNormalization": import_layer_norm,
    "Gelu": import_gelu,
    "Erf": float_unary(math.ErfOp),
    "Exp": float_unary(math.ExpOp),
    "Sqrt": float_unary(math.SqrtOp),
    "Pow": import_pow,
    "Reciprocal": import_reciprocal,
    "Neg": import_neg,
    "ReduceMean": reduction(mean),
    "ReduceSum": reduction(lambda im, x, axes: reduce_axes(im, tosa.ReduceSumOp, x, axes)),
    "ReduceMax": reduction(lambda im, x, axes: reduce_axes(im, tosa.ReduceMaxOp, x, axes), empty=False),
    "Where": import_where,
    "Equal": comparison("eq"),
    "Less": comparison("lt"),
    "Greater": comparison("gt"),
    "LessOrEqual": comparison("le"),
    "GreaterOrEqual": comparison("ge"),
    "Max": variadic(arith.MaximumfOp),
    "Min": variadic(arith.MinimumfOp),
    "Expand": import_expand,
    "Cast": import_cast,
    "CastLike": import_cast_like,
    "Slice": import_slice,
    "Split": import_split,
    "Trilu": import_trilu,
    "Range": constant_only,
    "ConstantOfShape": constant_only,
}


def import_onnx(model: onnx.ModelProto | str | Path) -> ModuleOp:
    """Import an ONNX model (a path or a `ModelProto`) as a module with `func.func @main`."""
    return OnnxImporter(load_model(model)).run()
