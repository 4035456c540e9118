"""`functions_holding`: the functions a pass works on, those with the op it lowers directly in their body."""

from xdsl.dialects import arith, func

from cimxdsl.transforms.common.functions import functions_holding
from tests.unit.helpers import parse

PROGRAM = """
func.func private @declared(i32) -> i32
func.func @holds() -> i32 {
  %c = arith.constant 1 : i32
  func.return %c : i32
}
func.func @nested_only(%a: i32, %b: i1) -> i32 {
  %r = scf.if %b -> (i32) {
    %c = arith.constant 2 : i32
    scf.yield %c : i32
  } else {
    scf.yield %a : i32
  }
  func.return %r : i32
}
builtin.module {
  func.func @inner() -> i32 {
    %c = arith.constant 3 : i32
    func.return %c : i32
  }
}
"""


def names(functions: list[func.FuncOp]) -> list[str]:
    return [f.sym_name.data for f in functions]


def test_functions_with_the_op_in_their_body_in_walk_order():
    module = parse(PROGRAM)
    assert names(functions_holding(module, arith.ConstantOp)) == ["holds", "inner"]
    assert names(functions_holding(module, func.ReturnOp)) == ["holds", "nested_only", "inner"]
    assert functions_holding(module, arith.AddiOp) == []


def test_the_list_is_taken_before_the_caller_changes_the_functions():
    module = parse(PROGRAM)
    found = functions_holding(module, arith.ConstantOp)
    found[0].detach()
    assert names(found) == ["holds", "inner"]
