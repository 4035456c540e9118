"""Helpers shared by the cimxdsl dialects."""

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute


def is_accumulator_type(operand_type: Attribute, result_type: Attribute) -> bool:
    """Whether products of `operand_type` values may be kept in `result_type`.

    The same type always works; integers may also accumulate in a wider integer (`i8 -> i32`)."""
    if operand_type == result_type:
        return True
    return (
        isinstance(operand_type, IntegerType)
        and isinstance(result_type, IntegerType)
        and result_type.width.data >= operand_type.width.data
    )
