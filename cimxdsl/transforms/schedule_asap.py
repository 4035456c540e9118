"""`schedule-asap` (alias `cim-schedule-asap`): Cinnamon's ASAP scheduling of cim ops on crossbars."""

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from cimxdsl.transforms.scheduling import AsapScheduler, CimSchedulePass


@dataclass(frozen=True)
class ScheduleAsapPass(CimSchedulePass):
    """Schedules every device's cim ops as soon as possible, first fit on its crossbars, each op
    followed by a barrier in its step (the order and crossbars of Cinnamon's pass)."""

    name = "schedule-asap"

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> AsapScheduler[SSAValue]:
        return AsapScheduler(crossbars)
