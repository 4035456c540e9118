"""`schedule-alap` (alias `cim-schedule-alap`): Cinnamon's ALAP scheduling of cim ops on crossbars."""

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from cimxdsl.transforms.scheduling import AlapScheduler, CimSchedulePass


@dataclass(frozen=True)
class ScheduleAlapPass(CimSchedulePass):
    """Schedules every device's cim ops as late as possible, first fit on its crossbars, each op
    followed by a barrier in its step (the order and crossbars of Cinnamon's pass)."""

    name = "schedule-alap"

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> AlapScheduler[SSAValue]:
        return AlapScheduler(crossbars)
