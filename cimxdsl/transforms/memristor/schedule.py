"""The `schedule-*` passes: each schedules every device's cim ops on its crossbars with one strategy
of `cimxdsl.transforms.memristor.scheduling` (`CimSchedulePass` does the rest). `schedule-asap` and
`schedule-alap` are Cinnamon's `cim-schedule-asap`/`cim-schedule-alap`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from cimxdsl.device.config import DEFAULT_DEVICE, DeviceConfig
from cimxdsl.dialects.cim import AcquireDeviceOp
from cimxdsl.transforms.common.device_option import DeviceOption
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.memristor.scheduling import (
    AlapScheduler,
    AsapScheduler,
    CimSchedulePass,
    CriticalPathScheduler,
    CrossbarCostModel,
    RoundRobinScheduler,
)
from cimxdsl.transforms.memristor.scheduling.framework import describe


@dataclass(frozen=True)
class ScheduleAsapPass(CimSchedulePass):
    """Schedules every device's cim ops as soon as possible, first fit on its crossbars, each op
    followed by a barrier in its step (the order and crossbars of Cinnamon's pass)."""

    name = "schedule-asap"
    scheduler = AsapScheduler


@dataclass(frozen=True)
class ScheduleAlapPass(CimSchedulePass):
    """Schedules every device's cim ops as late as possible, first fit on its crossbars, each op
    followed by a barrier in its step (the order and crossbars of Cinnamon's pass)."""

    name = "schedule-alap"
    scheduler = AlapScheduler


@dataclass(frozen=True)
class ScheduleRoundRobinPass(CimSchedulePass):
    """Schedules every device's cim ops by dependency level on crossbar i mod N, each in the first step
    its dependencies and its crossbar allow, followed by a barrier in that step."""

    name = "schedule-round-robin"
    scheduler = RoundRobinScheduler


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
