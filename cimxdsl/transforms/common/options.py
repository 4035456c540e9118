"""Enumerated pass options, typed `Literal[...]` (as xDSL's `convert-scf-to-openmp` types its
`schedule`) and checked from that type, with one message whether the pass is built from Python or
read from a pipeline spec (`-p 'pass{option=value}'`)."""

from dataclasses import fields
from typing import Any, Literal, Self, get_args, get_origin, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

from cimxdsl.transforms.common.errors import check_choice


def choices(cls: type[ModulePass]) -> dict[str, tuple[Any, ...]]:
    """Each `Literal[...]` option of a pass class with the values it allows."""
    hints = get_type_hints(cls)
    return {f.name: get_args(hints[f.name]) for f in fields(cls) if get_origin(hints[f.name]) is Literal}


class ChoicePass(ModulePass):
    """A pass whose `Literal[...]` options each hold one of their values; else `pass-name: option
    'packing' must be one of kernel, im2col, got 'foo'`, both when the pass is built and when it is
    read from a spec (before xDSL's own type check, whose message names neither pass nor option)."""

    def __post_init__(self) -> None:
        for option, allowed in choices(type(self)).items():
            check_choice(self.name, option, getattr(self, option), allowed)

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        given = spec.normalize_parameter_names().parameters
        for option, allowed in choices(cls).items():
            if option in given:
                values = given[option]
                check_choice(cls.name, option, values[0] if len(values) == 1 else ",".join(map(str, values)), allowed)
        return super().from_spec(spec)
