"""Per-layer precision: the weight and input bits of each crossbar product, by layer name.

A precision is given as a TOML file (`cim-compile --precision FILE.toml`), a mapping (the API's
`precision=`) or a path to such a file. Each key is a layer name or a glob (`fnmatch`: `conv*`,
`*`), each value its `weight_bits` and `input_bits` (1 to 8; either may be left out, keeping the
default, the bits int8 mode takes on the device: at most 8). Rules apply in order, a later one
overriding an earlier one where both match; a layer no rule matches runs at the device's bits. A file:

    ["*"]
    weight_bits = 8
    input_bits = 8

    ["conv*"]
    weight_bits = 4
    input_bits = 4

    [fc]
    weight_bits = 2

A key that matches no layer, an unknown setting or bits outside 1 to 8 are one-line errors naming
the key (`PrecisionError`).
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from cimxdsl.dialects.utils import MAX_PRECISION, PRECISION
from cimxdsl.models import CompileError

Precision = Mapping[str, tuple[int, int]]
"""(weight bits, input bits) by layer name."""


class PrecisionError(CompileError):
    """A malformed precision (one line naming the layer or key)."""


def read_precision(spec: Mapping | str | Path, where: str = "precision") -> dict[str, dict[str, int]]:
    """The rules of a precision file or mapping, checked: {layer or glob: {setting: bits}}. A
    value may also be a (weight bits, input bits) pair."""
    if isinstance(spec, str | Path):
        where = str(spec)
        try:
            with open(spec, "rb") as file:
                spec = tomllib.load(file)
        except OSError as e:
            raise PrecisionError(f"{where}: cannot read the precision file ({e.strerror})") from None
        except tomllib.TOMLDecodeError as e:
            raise PrecisionError(f"{where}: not a TOML file: {e}") from None
    if not isinstance(spec, Mapping):
        raise PrecisionError(f"{where}: a precision maps layer names to bits, got {type(spec).__name__}")
    rules = {}
    for key, value in spec.items():
        if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
            value = dict(zip(PRECISION, value, strict=True))
        if not isinstance(value, Mapping):
            raise PrecisionError(f"{where}: layer '{key}': give weight_bits and input_bits, got {value!r}")
        for setting, bits in value.items():
            if setting not in PRECISION:
                raise PrecisionError(f"{where}: layer '{key}': unknown setting '{setting}' (settings: {', '.join(PRECISION)})")
            if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= MAX_PRECISION:
                raise PrecisionError(
                    f"{where}: layer '{key}': {setting} must be an integer from 1 to {MAX_PRECISION}, got {bits!r}"
                )
        rules[str(key)] = dict(value)
    return rules


def resolve_precision(
    spec: Mapping | str | Path, layers: Sequence[str], default: tuple[int, int], where: str = "precision"
) -> dict[str, tuple[int, int]]:
    """(weight bits, input bits) of the layers of `layers` the rules of `spec` (`read_precision`)
    name, `default` for a setting no rule gives; a rule matching no layer is an error. The layers
    no rule names are left out (they run at the device's bits)."""
    if isinstance(spec, str | Path):
        where = str(spec)
    rules = read_precision(spec, where)
    bits: dict[str, dict[str, int]] = {}
    for key, settings in rules.items():
        matched = [name for name in layers if fnmatch.fnmatchcase(name, key)]
        if not matched:
            raise PrecisionError(f"{where}: '{key}' matches no layer (layers: {', '.join(layers) or 'none'})")
        for name in matched:
            bits.setdefault(name, dict(zip(PRECISION, default, strict=True))).update(settings)
    return {name: (b["weight_bits"], b["input_bits"]) for name, b in bits.items()}
