"""The pim instruction ops: pimsim-nn JSON in and out, field checks, and the core-level builders."""

import json
import re

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType, i8, i32
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from cimxdsl.dialects import pim

# Opcode numbers of pimsim-nn (its `src/isa/Instruction.h`); 21 is Raptor's unsupported vsoftmax.
PIMSIM_OPCODES = (
    "nop sldi sld sadd ssub smul saddi smuli setbw mvmul vvadd vvsub vvmul vvdmul vvmax vvsll vvsra vavg "
    "vrelu vtanh vsigm vsoftmax vmv vrsu vrsl ld st lldi lmv send recv wait sync"
).split()


def test_every_pimsim_instruction_has_an_op_with_its_opcode():
    expected = {name: code for code, name in enumerate(PIMSIM_OPCODES) if name != "vsoftmax"}
    assert {name: cls.OPCODE for name, cls in pim.INSTRUCTION_OPS.items()} == expected
    for cls in pim.INSTRUCTION_CLASSES:
        assert cls.name == f"pim.{cls.mnemonic()}"
        assert set(cls.get_irdl_definition().properties) == set(cls.FIELDS)


def test_ld_json_matches_pimsim_nn_format():
    obj = {"op": "ld", "rd": 0, "rs1": 2, "size": 128, "offset": {"offset_select": 0, "offset_value": 0}}
    op = pim.InstructionOp.from_json(obj)
    assert isinstance(op, pim.LdOp)
    assert op.fields() == {"rd": 0, "rs1": 2, "size": 128, "offset_select": 0, "offset_value": 0}
    assert op.to_json() == obj
    assert list(op.to_json()) == ["op", "rd", "rs1", "size", "offset"]


def test_mvmul_and_sld_json():
    op = pim.MvmulOp(rd=2, rs1=0, mbiw=8, group=1)
    assert op.to_json() == {"op": "mvmul", "rd": 2, "rs1": 0, "mbiw": 8, "relu": 0, "group": 1}
    # sld's offset_value is a flat field, not the nested offset object.
    assert pim.SldOp(rd=1, rs1=2, offset_value=8).to_json() == {"op": "sld", "rd": 1, "rs1": 2, "offset_value": 8}


@pytest.mark.parametrize("cls", pim.INSTRUCTION_CLASSES, ids=lambda cls: cls.mnemonic())
def test_json_round_trip_of_every_instruction(cls: type[pim.InstructionOp]):
    values = {f: (8 if f in ("ibiw", "obiw", "mbiw") else 1 if f == "relu" else 2) for f in cls.FIELDS}
    op = cls(**values)
    op.verify()
    back = pim.InstructionOp.from_json(op.to_json())
    assert type(back) is cls and back.fields() == values
    assert cls.from_json(op.to_json()).fields() == values


def test_from_json_defaults_missing_fields_and_ignores_unknown_keys():
    op = pim.InstructionOp.from_json({"op": "vvadd", "rd": 4, "len": 16, "comment": "partial sum"})
    assert op.fields() == {"rd": 4, "rs1": 0, "rs2": 0, "len": 16, "offset_select": 0, "offset_value": 0}
    assert "comment" not in op.to_json()


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"op": "vsoftmax"}, "unknown instruction op 'vsoftmax'"),
        ({"rd": 1}, "unknown instruction op None"),
        ([1, 2], "an instruction must be a JSON object"),
        ({"op": "sldi", "rd": "r1", "imm": 0}, "'sldi' field 'rd' must be an integer"),
        ({"op": "ld", "offset": 3}, "'ld' offset must be an object"),
        ({"op": "mvmul", "rd": 2, "rs1": 0, "group": 0}, "'pim.mvmul' mbiw must be a weight bit width > 0"),
        ({"op": "setbw", "ibiw": 12, "obiw": 8}, "'pim.setbw' ibiw must be an element width of 8, 16, 32 or 64 bits"),
        ({"op": "st", "rd": 27, "rs1": 0}, "'pim.st' rd must name an even register pair (the global address), got 27"),
        ({"op": "ld", "rs1": 31}, "'pim.ld' rs1 must name an even register pair"),
        ({"op": "sldi", "rd": True, "imm": 0}, "'sldi' field 'rd' must be an integer, got True"),
        ({"op": "recv", "rd": 40}, "'pim.recv' rd must be a register index 0..31, got 40"),
        ({"op": "sldi", "imm": 2**32}, "'pim.sldi' imm must fit in a signed 32-bit integer"),
    ],
)
def test_from_json_rejects_bad_instructions(obj, message: str):
    with pytest.raises(pim.InstructionJsonError, match=re.escape(message)):
        pim.InstructionOp.from_json(obj)
    # A stream of JSON objects applies the same rules and names the first bad object.
    good = [{"op": "setbw", "ibiw": 32, "obiw": 32}, {"op": "vvadd", "rd": 4, "len": 16}]
    with pytest.raises(pim.InstructionJsonError, match=r"^instruction 2: " + re.escape(message)):
        pim.InstructionStream.from_json([*good, obj, *good])


def test_a_stream_from_json_packs_what_ops_from_json_hold():
    objects = [{"op": cls.mnemonic(), **{f: 2 for f in cls.FIELDS}} for cls in pim.INSTRUCTION_CLASSES]
    for obj in objects:
        obj.update({k: 8 for k in ("ibiw", "obiw") if k in obj} | ({"relu": 1} if "relu" in obj else {}))
    objects.append({"op": "ld", "rs1": 4, "size": 12, "note": "unknown keys are ignored"})
    stream = pim.InstructionStream.from_json(objects)
    assert [str(op) for op in stream] == [str(pim.InstructionOp.from_json(obj)) for obj in objects]
    assert len(pim.InstructionStream.from_json([])) == 0


def test_from_json_on_a_subclass_checks_the_op():
    with pytest.raises(pim.InstructionJsonError, match="expected a 'st' instruction, got 'ld'"):
        pim.StOp.from_json({"op": "ld"})


def test_constructor_rejects_unknown_fields():
    with pytest.raises(TypeError, match=r"'pim\.sldi' has no field rs1"):
        pim.SldiOp(rd=0, rs1=1)


def test_verifier_checks_field_ranges():
    with pytest.raises(VerifyException, match=r"offset_select must be 0\.\.7"):
        pim.VreluOp(rd=0, rs1=1, len=4, offset_select=9).verify()


@pytest.mark.parametrize(
    ("ibiw", "mbiw", "valid"), [(8, 8, True), (64, 9, True), (12, 8, False), (0, 8, False), (8, 0, False)]
)
def test_element_widths_are_whole_bytes_and_weight_widths_any_positive(ibiw: int, mbiw: int, valid: bool):
    """pimsim-nn sizes memory accesses as `ibiw / 8` bytes, while it only divides by `mbiw`."""
    ops = [pim.SetbwOp(ibiw=ibiw, obiw=32), pim.MvmulOp(rd=0, rs1=1, mbiw=mbiw)]
    if valid:
        for op in ops:
            op.verify()
    else:
        with pytest.raises(VerifyException, match=r"bit width|element width"):
            for op in ops:
                op.verify()


def test_core_with_load_apply_filters_and_store_verifies():
    weight = create_ssa_value(TensorType(i8, (3, 2)))
    global_in = create_ssa_value(MemRefType(i8, (4, 4, 3)))
    global_out = create_ssa_value(MemRefType(i32, (4, 4, 2)))
    body = Block()
    local_in, local_out, accumulator = (
        create_ssa_value(MemRefType(i8, (4, 4, 3))),
        create_ssa_value(MemRefType(i32, (4, 4, 2))),
        create_ssa_value(MemRefType(i32, (2,))),
    )
    for value in (local_in, local_out, accumulator):
        body.add_op(value.owner)
    load = pim.LoadOp(global_in, local_in, 0)
    assert load.size.value.data == 48
    body.add_ops(
        [
            load,
            pim.ApplyFiltersOp(load.result, local_out, accumulator, [0]),
            pim.StoreOp(local_out, global_out, 0),
            pim.SetbwOp(ibiw=8, obiw=32),
            pim.HaltOp(),
        ]
    )
    core = pim.CoreOp(5, [weight], Region(body))
    ModuleOp([weight.owner, global_in.owner, global_out.owner, core]).verify()
    assert core.get_core_id() == 5


@pytest.mark.parametrize("cls", pim.INSTRUCTION_CLASSES, ids=lambda cls: cls.mnemonic())
def test_build_makes_the_op_the_constructor_makes(cls: type[pim.InstructionOp]):
    values = {f: 2 for f in cls.FIELDS[:2]}
    built, constructed = cls.build(**values), cls(**values)
    assert built.is_structurally_equivalent(constructed) and str(built) == str(constructed)
    assert built.__dict__.keys() == constructed.__dict__.keys()
    built.attributes["note"] = pim.IntegerAttr(1, pim.i32)
    assert "note" not in cls.build(**values).attributes


def every_instruction() -> list[pim.InstructionOp]:
    """One op of each class, its fields numbered 1, 2, ... (negative immediates on odd opcodes)."""
    sign = {cls: -1 if cls.OPCODE % 2 else 1 for cls in pim.INSTRUCTION_CLASSES}
    return [
        cls(**{f: (sign[cls] if f == "imm" else 1) * (i + 1) for i, f in enumerate(cls.FIELDS)})
        for cls in pim.INSTRUCTION_CLASSES
    ]


def test_a_packed_stream_gives_back_its_ops_and_their_json():
    ops = every_instruction()
    stream = pim.InstructionStream.from_ops(ops)
    assert len(stream) == len(ops) and stream.opcodes.tolist() == [op.OPCODE for op in ops]
    assert [str(op) for op in stream] == [str(op) for op in ops]
    assert str(stream[-1]) == str(ops[-1]) and [str(op) for op in stream[2:4]] == [str(op) for op in ops[2:4]]
    expected = ",\n".join(json.dumps(op.to_json(), separators=(", ", ": ")) for op in ops)
    assert stream.json_lines() == expected
    assert stream.counts() == {op.mnemonic(): 1 for op in ops}
    sizes = [op.field("size") if "size" in op.FIELDS else 0 for op in ops]
    assert stream.column("size").tolist() == sizes


def test_a_stream_from_records():
    records = [pim.SldiOp.OPCODE, 3, 100, 0, 0, 0, 0, pim.SendOp.OPCODE, 3, 3, 1, 64, 0, 0]
    stream = pim.InstructionStream.from_records(np.array(records, np.int32))
    assert [str(op) for op in stream] == [
        "pim.sldi rd = 3, imm = 100",
        "pim.send rd = 3, rs1 = 3, core = 1, size = 64, offset_select = 0, offset_value = 0",
    ]
