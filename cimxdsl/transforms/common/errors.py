"""How a pass fails on bad input: one line, `pass-name: message`, with the op it stopped at; a step
of a named pipeline (`memristor`, `pim`) names the pipeline and the step."""

import logging
import sys
from collections.abc import Sequence

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.device.config import DeviceConfigError, load_device_config
from cimxdsl.device.settings import did_you_mean
from cimxdsl.dialects.utils import location_prefix


class PassError(PassFailedException):
    """`place` `name: message` `suffix`, its parts kept (`of`) so that a pipeline can rename the pass."""

    name = message = place = suffix = ""

    @classmethod
    def of(cls, name: str, message: str, place: str = "", suffix: str = "") -> "PassError":
        error = cls(f"{place}{name}: {message}{suffix}")
        error.name, error.message, error.place, error.suffix = name, message, place, suffix
        return error

    def within(self, pipeline: str) -> "PassError":
        """The error as a step of the pipeline pass `pipeline` reports it."""
        return PassError.of(f"{pipeline} ({self.name})", self.message, self.place, self.suffix)


def pass_error(name: str, message: str, op: Operation | None = None) -> PassError:
    """`name: message ('op.name')`, prefixed with `file:line:col: ` when the op has a location."""
    if op is None:
        return PassError.of(name, message)
    return PassError.of(name, message, location_prefix(op), f" ('{op.name}')")


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever `sys.stderr` is when a record is emitted."""

    @property
    def stream(self):  # pyright: ignore[reportIncompatibleVariableOverride]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


NOTES = logging.getLogger("cimxdsl.notes")
"""Where passes say what they did instead of what their options asked, as `name: note: message`:
on stderr by default; a caller silences or redirects them as any logger's records."""
if not NOTES.handlers:
    NOTES.addHandler(_CurrentStderr())
    NOTES.propagate = False


def note(name: str, message: str) -> None:
    """Note `message` of pass `name` on `NOTES`."""
    NOTES.warning("%s: note: %s", name, message)


def check_choice(name: str, option: str, value: object, choices: Sequence[object]) -> None:
    """Raise `name: option 'option' must be one of ..., got 'value'` (with a did-you-mean) unless
    `value` is one of `choices`."""
    if value not in choices:
        allowed = [str(c) for c in choices]
        hint = did_you_mean(str(value), allowed)
        option = option.replace("_", "-")
        raise pass_error(name, f"option '{option}' must be one of {', '.join(allowed)}, got '{value}'{hint}")


def check_device(name: str, device: str) -> None:
    """Raise `name: option 'device': ...` unless `device` names a preset or a valid TOML file."""
    try:
        load_device_config(device)
    except DeviceConfigError as e:
        raise pass_error(name, f"option 'device': {e}") from None
