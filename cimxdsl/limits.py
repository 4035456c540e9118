"""Which device limit dominates an error: the error measured again with each limit of the device
lifted alone (a lossless ADC; 8-bit weights and inputs; ideal wires; no noise) and with all of them lifted,
which leaves the error of int8 quantization itself. Measured, not estimated: a limit dominates when
lifting it alone removes the most error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cimxdsl.device import DeviceConfig, DeviceConfigError
from cimxdsl.device.config import GROUPS


@dataclass(frozen=True)
class Limit:
    name: str
    """What is lifted, as reports name it (e.g. `the ADC (6 bits, full range)`)."""
    lifted: str
    """How the lifted run is named in the report (e.g. `lossless ADC`)."""
    config: DeviceConfig
    """The device with this limit lifted alone."""


def device_limits(config: DeviceConfig, mode: str) -> list[Limit]:
    """The limits `config` has, each with the device that lifts it alone."""
    limits = []
    if not config.lossless_adc:
        name = f"the ADC ({config.adc_bits} bits, {config.adc_range} range)"
        limits.append(Limit(name, "lossless ADC", config.replace(adc_bits=0)))
    if mode == "int8" and min(config.weight_bits, config.input_bits) < 8:
        try:
            wider = config.replace(weight_bits=max(8, config.weight_bits), input_bits=max(8, config.input_bits))
        except DeviceConfigError:  # a crossbar too narrow for an 8-bit weight: nothing to compare with
            pass
        else:
            name = f"weight and input bits ({config.weight_bits} and {config.input_bits})"
            limits.append(Limit(name, "8-bit weights and inputs", wider))
    wires = set(GROUPS["parasitics"])
    if not config.nominal.noiseless:  # what stays without noise: the wires
        resistances = ", ".join(f"{k}={v}" for k, v in config.precision["noise"].items() if k in wires)
        limits.append(Limit(f"IR drop ({resistances})", "ideal wires", config.without_wires))
    if not config.without_wires.noiseless:
        noise = ", ".join(f"{k}={v}" for k, v in config.precision["noise"].items() if k not in wires)
        limits.append(Limit(f"noise ({noise})", "no noise", config.nominal))
    return limits


def all_lifted(config: DeviceConfig, limits: list[Limit]) -> DeviceConfig:
    """`config` with every limit of `limits` lifted."""
    lifted = config
    for limit in limits:
        changed = {k: v for k, v in limit.config.to_dict().items() if v != getattr(config, k)}
        lifted = lifted.replace(**changed)
    return lifted


def dominant_limit(config: DeviceConfig, mode: str, error: Callable[[DeviceConfig], float], measure: str) -> dict:
    """The error (`error(device)`, lower is better, named `measure`) on `config`, with each of its
    limits lifted alone and with all lifted, and which one dominates: the limit whose lifting
    alone removes the most error, unless lifting them all removes less than half of it (then the
    int8 quantization itself dominates)."""
    base = error(config)
    limits = device_limits(config, mode)
    lifted = {limit.name: error(limit.config) for limit in limits}
    floor = error(all_lifted(config, limits)) if len(limits) > 1 else next(iter(lifted.values()), base)
    if not limits or base - floor < base / 2:
        dominant = "int8 quantization (the device's limits add little)" if mode == "int8" else "none"
    else:
        dominant = min(lifted, key=lifted.get)
    runs = ", ".join(f"with {limit.lifted} {lifted[limit.name]:.3g}" for limit in limits)
    text = (
        f"error sources: {measure} {base:.3g} on {config.name}"
        + (f"; {runs}" if runs else "")
        + (f"; with all lifted {floor:.3g}" if len(limits) > 1 else "")
        + f"; dominant: {dominant}"
    )
    return {
        "measure": measure,
        "error": base,
        "lifted": {limit.lifted: lifted[limit.name] for limit in limits},
        "all_lifted": floor,
        "dominant": dominant,
        "text": text,
    }
