"""The crossbar device model: configuration and presets, bit-sliced MVM, timeline and metrics.

Pure NumPy (no xDSL), so it can be used on its own::

    from cimxdsl.device import Device, preset
    dev = Device(preset("cinnamon"))
    dev.write(0, w)          # K×N integer tile
    y = dev.mvm(0, x)        # x @ w through DACs, bit-sliced cells and ADCs
    dev.sync(); dev.report()
"""

from cimxdsl.device.config import (
    DEFAULT_DEVICE,
    PRESETS,
    DeviceConfig,
    DeviceConfigError,
    adc_energy_pj,
    load_device_config,
    preset,
)
from cimxdsl.device.crossbar import Tile, adc_convert, crossbar_matmul, program_tile, tile_mvm
from cimxdsl.device.device import Device, calibrate_tile
from cimxdsl.device.metrics import COMPONENTS, COUNTERS

__all__ = [
    "COMPONENTS",
    "COUNTERS",
    "DEFAULT_DEVICE",
    "PRESETS",
    "Device",
    "DeviceConfig",
    "DeviceConfigError",
    "Tile",
    "adc_convert",
    "adc_energy_pj",
    "calibrate_tile",
    "crossbar_matmul",
    "load_device_config",
    "preset",
    "program_tile",
    "tile_mvm",
]
