"""ONNX to standard MLIR: `func.func @main` on float tensors.

The model is upgraded to a recent opset and shape-inferred; initializers stay NumPy arrays and
become `arith.constant`s only where an op uses them. Nodes whose inputs are all constant (shape
arithmetic, `Constant`, …) are folded with ONNX's reference evaluator. BatchNormalization after a
convolution with constant weights is folded into it. Matrix products and convolutions become
`linalg.matmul`/`linalg.conv_2d_nchw_fchw` (a grouped convolution: one `linalg.conv_2d_ngchw_gfchw`),
offloaded later by `linalg-to-cinm`; the rest becomes host ops (see `builder.py`).

This module walks the graph; loading is in `loading.py`, folding in `folding.py`, and each op
type's handler is registered in `registry.importer` by the modules of `ops/`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i1, i32, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from cimxdsl.frontend.attributes import NodeAttributes, OnnxImportError, node_error, node_label
from cimxdsl.frontend.builder import IRBuilder, code_bits, mark_scales, shape_of
from cimxdsl.frontend.folding import CONSTANT_ONLY, SHAPE_ONLY, evaluate_node, fold_batch_norms, fold_sign_thresholds
from cimxdsl.frontend.loading import TARGET_OPSET, graph_inputs, initializer_array, input_shape, load_model, with_batch
from cimxdsl.frontend.registry import importer

__all__ = [
    "ONNX_ELEMENT_TYPES",
    "OnnxImportError",
    "OnnxImporter",
    "graph_inputs",
    "import_onnx",
    "input_shape",
    "load_model",
    "with_batch",
]


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


class OnnxImporter:
    """Translates one ONNX graph, node by node, into a `func.func @main` (folding batch norms into
    convolutions and into the thresholds of Sign and, with `ternary_thresholds`, of a ternary Round)."""

    def __init__(self, model: onnx.ModelProto, ternary_thresholds: bool = True):
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), TARGET_OPSET)
        self.constants: dict[str, np.ndarray] = {init.name: initializer_array(init) for init in self.graph.initializer}
        self.values: dict[str, SSAValue] = {}
        self.starts: list[tuple[onnx.NodeProto, Operation | None]] = []
        """Each imported node and the op before its first."""
        self.scale_hints: dict[str, tuple[np.ndarray, int, int]] = {}
        """ONNX constants that are dequantized integers: their scales and axis (kept by quantization)."""
        self.shapes = {info.name: info.type.tensor_type.shape for info in [*self.graph.value_info, *self.graph.output]}
        fold_batch_norms(self.graph, self.constants)
        fold_sign_thresholds(self.graph, self.constants, ternary_thresholds)

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
        handler = importer.get(node.op_type)
        if handler is None:
            raise OnnxImportError(
                f"unsupported ONNX op '{node.op_type}' (node '{node.name or node.output[0]}'); supported: "
                + ", ".join(importer)
            )
        self.ir.layer_name = node_layer_name(node)
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
            if node.op_type not in CONSTANT_ONLY and importer.get(node.op_type) is not None:
                return False
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise node_error(node, f"its constant inputs cannot be evaluated ({message})") from None
        for name, value in zip(node.output, values, strict=False):
            self.constants[name] = value
        if node.op_type == "DequantizeLinear":
            zero = inputs[2] if len(inputs) > 2 else None
            bits = code_bits(inputs[0], zero, np.asarray(inputs[0]).dtype)
            self.scale_hints[node.output[0]] = (np.asarray(inputs[1]), NodeAttributes(node)["axis"], bits)
        return True

    # -- values ------------------------------------------------------------------------------------
    def value(self, name: str, user: str) -> SSAValue:
        """The SSA value of an ONNX tensor, materializing constants on first use."""
        if name in self.values:
            return self.values[name]
        if name in self.constants:
            array = self.constants[name]
            element = f32 if array.dtype.kind == "f" or name in self.scale_hints else numpy_element_type(array.dtype)
            self.values[name] = self.ir.constant(array, element)  # (converted to the element type there)
            if name in self.scale_hints:
                scales, axis, bits = self.scale_hints[name]
                mark_scales(self.values[name], scales, axis % array.ndim, bits)
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


def sanitize(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"v{cleaned}"


def node_layer_name(node: onnx.NodeProto) -> str:
    """The name of the layer `node` makes: its name (else its first output's), sanitized, with a
    trailing `_<digits>` written `.<digits>`: an SSA name drops such a suffix (the printer's own
    numbering), which would give the nodes `MatMul` and `MatMul_1` one layer name."""
    return re.sub(r"_(\d+)$", r".\1", sanitize(node.name or node.output[0]))


def import_onnx(model: onnx.ModelProto | str | Path) -> ModuleOp:
    """Import an ONNX model (a path or a `ModelProto`) as a module with `func.func @main`."""
    return OnnxImporter(load_model(model)).run()
