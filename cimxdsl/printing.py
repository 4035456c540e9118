"""Printing IR with the value and block names MLIR's printer gives (`cim-opt --mlir-names`).

xDSL prints the names a value got from its source (`%t0`, `%tile`); MLIR forgets them and
renumbers: entry block arguments are `%arg0, %arg1, …` (continuing into nested regions), results
`%0, %1, …` (one number per op; an op of several results prints `%0:2` and is used as `%0#1`),
blocks `^bb0, ^bb1, …` per region, and some ops name their results themselves (MLIR's
`OpAsmOpInterface`: `%c0_i32 = arith.constant 0 : i32`, `%alloc = memref.alloc()`, `%cim_dev`).
A name taken in the same or an enclosing region gets the next number of a counter shared by the
region (`%cim_cbr`, `%cim_cbr_0`, `%cim_cbr_1`). Sibling regions number independently from where
their parent region stopped. In the generic form no op names its results. See MLIR's
`AsmPrinter.cpp` (`SSANameState`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.printer import Printer


def constant_name(op: Operation) -> str:
    """`arith.constant`'s name: `c42_i32`, `c3` for an index, `true`/`false` for an i1, else `cst`."""
    value = op.properties.get("value", op.attributes.get("value"))
    result_type = op.results[0].type
    if not isinstance(value, IntegerAttr):
        return "cst"
    number = value.value.data
    if isinstance(result_type, IntegerType) and result_type.width.data == 1:
        return "true" if number else "false"
    return f"c{number}" if isinstance(result_type, IndexType) else f"c{number}_{result_type}"


RESULT_NAMES: dict[str, str | Callable[[Operation], str]] = {
    "arith.constant": constant_name,
    "cim.acquire_device": "cim_dev",
    "cim.acquire_crossbar": "cim_cbr",
    "memref.alloc": "alloc",
    "memref.alloca": "alloca",
    "memref.cast": "cast",
    "memref.collapse_shape": "collapse_shape",
    "memref.dim": "dim",
    "memref.expand_shape": "expand_shape",
    "memref.reinterpret_cast": "reinterpret_cast",
    "memref.reshape": "reshape",
    "memref.subview": "subview",
    "memref.transpose": "transpose",
    "memref.view": "view",
    "tensor.bitcast": "bitcast",
    "tensor.cast": "cast",
    "tensor.collapse_shape": "collapsed",
    "tensor.concat": "concat",
    "tensor.dim": "dim",
    "tensor.expand_shape": "expanded",
    "tensor.extract": "extracted",
    "tensor.extract_slice": "extracted_slice",
    "tensor.from_elements": "from_elements",
    "tensor.generate": "generated",
    "tensor.insert": "inserted",
    "tensor.insert_slice": "inserted_slice",
    "tensor.pad": "padded",
    "tensor.rank": "rank",
    "tensor.reshape": "reshape",
    "tensor.splat": "splat",
    "linalg.broadcast": "broadcasted",
    "linalg.map": "mapped",
    "linalg.reduce": "reduced",
    "linalg.transpose": "transposed",
}
"""The ops that name their (first) result in MLIR, as its `getAsmResultNames` does."""

BLOCK_ARGUMENT_NAMES: dict[str, tuple[str, str]] = {
    "linalg.generic": ("in", "out"),
    "linalg.map": ("in", "init"),
    "linalg.reduce": ("in", "init"),
}
"""Ops whose body arguments MLIR names: (name of an input's argument, name of an init's)."""

_INVALID_CHARACTER = re.compile(r"[^A-Za-z0-9$._-]")


def sanitized(name: str) -> str:
    """`name` as an MLIR identifier: other characters as `_` (a space) or hex, `_` before a digit."""
    name = _INVALID_CHARACTER.sub(lambda m: "_" if m[0] == " " else f"{ord(m[0]):X}", name)
    return f"_{name}" if name[0].isdigit() else name


@dataclass
class _Scope:
    """The names taken in a region and the regions around it, and the counters where it starts."""

    parent: _Scope | None
    next_value: int
    next_argument: int
    next_conflict: int
    taken: set[str] = field(default_factory=set[str])

    def holds(self, name: str) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.taken:
                return True
            scope = scope.parent
        return False


@dataclass
class MLIRNames:
    """The names MLIR gives the values and blocks under an op, computed before it is printed."""

    generic: bool = False
    values: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    blocks: dict[Block, str] = field(default_factory=dict[Block, str])
    grouped: set[Operation] = field(default_factory=set[Operation])
    """ops of several results (printed `%0:2`, used as `%0#1`)"""

    def number(self, root: Operation) -> None:
        """Name everything nested in `root`, region by region (a region before those inside it)."""
        pending = [(region, _Scope(None, 0, 0, 0)) for region in root.regions]
        while pending:
            region, outer = pending.pop()
            scope = _Scope(outer, outer.next_value, outer.next_argument, outer.next_conflict)
            self.number_region(region, scope)
            pending += [(inner, scope) for block in region.blocks for op in block.ops for inner in op.regions]

    def number_region(self, region: Region, scope: _Scope) -> None:
        owner = region.parent_op()
        if owner is not None and not self.generic and owner.name in BLOCK_ARGUMENT_NAMES and region.blocks:
            input_name, init_name = BLOCK_ARGUMENT_NAMES[owner.name]
            inputs = len(getattr(owner, "inputs", ()))
            for arg in region.blocks.first.args:
                self.name(arg, input_name if arg.index < inputs else init_name, scope)
        for index, block in enumerate(region.blocks):
            self.blocks[block] = f"bb{index}"
            for arg in block.args:
                if arg in self.values:
                    continue
                if block is region.blocks.first:
                    self.name(arg, f"arg{scope.next_argument}", scope)
                    scope.next_argument += 1
                else:
                    self.name(arg, None, scope)
            for op in block.ops:
                self.number_op(op, scope)

    def number_op(self, op: Operation, scope: _Scope) -> None:
        if not op.results:
            return
        hint = None if self.generic else RESULT_NAMES.get(op.name)
        if hint is not None:
            self.name(op.results[0], hint if isinstance(hint, str) else hint(op), scope)
        else:
            self.name(op.results[0], None, scope)
        if len(op.results) > 1:
            self.grouped.add(op)

    def name(self, value: SSAValue, name: str | None, scope: _Scope) -> None:
        """Give `value` `name`, made unique with the scope's conflict counter, or the next number."""
        if name is None:
            self.values[value] = str(scope.next_value)
            scope.next_value += 1
            return
        name = sanitized(name)
        if scope.holds(name):
            while scope.holds(candidate := f"{name}_{scope.next_conflict}"):
                scope.next_conflict += 1
            scope.next_conflict += 1
            name = candidate
        scope.taken.add(name)
        self.values[value] = name

    def reference(self, value: SSAValue) -> str | None:
        """How a use of `value` is printed (`0`, `alloc`, `0#1`), or None for a value not numbered."""
        if isinstance(value, OpResult) and value.op in self.grouped:
            return f"{self.values[value.op.results[0]]}#{value.index}"
        return self.values.get(value)


class MLIRNamesPrinter(Printer):
    """A printer naming values and blocks as MLIR's printer does (see the module docstring)."""

    _mlir_names: MLIRNames | None = None

    def print_op(self, op: Operation) -> None:
        if self._mlir_names is None:
            self._mlir_names = MLIRNames(self.print_generic_format)
            self._mlir_names.number(op)
        super().print_op(op)

    def _print_results(self, op: Operation) -> None:
        if not op.results:
            return
        name = self._mlir_names.values.get(op.results[0]) if self._mlir_names else None
        if name is None or len(op.results) == 1:
            super()._print_results(op)
            return
        self.print_string(f"%{name}:{len(op.results)} = ")

    def print_ssa_value(self, value: SSAValue) -> str:
        name = self._mlir_names.reference(value) if self._mlir_names else None
        if name is None:
            return super().print_ssa_value(value)
        self.print_string(f"%{name}")
        return name

    def print_block_name(self, block: Block) -> str:
        name = self._mlir_names.blocks.get(block) if self._mlir_names else None
        if name is None:
            return super().print_block_name(block)
        self.print_string(f"^{name}")
        return name


def print_with_mlir_names(op: Operation, stream, **options) -> None:
    """Print `op` to `stream` as MLIR's printer names values (options as `Printer`'s)."""
    MLIRNamesPrinter(stream=stream, **options).print_op(op)
