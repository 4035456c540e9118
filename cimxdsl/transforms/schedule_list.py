"""`schedule-list`: critical-path list scheduling with the device model's latencies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from cimxdsl.device.config import DEFAULT_DEVICE, DeviceConfig
from cimxdsl.dialects.cim import AcquireDeviceOp
from cimxdsl.transforms.device_option import DeviceOption
from cimxdsl.transforms.errors import pass_error
from cimxdsl.transforms.scheduling import CimSchedulePass, CriticalPathScheduler, CrossbarCostModel
from cimxdsl.transforms.scheduling.framework import describe


@dataclass(frozen=True)
class ScheduleListPass(DeviceOption, CimSchedulePass):
    """Schedules every device's cim ops by list scheduling on real latencies: among the ready ops the
    one that can start first (then one whose weights a free crossbar holds, then the longest path to
    the end), on the crossbar where it finishes first (MVM cycles plus a weight write unless that
    crossbar holds the tile already), with barriers at the ops' finish times; a second plan that
    also reuses a crossbar holding the weights when the op still ends within 1.1× the lower bound is
    kept when it is shorter (see `CriticalPathScheduler`). The device, a preset name or a .toml file
    in the option `device` (see `cimxdsl.device`) or a `DeviceConfig` given to `for_device`, also
    bounds `availableCrossbarCount`."""

    name = "schedule-list"

    device: str = DEFAULT_DEVICE
    device_config: DeviceConfig | None = field(default=None, init=False, compare=False)
    """The device as an object, from Python (`for_device`); not an option, it has no text form."""

    def check_options(self) -> None:
        self.config()

    def check_device(self, device: AcquireDeviceOp) -> None:
        count, available = device.available_crossbar_count.value.data, self.config().crossbars
        if count > available:
            raise pass_error(
                self.name,
                f"{describe(device)} asks for {count} crossbars but device '{self.config().name}' has {available}",
            )

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> CriticalPathScheduler[SSAValue]:
        return CriticalPathScheduler(crossbars, CrossbarCostModel(self.config()))
