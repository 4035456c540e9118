"""The device state the interpreter functions share: the crossbar model, crossbar allocation and
futures of crossbar ops still in flight."""

from dataclasses import dataclass, field

import numpy as np

from cimxdsl.device import Device


@dataclass
class Future:
    """The value of a crossbar op and the crossbar computing it (`!cim.future`)."""

    value: np.ndarray
    crossbar: int


@dataclass
class CrossbarRuntime:
    """A `Device` plus what the program has acquired and written on it."""

    device: Device
    free: list[int] = field(default_factory=list)
    """Crossbars not acquired, least recently released first, so that weights of earlier layers
    stay resident as long as the device has crossbars to spare."""
    layers: list[dict] = field(default_factory=list)
    """name and metrics of every device acquisition so far"""
    _layer_start: tuple[str, str | None, dict, float] | None = None
    _layer_precision: tuple[int, int] | tuple[str, str] | None = None
    """The precision of the layer's crossbar products (the last written): its own bits, `float`
    for float weights (exact mode), None for the device's."""

    def __post_init__(self):
        self.reset()

    def reset(self) -> None:
        """Start a run: every crossbar free, no layers recorded (programmed weights stay)."""
        self.free = list(range(self.device.config.crossbars))
        self.layers = []
        self._layer_start = None

    def physical(self, tile: int) -> int:
        """The crossbar of a tile id: tiles beyond the device's crossbars wrap around."""
        return tile % self.device.config.crossbars

    def begin_layer(self, name: str, placement: str | None = None) -> None:
        """Start recording a layer; one of run-time products records where it runs (`placement`)."""
        self._layer_start = (name, placement, self.device.report(per_crossbar=False)["total"], self.device.now_ns)
        self._layer_precision = None

    def end_layer(self) -> None:
        """Wait for the layer's crossbars and record what it added to the metrics."""
        if self._layer_start is None:
            return
        name, placement, before, start_ns = self._layer_start
        self.device.sync()
        after = self.device.report(per_crossbar=False)["total"]
        metrics = {key: after[key] - before[key] for key in after if key != "energy_pj"}
        metrics["energy_pj"] = {c: after["energy_pj"][c] - before["energy_pj"][c] for c in after["energy_pj"]}
        metrics["latency_ns"] = self.device.now_ns - start_ns
        config = self.device.config
        bits = self._layer_precision or (config.weight_bits, config.input_bits)
        precision = dict(zip(("weight_bits", "input_bits"), bits, strict=True))
        self.layers.append({"layer": name, **({"placement": placement} if placement else {}), **precision, **metrics})
        self._layer_start = None

    def digital_product(
        self, left_shape: tuple[int, ...], right_shape: tuple[int, ...], precision: tuple[int, int] | None = None
    ) -> None:
        """Count a product placed on the host, an M×K matrix times a K×N matrix or a K vector, on
        the device's digital unit; `precision`: the bits its operands were quantized at, if its own."""
        if precision is not None:
            self.note_precision(precision)
        m, k = left_shape
        self.device.digital(m, k, 1 if len(right_shape) == 1 else right_shape[-1])

    def acquire(self) -> int | None:
        """A free crossbar, or None if the program holds all of them."""
        return self.free.pop(0) if self.free else None

    def release(self, crossbar: int) -> None:
        self.free.append(crossbar)

    def barrier(self, crossbar: int) -> None:
        self.device.barrier(crossbar)

    def wait(self, value):
        """The array behind `value`, waiting for the crossbar if it is a future."""
        if isinstance(value, Future):
            self.device.barrier(value.crossbar)
            return value.value
        return value

    def ensure_written(self, crossbar: int, weights: np.ndarray, precision: tuple[int, int] | None = None) -> None:
        """Program `weights` on `crossbar` at `precision` (weight bits, input bits; None: the
        device's) unless it already holds exactly these weights so (from this run or an earlier
        run on the same device): resident weights are not written again."""
        if precision is not None or weights.dtype.kind == "f":
            self.note_precision(precision or ("float", "float"))
        if not self.device.holds(crossbar, weights, precision):
            self.device.write(crossbar, weights, precision)

    def note_precision(self, precision: tuple[int, int] | tuple[str, str]) -> None:
        """Record the precision of the layer's crossbar products (its last write's)."""
        self._layer_precision = precision

    def product(self, crossbar: int, inputs: np.ndarray, out: np.ndarray) -> None:
        """inputs @ W on `crossbar`, written into `out`."""
        self.device.mvm(crossbar, np.asarray(inputs), out=out)

    def count_product(self, crossbar: int, inputs: np.ndarray) -> None:
        """Account for inputs @ W on `crossbar` (an exact device) without computing it."""
        self.device.count_mvm(crossbar, inputs)
