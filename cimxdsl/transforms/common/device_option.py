"""Passes with a `device` option: a preset name or a TOML file, or from Python an object."""

from __future__ import annotations

from typing import ClassVar, Self, TypeVar

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
