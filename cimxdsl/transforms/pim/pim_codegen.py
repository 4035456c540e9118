"""`pim-codegen`: per-core pimsim-nn instruction streams from bufferized `pim.core`s.

Global memory: every buffer a core loads from or stores to gets a byte address (`pim.address` on
the op defining it). Local memory: every buffer of a core gets a byte address, bump-allocated.
Each core starts with `setbw` (element widths of its data) and then, op by op:

* `pim.load`/`pim.store` → `ld`/`st` (global address in the register pair r28:r29);
* values that fit 8 bits (their bounds, `value_bounds`: the integer importer's int8 codes) are
  read by crossbars and moved between cores as 8-bit copies: `setbw 32, 8` and a `vvsra` by zero
  (a shift writes `obiw`-bit results) narrow a value once, where it is made; a `send` of it carries
  a quarter of the bytes and its `recv` fills an 8-bit buffer (the receiver decides from the same
  bounds), row bands of it are joined by 8-bit `lmv`s, and an op that reads it at 32 bits gets it
  widened once (`vvsra` under `setbw 8, 32`, sign-extending). A `pim.apply_filters` on an 8-bit
  input runs its patch gathers and `mvmul`s under `setbw 8, 32` (an `mvmul` then streams 8 input
  bits through the DACs rather than 32, and reads a quarter of the bytes) and adds the partial sums
  under `setbw 32, 32`, all `mvmul`s of an output pixel before its `vvadd`s, each into its own
  accumulator; the rest of the program stays 32-bit;
* `pim.apply_filters` is unwrapped: for every output pixel and every
  kernel position with a crossbar whose input pixel lies inside the image (weight skipping: padding
  is never multiplied), one `mvmul` of that pixel's channels — the first straight into the output
  pixel, the others into the accumulation buffer followed by a `vvadd`; a pixel with no position
  left is zeroed with `lldi`. In im2col form, a crossbar whose rows are one contiguous run of
  image memory reads it in place; the others read the patch gathered into a scratch buffer (`lmv`
  per contiguous run, `lldi` of zeros per run of padding); crossbars meeting only padding are
  skipped;
* spat vector ops → one `vvadd`/`vvsub`/`vvmul`/`vvmax`/`vrelu`/... over the whole buffer (one per
  row when the right operand is broadcast); `arith.shrsi` → `vvsra`; `arith.minsi` → `0 - max(0 - a,
  0 - b)`; splat constants → `lldi`;
* `spat.maxpool` → `lmv` + `vvmax` per output pixel; `spat.global_avgpool` → one `vavg` (stride C)
  per channel; `spat.concat` → `lmv` per contiguous piece;
* channels → `send` on the sender (`rd = rs1` = the address, `core` = the receiver) and `recv` on
  the receiver (8-bit elements when the value fits them, above).

Every address an instruction needs is put in a register with `sldi` unless a register already
holds it (a small LRU cache of r0..r27). All offsets are `{"offset_select": 0, "offset_value": 0}`
(pimsim-nn's `offset_select` decoding tests the value, not the select bits) and `mvmul` has `mbiw`
= the weights' bit width (at least 8; pimsim-nn divides by it), or the `weight_bits` of a crossbar
whose layer has its own precision (its weight constant carries it).

`generate` gives each core's instructions packed (`pim.InstructionStream`, fixed-width records) and
gives every global buffer its byte address (`pim.address`). The pass then replaces the core bodies
by their instruction ops and records each core's local memory (`pim.local_bytes`); the back end
writes the artifact directory from this IR (`write_program`), or from the packed code
(`pim.CoreCode`, `artifacts_of_code`) without the ops being built.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import (
    dense_array,
    identity_cache,
    num_elements,
    precision_of,
    shape_of,
    stored_values,
)
from cimxdsl.interpreters.prepared import cyclic_collector_paused
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.functions import functions_holding
from cimxdsl.transforms.pim.value_bounds import INT8, NARROW_BITS, UNBOUNDED, Bounds, core_value_bounds, within

NARROW_BYTES = NARROW_BITS // 8
_PADDING = [(0,) * (pim.MAX_FIELDS - n) for n in range(pim.MAX_FIELDS + 1)]
ZERO_RUN = 4096
"""Elements narrowed by one `vvsra` (its shift operand, a run of zeros, is allocated once per core)."""
GENERAL_REGISTERS = 28
PAIR = 28
"""r28:r29 hold (high, low) of global addresses."""

_VECTOR_BINARY: dict[type[Operation], type[pim.InstructionOp]] = {
    spat.VAddOp: pim.VvaddOp,
    spat.VSubOp: pim.VvsubOp,
    spat.VMulOp: pim.VvmulOp,
    spat.VMaxOp: pim.VvmaxOp,
    arith.AddiOp: pim.VvaddOp,
    arith.SubiOp: pim.VvsubOp,
    arith.MuliOp: pim.VvmulOp,
    arith.MaxSIOp: pim.VvmaxOp,
    arith.ShRSIOp: pim.VvsraOp,
    arith.ShLIOp: pim.VvsllOp,
}
_VECTOR_UNARY: dict[type[Operation], type[pim.InstructionOp]] = {
    spat.VReluOp: pim.VreluOp,
    spat.VTanhOp: pim.VtanhOp,
    spat.VSigmOp: pim.VsigmOp,
}


def element_bits(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    element = t.element_type
    if not isinstance(element, IntegerType) or element.width.data not in (8, 16, 32, 64):
        raise pass_error("pim-codegen", f"core data must be 8, 16, 32 or 64-bit integers, got {element}")
    return element.width.data


def weight_bits(matrices: list[np.ndarray]) -> int:
    """Bits of the widest signed weight (at least 8)."""
    largest = max((int(np.abs(m).max()) for m in matrices if m.size), default=0)
    return max(8, math.ceil(math.log2(largest + 1)) + 1)


PatchPlan = tuple[list[tuple[int, int, int | None]], list[tuple[int, int, bool]], bool]
"""An im2col read's gathers, crossbar sources and whether it gathers (`CoreCodegen.patch_plan`)."""

Emit = Callable[..., None]
"""`emit(cls, *values)`: append instruction `cls` with its field values in `FIELDS` order (trailing
zero fields may be left out)."""


@dataclass
class Registers:
    """Which register holds which value; `sldi` only when no register holds it yet."""

    emit: Emit
    held: OrderedDict[int, int] = field(default_factory=OrderedDict)  # value -> register (LRU order)
    pair_low: int | None = None

    def load(self, value: int) -> int:
        register = self.held.get(value)
        if register is not None:
            self.held.move_to_end(value)
            return register
        if len(self.held) < GENERAL_REGISTERS:
            register = len(self.held)
        else:
            _, register = self.held.popitem(last=False)
        self.held[value] = register
        self.emit(pim.SldiOp, register, value)
        return register

    def pair(self, address: int) -> int:
        if self.pair_low is None:
            self.emit(pim.SldiOp, PAIR, 0)
        if self.pair_low != address:
            self.emit(pim.SldiOp, PAIR + 1, address)
            self.pair_low = address
        return PAIR


class CoreCodegen:
    """The instruction stream of one bufferized `pim.core`."""

    def __init__(
        self,
        core: pim.CoreOp,
        global_addresses: dict[SSAValue, int],
        peers: dict[SSAValue, tuple[int, int]],
        element_bytes: int,
        bounds: dict[SSAValue, Bounds] | None = None,
    ):
        self.core = core
        self.bounds = bounds or {}
        """The bounds of the core's values (`value_bounds`): which crossbar inputs fit 8 bits."""
        self.widths = (8 * element_bytes, 8 * element_bytes)
        """The `setbw` widths (ibiw, obiw) in force."""
        self.zeros = (0, 0)
        """A run of zero elements (address, length) filled once, the shift of narrowing `vvsra`s."""
        self.global_addresses = global_addresses
        self.peers = peers
        self.code = array("i")
        """The instructions as `pim.RECORD`-word records (`pim.InstructionStream.from_records`)."""
        self.registers = Registers(self.emit)
        self.local: dict[SSAValue, int] = {}
        self.narrow: dict[SSAValue, int] = {}
        """The values held as 8-bit copies (received so, or narrowed once for a crossbar or a
        transfer): their local addresses. `address` widens one held only so when it is read wide."""
        self.top = 0
        self.bytes = element_bytes
        self.bits = 8 * element_bytes
        """The data's width (the `setbw` widths outside 8-bit reads)."""
        self.mbiw: list[int] = []
        """Each array group's `mbiw`."""
        self.plans: dict[tuple, dict[bytes, PatchPlan]] = {}
        """The patch plans of the im2col reads (`patch_plan`) by patch geometry and padding pattern."""

    # --- memory ----------------------------------------------------------------------------------
    def allocate(self, value: SSAValue) -> int:
        self.local[value] = self.top
        self.top += num_elements(shape_of(value)) * self.bytes
        return self.local[value]

    def scratch(self, elements: int, element_bytes: int | None = None) -> int:
        address = self.top
        self.top += elements * (self.bytes if element_bytes is None else element_bytes)
        return address

    def address(self, value: SSAValue) -> int:
        """The local address of `value` at the data width (a held 8-bit copy widened once)."""
        if value not in self.local:
            if value not in self.narrow:
                raise pass_error(
                    "pim-codegen", f"value {value.name_hint or ''} has no local buffer (defined outside the core?)"
                )
            self.local[value] = self.shifted(self.narrow[value], num_elements(shape_of(value)), NARROW_BITS, self.bits)
        return self.local[value]

    def alias(self, result: SSAValue, source: SSAValue, offset: int = 0) -> None:
        """`result` is a view of `source` from its element `offset` on, at each width it is held."""
        if source not in self.local and source not in self.narrow:
            self.address(source)  # (the error)
        if source in self.local:
            self.local[result] = self.local[source] + offset * self.bytes
        if source in self.narrow:
            self.narrow[result] = self.narrow[source] + offset * NARROW_BYTES

    def fits_narrow(self, value: SSAValue) -> bool:
        """Whether `value`'s bounds fit 8 bits where the data is wider: it is then read by
        crossbars and moved between cores as 8-bit elements."""
        return self.bits > NARROW_BITS and within(self.bounds.get(value, UNBOUNDED), INT8)

    def narrowed(self, value: SSAValue) -> int | None:
        """The address of an 8-bit copy of `value` (made once) when it is held so or fits 8 bits."""
        if value not in self.narrow:
            if not self.fits_narrow(value):
                return None
            elements = num_elements(shape_of(value))
            self.narrow[value] = self.shifted(self.address(value), elements, self.bits, NARROW_BITS)
        return self.narrow[value]

    def shifted(self, source: int, elements: int, ibiw: int, obiw: int) -> int:
        """A copy of `elements` elements of `ibiw` bits at `obiw` bits: `vvsra`s by zero under `setbw
        ibiw, obiw` (a shift writes `obiw`-bit results, wrapping or sign-extending), one per
        `ZERO_RUN` elements; the widths are then the data's again."""
        run = min(elements, ZERO_RUN)
        if self.zeros[1] < run:
            self.set_widths(self.bits, self.bits)
            self.zeros = (self.scratch(run), run)
            self.fill(self.zeros[0], 0, run)
        target = self.scratch(elements, obiw // 8)
        self.set_widths(ibiw, obiw)
        for start in range(0, elements, run):
            n = min(run, elements - start)
            self.vector(pim.VvsraOp, target + start * obiw // 8, source + start * ibiw // 8, self.zeros[0], n)
        self.set_widths(self.bits, self.bits)
        return target

    # --- emission (the address operands are local byte addresses, put in registers) ----------------
    def emit(self, cls: type[pim.InstructionOp], *values: int) -> None:
        self.code.extend((cls.OPCODE, *values, *_PADDING[len(values)]))

    def vector(self, cls: type[pim.InstructionOp], rd: int, rs1: int, rs2: int | None, length: int) -> None:
        load = self.registers.load
        a = load(rd)
        b = load(rs1)
        if rs2 is None:
            self.code.extend((cls.OPCODE, a, b, length, *_PADDING[3]))
        else:
            self.code.extend((cls.OPCODE, a, b, load(rs2), length, *_PADDING[4]))

    def fill(self, address: int, value: int, length: int) -> None:
        self.code.extend((pim.LldiOp.OPCODE, self.registers.load(address), value, length, *_PADDING[3]))

    def copy(self, target: int, source: int, length: int, element_bytes: int | None = None) -> None:
        load = self.registers.load
        rd = load(target)
        size = length * (self.bytes if element_bytes is None else element_bytes)
        self.code.extend((pim.LmvOp.OPCODE, rd, load(source), length, size, *_PADDING[4]))

    def set_widths(self, ibiw: int, obiw: int) -> None:
        """`setbw ibiw, obiw` unless those widths are in force."""
        if self.widths != (ibiw, obiw):
            self.emit(pim.SetbwOp, ibiw, obiw)
            self.widths = (ibiw, obiw)

    def narrow_input(self, value: SSAValue) -> tuple[int, int]:
        """The address and element bytes of the crossbar input `value`: its 8-bit copy (`narrowed`)
        when it has one, else the value itself."""
        narrow = self.narrowed(value)
        return (self.address(value), self.bytes) if narrow is None else (narrow, NARROW_BYTES)

    def products(
        self, target: int, sources: list[tuple[int, int]], accumulators: list[int], length: int, narrow: bool
    ) -> None:
        """`target` = the sum of the `mvmul`s of `(input address, group)` `sources`, each after the
        first into an accumulator followed by a `vvadd`; with `narrow` (8-bit inputs) the `mvmul`s
        come first, under `setbw 8, wide`, then the `vvadd`s, under `setbw wide, wide`. No
        sources: `target` is zeroed."""
        if not sources:
            self.set_widths(self.bits, self.bits)
            self.fill(target, 0, length)
            return
        load, extend, mbiw = self.registers.load, self.code.extend, self.mbiw
        mvmul, vvadd = pim.MvmulOp.OPCODE, pim.VvaddOp.OPCODE
        if narrow:
            self.set_widths(NARROW_BITS, self.bits)
            for k, (source, group) in enumerate(sources):
                rd = load(accumulators[k - 1] if k else target)
                extend((mvmul, rd, load(source), mbiw[group], 0, group, 0))
            self.set_widths(self.bits, self.bits)
            for k in range(1, len(sources)):
                rd = load(target)
                extend((vvadd, rd, load(target), load(accumulators[k - 1]), length, 0, 0))
        else:
            for k, (source, group) in enumerate(sources):
                rd = load(accumulators[0] if k else target)
                extend((mvmul, rd, load(source), mbiw[group], 0, group, 0))
                if k:
                    rd = load(target)
                    extend((vvadd, rd, load(target), load(accumulators[0]), length, 0, 0))

    # --- driver ----------------------------------------------------------------------------------
    def run(
        self, weights: list[np.ndarray], precisions: list[tuple[int, int] | None] | None = None
    ) -> pim.InstructionStream:
        """The core's instruction stream (`self.top` is then the local memory it uses); `precisions`:
        each array group's layer's own (weight bits, input bits), if any."""
        widest = weight_bits(weights)
        self.mbiw = [widest if p is None else p[0] for p in (precisions or [None] * len(weights))]
        self.group_rows = [len(m) for m in weights]
        self.emit(pim.SetbwOp, self.bits, self.bits)
        try:
            for op in self.core.body.block.ops:
                if isinstance(op, pim.HaltOp):
                    break
                self.lower(op)
        except OverflowError:
            raise pass_error(
                "pim-codegen", f"core {self.core.get_core_id()}: an address or size does not fit a 32-bit field"
            ) from None
        return pim.InstructionStream.from_records(self.code)

    def lower(self, op: Operation) -> None:
        lowering(type(op))(self, op)

    # --- ops -------------------------------------------------------------------------------------
    def constant(self, op: arith.ConstantOp) -> None:
        attr = op.value
        if not isinstance(attr, DenseIntOrFPElementsAttr):
            raise pass_error("pim-codegen", "only tensor constants can live in a core", op)
        splat, size = splat_fill(attr)
        if splat is None:
            raise pass_error("pim-codegen", "a core can only hold splat constants (others come from global memory)", op)
        address = self.allocate(op.result)
        if size:
            self.fill(address, splat, size)

    def bridge(self, op: Operation) -> None:
        """A `bufferization.to_tensor`/`to_buffer`: a view of its operand (a constant's buffer
        made here when it has none yet)."""
        source = op.operands[0]
        if source not in self.local and source not in self.narrow and isinstance(source.owner, arith.ConstantOp):
            self.constant(source.owner)
        self.alias(op.results[0], source)

    def view(self, op: Operation) -> None:
        self.alias(op.results[0], op.operands[0])

    def unary(self, op: Operation) -> None:
        result = self.allocate(op.results[0])
        cls = _VECTOR_UNARY[type(op)]
        self.vector(cls, result, self.address(op.operands[0]), None, num_elements(shape_of(op.results[0])))

    def extract_rows(self, op: spat.ExtractRowsOp) -> None:
        """A view: rows are contiguous."""
        self.alias(op.result, op.input, op.offset.value.data * num_elements(shape_of(op.input)[1:]))

    def load(self, op: pim.LoadOp) -> None:
        target = self.address(op.dst)
        self.local[op.result] = target
        source = self.global_addresses[op.global_] + op.global_src_offset.value.data * self.bytes
        pair = self.registers.pair(source)
        self.emit(pim.LdOp, self.registers.load(target), pair, op.size.value.data * self.bytes)

    def store(self, op: pim.StoreOp) -> None:
        source = self.address(op.src)
        target = self.global_addresses[op.global_] + op.global_dst_offset.value.data * self.bytes
        rs1 = self.registers.load(source)
        pair = self.registers.pair(target)
        self.emit(pim.StOp, pair, rs1, op.size.value.data * self.bytes)

    def apply_filters(self, op: pim.ApplyFiltersOp) -> None:
        image, in_bytes = self.narrow_input(op.input)
        if op.packing() is not None:
            self.im2col_filters(op, image, in_bytes)
        else:
            self.kernel_filters(op, image, in_bytes)
        self.set_widths(self.bits, self.bits)

    def accumulators(self, op: pim.ApplyFiltersOp, partials: int, narrow: bool) -> list[int]:
        """The accumulators of one crossbar read's partial products: the op's, and with `narrow`
        one more per further partial (its `mvmul`s all come before its `vvadd`s)."""
        length = op.products_shape(shape_of(op.output))[-1]
        extra = max(partials - 2, 0) if narrow else 0
        return [self.address(op.accumulator), *(self.scratch(length) for _ in range(extra))]

    def kernel_filters(self, op: pim.ApplyFiltersOp, image: int, in_bytes: int) -> None:
        in_shape, out_shape = shape_of(op.input), shape_of(op.output)
        if len(in_shape) == 2:
            in_shape, out_shape = (in_shape[0], 1, in_shape[1]), (out_shape[0], 1, out_shape[1])
        out_channels = out_shape[2]
        output, accumulator = self.address(op.output), self.address(op.accumulator)
        sources, groups = filter_sources(op, in_shape, out_shape, image, in_bytes)
        if in_bytes != self.bytes:
            accumulators = self.accumulators(op, len(groups), True)
            for pixel, row in enumerate(sources.tolist()):
                used = [(source, group) for source, group in zip(row, groups) if source >= 0]
                self.products(output + pixel * out_channels * self.bytes, used, accumulators, out_channels, True)
            return
        load, touch, extend = self.registers.load, self.registers.held.move_to_end, self.code.extend
        mvmul, vvadd, mbiw = pim.MvmulOp.OPCODE, pim.VvaddOp.OPCODE, self.mbiw
        pixel_out = out_channels * self.bytes
        for pixel, row in enumerate(sources.tolist()):
            target = output + pixel * pixel_out
            first = True
            for source, group in zip(row, groups):
                if source < 0:
                    continue  # weight skipping: this position only meets padding here
                if first:
                    rd = load(target)
                    extend((mvmul, rd, load(source), mbiw[group], 0, group, 0))
                    first = False
                else:
                    accumulate = load(accumulator)
                    extend((mvmul, accumulate, load(source), mbiw[group], 0, group, 0))
                    rd = load(target)  # target and accumulator stay the newest registers: both hits below
                    touch(target)
                    touch(accumulator)
                    extend((vvadd, rd, rd, accumulate, out_channels, 0, 0))
            if first:
                self.fill(target, 0, out_channels)

    def im2col_filters(self, op: pim.ApplyFiltersOp, image: int, in_bytes: int) -> None:
        packing = op.packing()
        assert packing is not None
        geometry = op.geometry()
        height, width, channels = shape_of(op.input)
        out_h, out_w, out_channels = op.products_shape(shape_of(op.output))  # a "pixel": one read's
        output = self.address(op.output)
        narrow = in_bytes != self.bytes
        chunks, row = [], packing.offset
        for group in op.weight_index_list():
            chunks.append((group, row, row + self.group_rows[group]))
            row += self.group_rows[group]
        rows = (packing.offset, row)
        offsets = [divmod(p, geometry.kernel[1]) for p in packing.positions]
        patch = self.scratch(len(packing.positions) * channels, in_bytes)
        accumulators = self.accumulators(op, len(chunks), narrow)
        # a pixel's patch is its window's image elements from the window's corner on: which kernel
        # positions meet padding decides its runs and sources, the corner shifts their addresses
        (sh, sw), (pt, pl, _, _) = geometry.strides, geometry.pads
        corner_y, corner_x = np.meshgrid(np.arange(out_h) * sh - pt, np.arange(out_w) * sw - pl, indexing="ij")
        ky, kx = (np.array([o[i] for o in offsets], np.int64) for i in (0, 1))
        iy = corner_y.reshape(-1, 1) + ky * geometry.dilations[0]
        ix = corner_x.reshape(-1, 1) + kx * geometry.dilations[1]
        inside = (iy >= 0) & (iy < height) & (ix >= 0) & (ix < width)
        shifts = ((corner_y * width + corner_x) * channels).reshape(-1).tolist()
        keys = np.packbits(inside, axis=1)
        # which positions meet padding decides a pixel's plan, shifted by its corner: one per pattern
        plans = self.plans.setdefault(
            (height, width, channels, rows, tuple(chunks), tuple(offsets), geometry.dilations), {}
        )
        load, extend, lmv, lldi = self.registers.load, self.code.extend, pim.LmvOp.OPCODE, pim.LldiOp.OPCODE
        for pixel, shift in enumerate(shifts):
            key = keys[pixel].tobytes()
            plan = plans.get(key)
            if plan is None:
                pixels = [geometry.input_pixel(pixel // out_w, pixel % out_w, y, x) for y, x in offsets]
                plan = plans[key] = self.patch_plan(patch_runs(pixels, (height, width), channels, rows), chunks, shift)
            gathers, used, needed = plan
            if needed and narrow:
                self.set_widths(NARROW_BITS, self.bits)
            for start, length, element in gathers:
                if element is None:
                    extend((lldi, load(patch + start * in_bytes), 0, length, 0, 0, 0))
                else:
                    rd = load(patch + start * in_bytes)
                    extend((lmv, rd, load(image + (element + shift) * in_bytes), length, length * in_bytes, 0, 0))
            sources = [
                (patch + at * in_bytes if gathered else image + (at + shift) * in_bytes, group)
                for at, group, gathered in used
            ]
            self.products(output + pixel * out_channels * self.bytes, sources, accumulators, out_channels, narrow)

    @staticmethod
    def patch_plan(
        runs: list[tuple[int, int, int | None]], chunks: list[tuple[int, int, int]], shift: int
    ) -> PatchPlan:
        """What one pixel's patch takes, its image elements counted from its window's corner
        (`shift` elements into the image): the runs gathered into the patch buffer (first patch
        row, length, first element or None for padding), the crossbars read (patch row or element,
        group, whether gathered; a crossbar meeting only padding is skipped) and whether any run
        is gathered."""
        gathered, used = [], []
        for group, start, end in chunks:
            covering = [r for r in runs if r[0] < end and start < r[1]]
            if len(covering) == 1 and covering[0][2] is not None:  # one run of image memory holds them
                run_start, _, element = covering[0]
                used.append((element + start - run_start - shift, group, False))
            elif any(element is not None for _, _, element in covering):
                gathered.append((start, end))
                used.append((start, group, True))
        gathers = [
            (start, end - start, None if element is None else element - shift)
            for start, end, element in runs
            if any(start < e and b < end for b, e in gathered)
        ]
        return gathers, used, bool(gathered)

    def binary(self, op: Operation) -> None:
        cls = _VECTOR_BINARY[type(op)]
        lhs, rhs = op.operands[0], op.operands[1]
        result = self.allocate(op.results[0])
        total, piece = num_elements(shape_of(lhs)), num_elements(shape_of(rhs))
        a, b = self.address(lhs), self.address(rhs)
        if piece == total:
            self.vector(cls, result, a, b, total)
            return
        for start in range(0, total, piece):  # rhs broadcast over the leading dimensions
            self.vector(cls, result + start * self.bytes, a + start * self.bytes, b, piece)

    def minimum(self, op: arith.MinSIOp) -> None:
        """`min(a, b) = 0 - max(0 - a, 0 - b)` (the ISA has no vector minimum)."""
        length = num_elements(shape_of(op.results[0]))
        zero, na, nb = (self.scratch(length) for _ in range(3))
        self.fill(zero, 0, length)
        self.vector(pim.VvsubOp, na, zero, self.address(op.lhs), length)
        self.vector(pim.VvsubOp, nb, zero, self.address(op.rhs), length)
        self.vector(pim.VvmaxOp, na, na, nb, length)
        self.vector(pim.VvsubOp, self.allocate(op.result), zero, na, length)

    def max_pool(self, op: spat.MaxPoolOp) -> None:
        geometry = op.geometry()
        height, width, channels = shape_of(op.input)
        out_h, out_w, _ = shape_of(op.result)
        image, output = self.address(op.input), self.allocate(op.result)
        pixel = channels * self.bytes
        for oy in range(out_h):
            for ox in range(out_w):
                target = output + (oy * out_w + ox) * pixel
                first = True
                for _, ky, kx in geometry.kernel_positions():
                    iy, ix = geometry.input_pixel(oy, ox, ky, kx)
                    if not (0 <= iy < height and 0 <= ix < width):
                        continue
                    source = image + (iy * width + ix) * pixel
                    if first:
                        self.copy(target, source, channels)
                        first = False
                    else:
                        self.vector(pim.VvmaxOp, target, target, source, channels)
                if first:
                    raise pass_error(
                        "pim-codegen", f"the pooling window of output pixel ({oy}, {ox}) holds only padding", op
                    )

    def extract_columns(self, op: spat.ExtractColumnsOp) -> None:
        """A view of one row's columns (contiguous), else a copy of each row's."""
        rows, width, channels = shape_of(op.input)
        columns = shape_of(op.result)[1]
        offset = op.offset.value.data * channels
        if rows == 1:
            self.alias(op.result, op.input, offset)
            return
        source, result = self.address(op.input), self.allocate(op.result)
        for row in range(rows):
            self.copy(
                result + row * columns * channels * self.bytes,
                source + (row * width * channels + offset) * self.bytes,
                columns * channels,
            )

    def global_avg_pool(self, op: spat.GlobalAvgPoolOp) -> None:
        height, width, channels = shape_of(op.input)
        image, output = self.address(op.input), self.allocate(op.result)
        for c in range(channels):  # rs2 holds the stride: the channels of a pixel
            self.vector(pim.VavgOp, output + c * self.bytes, image + c * self.bytes, channels, height * width)

    def concat(self, op: spat.ConcatOp) -> None:
        """`lmv`s of the pieces; at 8 bits (under `setbw 8, wide`) when a piece is held only so (a
        received band) and every piece is held so or fits 8 bits."""
        inputs = op.inputs
        narrow = any(v in self.narrow and v not in self.local for v in inputs) and all(
            v in self.narrow or self.fits_narrow(v) for v in inputs
        )
        width = NARROW_BYTES if narrow else self.bytes
        axis = op.axis.value.data
        out_shape = shape_of(op.result)
        outer = num_elements(out_shape[:axis])
        row = num_elements(out_shape[axis:])
        sources = [self.narrowed(v) if narrow else self.address(v) for v in inputs]
        if narrow:
            result = self.narrow[op.result] = self.scratch(num_elements(out_shape), width)
            self.set_widths(NARROW_BITS, self.bits)
        else:
            result = self.allocate(op.result)
        offset = 0
        for value, source in zip(inputs, sources, strict=True):
            assert source is not None
            piece = num_elements(shape_of(value)[axis:])
            for o in range(outer):
                self.copy(result + (o * row + offset) * width, source + o * piece * width, piece, width)
            offset += piece
        self.set_widths(self.bits, self.bits)

    def send(self, op: spat.ChannelSendOp) -> None:
        """`send` of the value, as 8-bit elements when it fits them (`fits_narrow`, as its receiver
        decides from the same bounds)."""
        _, receiver = self.peers[op.channel]
        narrow = self.narrowed(op.value) if self.fits_narrow(op.value) else None
        width = self.bytes if narrow is None else NARROW_BYTES
        register = self.registers.load(self.address(op.value) if narrow is None else narrow)
        self.emit(pim.SendOp, register, register, receiver, num_elements(shape_of(op.value)) * width)

    def receive(self, op: spat.ChannelReceiveOp) -> None:
        """`recv` of the value, into an 8-bit buffer when it fits 8 bits (widened where read wide)."""
        sender, _ = self.peers[op.channel]
        elements = num_elements(shape_of(op.result))
        if self.fits_narrow(op.result):
            address = self.narrow[op.result] = self.scratch(elements, NARROW_BYTES)
            size = elements
        else:
            address, size = self.allocate(op.result), elements * self.bytes
        self.emit(pim.RecvOp, self.registers.load(address), sender, size)


def unbufferized(codegen: CoreCodegen, op: Operation) -> None:
    raise pass_error("pim-codegen", "run pim-bufferize first", op)


def unsupported(codegen: CoreCodegen, op: Operation) -> None:
    raise pass_error("pim-codegen", "no instruction sequence for this op", op)


_LOWERINGS: tuple[tuple[type[Operation] | tuple[type[Operation], ...], Callable[..., None]], ...] = (
    (memref.AllocOp, lambda codegen, op: codegen.allocate(op.memref)),
    ((bufferization.ToTensorOp, bufferization.ToBufferOp), CoreCodegen.bridge),
    ((memref.CollapseShapeOp, memref.ExpandShapeOp), CoreCodegen.view),
    (arith.ConstantOp, CoreCodegen.constant),
    (pim.LoadOp, CoreCodegen.load),
    (pim.StoreOp, CoreCodegen.store),
    (pim.ApplyFiltersOp, CoreCodegen.apply_filters),
    (arith.MinSIOp, CoreCodegen.minimum),
    (spat.MaxPoolOp, CoreCodegen.max_pool),
    (spat.GlobalAvgPoolOp, CoreCodegen.global_avg_pool),
    (spat.ConcatOp, CoreCodegen.concat),
    (spat.ExtractRowsOp, CoreCodegen.extract_rows),
    (spat.ExtractColumnsOp, CoreCodegen.extract_columns),
    (spat.ChannelSendOp, CoreCodegen.send),
    (spat.ChannelReceiveOp, CoreCodegen.receive),
    (spat.ApplyFiltersOp, unbufferized),
)
"""How `CoreCodegen.lower` lowers each kind of op, the first that matches."""


@functools.cache
def lowering(kind: type[Operation]) -> Callable[[CoreCodegen, Operation], None]:
    """The lowering of the ops of type `kind` (`_LOWERINGS`; the vector ops by their exact type)."""
    if kind in _VECTOR_BINARY:
        return CoreCodegen.binary
    if kind in _VECTOR_UNARY:
        return CoreCodegen.unary
    return next((lower for kinds, lower in _LOWERINGS if issubclass(kind, kinds)), unsupported)


@identity_cache
def splat_fill(attr: DenseIntOrFPElementsAttr) -> tuple[int | None, int]:
    """The value a constant's elements all hold (None when they differ; 0 when it has none) and
    their number."""
    values, size = stored_values(attr), num_elements(attr.get_shape())
    if size and not np.all(values == values[0]):
        return None, size
    return (int(values[0]) if size else 0), size


def filter_sources(
    op: pim.ApplyFiltersOp, in_shape: tuple[int, ...], out_shape: tuple[int, ...], image: int, element_bytes: int
) -> tuple[np.ndarray, list[int]]:
    """For every output pixel (row-major) and every kernel position holding a crossbar, the local
    address of the input pixel it multiplies (-1 where it falls on padding), and each position's
    crossbar."""
    geometry = op.geometry()
    height, width, in_channels = in_shape
    out_h, out_w = out_shape[:2]
    indices = op.weight_index_list()
    positions = [(ky, kx, indices[k]) for k, ky, kx in geometry.kernel_positions() if indices[k] >= 0]
    (sh, sw), (pt, pl, _, _), (dh, dw) = geometry.strides, geometry.pads, geometry.dilations
    oy, ox = np.meshgrid(np.arange(out_h), np.arange(out_w), indexing="ij")
    ky, kx = (np.array([p[i] for p in positions], np.int64).reshape(1, 1, -1) for i in (0, 1))
    iy, ix = oy[..., None] * sh - pt + ky * dh, ox[..., None] * sw - pl + kx * dw
    inside = (iy >= 0) & (iy < height) & (ix >= 0) & (ix < width)
    sources = np.where(inside, image + (iy * width + ix) * in_channels * element_bytes, -1)
    return sources.reshape(out_h * out_w, len(positions)), [p[2] for p in positions]


def patch_runs(
    pixels: list[tuple[int, int]], size: tuple[int, int], channels: int, rows: tuple[int, int]
) -> list[tuple[int, int, int | None]]:
    """Rows [rows) of an im2col patch (the channels of `pixels`, in order) as maximal runs
    `(first row, end row, first image element or None for padding)` of contiguous image memory."""
    height, width = size
    runs: list[tuple[int, int, int | None]] = []
    for p, (iy, ix) in enumerate(pixels):
        start, end = max(p * channels, rows[0]), min((p + 1) * channels, rows[1])
        if start >= end:
            continue
        inside = 0 <= iy < height and 0 <= ix < width
        element = (iy * width + ix) * channels + start - p * channels if inside else None
        if runs:
            last_start, last_end, last = runs[-1]
            follows = last is not None and element is not None and last + last_end - last_start == element
            contiguous = follows or (last is None and element is None)
            if last_end == start and contiguous:
                runs[-1] = (last_start, end, last)
                continue
        runs.append((start, end, element))
    return runs


# ----------------------------------------------------------------------------------------------
# Whole functions
# ----------------------------------------------------------------------------------------------


def weight_precision(value: SSAValue) -> tuple[int, int] | None:
    """The precision a crossbar's weight constant carries (its layer's own), if any."""
    return precision_of(value.owner) if isinstance(value.owner, Operation) else None


def weight_matrix(value: SSAValue) -> np.ndarray:
    owner = value.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, DenseIntOrFPElementsAttr):
        raise pass_error("pim-codegen", "crossbar weights must be constants")
    return dense_array(owner.value)


def channel_peers(cores: list[pim.CoreOp], bodies: list[list[Operation]]) -> dict[SSAValue, tuple[int, int]]:
    """Each channel's (sender, receiver) core ids (`bodies`: each core's ops)."""
    senders: dict[SSAValue, int] = {}
    receivers: dict[SSAValue, int] = {}
    for core, ops in zip(cores, bodies, strict=True):
        core_id = core.get_core_id()
        for op in ops:  # (op types compared exactly: an isinstance test of an op is several times slower)
            if type(op) is spat.ChannelSendOp:
                senders[op.channel] = core_id
            elif type(op) is spat.ChannelReceiveOp:
                receivers[op.channel] = core_id
    peers = {}
    for channel, sender in senders.items():
        if channel not in receivers:
            raise pass_error("pim-codegen", "a channel is sent on but never received")
        if receivers[channel] == sender:
            raise pass_error("pim-codegen", f"core {sender} sends to itself")
        peers[channel] = (sender, receivers[channel])
    return peers


def global_buffers(bodies: list[list[Operation]], element_bytes: int) -> dict[SSAValue, int]:
    """Byte addresses of the global buffers the cores (`bodies`: their ops) load from or store to,
    in order of use."""
    addresses: dict[SSAValue, int] = {}
    top = 0
    for ops in bodies:
        for op in ops:
            if (type(op) is pim.LoadOp or type(op) is pim.StoreOp) and op.global_ not in addresses:
                addresses[op.global_] = top
                top += num_elements(shape_of(op.global_)) * element_bytes
    return addresses


def data_element_bytes(bodies: list[list[Operation]]) -> int:
    """Bytes per element of the data the cores compute on (one width for the whole program)."""
    types = {id(r.type): r for ops in bodies for op in ops for r in op.results}  # one per type
    widths = {element_bits(r) for r in types.values() if isinstance(r.type, TensorType | MemRefType)}
    if len(widths) > 1:
        raise pass_error("pim-codegen", f"the cores mix element widths {sorted(widths)}")
    return (widths.pop() if widths else 32) // 8


@dataclass(frozen=True)
class GlobalLayout:
    """What the code of every core of a function needs: the global buffers' byte addresses, each
    channel's (sender, receiver) cores, the bytes per data element and the values' bounds (through
    the transfers between cores)."""

    addresses: dict[SSAValue, int]
    peers: dict[SSAValue, tuple[int, int]]
    element_bytes: int
    bounds: dict[SSAValue, Bounds]


def global_layout(function: func.FuncOp) -> tuple[list[pim.CoreOp], GlobalLayout]:
    """`function`'s cores (whose ids must be 0..N-1) in id order and their global layout; the global
    buffers get their addresses (`pim.address`)."""
    cores = sorted((op for op in function.body.block.ops if isinstance(op, pim.CoreOp)), key=lambda c: c.get_core_id())
    ids = [c.get_core_id() for c in cores]
    if ids != list(range(len(cores))):
        raise pass_error("pim-codegen", f"core ids must be 0..{len(cores) - 1}, got {ids}")
    bodies = [list(core.body.block.ops) for core in cores]
    element_bytes = data_element_bytes(bodies)
    addresses = global_buffers(bodies, element_bytes)
    for value, address in addresses.items():
        owner = value.owner
        assert isinstance(owner, Operation)
        owner.attributes[pim.ADDRESS] = IntegerAttr(address, i64)
    return cores, GlobalLayout(addresses, channel_peers(cores, bodies), element_bytes, core_value_bounds(bodies))


def core_code(core: pim.CoreOp, layout: GlobalLayout) -> pim.CoreCode:
    """The instruction stream of `core` (its body left as it is)."""
    codegen = CoreCodegen(core, layout.addresses, layout.peers, layout.element_bytes, layout.bounds)
    stream = codegen.run([weight_matrix(w) for w in core.weights], [weight_precision(w) for w in core.weights])
    return pim.CoreCode(core, stream, codegen.top)


def generate(function: func.FuncOp) -> list[pim.CoreCode]:
    """The instruction streams of `function`'s cores, in id order; the global buffers get their
    addresses (`pim.address`). The cores' bodies are left as they are."""
    cores, layout = global_layout(function)
    return [core_code(core, layout) for core in cores]


def replace_body(code: pim.CoreCode) -> None:
    """The core's body becomes its instruction ops, then `pim.halt`; `pim.local_bytes` records its
    local memory. The ops go into a detached block first: attaching millions of ops to a nested
    block would check each against all the block's ancestors."""
    body = code.core.body
    old = body.block
    body.detach_block(old)
    old.erase(safe_erase=False)
    body.add_block(Block([*code.stream, pim.HaltOp()]))
    code.core.attributes[pim.LOCAL_BYTES] = IntegerAttr(code.local_bytes, i64)


def functions_with_cores(module: ModuleOp) -> list[func.FuncOp]:
    """Functions with cores still to generate code for (not yet instruction-level)."""
    return [
        function
        for function in functions_holding(module, pim.CoreOp)
        if not any(isinstance(c, pim.CoreOp) and c.is_instruction_level() for c in function.body.block.ops)
    ]


@dataclass
class CoreToInstructions(RewritePattern):
    """A bufferized core's body replaced by its instruction ops, given its function's global layout
    (`layouts`). The walker visits a core after the ops of its body (`walk_regions_first`), so none
    of them is left to visit once the body is gone."""

    layouts: dict[Operation, GlobalLayout]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pim.CoreOp, rewriter: PatternRewriter) -> None:
        layout = self.layouts.get(op.parent_op())  # pyright: ignore[reportArgumentType]
        if layout is None:
            return
        replace_body(core_code(op, layout))
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class PimCodegenPass(ModulePass):
    """Unwrap the bufferized cores into pimsim-nn instruction ops, placing the global buffers."""

    name = "pim-codegen"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        layouts: dict[Operation, GlobalLayout] = {f: global_layout(f)[1] for f in functions_with_cores(op)}
        walker = PatternRewriteWalker(CoreToInstructions(layouts), walk_regions_first=True, apply_recursively=False)
        with cyclic_collector_paused():  # the later cores' code is generated beside the earlier cores' new ops
            walker.rewrite_module(op)
