"""Passes with a `device` (or `chip`) option: a preset name or a file, or from Python an object."""

from __future__ import annotations

from typing import ClassVar, Self, TypeVar

from cimxdsl.device.chip import ChipConfig, ChipConfigError, load_chip_config
from cimxdsl.device.config import DeviceConfig, DeviceConfigError, load_device_config
from cimxdsl.transforms.common.errors import pass_error

P = TypeVar("P")


def holding(configured: P, field: str, value: object) -> P:
    """The frozen pass `configured` holding `value`, an object given from Python, in its non-option
    `field` (an option has a text form; a configuration object built in Python may have none)."""
    object.__setattr__(configured, field, value)
    return configured


def pass_device(name: str, device: str) -> DeviceConfig:
    """The device preset or TOML file `device` of the pass `name` (an error names the pass)."""
    try:
        return load_device_config(device)
    except DeviceConfigError as err:
        raise pass_error(name, str(err)) from None


class DeviceOption:
    """Mixin of a frozen-dataclass pass declaring `device: str` and
    `device_config: DeviceConfig | None = field(default=None, init=False, compare=False)`."""

    name: ClassVar[str]
    device: str
    device_config: DeviceConfig | None

    @classmethod
    def for_device(cls, config: DeviceConfig, **options) -> Self:
        """The pass for a device given as an object (no file): the option `device` is only its name."""
        return holding(cls(device=config.name, **options), "device_config", config)

    def config(self) -> DeviceConfig:
        if self.device_config is not None:
            return self.device_config
        return pass_device(self.name, self.device)


def pass_chip(name: str, chip: str) -> ChipConfig:
    """The chip preset or file `chip` of the pass `name` (an error names the pass)."""
    try:
        return load_chip_config(chip)
    except ChipConfigError as e:
        raise pass_error(name, str(e)) from None


class ChipOption:
    """Mixin of a frozen-dataclass pass that times its choices on a chip, declaring
    `chip: str = "pimcomp"` and `chip_config: ChipConfig | None = field(default=None, init=False,
    compare=False)` (the chip as an object, from Python; not an option, it has no text form)."""

    name: ClassVar[str]
    chip: str
    chip_config: ChipConfig | None

    @classmethod
    def for_chip(cls, chip: ChipConfig | None, **options) -> Self:
        """The pass timing on `chip` given as an object (the option `chip` is only its name); its
        default chip when None."""
        if chip is None:
            return cls(**options)
        return holding(cls(chip=chip.name, **options), "chip_config", chip)

    def chip_object(self) -> ChipConfig:
        if self.chip_config is not None:
            return self.chip_config
        return pass_chip(self.name, self.chip)
