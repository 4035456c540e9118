"""Hand-made artifact directories for the validator tests (written as pimsim-nn JSON)."""

import json
from pathlib import Path

import numpy as np

OFFSET = {"offset_select": 0, "offset_value": 0}
WEIGHTS = [[1, -2], [3, 4], [-5, 6]]
"""The one crossbar of core 0: x (3) · W (3×2)."""


def i(op: str, **fields) -> dict:
    """An instruction object; vector, transfer and memory ops get the zero offset."""
    if op not in ("sldi", "setbw", "mvmul", "nop", "wait", "sync", "sld", "vmv") and "offset" not in fields:
        fields["offset"] = dict(OFFSET)
    return {"op": op, **fields}


def setbw() -> dict:
    return {"op": "setbw", "ibiw": 32, "obiw": 32}


def two_core_program() -> dict[int, list[dict]]:
    """Core 0 loads x (3 words at global 0), multiplies it on its crossbar and sends the 2 results
    to core 1, which adds 5, applies ReLU and stores them at global byte 12."""
    return {
        0: [
            setbw(),
            i("sldi", rd=28, imm=0),
            i("sldi", rd=29, imm=0),
            i("sldi", rd=0, imm=0),
            i("ld", rd=0, rs1=28, size=12),
            i("sldi", rd=1, imm=64),
            i("mvmul", rd=1, rs1=0, mbiw=8, relu=0, group=0),
            i("send", rd=1, rs1=1, core=1, size=8),
        ],
        1: [
            setbw(),
            i("sldi", rd=0, imm=0),
            i("recv", rd=0, core=0, size=8),
            i("sldi", rd=1, imm=16),
            i("lldi", rd=1, imm=5, len=2),
            i("sldi", rd=2, imm=32),
            i("vvadd", rd=2, rs1=0, rs2=1, len=2),
            i("sldi", rd=3, imm=48),
            i("vrelu", rd=3, rs1=2, len=2),
            i("sldi", rd=28, imm=0),
            i("sldi", rd=29, imm=12),
            i("st", rd=28, rs1=3, size=8),
        ],
    }


CONSTANT = 100
"""What core 1 of `three_core_program` sends."""


def three_core_program(delay: int = 10) -> dict[int, list[dict]]:
    """Core 0 computes y = x·W and sends it to core 2 early; core 1 sends [100, 100] to core 2 after
    `delay` nops; core 2 receives from core 1 first, then from core 0, and stores y - [100, 100] at
    global byte 12. Core 0's send waits (blocked) while core 2 stands at its recv from core 1."""
    return {
        0: [*two_core_program()[0][:-1], i("send", rd=1, rs1=1, core=2, size=8)],
        1: [
            setbw(),
            *[i("nop")] * delay,
            i("sldi", rd=0, imm=0),
            i("lldi", rd=0, imm=CONSTANT, len=2),
            i("send", rd=0, rs1=0, core=2, size=8),
        ],
        2: [
            setbw(),
            i("sldi", rd=0, imm=0),
            i("sldi", rd=1, imm=16),
            i("recv", rd=1, core=1, size=8),
            i("recv", rd=0, core=0, size=8),
            i("sldi", rd=2, imm=32),
            i("vvsub", rd=2, rs1=0, rs2=1, len=2),
            i("sldi", rd=28, imm=0),
            i("sldi", rd=29, imm=12),
            i("st", rd=28, rs1=2, size=8),
        ],
    }


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ np.array(WEIGHTS) + 5, 0)


def memory(input_elements: int = 3, output_elements: int = 2) -> dict:
    return {
        "element_bytes": 4,
        "dtype": "int32",
        "size": 4 * (input_elements + output_elements),
        "buffers": [
            {
                "name": "x",
                "kind": "input",
                "offset": 0,
                "bytes": 4 * input_elements,
                "shape": [input_elements],
                "input": 0,
                "input_elements": list(range(input_elements)),
            },
            {
                "name": "y",
                "kind": "output",
                "offset": 4 * input_elements,
                "bytes": 4 * output_elements,
                "shape": [output_elements],
            },
        ],
        "inputs": [{"index": 0, "shape": [input_elements]}],
        "outputs": [
            {
                "index": 0,
                "shape": [output_elements],
                "global_elements": list(range(input_elements, input_elements + output_elements)),
            }
        ],
    }


def write(
    directory: Path, cores: dict[int, list[dict]], groups: dict[int, list] | None = None, mem: dict | None = None
) -> Path:
    """Write config.json, core_<id>.json, crossbars_<id>.json and memory.json."""
    groups = {0: [WEIGHTS]} if groups is None else groups
    directory.mkdir(parents=True, exist_ok=True)
    config = {"core_cnt": len(cores), "array_group_map": {f"core{c}": [1] * len(groups.get(c, [])) for c in cores}}
    (directory / "config.json").write_text(json.dumps(config))
    for core, instructions in cores.items():
        (directory / f"core_{core}.json").write_text(json.dumps(instructions))
        array_groups = [{"group": g, "crossbars": 1, "weights": w} for g, w in enumerate(groups.get(core, []))]
        (directory / f"crossbars_{core}.json").write_text(json.dumps({"core": core, "array_groups": array_groups}))
    (directory / "memory.json").write_text(json.dumps(memory() if mem is None else mem))
    return directory
