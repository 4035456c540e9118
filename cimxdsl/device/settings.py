"""One mechanism for the package's configuration files: devices, chips and sweeps.

A configuration is a frozen dataclass whose fields declare what they accept: the type annotation
(`int`, `float`, `bool`, `str`, `tuple[float, ...]`, optionally `| None`) and, through `setting`,
a range or a list of choices. A `Schema` over that dataclass reads TOML or JSON files, looks up
presets, rejects unknown keys with a "did you mean" hint and checks each value against its field;
every error is one line naming the key. Plain Python, no xDSL: the device model uses it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import numbers
import tomllib
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any


def did_you_mean(word: Any, choices: Iterable[Any]) -> str:
    """` (did you mean 'x'?)` naming the choice closest to `word`, or "" when none is close."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


@dataclass(frozen=True)
class Bounds:
    """What a field accepts beyond its type: numbers from `low` to `high` (inclusive; `positive`:
    above 0), one of `choices`; `expected` words it where the derived wording does not fit."""

    low: float | None = None
    high: float | None = None
    positive: bool = False
    choices: tuple[Any, ...] = ()
    expected: str | None = None


DEFAULT_BOUNDS = {int: Bounds(low=1), float: Bounds(low=0)}
"""Integers are counts (positive) and floats magnitudes (non-negative) unless a field says otherwise."""


def setting(default: Any = dataclasses.MISSING, **bounds: Any) -> Any:
    """A dataclass field with `Bounds(**bounds)` (see `Bounds`)."""
    return dataclasses.field(default=default, metadata={"bounds": Bounds(**bounds)})


def is_int(value: Any) -> bool:
    """Python or NumPy integers, not booleans."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite Python or NumPy real number, not a boolean."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Schema:
    """The keys of the configuration dataclass `cls` and how their errors read.

    `error` builds the exception from a message; `label` starts every message; `table` names the
    table the keys sit in (`cost`: keys read `cost.adc`, else `'adc'`); `quote_choices` writes
    choices as `'a', 'b'` rather than `a, b`; `suggest` adds a "did you mean" to a bad choice;
    `preset_message` words an unknown preset (fields `name`, `hint`, `presets`)."""

    cls: type
    error: Callable[[str], Exception]
    label: str = ""
    table: str = ""
    quote_choices: bool = True
    suggest: bool = False
    presets: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    preset_message: str = "'preset' must be one of {presets}, got {name!r}{hint}"

    @cached_property
    def fields(self) -> dict[str, tuple[type, bool, Bounds]]:
        """Per field: its type, whether it may be None, and its bounds."""
        hints = typing.get_type_hints(self.cls)
        found = {}
        for f in dataclasses.fields(self.cls):
            kind, optional = hints[f.name], False
            if isinstance(kind, types.UnionType) and type(None) in kind.__args__:
                (kind,) = [a for a in kind.__args__ if a is not type(None)]
                optional = True
            kind = typing.get_origin(kind) or kind
            found[f.name] = (kind, optional, f.metadata.get("bounds", DEFAULT_BOUNDS.get(kind, Bounds())))
        return found

    def fail(self, message: str) -> Exception:
        return self.error(self.label + message)

    def key(self, name: str) -> str:
        return f"{self.table}.{name}" if self.table else f"'{name}'"

    def check_known(self, name: str, known: Iterable[str] | None = None) -> None:
        """Reject a key that is no field (or not in `known`), with a "did you mean"."""
        known = list(self.fields if known is None else known)
        if name not in known:
            where = f"{self.table}." if self.table else ""
            raise self.fail(f"unknown key '{where}{name}'{did_you_mean(name, known)}")

    def expected(self, name: str) -> str:
        """What field `name` accepts, in words."""
        kind, _, bounds = self.fields[name]
        if bounds.expected is not None:
            return bounds.expected
        if bounds.choices:
            return "one of " + ", ".join(repr(c) if self.quote_choices else str(c) for c in bounds.choices)
        if kind is bool:
            return "true or false"
        if kind is str:
            return "a non-empty string"
        noun = "integer" if kind is int else "number"
        low, high = bounds.low, bounds.high
        if bounds.positive or (kind is int and low == 1 and high is None):
            return f"a positive {noun}"
        if low == 0 and high is None:
            return f"a non-negative {noun}"
        if low is not None and high is not None:
            return f"{'an integer' if kind is int else 'a number'} from {low:g} to {high:g}"
        return f"an {noun}" if kind is int else f"a {noun}"

    def check(self, name: str, value: Any) -> Any:
        """`value` for field `name`, normalised (NumPy scalars to Python, ints to float for a
        float field, lists to tuples); raises the one-line error when it does not fit."""
        kind, optional, bounds = self.fields[name]
        if value is None and optional:
            return None
        checked = self.normalised(kind, bounds, value)
        if checked is None:
            hint = did_you_mean(value, bounds.choices) if self.suggest and bounds.choices else ""
            expected = "a number" if kind is float and not is_number(value) else self.expected(name)
            raise self.fail(f"{self.key(name)} must be {expected}, got {value!r}{hint}")
        return checked

    @staticmethod
    def normalised(kind: type, bounds: Bounds, value: Any) -> Any:
        """`value` normalised for `kind` and `bounds`, or None when it does not fit."""
        if bounds.choices:
            return value if value in bounds.choices else None
        if kind is bool:
            return value if isinstance(value, bool) else None
        if kind is str:
            return value if isinstance(value, str) and value else None
        if kind is tuple:
            if not isinstance(value, list | tuple) or not all(is_number(v) and v >= (bounds.low or 0) for v in value):
                return None
            return tuple(float(v) for v in value)
        if (kind is int and not is_int(value)) or (kind is float and not is_number(value)):
            return None
        if kind not in (int, float):
            return value
        low, high = bounds.low, bounds.high
        if (low is not None and value < low) or (high is not None and value > high) or (bounds.positive and value <= 0):
            return None
        return kind(value)

    def validate(self, config: Any) -> None:
        """Check every field of the frozen dataclass `config` and store the normalised values."""
        for name in self.fields:
            object.__setattr__(config, name, self.check(name, getattr(config, name)))

    def preset(self, name: Any) -> Any:
        if name not in self.presets:
            hint = did_you_mean(name, self.presets)
            raise self.error(self.preset_message.format(name=name, hint=hint, presets=", ".join(self.presets)))
        return self.presets[name]

    def read(self, path: str | Path) -> dict[str, Any]:
        """The table of keys in a TOML or JSON file (JSON by its `.json` suffix)."""
        path = Path(path)
        language = "JSON" if path.suffix == ".json" else "TOML"
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise self.fail(f"cannot read '{path}': no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise self.fail(f"cannot read '{path}': {e}") from None
        try:
            data = json.loads(text) if language == "JSON" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
            raise self.fail(f"cannot read '{path}': it is not valid {language}: {e}") from None
        return self.table_of(data)

    def table_of(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(f"expected a table of keys, got {type(data).__name__}")
        return data


def is_file_spec(spec: str | Path) -> bool:
    """Whether a device or chip argument names a file (a path, a `.toml`/`.json` name or an
    existing file) rather than a preset."""
    text = str(spec)
    return isinstance(spec, Path) or text.endswith((".toml", ".json")) or "/" in text or Path(text).is_file()
