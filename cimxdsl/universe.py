"""The xDSL `Universe` of cimxdsl: makes our dialects and passes visible to `xdsl-opt`."""

from xdsl.universe import Universe

from cimxdsl.dialects import get_all_dialects
from cimxdsl.transforms import get_all_passes

CIMXDSL_UNIVERSE = Universe(all_dialects=get_all_dialects(), all_passes=get_all_passes())
