"""The stateful device: programmed crossbars, a timeline and metrics.

Timeline: the host issues operations at time `now_ns` without waiting (they return futures in the IR).
An operation on crossbar i starts at max(now_ns, the end of i's previous operation) and keeps i busy
for its duration (write: K × write_ns_per_row; MVM: the pipeline cycles × cycle_ns). `barrier(i)`
advances `now_ns` to the end of i's last operation, `sync()` to the end of all of them. The latency is
the time the last operation ends. The digital unit computes for the host: the host waits for it.

Static ADC ranges (`adc_range = "static_array"` / `"static_slice"` / `"static_column"`): a device
created with `calibrating=True` returns exact products and records, per weight tile (by its
contents), the largest sum each column's ADC sees (`adc_spans`); a device given those spans
converts with them (`calibrate_tile` does it for one tile).

Precision per layer: a write may give the tile's own (weight bits, input bits); the crossbar then
programs and reads it as the device with those bits (`DeviceConfig.with_precision`): ⌈weight bits
÷ cell bits⌉ cells per weight, ⌈input bits ÷ DAC bits⌉ input slices, the ADC's span of those
levels, and the metrics that follow.

Array backend (`backend`, `array_device`; `cimxdsl.device.backend`): the products run on NumPy
(the default), PyTorch or CuPy, on the host or a GPU; programmed tiles are moved there once and
stay while they are programmed, inputs move once per product and results come back to NumPy.
Programming (the cell levels and their noise) stays on the host.

Randomness is reproducible per crossbar: stuck cells, programming error and read noise come from
streams keyed by (seed, crossbar, kind, how many writes/MVMs that crossbar has seen before), read
noise also by the chunk of a data set (`start_chunk`).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import operator
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cimxdsl.device.backend import ArrayBackend, array_backend
from cimxdsl.device.config import DeviceConfig, load_device_config
from cimxdsl.device.crossbar import (
    Tile,
    TileStack,
    check_inputs,
    draw_stuck_cells,
    inputs_fit,
    observed_spans,
    program_tile,
    stack_tiles,
    tile_mvm,
)
from cimxdsl.device.metrics import (
    Metrics,
    digital_events,
    digital_time_ns,
    energy_pj,
    mvm_events,
    write_events,
    write_time_ns,
)

_STUCK, _PROGRAM, _READ = 0, 1, 2
_WRITE, _MVM, _DIGITAL = 0, 1, 2

_CONTENTS = itertools.count(1)
"""Identifiers of what a crossbar holds (`Device._contents`), unique across devices."""

PROGRAMMED_TILES_BYTES = 1 << 30
"""How much a noiseless device keeps of the tiles it programmed from read-only weights (the
constants of a prepared program), to program them again without recomputing them."""


class Device:
    """Crossbar contents, timeline and metrics of one device, shared by the interpreter functions."""

    def __init__(
        self,
        config: DeviceConfig | str | Path = "ideal",
        adc_spans: dict[bytes, np.ndarray] | None = None,
        calibrating: bool = False,
        backend: str | ArrayBackend = "numpy",
        array_device: str | None = None,
    ):
        self.config = load_device_config(config)
        self.backend = array_backend(backend, array_device)
        """Where the products run (`cimxdsl.device.backend`): NumPy, PyTorch or CuPy on a device."""
        self._noiseless, self._static_adc = self.config.noiseless, self.config.static_adc  # (asked per operation)
        self.adc_spans: dict[bytes, np.ndarray] = {} if adc_spans is None else adc_spans
        """Static ADC spans per weight tile (`tile_key`): per-column maxima of a calibration set."""
        self.calibrating = calibrating
        count = self.config.crossbars
        self._tiles: list[Tile | None] = [None] * count
        self._configs: list[DeviceConfig] = [self.config] * count
        """The device as each crossbar's tile was written for (its layer's precision)."""
        self._keys: list[bytes] = [b""] * count
        self._stuck: dict[int, np.ndarray | None] = {}
        self._ops_seen = np.zeros((count, 2), np.int64)  # writes, MVMs: keys of the noise streams
        self._metrics = Metrics(count)
        self._free_at = np.zeros(count)
        """The time each crossbar's last operation ends (ns)."""
        self._costs: dict[tuple, tuple[int, float]] = {}
        self._sources: list[np.ndarray | None] = [None] * count
        self._contents = np.zeros(count, np.int64)
        """An identifier of what each crossbar holds (its tile, device and source; 0: nothing)."""
        self._stacks: dict[int, tuple[Tile, object, TileStack]] = {}
        """The tile of each crossbar on the array backend's device, with the spans it was stacked with."""
        self.now_ns = 0.0
        self._chunk = 0
        self._programmed: dict[tuple[int, DeviceConfig], tuple[np.ndarray, Tile, bytes]] = {}
        self._precisions: dict[tuple[int, int] | None, DeviceConfig] = {None: self.config}
        self._programmed_bytes = 0

    def on_backend(self, backend: str | ArrayBackend, array_device: str | None = None) -> Device:
        """A device holding this one's programmed crossbars (shared, not programmed again) whose
        products run on another array backend; its metrics and timeline start from zero."""
        other = copy.copy(self)
        other.backend = array_backend(backend, array_device)
        count = self.config.crossbars
        other._tiles, other._configs, other._keys = list(self._tiles), list(self._configs), list(self._keys)
        other._sources, other._stuck, other._stacks = list(self._sources), dict(self._stuck), {}
        other._contents = self._contents.copy()
        other._ops_seen, other._programmed = self._ops_seen.copy(), dict(self._programmed)
        other._precisions, other._costs = dict(self._precisions), {}
        other._metrics, other._free_at, other.now_ns = Metrics(count), np.zeros(count), 0.0
        return other

    # ---- operations ---------------------------------------------------------------------------
    def write(self, xbar: int, weights: np.ndarray, precision: tuple[int, int] | None = None) -> None:
        """Program logical crossbar `xbar` with a K×N weight tile (copied), of its layer's
        `precision` (weight bits, input bits; None: the device's)."""
        i = self._index(xbar)
        config = self._configs[i] = self.config_for(precision)
        self._tiles[i], self._keys[i] = self._program(i, weights, config)
        self._sources[i] = weights if _read_only(weights) else None
        self._contents[i] = next(_CONTENTS)
        self._ops_seen[i, 0] += 1
        self._run(i, self._cost(_WRITE, config, *self._tiles[i].shape))

    def config_for(self, precision: tuple[int, int] | None) -> DeviceConfig:
        """The device for a layer of `precision` (`DeviceConfig.with_precision`), made once."""
        config = self._precisions.get(precision)
        if config is None:
            config = self._precisions[precision] = self.config.with_precision(precision)
        return config

    def config_of(self, xbar: int) -> DeviceConfig:
        """The device as crossbar `xbar`'s tile was written for (its layer's precision)."""
        return self._configs[self._index(xbar)]

    def holds(self, xbar: int, weights: np.ndarray, precision: tuple[int, int] | None = None) -> bool:
        """Whether crossbar `xbar` holds exactly `weights` at `precision` (resident weights need no
        write): the read-only array it was written from, or equal values."""
        i = self._index(xbar)
        tile = self._tiles[i]
        if (
            tile is None
            or tile.weights.shape != np.shape(weights)
            or self._configs[i] is not self.config_for(precision)
        ):
            return False
        return self._sources[i] is weights or equal_values(tile.weights, np.asarray(weights))

    def _program(self, i: int, weights: np.ndarray, config: DeviceConfig) -> tuple[Tile, bytes]:
        """The tile `weights` program on crossbar `i` as `config` and its static-ADC key. A
        noiseless device programs every crossbar alike, so it reuses the tiles of read-only weights
        it has seen."""
        noiseless = self._noiseless
        seen = self._programmed.get((id(weights), config)) if noiseless else None
        if seen is not None and seen[0] is weights:
            return seen[1], seen[2]
        rng = None if noiseless else self._rng(i, _PROGRAM, self._ops_seen[i, 0])
        try:
            tile = program_tile(weights, config, rng, self._stuck_cells(i))
        except ValueError as err:
            raise ValueError(f"crossbar {i}: {err}") from None
        key = tile_key(tile.weights, None if config is self.config else config) if self.config.static_adc else b""
        arrays = {id(a): a for a in (tile.weights, tile.conductance, tile.reads) if a is not None}
        size = sum(a.nbytes for a in arrays.values())
        kept = _read_only(weights)
        if noiseless and kept and self._programmed_bytes + size <= PROGRAMMED_TILES_BYTES:
            self._programmed[(id(weights), config)] = (weights, tile, key)
            self._programmed_bytes += size
        return tile, key

    def mvm(self, xbar: int, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """x @ W on crossbar `xbar` for x of shape (B, K) or (K,) (into `out` when given)."""
        i = self._index(xbar)
        tile = self._tiles[i]
        if tile is None:
            raise ValueError(f"crossbar {i} has not been written")
        x = np.asarray(x)
        rng = self._rng(i, _READ, self._ops_seen[i, 1]) if self.config.read_noisy else None
        try:
            result = self._product(i, tile, x, rng, out, self._configs[i])
        except ValueError as err:
            raise ValueError(f"crossbar {i}: {err}") from None
        self._count_mvm(i, tile, x)
        return result

    def count_mvm(self, xbar: int, x: np.ndarray) -> None:
        """Account for x @ W on crossbar `xbar` (checks, metrics, timeline) without computing it,
        on an exact device, whose every product the caller computes as `exact_matmul` does."""
        if not self.config_of(xbar).exact:
            raise ValueError(f"crossbar {xbar}: only an exact device's products can be counted without computing them")
        self.defer_mvm(xbar, x)

    def defer_mvm(self, xbar: int, x: np.ndarray, checked: bool = False) -> tuple[Tile, np.ndarray | None]:
        """Account for x @ W on crossbar `xbar` (checks, metrics, timeline) and return its tile and
        static ADC spans (or None), for a caller that computes the product later as `mvm` would
        (with `sliced_product`); not for read noise, drawn per MVM, nor while calibrating.
        `checked`: the caller found rows holding `x` within the inputs (`inputs_fit`), and `x` may
        be those rows (only their count is read)."""
        i = self._index(xbar)
        tile = self._tiles[i]
        if tile is None:
            raise ValueError(f"crossbar {i} has not been written")
        if self.config.read_noisy or self.calibrating:
            raise ValueError(f"crossbar {i}: a product with read noise or calibration cannot be deferred")
        if not checked:  # (else only the rows of `x` are counted: they may be held on an array backend)
            x = np.asarray(x)
        try:
            if not checked:
                check_inputs(x.reshape(-1, x.shape[-1]), tile, self._configs[i])
        except ValueError as err:
            raise ValueError(f"crossbar {i}: {err}") from None
        self._count_mvm(i, tile, x)
        return tile, self.adc_spans.get(self._keys[i]) if self._static_adc else None

    def _count_mvm(self, i: int, tile: Tile, x: np.ndarray) -> None:
        self._ops_seen[i, 1] += 1
        batch = 1 if x.ndim == 1 else x.shape[0]
        negative = None  # only sign-magnitude inputs cost more for rows with a negative entry
        if self.config.input_encoding == "sign_magnitude" and x.size:
            negative = int(np.count_nonzero((x.reshape(batch, -1) < 0).any(axis=1)))
        self._run(i, self._cost(_MVM, self._configs[i], *tile.shape, batch, negative))

    def book(
        self, ops: Bookings, batches: np.ndarray, report: Sequence[int] = (), inputs: Sequence[np.ndarray] = ()
    ) -> list[DeviceConfig] | None:
        """Run `ops` as their writes (of weights not already held), MVMs of `batches` rows each
        (the products computed by the caller: exactly, or sliced on the tiles the crossbars hold)
        and barriers would run one by one: the same metrics, timeline, counters and crossbar
        contents, booked in a few vectorised updates on a noiseless device; the device of each MVM
        of `report`. `inputs`: the arrays the MVMs read their rows from, which must fit a bit-sliced
        device's inputs as a whole (`inputs_fit`). None, with nothing done, where they must run one
        by one: noise, static ADC ranges, sign-magnitude inputs (whose cost depends on the values),
        a tile that does not fit, weights the device cannot hold, inputs that do not fit as a
        whole, or an MVM on a crossbar never written. A run that finds what it found when it was
        last booked (the same contents on the crossbars it reads, the same batches) books what it
        booked then."""
        config = self.config
        if not self._noiseless or self._static_adc or self.calibrating or config.input_encoding == "sign_magnitude":
            return None
        booked = ops.booked
        if booked is None or not booked.repeats(self, batches):
            booked = self._rebook(ops, batches)
            if booked is None:
                return None
        if not all(inputs_fit(x, device) for device in booked.sliced for x in inputs):
            return None
        read = booked.read
        if booked.sliced and read is None:  # (before the run's writes change what the crossbars hold)
            read = self._read_tiles(ops, booked)
            if all(w is None or _read_only(w) for w in ops.weights):
                booked.read = read
        self.now_ns = booked.advance(self._free_at, self.now_ns)
        booked.last_read = read
        self._metrics.add_many(*booked.operations)
        self._ops_seen += booked.seen
        held = booked.held
        if held is None:  # (weights that may change: programmed again)
            held = [self._hold(c, ops.weights[j], device) for c, j, device in booked.last_writes]
            if all(source is not None for *_, source in held):
                booked.held = held
        for c, device, tile, key, contents, source in held:
            self._configs[c], self._tiles[c], self._keys[c], self._sources[c] = device, tile, key, source
            self._contents[c] = contents
        return booked.devices(report)

    def _read_tiles(self, ops: Bookings, booked: Booked) -> dict[int, Tile]:
        """The tile each MVM of `ops` reads: its crossbar's last write before it in the run, or
        what the crossbar holds now."""
        plan = ops.plan(self.config.crossbars)
        mvms, read = plan.mvms, {}
        for j, c, source in zip(mvms.tolist(), plan.crossbars[mvms].tolist(), plan.content[mvms].tolist(), strict=True):
            read[j] = self._tiles[c] if source < 0 else self._program(c, ops.weights[source], booked.configs[j])[0]
        return read

    def _hold(self, c: int, weights, device: DeviceConfig) -> tuple:
        """What crossbar `c` holds once written with `weights` as `device`: (crossbar, device,
        tile, static-ADC key, contents identifier, read-only source or None)."""
        tile, key = self._program(c, weights, device)
        source = weights if _read_only(weights) else None
        return c, device, tile, key, next(_CONTENTS), source

    def _rebook(self, ops: Bookings, batches: np.ndarray) -> Booked | None:
        """The `Booked` of `ops` for what the crossbars hold now (`ops.booked` where it fits), or
        None where they must run one by one."""
        plan = ops.plan(self.config.crossbars)
        xb, kinds = plan.crossbars, ops.kinds
        keys = [(kind, self.config_for(precision), shape) for kind, precision, shape in plan.keys]
        key = plan.key.copy()
        for j in plan.dynamic:  # MVMs on what an earlier run left on their crossbar
            c = int(xb[j])
            if self._tiles[c] is None:
                return None
            key[j] = len(keys)
            keys.append((_MVM, self._configs[c], self._tiles[c].shape))
        needed = plan.changes.copy()
        for j in plan.firsts:
            needed[j] = not self.holds(int(xb[j]), ops.weights[j], ops.precisions[j])
        booked = ops.booked
        if booked is None or not booked.fits(self, keys, needed, batches):
            for _, device, (k, n) in keys:
                if not (0 < k <= device.tile_shape[0] and 0 < n <= device.tile_shape[1]):
                    return None
            exact = all(device.exact for _, device, _ in keys)
            for j in plan.integer_writes if exact and self.config.encoding != "reference" else plan.writes:
                weights, device = ops.weights[j], keys[key[j]][1]  # (float weights on an exact device need only fit)
                if (j, device) not in ops.valid:
                    try:
                        self._program(int(xb[j]), weights, device)
                    except ValueError:
                        return None  # (the write run on its own reports it)
                    ops.valid.add((j, device))
            booked = ops.booked = self._booked(plan, kinds, keys, key, needed, batches)
        booked.found = booked.state(self, batches)
        booked.read = None  # (the MVMs on what an earlier run left may read other tiles)
        return booked

    def _booked(
        self, plan: Plan, kinds: np.ndarray, keys: list, key: np.ndarray, needed: np.ndarray, batches: np.ndarray
    ) -> Booked:
        """What booking a run adds for its `needed` writes and its MVMs of `batches` rows (`Booked`)."""
        xb = plan.crossbars
        active = np.flatnonzero(needed | (kinds == _MVM))
        kinds_of, inverse = np.unique(key[active] * (1 << 32) + batches[active], return_inverse=True)
        table = []
        for combined in kinds_of.tolist():
            kind, device, shape = keys[combined >> 32]
            batch = combined & ((1 << 32) - 1)
            table.append(self._cost(kind, device, *shape, *(() if kind == _WRITE else (batch, None))))
        rows = np.array([row for row, _ in table], np.int64)[inverse]
        durations = np.array([duration for _, duration in table], np.float64)[inverse]
        crossbars = xb[active]
        bounds = np.searchsorted(active, plan.barrier_runs[:, 0]).tolist()
        segments, start = [], 0
        for (first, last), end in zip(plan.barrier_runs.tolist(), bounds, strict=True):
            segments.append(
                (crossbars[start:end], durations[start:end], np.unique(crossbars[start:end]), xb[first:last])
            )
            start = end
        segments.append((crossbars[start:], durations[start:], np.unique(crossbars[start:]), None))
        written = np.flatnonzero(needed)
        last = len(written) - 1 - np.unique(xb[written][::-1], return_index=True)[1]  # (each crossbar's last write)
        last_writes = [
            (c, j, keys[key[j]][1]) for c, j in zip(xb[written[last]].tolist(), written[last].tolist(), strict=True)
        ]
        count = self.config.crossbars
        seen = np.stack([np.bincount(xb[written], minlength=count), np.bincount(xb[plan.mvms], minlength=count)], 1)
        reads = np.unique(xb[plan.firsts + plan.dynamic])
        configs = [keys[k][1] if k >= 0 else None for k in key.tolist()]
        operations = (crossbars.tolist(), rows.tolist(), durations.tolist())
        sliced = list({id(d): d for kind, d, _ in keys if kind == _MVM and not d.exact}.values())
        return Booked(
            weakref.ref(self), keys, needed, batches, reads, segments, operations, seen, last_writes, configs, sliced
        )

    def digital(self, m: int, k: int, n: int) -> None:
        """Count an M×K by K×N product on the digital unit (the caller computes it exactly); the
        host waits for it."""
        cost, duration = self._cost(_DIGITAL, self.config, m, k, n)
        self._metrics.add(Metrics.DIGITAL, cost, duration)
        self.now_ns += duration

    def _product(
        self, i: int, tile: Tile, x: np.ndarray, rng, out: np.ndarray | None, config: DeviceConfig
    ) -> np.ndarray:
        """x @ W through the ADC of `config`; with a static range, the tile's calibrated spans
        (recorded while `calibrating`, when the product is exact)."""
        backend = self.backend
        if not config.static_adc:
            return tile_mvm(tile, x, config, rng, out=out, stack=self._stack(i, tile, None, config), backend=backend)
        key = self._keys[i]
        if self.calibrating:
            seen = observed_spans(tile, x, config)
            self.adc_spans[key] = np.maximum(self.adc_spans.get(key, seen), seen)
            return tile_mvm(tile, x, config.replace(adc_bits=0), rng, out=out, backend=backend)
        spans = self.adc_spans.get(key)
        stack = self._stack(i, tile, spans, config)
        return tile_mvm(tile, x, config, rng, out=out, spans=spans, stack=stack, backend=backend)

    def _stack(self, i: int, tile: Tile, spans, config: DeviceConfig) -> TileStack | None:
        """Crossbar `i`'s tile stacked on the array backend's device (None on NumPy or where the
        product is exact), kept while the crossbar holds it: resident across products."""
        if self.backend.is_numpy or config.exact or tile.conductance is None or (spans is None and config.static_adc):
            return None
        held = self._stacks.get(i)
        if held is None or held[0] is not tile or held[1] is not spans:
            held = self._stacks[i] = (tile, spans, stack_tiles([[tile]], [[spans]], config, self.backend))
        return held[2]

    def barrier(self, xbar: int) -> float:
        """Wait for crossbar `xbar`'s last operation; returns the new host time."""
        self.now_ns = max(self.now_ns, float(self._free_at[self._index(xbar)]))
        return self.now_ns

    def sync(self) -> float:
        """Wait for every crossbar; returns the new host time."""
        self.now_ns = self.latency_ns
        return self.now_ns

    def reset_metrics(self) -> None:
        """Zero the counters and the timeline; programmed weights stay."""
        self._metrics.reset()
        self._free_at = np.zeros(self.config.crossbars)
        self.now_ns = 0.0

    def start_chunk(self, index: int) -> None:
        """Start chunk `index` of a data set: the noise streams count writes and MVMs from zero
        again, so every chunk programs its crossbars alike wherever it runs, and read noise is
        keyed by the chunk too (chunk 0 draws what a fresh device draws)."""
        self._ops_seen[:] = 0
        self._chunk = index

    # ---- state and reports --------------------------------------------------------------------
    def tile(self, xbar: int) -> Tile | None:
        """The tile programmed on `xbar`, or None."""
        return self._tiles[self._index(xbar)]

    def busy_until(self, xbar: int) -> float:
        """The time crossbar `xbar`'s last operation ends."""
        return float(self._free_at[self._index(xbar)])

    @property
    def latency_ns(self) -> float:
        """The time the last operation ends."""
        return max(self.now_ns, float(self._free_at.max(initial=0.0)))

    @property
    def metrics(self) -> dict:
        return self.report()

    def report(self, per_crossbar: bool = True) -> dict:
        """Plain-dict metrics: totals, latency and (optionally) every used crossbar."""
        report = {
            "device": self.config.name,
            "precision": self.config.precision,
            "latency_ns": self.latency_ns,
            "latency_cycles": self.latency_ns / self.config.cycle_ns,
            "total": self._metrics.total(),
        }
        if per_crossbar:
            report["crossbars"] = {i: self._metrics.crossbar(i) for i in self._metrics.used()}
        return report

    def crossbars_used(self) -> int:
        """How many crossbars saw a write or an MVM since the metrics were last reset."""
        return len(self._metrics.used())

    # ---- helpers ------------------------------------------------------------------------------
    def _index(self, xbar: int) -> int:
        count = self.config.crossbars
        try:
            i = operator.index(xbar)
        except TypeError:
            raise ValueError(f"crossbar index must be an integer, got {xbar!r}") from None
        if not 0 <= i < count:
            raise ValueError(f"crossbar {i} does not exist: the device has {count} (0..{count - 1})")
        return i

    def _rng(self, xbar: int, kind: int, count: int) -> np.random.Generator:
        key = (xbar, kind, int(count), self._chunk) if kind == _READ and self._chunk else (xbar, kind, int(count))
        return np.random.default_rng(np.random.SeedSequence(self.config.seed, spawn_key=key))

    def _stuck_cells(self, xbar: int) -> np.ndarray | None:
        if self.config.stuck_on_rate == 0 and self.config.stuck_off_rate == 0:
            return None
        if xbar not in self._stuck:
            self._stuck[xbar] = draw_stuck_cells(self.config, self._rng(xbar, _STUCK, 0))
        return self._stuck[xbar]

    def _cost(self, kind: int, config: DeviceConfig, *shape) -> tuple[int, float]:
        """The metrics' cost row and the duration of an operation of `kind` and `shape` (a write:
        K, N; an MVM: K, N, rows, rows with a negative entry; the digital unit: M, K, N) on the
        crossbars of `config` (the device at a layer's precision)."""
        key = (kind, config.weight_bits, config.input_bits, *shape)
        cost = self._costs.get(key)
        if cost is None:
            if kind == _WRITE:
                events, duration = write_events(config, *shape), write_time_ns(config, shape[0])
            elif kind == _MVM:
                k, n, batch, negative = shape
                events = mvm_events(config, batch, k, n, negative)
                duration = events["busy_cycles"] * config.cycle_ns
            else:
                events = digital_events(*shape)
                duration = digital_time_ns(config, events["digital_macs"])
            cost = self._costs[key] = (self._metrics.cost(events, energy_pj(config, events)), duration)
        return cost

    def _run(self, xbar: int, cost: tuple[int, float]) -> None:
        row, duration_ns = cost
        start = max(self.now_ns, float(self._free_at[xbar]))
        self._free_at[xbar] = start + duration_ns
        self._metrics.add(xbar, row, duration_ns)


BARRIER = 3
"""The kind of a barrier in `Bookings` (writes and MVMs: `WRITE`, `MVM`)."""
WRITE, MVM = _WRITE, _MVM


@dataclass
class Plan:
    """Where the operations of `Bookings` fall on a device of a given number of crossbars."""

    crossbars: np.ndarray
    """Each operation's crossbar."""
    writes: list[int]
    integer_writes: list[int]
    """The writes of weights that are not floats (validated by programming them once)."""
    mvms: np.ndarray
    content: np.ndarray
    """Per operation, the last write before it on its crossbar (-1: none in the run)."""
    firsts: list[int]
    """The writes that find what an earlier run left on their crossbar."""
    changes: np.ndarray
    """Per operation, a write of other weights than the previous write on its crossbar in the run."""
    barrier_runs: np.ndarray
    """[first, end) of each run of consecutive barriers."""
    keys: list[tuple[int, tuple[int, int] | None, tuple[int, int]]]
    """The (kind, precision, tile shape) of the writes and MVMs."""
    key: np.ndarray
    """Per write or MVM, its index in `keys` (-1 for barriers and `dynamic` MVMs)."""
    dynamic: list[int]
    """The MVMs on what an earlier run left on their crossbar."""


@dataclass
class Booked:
    """What booking a run adds on one device for given writes needed and MVM batches: the
    segments between barriers (their operations' crossbars and durations, the crossbars they
    touch, the barriers' crossbars after them), the operations' crossbars, metric rows and
    durations, the writes and MVMs per crossbar, each crossbar's last write (crossbar,
    operation, device) and each operation's device. Kept by the `Bookings` while the next run
    needs the same; `found` (the contents of the crossbars whose state the booking depends on,
    `reads`, and the batches) and `held` (what the last writes leave, once programmed) let a run that finds what
    the previous one found book it again without looking at the weights."""

    device: weakref.ref
    keys: list
    needed: np.ndarray
    batches: np.ndarray
    reads: np.ndarray
    segments: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]
    operations: tuple[list[int], list[int], list[float]]
    seen: np.ndarray
    last_writes: list[tuple[int, int, DeviceConfig]]
    configs: list[DeviceConfig | None]
    sliced: list[DeviceConfig]
    """The bit-sliced devices of the MVMs (whose inputs must fit)."""
    found: bytes = b""
    held: list[tuple] | None = None
    read: dict[int, Tile] | None = None
    """Per MVM on a bit-sliced device, the tile it reads, kept where every weight is read-only."""
    last_read: dict[int, Tile] | None = None
    """Per MVM on a bit-sliced device, the tile it read when last booked (what its product reads)."""
    reported: tuple[list[int], list[DeviceConfig]] = ([], [])
    timeline: tuple[bytes, float, np.ndarray, float] | None = None
    """The crossbars' end times and the host time the segments last started from, and what they
    left (a run booked again from the same times leaves the same)."""

    def advance(self, free: np.ndarray, now: float) -> float:
        """Run the segments on the crossbars' end times `free` (in place) from host time `now`:
        each crossbar's operations one after the other from max(now, its end), in order, and each
        barrier waiting for its crossbars; returns the new host time."""
        start = free.tobytes()
        seen = self.timeline
        if seen is not None and seen[0] == start and seen[1] == now:
            free[:] = seen[2]
            return seen[3]
        begun = now
        for crossbars, durations, touched, barrier in self.segments:
            if len(crossbars):
                free[touched] = np.maximum(free[touched], now)
                np.add.at(free, crossbars, durations)
            if barrier is not None:
                now = max(now, float(free[barrier].max()))
        self.timeline = (start, begun, free.copy(), now)
        return now

    def fits(self, device: Device, keys: list, needed: np.ndarray, batches: np.ndarray) -> bool:
        return (
            self.device() is device
            and len(keys) == len(self.keys)
            and all(a[1] is b[1] and a[0] == b[0] and a[2] == b[2] for a, b in zip(keys, self.keys, strict=True))
            and np.array_equal(needed, self.needed)
            and np.array_equal(batches, self.batches)
        )

    def repeats(self, device: Device, batches: np.ndarray) -> bool:
        """Whether `device` holds what it held when this booking was last made or repeated, and
        the MVMs have the same `batches`."""
        return self.device() is device and self.state(device, batches) == self.found

    def state(self, device: Device, batches: np.ndarray) -> bytes:
        """What the booking depends on: the contents of the crossbars it reads and the batches."""
        return device._contents[self.reads].tobytes() + batches.tobytes()

    def devices(self, report: Sequence[int]) -> list[DeviceConfig]:
        """The device of each operation of `report`."""
        if list(report) != self.reported[0]:
            self.reported = (list(report), [self.configs[j] for j in report])
        return self.reported[1]


class Bookings:
    """A run of crossbar operations on tiles fixed in advance: per operation its kind (`WRITE`,
    `MVM`, `BARRIER`), its tile (crossbar: tile modulo the device's crossbars) and, for a write,
    its weights and precision; booked at once by `Device.book`."""

    def __init__(self, kinds: Sequence[int], tiles: Sequence[int], weights: Sequence, precisions: Sequence):
        self.kinds = np.asarray(kinds, np.int64)
        self.tiles = np.asarray(tiles, np.int64)
        self.weights, self.precisions = list(weights), list(precisions)
        self._plans: dict[int, Plan] = {}
        self.booked: Booked | None = None
        """The last booking of the run (`Device.book`)."""
        self.valid: set[tuple[int, DeviceConfig]] = set()
        """(write, device) pairs whose weights a device has validated (`program_tile`)."""

    def plan(self, crossbars: int) -> Plan:
        found = self._plans.get(crossbars)
        if found is None:
            found = self._plans[crossbars] = self._plan(crossbars)
        return found

    def _plan(self, count: int) -> Plan:
        kinds, crossbars = self.kinds, self.tiles % count
        content = np.full(len(kinds), -1, np.int64)
        changes = np.zeros(len(kinds), bool)
        last: dict[int, int] = {}
        firsts = []
        for j, (kind, c) in enumerate(zip(kinds.tolist(), crossbars.tolist(), strict=True)):
            previous = last.get(c, -1)
            content[j] = previous
            if kind == _WRITE:
                if previous < 0:
                    firsts.append(j)
                else:
                    changes[j] = not self._same(previous, j)
                last[c] = j
        keys: dict[tuple, int] = {}
        key = np.full(len(kinds), -1, np.int64)
        dynamic = []
        for j, kind in enumerate(kinds.tolist()):
            source = j if kind == _WRITE else int(content[j])
            if kind == BARRIER:
                continue
            if source < 0:
                dynamic.append(j)
                continue
            entry = (kind, self.precisions[source], np.shape(self.weights[source]))
            key[j] = keys.setdefault(entry, len(keys))
        barriers = np.flatnonzero(kinds == BARRIER)
        starts = barriers[np.r_[True, np.diff(barriers) > 1]] if len(barriers) else barriers
        ends = barriers[np.r_[np.diff(barriers) > 1, True]] + 1 if len(barriers) else barriers
        return Plan(
            crossbars,
            np.flatnonzero(kinds == _WRITE).tolist(),
            [j for j, w in enumerate(self.weights) if w is not None and np.asarray(w).dtype.kind != "f"],
            np.flatnonzero(kinds == _MVM),
            content,
            firsts,
            changes,
            np.stack([starts, ends], axis=1).reshape(-1, 2),
            list(keys),
            key,
            dynamic,
        )

    def _same(self, a: int, b: int) -> bool:
        """Whether write `b` finds write `a`'s weights held (`Device.holds`)."""
        held, weights = self.weights[a], self.weights[b]
        if self.precisions[a] != self.precisions[b] or np.shape(held) != np.shape(weights):
            return False
        return held is weights or equal_values(np.asarray(held), np.asarray(weights))


def _read_only(weights) -> bool:
    """Whether `weights` is a read-only array (a constant of a prepared program: it cannot change)."""
    return isinstance(weights, np.ndarray) and not weights.flags.writeable


def equal_values(held: np.ndarray, weights: np.ndarray) -> bool:
    """Whether two tiles of one shape hold equal values (most other tiles differ at the first)."""
    if held.size and held.item(0) != weights.item(0):
        return False
    return bool(np.array_equal(held, weights))


def calibrate_tile(config: DeviceConfig | str | Path, weights: np.ndarray, rows: np.ndarray) -> dict[bytes, np.ndarray]:
    """The static ADC spans of the weight tile `weights` calibrated on the input `rows` (on the
    nominal device): the `adc_spans` a `Device` with a static range converts that tile with."""
    recorder = Device(load_device_config(config).nominal, calibrating=True)
    recorder.write(0, weights)
    recorder.mvm(0, rows)
    return recorder.adc_spans


def tile_key(weights: np.ndarray, config: DeviceConfig | None = None) -> bytes:
    """A key of a weight tile's contents (shape, dtype and values) and of the precision it is held
    at (`config`'s bits, when not the device's): where static ADC spans are kept."""
    w = np.ascontiguousarray(weights)
    bits = () if config is None else (config.weight_bits, config.input_bits)
    return hashlib.blake2b(repr((w.shape, w.dtype.str, *bits)).encode() + w.tobytes(), digest_size=16).digest()
