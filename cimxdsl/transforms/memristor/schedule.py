"""The `schedule-*` passes: each schedules every device's cim ops on its crossbars with one strategy
of `cimxdsl.transforms.memristor.scheduling` (`CimSchedulePass` does the rest). `schedule-asap` and
`schedule-alap` are Cinnamon's `cim-schedule-asap`/`cim-schedule-alap`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, ModuleOp, f64, i64
from xdsl.ir import SSAValue

from cimxdsl.device.config import DEFAULT_DEVICE, DeviceConfig
from cimxdsl.dialects.cim import AcquireDeviceOp, CimMatrixOp
from cimxdsl.transforms.common.device_option import DeviceOption
from cimxdsl.transforms.common.errors import note, pass_error
from cimxdsl.transforms.memristor.row_bands import band_inputs
from cimxdsl.transforms.memristor.scheduling import (
    AlapScheduler,
    AsapScheduler,
    CimSchedulePass,
    CriticalPathScheduler,
    CrossbarCostModel,
    RoundRobinScheduler,
)
from cimxdsl.transforms.memristor.scheduling.clsa import ClsaScheduler, ScheduleReport
from cimxdsl.transforms.memristor.scheduling.framework import describe, schedule_device


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


def check_crossbar_count(name: str, config: DeviceConfig, device: AcquireDeviceOp) -> None:
    """Raise unless `config` has the crossbars `device` asks for (`availableCrossbarCount`)."""
    count, available = device.available_crossbar_count.value.data, config.crossbars
    if count > available:
        raise pass_error(
            name, f"{describe(device)} asks for {count} crossbars but device '{config.name}' has {available}"
        )


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
        check_crossbar_count(self.name, self.config(), device)

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> CriticalPathScheduler[SSAValue]:
        return CriticalPathScheduler(crossbars, CrossbarCostModel(self.config()))


SCHEDULE_REPORT = "cimxdsl.schedule"
"""On a device `schedule-clsa` scheduled: its `ScheduleReport` (latency and lower bound in ns,
crossbar utilisation overall and per layer, copies of weight tiles)."""


def report_attr(report: ScheduleReport) -> DictionaryAttr:
    def number(value: float) -> FloatAttr:
        return FloatAttr(round(value, 6), f64)

    layers = DictionaryAttr({name: number(value) for name, value in report.layers.items()})
    return DictionaryAttr(
        {
            "latency_ns": number(report.latency_ns),
            "lower_bound_ns": number(report.lower_bound_ns),
            "utilisation": number(report.utilisation),
            "copies": IntegerAttr(report.copies, i64),
            "layers": layers,
        }
    )


def schedule_report(device: AcquireDeviceOp) -> dict:
    """The report `schedule-clsa` left on `device` as plain values."""
    attr = device.attributes[SCHEDULE_REPORT]
    assert isinstance(attr, DictionaryAttr)

    def plain(value):
        if isinstance(value, DictionaryAttr):
            return {key: plain(inner) for key, inner in value.data.items()}
        return value.value.data

    return plain(attr)


def schedule_notes(module: ModuleOp) -> list[str]:
    """A line per device of `module` that `schedule-clsa` scheduled: its report in words."""
    lines = []
    for device in module.walk():
        if isinstance(device, AcquireDeviceOp) and SCHEDULE_REPORT in device.attributes:
            report = schedule_report(device)
            layers = ", ".join(f"{name} {value:.2f}" for name, value in report["layers"].items())
            bound, utilisation = report["lower_bound_ns"], report["utilisation"]
            lines.append(
                f"schedule-clsa: latency {report['latency_ns']:.0f} ns (lower bound {bound:.0f} ns), crossbar "
                f"utilisation {utilisation:.3f}, {report['copies']} copies; per layer: {layers}"
            )
    return lines


@dataclass(frozen=True)
class ScheduleClsaPass(DeviceOption, CimSchedulePass):
    """Schedules every device's cim ops across its layers (CLSA-CIM, Pelke et al., DATE 2024): the
    input of each banded product (`tile{band=N}`) is first rebuilt from the rows it reads
    (`row_bands`), so that it waits only for the products making those rows; then each weight tile
    keeps a crossbar (copies on up to `duplicates` spare crossbars, for the tiles with the most work
    per copy), and each op starts once its inputs are ready on the first of its tile's crossbars to
    finish it (see `ClsaScheduler`). With one device per model (`cinm-to-cim{devices=model}`) layers
    overlap. With `resident`, the weights are taken to be on their crossbars from an earlier run
    of the program (weights stationary: the plan has no writes where the tiles fit the device).
    Each device gets its report (`cimxdsl.schedule`): latency, lower bound, crossbar
    utilisation overall and per layer."""

    name = "schedule-clsa"

    device: str = DEFAULT_DEVICE
    duplicates: int = 0
    resident: bool = False
    cross_layer: bool = True
    """False: the same placement, layer by layer (a baseline)."""
    device_config: DeviceConfig | None = field(default=None, init=False, compare=False)
    """The device as an object, from Python (`for_device`); not an option, it has no text form."""

    def check_options(self) -> None:
        self.config()
        if self.duplicates < 0:
            raise pass_error(self.name, f"option 'duplicates' must be at least 0, got {self.duplicates}")

    def check_device(self, device: AcquireDeviceOp) -> None:
        check_crossbar_count(self.name, self.config(), device)

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> ClsaScheduler[SSAValue]:
        cost = CrossbarCostModel(self.config(), self.resident)
        return ClsaScheduler(crossbars, cost, self.duplicates, self.cross_layer)

    def schedule(self, device: AcquireDeviceOp) -> None:
        block = device.parent_block()
        assert block is not None
        band_inputs(block, _products(device))
        strategies: list[ClsaScheduler[SSAValue]] = []

        def make(crossbars: Sequence[SSAValue]) -> ClsaScheduler[SSAValue]:
            strategies.append(self.make_strategy(crossbars))
            return strategies[-1]

        schedule_device(device, make)
        for message in strategies[-1].notes:
            note(self.name, f"{describe(device)}: {message}")
        device.attributes[SCHEDULE_REPORT] = report_attr(strategies[-1].report)


def _products(device: AcquireDeviceOp) -> list[CimMatrixOp]:
    """The cim ops on `device`'s crossbars."""
    return [
        use.operation
        for acquire in device.device_id.uses
        for result in acquire.operation.results
        for use in result.uses
        if isinstance(use.operation, CimMatrixOp)
    ]
