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
    held: dict[int, np.ndarray] = field(default_factory=dict)
    """crossbar -> the weights last written to it by a cim op"""

    def __post_init__(self):
        self.free = list(range(self.device.config.crossbars))

    def acquire(self) -> int:
        if not self.free:
            count = self.device.config.crossbars
            raise ValueError(f"the program acquires more crossbars than the device has ({count})")
        return self.free.pop(0)

    def release(self, crossbar: int) -> None:
        self.free.append(crossbar)
        self.free.sort()

    def wait(self, value):
        """The array behind `value`, waiting for the crossbar if it is a future."""
        if isinstance(value, Future):
            self.device.barrier(value.crossbar)
            return value.value
        return value

    def ensure_written(self, crossbar: int, weights: np.ndarray) -> None:
        """Program `weights` on `crossbar` unless it already holds exactly these weights."""
        held = self.held.get(crossbar)
        if held is not None and (held is weights or np.array_equal(held, weights)):
            return
        self.device.write(crossbar, weights)
        self.held[crossbar] = weights

    def write(self, crossbar: int, weights: np.ndarray) -> None:
        self.device.write(crossbar, weights)
        self.held[crossbar] = weights

    def product(self, crossbar: int, inputs: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return np.asarray(self.device.mvm(crossbar, inputs)).astype(dtype, copy=False)
