"""`NodeAttributes`: declared attribute types, lengths and ranges, one-line errors naming the node."""

import pytest
from onnx import AttributeProto, helper

from cimxdsl.frontend.attributes import EXPECTED, NodeAttributes, OnnxImportError


def node(op_type: str, **attributes):
    return helper.make_node(op_type, ["x", "w"], ["y"], name="n1", **attributes)


def test_defaults_fill_in_and_given_values_are_typed():
    attrs = NodeAttributes(node("Conv", pads=[1, 2, 1, 2], auto_pad="NOTSET"))
    assert attrs["pads"] == [1, 2, 1, 2] and attrs["strides"] == [1, 1] and attrs["group"] == 1
    assert attrs["auto_pad"] == "NOTSET" and set(attrs) == set(EXPECTED["Conv"])
    assert NodeAttributes(node("Gemm", alpha=0.5))["alpha"] == 0.5
    assert dict(NodeAttributes(node("Relu"))) == {}  # no attributes declared, none read


@pytest.mark.parametrize(
    "op_type, attributes, message",
    [
        ("Conv", {"pads": 1}, "attribute 'pads' must be a list of 4 integers ≥ 0, got 1"),
        ("Conv", {"pads": [1, 1]}, "attribute 'pads' must be a list of 4 integers ≥ 0, got [1, 1]"),
        ("Conv", {"strides": [1, 0]}, "attribute 'strides' must be a list of 2 integers ≥ 1, got [1, 0]"),
        ("Conv", {"group": 0}, "attribute 'group' must be an integer ≥ 1, got 0"),
        ("Conv", {"auto_pad": "SIDEWAYS"}, "attribute 'auto_pad' must be a string (one of NOTSET, SAME_UPPER,"),
        ("Gemm", {"transB": 2}, "attribute 'transB' must be an integer (one of 0, 1), got 2"),
        ("Gemm", {"alpha": 2}, "attribute 'alpha' must be a number, got 2"),
        ("MaxPool", {}, "attribute 'kernel_shape' is missing; it must be a list of integers ≥ 1"),
        ("LRN", {"size": 0}, "attribute 'size' must be an integer ≥ 1, got 0"),
        ("Pad", {"mode": "mirror"}, "attribute 'mode' must be a string (one of constant, reflect, edge, wrap)"),
    ],
)
def test_a_broken_attribute_is_a_one_line_error_naming_the_node(op_type, attributes, message):
    with pytest.raises(OnnxImportError) as caught:
        NodeAttributes(node(op_type, **attributes))
    text = str(caught.value)
    assert text.startswith(f"{op_type} node 'n1': {message}") and "\n" not in text


def test_an_attribute_of_another_kind_is_named_by_its_type():
    broken = node("Softmax")
    broken.attribute.append(helper.make_attribute("axis", helper.make_tensor("t", 1, [1], [0.0])))
    assert broken.attribute[0].type == AttributeProto.TENSOR
    with pytest.raises(OnnxImportError, match=r"^Softmax node 'n1': attribute 'axis' must be an integer, got TENSOR$"):
        NodeAttributes(broken)


def test_axes_and_permutations_are_checked_against_the_rank():
    assert NodeAttributes(node("Softmax", axis=-1)).axis("axis", 3) == 2
    assert NodeAttributes(node("Flatten", axis=4)).axis("axis", 4, end=True) == 4
    with pytest.raises(OnnxImportError, match=r"'axis' must be an axis in \[-2, 1\], got 2"):
        NodeAttributes(node("Concat", axis=2)).axis("axis", 2)
    assert NodeAttributes(node("Transpose")).permutation("perm", 3) == [2, 1, 0]
    with pytest.raises(OnnxImportError, match=r"'perm' must be a permutation of 0..2, got \[0, 0, 1\]"):
        NodeAttributes(node("Transpose", perm=[0, 0, 1])).permutation("perm", 3)
