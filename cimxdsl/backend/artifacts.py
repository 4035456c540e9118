"""The artifact directory of the `pim` target, in pimsim-nn's directory format.

```
config.json           {"core_cnt": N, "array_group_map": {"core0": [1, 4, ...], ...}}   (read by pimsim-nn:
                      each array group's crossbars, side by side)
core_<id>.json        the core's instruction stream: a JSON array of pimsim-nn instruction objects
crossbars_<id>.json   what the core's crossbars hold (for functional simulation):
                      {"core": id, "array_groups": [{"group": g, "crossbars": n, "rows": R, "cols": C,
                       "origin": "...", "weights": [[...], ...]}, ...]}; a group whose layer
                       has its own precision also gives its "weight_bits" and "input_bits"
memory.json           the global memory: {"element_bytes": 4, "dtype": "int32", "size": bytes,
                       "buffers": [{"name", "kind": input|constant|output, "offset" (bytes), "bytes",
                                    "shape", "input" + "input_elements" | "values"}],
                       "inputs": [{"index", "shape"}],
                       "outputs": [{"index", "shape", "global_elements": [element address per element]}]}
```

Instructions are the `pim` dialect's instruction ops, written with `to_json` and read back with
`InstructionOp.from_json` (which applies the ISA's field rules); the reader adds only the rules of
the directory (core count, array groups, peers, `setbw` first). Addresses in instructions are
bytes; `input_elements[i]` is the row-major element of input `input`
stored in element `i` of the buffer; `global_elements[e]` is the global element (byte address /
element bytes) holding element `e` of the output, row-major. No extra file starts with `core_`
(pimsim-nn rejects those). `read_artifacts` checks everything and raises `ArtifactError` with one
line naming the file (and the instruction index).
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cimxdsl.dialects.pim import (
    BY_OPCODE,
    InstructionJsonError,
    InstructionOp,
    InstructionStream,
    MvmulOp,
    RecvOp,
    SendOp,
    SetbwOp,
    SyncOp,
)
from cimxdsl.dialects.utils import MAX_PRECISION, PRECISION
from cimxdsl.interpreters.pim_machine import ArrayGroup, CoreProgram, core_file

CONFIG = "config.json"
MEMORY = "memory.json"
CORE_FILE = re.compile(r"^core_(\d+)\.(json|pim)$")


def crossbar_file(core: int) -> str:
    return f"crossbars_{core}.json"


class ArtifactError(ValueError):
    """A malformed artifact directory; the message is one line naming the file."""


# ----------------------------------------------------------------------------------------------
# The in-memory form (with `CoreProgram` and `ArrayGroup` of the instruction-set machine)
# ----------------------------------------------------------------------------------------------


@dataclass
class Buffer:
    name: str
    kind: str
    offset: int
    shape: tuple[int, ...]
    input: int | None = None
    input_elements: np.ndarray | None = None
    values: np.ndarray | None = None

    def elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Tensor:
    index: int
    shape: tuple[int, ...]
    global_elements: np.ndarray | None = None


@dataclass
class MemoryLayout:
    element_bytes: int
    size: int
    buffers: list[Buffer] = field(default_factory=list)
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(f"<i{self.element_bytes}")


@dataclass
class Artifacts:
    cores: list[CoreProgram]
    memory: MemoryLayout

    def instruction_counts(self) -> dict[str, int]:
        counts = Counter[str]()
        for core in self.cores:
            counts += InstructionStream.from_ops(core.instructions).counts()
        return dict(sorted(counts.items()))


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------


def write_artifacts(directory: str | Path, artifacts: Artifacts) -> Path:
    """Write the directory (created if needed; stale core/crossbar files are removed)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():
        if CORE_FILE.match(stale.name) or re.match(r"^crossbars_\d+\.json$", stale.name):
            stale.unlink()
    config = {
        "core_cnt": len(artifacts.cores),
        "array_group_map": {f"core{c.core_id}": [g.crossbars for g in c.groups] for c in artifacts.cores},
    }
    (out / CONFIG).write_text(json.dumps(config, indent=1) + "\n")
    matrices: dict[tuple, str] = {}  # (the replicas of a layer hold the same weights)
    for core in artifacts.cores:
        (out / core_file(core.core_id)).write_text(instruction_lines(core.instructions))
        groups = ", ".join(group_json(g, group, matrices) for g, group in enumerate(core.groups))
        text = f'{{"core": {core.core_id}, "array_groups": [{groups}]}}\n'
        (out / crossbar_file(core.core_id)).write_text(text)
    (out / MEMORY).write_text(json.dumps(memory_json(artifacts.memory), separators=(", ", ": ")) + "\n")
    return out


def group_json(index: int, group: ArrayGroup, matrices: dict[tuple, str] | None = None) -> str:
    """An array group's object in a crossbar file, its weights last (`matrices`: the weights'
    texts written so far, by contents)."""
    weights = group.weights
    rows, cols = weights.shape
    head = {"group": index, "crossbars": group.crossbars, "rows": int(rows), "cols": int(cols), "origin": group.origin}
    if group.precision is not None:
        head |= dict(zip(PRECISION, group.precision, strict=True))
    matrices = {} if matrices is None else matrices
    key = (weights.dtype.str, weights.shape, weights.tobytes())
    text = matrices.get(key)
    if text is None:
        text = matrices[key] = matrix_json(weights)
    return json.dumps(head, separators=(", ", ": "))[:-1] + f', "weights": {text}}}'


def matrix_json(matrix: np.ndarray) -> str:
    """`json.dumps(matrix.tolist())` (", " separators) of an integer matrix, from a table of the
    decimal strings of its value range, each with the separator after it (", ", or "], [" after a
    row's last): gathered as fixed-width bytes, their nul padding then dropped, several times faster
    on crossbar-sized weights."""
    low, high = (int(matrix.min()), int(matrix.max())) if matrix.size else (0, 0)
    if matrix.ndim != 2 or matrix.size == 0 or matrix.dtype.kind not in "iu" or high - low > matrix.size:
        return json.dumps(matrix.tolist(), separators=(", ", ": "))
    words = [str(v) for v in range(low, high + 1)]
    table = np.array([w + ", " for w in words] + [w + "], [" for w in words], dtype=bytes)
    index = matrix.astype(np.intp) - low
    index[:, -1] += len(words)
    return "[[" + table[index].tobytes().translate(None, b"\0").decode()[:-3] + "]"


def instruction_lines(instructions: Sequence[InstructionOp]) -> str:
    """A JSON list of the instructions' objects (`to_json`, ", " and ": " separators), one per
    line, formatted from the packed stream (one template per op)."""
    if not instructions:
        return "[]\n"
    return "[\n" + InstructionStream.from_ops(instructions).json_lines() + "\n]\n"


def memory_json(memory: MemoryLayout) -> dict[str, Any]:
    buffers = []
    for b in memory.buffers:
        entry: dict[str, Any] = {
            "name": b.name,
            "kind": b.kind,
            "offset": b.offset,
            "bytes": b.elements() * memory.element_bytes,
            "shape": list(b.shape),
        }
        if b.input is not None and b.input_elements is not None:
            entry["input"] = b.input
            entry["input_elements"] = b.input_elements.tolist()
        if b.values is not None:
            entry["values"] = b.values.reshape(-1).tolist()
        buffers.append(entry)
    return {
        "element_bytes": memory.element_bytes,
        "dtype": str(memory.dtype.name),
        "size": memory.size,
        "buffers": buffers,
        "inputs": [{"index": t.index, "shape": list(t.shape)} for t in memory.inputs],
        "outputs": [
            {"index": t.index, "shape": list(t.shape), "global_elements": np.asarray(t.global_elements).tolist()}
            for t in memory.outputs
        ],
    }


# ----------------------------------------------------------------------------------------------
# Reading and checking
# ----------------------------------------------------------------------------------------------


def load_json(path: Path) -> Any:
    if not path.is_file():
        raise ArtifactError(f"{path.name}: missing")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ArtifactError(f"{path.name}: not valid JSON ({e})") from None


WEIGHTS_KEY = '"weights": '
MATRIX_BYTES = np.isin(np.arange(256), list(b"0123456789-, []"))
DIGITS = np.isin(np.arange(256), list(b"0123456789"))


def integer_matrix(text: str) -> np.ndarray | None:
    """The matrix of a JSON array of equally long arrays of integers (`[[1, -2], [3, 4]]`) parsed
    in NumPy, several times faster than `json` on crossbar-sized weights; None for anything else."""
    raw = np.frombuffer(text.encode(), np.uint8)
    if not text.startswith("[[") or not MATRIX_BYTES[raw].all():
        return None
    opens, closes = np.flatnonzero(raw == ord("["))[1:], np.flatnonzero(raw == ord("]"))[:-1]
    if len(opens) != len(closes) or not (np.all(opens < closes) and np.all(closes[:-1] < opens[1:])):
        return None
    commas = np.flatnonzero(raw == ord(","))
    per_row = np.searchsorted(commas, closes) - np.searchsorted(commas, opens)
    if per_row.min() != per_row.max():
        return None
    digits = DIGITS[raw]
    numbers = int(np.count_nonzero(digits[1:] & ~digits[:-1]))  # (the text starts with "[")
    if numbers != len(opens) * (per_row[0] + 1):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(text.replace("[", " ").replace("]", " "), dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            return None
    limits = np.iinfo(np.int64)
    if values.size != numbers or values.max() == limits.max or values.min() == limits.min:
        return None  # (NumPy saturates what int64 cannot hold; json reports it)
    return values.reshape(len(opens), -1)


def load_crossbar_json(path: Path) -> tuple[Any, dict[str, np.ndarray]]:
    """A crossbar file's JSON with each integer weight matrix parsed by `integer_matrix` and
    replaced by a `"@<k>"` key of the returned matrices (`json` reads whatever it cannot parse)."""
    if not path.is_file():
        return load_json(path), {}
    text = path.read_text()
    parts, matrices, position = [], {}, 0
    while (start := text.find(WEIGHTS_KEY, position)) >= 0:
        begin = start + len(WEIGHTS_KEY)
        end = text.find("]]", begin) + 2
        matrix = integer_matrix(text[begin:end]) if end > begin else None
        if matrix is not None:
            key = f"@{len(matrices)}"
            matrices[key] = matrix
            parts += (text[position:begin], f'"{key}"')
            position = end
        else:
            parts.append(text[position:begin])
            position = begin
    parts.append(text[position:])
    try:
        return json.loads("".join(parts)), matrices
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{path.name}: not valid JSON ({e})") from None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_core(directory: Path, core_id: int, crossbars: list[int], core_count: int) -> CoreProgram:
    """The core's checked instruction stream: the ISA's rules are the dialect's
    (`InstructionStream.from_json`); the directory adds that `setbw` comes first, an `mvmul`'s
    group exists and a transfer's peer core exists and differs from this one (`crossbars`: each
    array group's, from the configuration)."""
    name = core_file(core_id)
    groups = len(crossbars)
    data = load_json(directory / name)
    if not isinstance(data, list):
        raise ArtifactError(f"{name}: must be a JSON array of instructions")
    try:
        stream = InstructionStream.from_json(data)
    except InstructionJsonError as e:
        raise ArtifactError(f"{name}: {e}") from None
    if len(stream) and stream.opcodes[0] != SetbwOp.OPCODE:
        first = BY_OPCODE[int(stream.opcodes[0])].mnemonic()
        raise ArtifactError(f"{name}: instruction 0 ({first}): the first instruction must be setbw")
    peer = stream.column("core")
    transfer = np.isin(stream.opcodes, [SendOp.OPCODE, RecvOp.OPCODE, SyncOp.OPCODE])
    mvmul = stream.opcodes == MvmulOp.OPCODE
    problems = [
        (transfer & (peer >= core_count), "core {core} does not exist (core_cnt is " + f"{core_count})"),
        (transfer & (peer == core_id) & (stream.opcodes != SyncOp.OPCODE), "a core cannot {op} to itself"),
        (
            mvmul & (stream.column("group") >= groups),
            "group {group} is outside " + f"array_group_map.core{core_id} ({groups} groups)",
        ),
    ]
    if any(mask.any() for mask, _ in problems):
        i = min(int(np.argmax(mask)) for mask, _ in problems if mask.any())
        op = stream[i]
        message = next(text for mask, text in problems if mask[i])
        fields = op.fields()
        raise ArtifactError(f"{name}: instruction {i} ({op.mnemonic()}): " + message.format(op=op.mnemonic(), **fields))
    return CoreProgram(core_id, stream, read_crossbars(directory, core_id, crossbars))


def read_crossbars(directory: Path, core_id: int, crossbars: list[int]) -> list[ArrayGroup]:
    name = crossbar_file(core_id)
    data, matrices = load_crossbar_json(directory / name)
    entries = data.get("array_groups") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise ArtifactError(f"{name}: must be an object with an 'array_groups' list")
    if len(entries) != len(crossbars):
        raise ArtifactError(
            f"{name}: holds {len(entries)} array groups, but array_group_map.core{core_id} has {len(crossbars)}"
        )
    result = []
    for g, entry in enumerate(entries):
        where = f"{name}: array group {g}"
        if not isinstance(entry, Mapping) or entry.get("group", g) != g:
            raise ArtifactError(f"{where}: must be an object with 'group': {g}")
        try:
            value = entry.get("weights")
            weights = matrices[value] if isinstance(value, str) and value in matrices else np.array(value, np.int64)
        except (TypeError, ValueError, OverflowError):
            raise ArtifactError(f"{where}: 'weights' must be a matrix of integers") from None
        if weights.ndim != 2 or weights.size == 0:
            raise ArtifactError(f"{where}: 'weights' must be a non-empty matrix")
        if (entry.get("rows"), entry.get("cols")) not in ((None, None), weights.shape):
            raise ArtifactError(
                f"{where}: 'rows'/'cols' do not match the {weights.shape[0]}x{weights.shape[1]} weights"
            )
        if entry.get("crossbars", crossbars[g]) != crossbars[g]:
            raise ArtifactError(
                f"{where}: 'crossbars' is {entry.get('crossbars')!r}, but array_group_map.core{core_id} gives "
                f"{crossbars[g]}"
            )
        origin = str(entry.get("origin", ""))
        result.append(ArrayGroup(weights, origin, group_precision(entry, where), crossbars[g]))
    return result


def group_precision(entry: Mapping, where: str) -> tuple[int, int] | None:
    """An array group's `weight_bits` and `input_bits` (its layer's own precision), if given."""
    given = [entry.get(name) for name in PRECISION]
    if given == [None, None]:
        return None
    if not all(is_int(bits) and 1 <= bits <= MAX_PRECISION for bits in given):
        raise ArtifactError(f"{where}: 'weight_bits' and 'input_bits' must be integers from 1 to {MAX_PRECISION}")
    return given[0], given[1]


def read_config(directory: Path) -> tuple[int, dict[int, list[int]]]:
    config = load_json(directory / CONFIG)
    if not isinstance(config, Mapping):
        raise ArtifactError(f"{CONFIG}: must be a JSON object")
    count = config.get("core_cnt")
    if not is_int(count) or count < 1:
        raise ArtifactError(f"{CONFIG}: 'core_cnt' must be a positive integer, got {count!r}")
    groups = config.get("array_group_map")
    if not isinstance(groups, Mapping):
        raise ArtifactError(f"{CONFIG}: 'array_group_map' must be an object")
    result = {}
    for core in range(count):
        entry = groups.get(f"core{core}")
        if not isinstance(entry, list) or not all(is_int(n) and n > 0 for n in entry):
            raise ArtifactError(
                f"{CONFIG}: array_group_map.core{core} must be a list of positive crossbar counts, got {entry!r}"
            )
        result[core] = list(entry)
    for key in groups:
        if not re.fullmatch(r"core\d+", str(key)) or int(str(key)[4:]) >= count:
            raise ArtifactError(f"{CONFIG}: array_group_map has '{key}', but core_cnt is {count}")
    for path in directory.iterdir():
        match = CORE_FILE.match(path.name)
        if path.name.startswith("core_") and (match is None or int(match.group(1)) >= count):
            raise ArtifactError(f"{path.name}: not a core file of a {count}-core program (pimsim-nn rejects it)")
        if match is not None and match.group(2) == "pim":
            raise ArtifactError(f"{path.name}: binary instruction files are not supported")
    return count, result


def read_memory(directory: Path) -> MemoryLayout:
    data = load_json(directory / MEMORY)

    def need(obj: Any, key: str, kind: type | tuple, where: str) -> Any:
        value = obj.get(key) if isinstance(obj, Mapping) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ArtifactError(f"{MEMORY}: {where}'{key}' is missing or not a {getattr(kind, '__name__', 'value')}")
        return value

    element_bytes = need(data, "element_bytes", int, "")
    if element_bytes not in (1, 2, 4, 8):
        raise ArtifactError(f"{MEMORY}: 'element_bytes' must be 1, 2, 4 or 8, got {element_bytes}")
    memory = MemoryLayout(element_bytes, need(data, "size", int, ""))
    for i, entry in enumerate(need(data, "buffers", list, "")):
        where = f"buffer {i}: "
        buffer = Buffer(
            str(entry.get("name", i)) if isinstance(entry, Mapping) else str(i),
            need(entry, "kind", str, where),
            need(entry, "offset", int, where),
            tuple(need(entry, "shape", list, where)),
        )
        if buffer.offset < 0 or buffer.offset + buffer.elements() * element_bytes > memory.size:
            raise ArtifactError(f"{MEMORY}: {where}bytes outside the {memory.size}-byte global memory")
        if buffer.kind == "input":
            buffer.input = need(entry, "input", int, where)
            buffer.input_elements = np.array(need(entry, "input_elements", list, where), dtype=np.int64)
            if buffer.input_elements.size != buffer.elements():
                raise ArtifactError(f"{MEMORY}: {where}'input_elements' must list one element per buffer element")
        elif buffer.kind == "constant":
            buffer.values = np.array(need(entry, "values", list, where), dtype=np.int64)
            if buffer.values.size != buffer.elements():
                raise ArtifactError(f"{MEMORY}: {where}'values' must hold one value per buffer element")
        elif buffer.kind != "output":
            raise ArtifactError(f"{MEMORY}: {where}unknown kind {buffer.kind!r}")
        memory.buffers.append(buffer)
    for key, target in (("inputs", memory.inputs), ("outputs", memory.outputs)):
        for i, entry in enumerate(need(data, key, list, "")):
            where = f"{key} {i}: "
            tensor = Tensor(need(entry, "index", int, where), tuple(need(entry, "shape", list, where)))
            if key == "outputs":
                tensor.global_elements = np.array(need(entry, "global_elements", list, where), dtype=np.int64)
                if tensor.global_elements.size != int(np.prod(tensor.shape, dtype=np.int64)):
                    raise ArtifactError(f"{MEMORY}: {where}'global_elements' must list one address per element")
                if tensor.global_elements.size and (
                    tensor.global_elements.min() < 0 or tensor.global_elements.max() * element_bytes >= memory.size
                ):
                    raise ArtifactError(f"{MEMORY}: {where}'global_elements' point outside the global memory")
            target.append(tensor)
    for buffer in memory.buffers:
        if buffer.kind == "input" and not any(t.index == buffer.input for t in memory.inputs):
            raise ArtifactError(f"{MEMORY}: buffer '{buffer.name}' reads input {buffer.input}, which is not listed")
    return memory


def read_artifacts(directory: str | Path) -> Artifacts:
    """Load and check an artifact directory."""
    path = Path(directory)
    if not path.is_dir():
        raise ArtifactError(f"{path}: not a directory")
    count, groups = read_config(path)
    cores = [read_core(path, core, groups[core], count) for core in range(count)]
    return Artifacts(cores, read_memory(path))
