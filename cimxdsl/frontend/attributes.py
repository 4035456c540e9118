"""The attributes of an ONNX node, read against declared expectations (type, length, range).

Both importers read attributes only through `NodeAttributes`: every attribute an op's handler uses is
declared in `EXPECTED` with its ONNX type, default, length and range, and a node whose attribute
breaks one is a one-line `OnnxImportError` naming the op type, the node and the attribute.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import AttributeProto, helper

SHOWN = (AttributeProto.INT, AttributeProto.FLOAT, AttributeProto.STRING, AttributeProto.INTS)
"""Attribute types whose value an error shows (others are named by their type)."""
REQUIRED = object()
"""The default of an attribute the node must carry."""


class OnnxImportError(ValueError):
    """A model the importer cannot take; the message is one line."""


def node_label(node: onnx.NodeProto) -> str:
    """`Conv node 'conv1'`: how errors name a node (its first output when it has no name)."""
    return f"{node.op_type} node '{node.name or (node.output[0] if node.output else '')}'"


def node_error(node: onnx.NodeProto, message: str) -> OnnxImportError:
    return OnnxImportError(f"{node_label(node)}: {message}")


@dataclass(frozen=True)
class Expect:
    """What an attribute must be: an ONNX attribute type, a default (or `REQUIRED`), for lists a
    length, the least value and, for strings and flags, the allowed values."""

    kind: int
    default: Any = REQUIRED
    length: int | None = None
    low: float | None = None
    choices: tuple = ()

    def describe(self) -> str:
        noun = {AttributeProto.INT: "an integer", AttributeProto.FLOAT: "a number", AttributeProto.STRING: "a string"}
        if self.kind == AttributeProto.INTS:
            text = "a list of " + (f"{self.length} " if self.length is not None else "") + "integers"
        else:
            text = noun[self.kind]
        if self.low is not None:
            text += f" ≥ {self.low:g}"
        if self.choices:
            text += " (one of " + ", ".join(map(str, self.choices)) + ")"
        return text

    def check(self, value: Any) -> bool:
        values = value if self.kind == AttributeProto.INTS else [value]
        if self.length is not None and len(values) != self.length:
            return False
        if self.low is not None and any(v < self.low for v in values):
            return False
        return not self.choices or value in self.choices


def integer(default: Any = REQUIRED, low: int | None = None) -> Expect:
    return Expect(AttributeProto.INT, default, low=low)


def flag(default: int = 0) -> Expect:
    return Expect(AttributeProto.INT, default, choices=(0, 1))


def number(default: Any = REQUIRED, low: float | None = None) -> Expect:
    return Expect(AttributeProto.FLOAT, default, low=low)


def integers(default: Any = REQUIRED, length: int | None = None, low: int | None = None) -> Expect:
    return Expect(AttributeProto.INTS, default, length, low)


def string(default: str, *choices: str) -> Expect:
    return Expect(AttributeProto.STRING, default, choices=choices)


WINDOW = {
    "kernel_shape": integers(length=2, low=1),
    "strides": integers([1, 1], length=2, low=1),
    "dilations": integers([1, 1], length=2, low=1),
    "pads": integers([0, 0, 0, 0], length=4, low=0),
    "auto_pad": string("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"),
}
"""Attributes of 2-D convolution windows (only 2-D convolutions are supported)."""
CONV = {**WINDOW, "kernel_shape": integers(None, length=2, low=1), "group": integer(1, low=1)}
POOL = {
    "kernel_shape": integers(low=1),
    "strides": integers(None, low=1),
    "dilations": integers(None, low=1),
    "pads": integers(None, low=0),
    "auto_pad": WINDOW["auto_pad"],
    "ceil_mode": flag(),
}
"""Attributes of pooling windows over any number of spatial axes (their lengths checked against the
input's rank when the node is imported)."""
AXIS = {"axis": integer(1)}
REDUCE = {"axes": integers(None), "keepdims": flag(1), "noop_with_empty_axes": flag(0)}

EXPECTED: dict[str, dict[str, Expect]] = {
    "Conv": CONV,
    "ConvInteger": CONV,
    "QLinearConv": CONV,
    "MaxPool": {**POOL, "storage_order": flag()},
    "AveragePool": {**POOL, "count_include_pad": flag()},
    "LpPool": {**POOL, "p": integer(2, low=1)},
    "Gemm": {"alpha": number(1.0), "beta": number(1.0), "transA": flag(), "transB": flag()},
    "LeakyRelu": {"alpha": number(0.01)},
    "Clip": {"min": number(None), "max": number(None)},
    "BatchNormalization": {"epsilon": number(1e-5, low=0), "training_mode": flag()},
    "Flatten": AXIS,
    "Concat": {"axis": integer()},
    "Softmax": {"axis": integer(-1)},
    "Reshape": {"allowzero": flag()},
    "Transpose": {"perm": integers(None)},
    "Pad": {"mode": string("constant", "constant", "reflect", "edge", "wrap")},
    "LRN": {"size": integer(low=1), "alpha": number(1e-4), "beta": number(0.75), "bias": number(1.0)},
    "Gather": {"axis": integer(0)},
    "GatherElements": {"axis": integer(0)},
    "GatherND": {"batch_dims": integer(0, low=0)},
    "IsInf": {"detect_negative": flag(1), "detect_positive": flag(1)},
    "LayerNormalization": {"axis": integer(-1), "epsilon": number(1e-5, low=0), "stash_type": integer(1)},
    "Gelu": {"approximate": string("none", "none", "tanh")},
    "ReduceMean": REDUCE,
    "ReduceSum": REDUCE,
    "ReduceMax": REDUCE,
    "Cast": {"to": integer(), "saturate": flag(1)},
    "Split": {"axis": integer(0), "split": integers(None, low=0), "num_outputs": integer(None, low=1)},
    "Trilu": {"upper": flag(1)},
    "QuantizeLinear": {**AXIS, "block_size": integer(0, low=0)},
    "DequantizeLinear": {**AXIS, "block_size": integer(0, low=0)},
}


def defaults(op_type: str) -> dict[str, Any]:
    """The default attributes of `op_type` (as a node without attributes has them)."""
    return {name: expect.default for name, expect in EXPECTED[op_type].items()}


class NodeAttributes(Mapping):
    """The declared attributes of a node, checked and with their defaults: `attrs["strides"]`."""

    def __init__(self, node: onnx.NodeProto):
        self.node = node
        given = {a.name: a for a in node.attribute}
        self.values: dict[str, Any] = {}
        for name, expect in EXPECTED.get(node.op_type, {}).items():
            if name not in given:
                if expect.default is REQUIRED:
                    raise node_error(node, f"attribute '{name}' is missing; it must be {expect.describe()}")
                self.values[name] = expect.default
                continue
            attribute = given[name]
            value = helper.get_attribute_value(attribute)
            if attribute.type == AttributeProto.STRING:
                value = value.decode(errors="replace")
            elif attribute.type == AttributeProto.INTS:
                value = list(value)
            if attribute.type != expect.kind or not expect.check(value):
                shown = repr(value) if attribute.type in SHOWN else AttributeProto.AttributeType.Name(attribute.type)
                raise node_error(node, f"attribute '{name}' must be {expect.describe()}, got {shown}")
            self.values[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def axis(self, name: str, rank: int, end: bool = False) -> int:
        """Attribute `name` as an axis of a rank-`rank` tensor, made non-negative; `end` also
        allows `rank` (the axis after the last, as Flatten's)."""
        value, top = self.values[name], rank + 1 if end else rank
        if not -rank <= value < top:
            raise node_error(self.node, f"attribute '{name}' must be an axis in [{-rank}, {top - 1}], got {value}")
        return value % rank if value < rank else value

    def permutation(self, name: str, rank: int) -> list[int]:
        """Attribute `name` as a permutation of `rank` axes (reversed when absent)."""
        value = self.values[name]
        if value is None:
            return list(reversed(range(rank)))
        if sorted(value) != list(range(rank)):
            raise node_error(self.node, f"attribute '{name}' must be a permutation of 0..{rank - 1}, got {value}")
        return value
