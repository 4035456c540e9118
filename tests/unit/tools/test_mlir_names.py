"""`cim-opt --mlir-names`: values and blocks named as MLIR's printer names them. The expected text
is written from MLIR's naming rules (AsmPrinter's SSANameState), not taken from this printer."""

from io import StringIO

import pytest

from cimxdsl.printing import print_with_mlir_names
from cimxdsl.tools.cim_opt import main
from tests.unit.helpers import parse


def printed(text: str, **options) -> str:
    stream = StringIO()
    print_with_mlir_names(parse(text), stream, **options)
    return stream.getvalue()


def test_arguments_results_and_constants_are_renumbered():
    text = printed("""
    func.func @f(%x: i32, %flag: i1) -> i32 {
      %k = arith.constant 7 : i32
      %m = arith.constant -1 : i32
      %n = arith.constant 3 : index
      %t = arith.constant true
      %z = arith.constant 0.5 : f32
      %k2 = arith.constant 7 : i32
      %s = arith.addi %x, %k : i32
      %u = arith.addi %s, %k2 : i32
      func.return %u : i32
    }""")
    assert "func.func @f(%arg0: i32, %arg1: i1) -> i32 {" in text
    for line in [
        "%c7_i32 = arith.constant 7 : i32",
        "%c-1_i32 = arith.constant -1 : i32",
        "%c3 = arith.constant 3 : index",
        "%true = arith.constant true",
        "%cst = arith.constant 5.000000e-01 : f32",
        "%c7_i32_0 = arith.constant 7 : i32",
        "%0 = arith.addi %arg0, %c7_i32 : i32",
        "%1 = arith.addi %0, %c7_i32_0 : i32",
        "func.return %1 : i32",
    ]:
        assert line in text


def test_nested_regions_continue_the_numbering_and_siblings_restart_it():
    text = printed("""
    func.func @g(%n: index, %init: i32) -> i32 {
      %lo = arith.constant 0 : index
      %step = arith.constant 1 : index
      %r = scf.for %i = %lo to %n step %step iter_args(%acc = %init) -> (i32) {
        %d = arith.addi %acc, %acc : i32
        scf.yield %d : i32
      }
      %q = scf.for %j = %lo to %n step %step iter_args(%acc2 = %r) -> (i32) {
        %e = arith.muli %acc2, %acc2 : i32
        scf.yield %e : i32
      }
      func.return %q : i32
    }""")
    assert "%0 = scf.for %arg2 = %c0 to %arg0 step %c1 iter_args(%arg3 = %arg1) -> (i32) {" in text
    assert "%2 = arith.addi %arg3, %arg3 : i32" in text
    assert "%1 = scf.for %arg2 = %c0 to %arg0 step %c1 iter_args(%arg3 = %0) -> (i32) {" in text
    assert "%2 = arith.muli %arg3, %arg3 : i32" in text


def test_results_of_one_op_are_a_group():
    text = printed("""
    func.func @h(%a: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
      %r:2 = cinm.compute -> tensor<2xi32>, tensor<2xi32> {
        %s = cinm.op.add %a, %a : tensor<2xi32>
        cinm.yield %s, %a : tensor<2xi32>, tensor<2xi32>
      }
      func.return %r#1, %r#0 : tensor<2xi32>, tensor<2xi32>
    }""")
    assert "%0:2 = cinm.compute -> tensor<2xi32>, tensor<2xi32> {" in text
    assert "%1 = cinm.op.add %arg0, %arg0 : tensor<2xi32>" in text
    assert "func.return %0#1, %0#0 : tensor<2xi32>, tensor<2xi32>" in text


def test_op_names_conflicts_and_generic_form():
    source = """
    func.func @k(%m: memref<4xf32>) {
      %d = cim.acquire_device -> !cim.deviceId
      %x = cim.acquire_crossbar %d : !cim.deviceId -> !cim.crossbarId
      %y = cim.acquire_crossbar %d : !cim.deviceId -> !cim.crossbarId
      %b = memref.alloc() : memref<4xf32>
      %z = arith.constant 0 : i32
      func.return
    }"""
    custom = printed(source)
    for line in [
        "%cim_dev = cim.acquire_device",
        "%cim_cbr = cim.acquire_crossbar %cim_dev",
        "%cim_cbr_0 = cim.acquire_crossbar %cim_dev",
        "%alloc = memref.alloc() : memref<4xf32>",
        "%c0_i32 = arith.constant 0 : i32",
    ]:
        assert line in custom
    generic = printed(source, print_generic_format=True)
    assert '%0 = "cim.acquire_device"()' in generic
    assert '%4 = "arith.constant"()' in generic


def test_linalg_body_arguments_are_in_and_out():
    text = printed("""
    #map = affine_map<(d0) -> (d0)>
    func.func @l(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) {
      ^bb0(%x: f32, %y: f32):
        %s = arith.addf %x, %y : f32
        linalg.yield %s : f32
      } -> tensor<4xf32>
      func.return %r : tensor<4xf32>
    }""")
    assert "^bb0(%in: f32, %out: f32):" in text
    assert "%1 = arith.addf %in, %out : f32" in text


@pytest.mark.parametrize("flag", [[], ["--mlir-names"]])
def test_cim_opt_flag(tmp_path, capsys, flag):
    path = tmp_path / "f.mlir"
    path.write_text("func.func @f(%x: i32) -> i32 {\n  %k = arith.constant 2 : i32\n  func.return %k : i32\n}\n")
    main([str(path), *flag])
    out = capsys.readouterr().out
    assert ("%c2_i32 = arith.constant 2" in out) == bool(flag)
    assert ("%k = arith.constant 2" in out) != bool(flag)
