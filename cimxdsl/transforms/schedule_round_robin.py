"""`schedule-round-robin`: a baseline that deals cim ops out over the crossbars in turn."""

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from cimxdsl.transforms.scheduling import CimSchedulePass, RoundRobinScheduler


@dataclass(frozen=True)
class ScheduleRoundRobinPass(CimSchedulePass):
    """Schedules every device's cim ops by dependency level on crossbar i mod N, each in the first step
    its dependencies and its crossbar allow, followed by a barrier in that step."""

    name = "schedule-round-robin"

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> RoundRobinScheduler[SSAValue]:
        return RoundRobinScheduler(crossbars)
