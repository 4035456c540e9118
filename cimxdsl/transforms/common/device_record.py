"""The device a module was lowered for, recorded on the module by the pass that fixes the crossbar
geometry (`tile`): the module attribute `cimxdsl.device`, a dictionary of the device's name (when
it has one), its crossbar geometry (`rows`, `cols`, `cells_per_weight`), its weight and input bits
and, for a device that is not a preset as it stands, its whole configuration as JSON (`config`).

    builtin.module attributes {cimxdsl.device = {name = "isaac", rows = 128 : i64, cols = 128 : i64,
                                                 cells_per_weight = 4 : i64, ...}} {...}

Runners take the device from it (`recorded_device`) and say how another one differs from it
(`device_mismatch`)."""

from __future__ import annotations

import json

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64

from cimxdsl.device.config import PRESETS, DeviceConfig, DeviceConfigError

DEVICE_ATTR = "cimxdsl.device"
FIELDS = ("rows", "cols", "cells_per_weight", "weight_bits", "input_bits")


def record_device(module: ModuleOp, config: DeviceConfig | None, rows: int, cols: int) -> None:
    """Record on `module` the device it is tiled for (`config`; None: only the tile geometry
    `rows` × `cols`, one cell per weight)."""
    entries: dict[str, IntegerAttr | StringAttr] = {}
    if config is None:
        entries.update(rows=IntegerAttr(rows, i64), cols=IntegerAttr(cols, i64))
        entries["cells_per_weight"] = IntegerAttr(1, i64)
    else:
        entries["name"] = StringAttr(config.name)
        entries.update({f: IntegerAttr(getattr(config, f), i64) for f in FIELDS})
        if PRESETS.get(config.name) != config:
            entries["config"] = StringAttr(json.dumps(config.to_dict(), separators=(",", ":")))
    module.attributes[DEVICE_ATTR] = DictionaryAttr(entries)


def recorded_geometry(module: ModuleOp) -> dict[str, int | str] | None:
    """The recorded entries (`FIELDS` and `name`) as plain values, or None."""
    record = module.attributes.get(DEVICE_ATTR)
    if not isinstance(record, DictionaryAttr):
        return None
    values: dict[str, int | str] = {}
    for key, value in record.data.items():
        if isinstance(value, IntegerAttr):
            values[key] = value.value.data
        elif isinstance(value, StringAttr) and key != "config":
            values[key] = value.data
    return values


def recorded_device(module: ModuleOp) -> DeviceConfig | None:
    """The device recorded on `module` (its configuration, else its preset), or None: nothing
    recorded, or only a geometry."""
    record = module.attributes.get(DEVICE_ATTR)
    if not isinstance(record, DictionaryAttr):
        return None
    config, name = record.data.get("config"), record.data.get("name")
    try:
        if isinstance(config, StringAttr):
            return DeviceConfig.from_dict(json.loads(config.data))
    except (ValueError, TypeError, DeviceConfigError) as e:
        raise DeviceConfigError(f"the module's '{DEVICE_ATTR}' holds no valid device: {e}") from None
    if isinstance(name, StringAttr) and name.data in PRESETS:
        return PRESETS[name.data]
    return None


def describe(values: dict[str, int | str]) -> str:
    """`'isaac' (128×128 crossbars, 4 cells per weight, 8-bit weights and inputs)`."""
    name = f"'{values['name']}' " if "name" in values else ""
    cells = values["cells_per_weight"]
    text = f"{name}({values['rows']}×{values['cols']} crossbars, {cells} cell{'s' * (cells != 1)} per weight"
    if "weight_bits" in values:
        text += f", {values['weight_bits']}-bit weights, {values['input_bits']}-bit inputs"
    return text + ")"


def device_mismatch(module: ModuleOp, config: DeviceConfig) -> str | None:
    """How `config` differs from the device recorded on `module` in geometry or bits (one line),
    or None if it does not, or nothing is recorded."""
    recorded = recorded_geometry(module)
    if recorded is None:
        return None
    given = {"name": config.name, **{f: getattr(config, f) for f in FIELDS}}
    if all(given[f] == recorded[f] for f in FIELDS if f in recorded):
        return None
    return f"the IR was lowered for device {describe(recorded)}, not for {describe(given)}"
