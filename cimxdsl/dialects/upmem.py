"""The `upmem` attributes of Cinnamon's programs, kept opaque.

Cinnamon's benchmarks name the near-memory platform they were written for
(`#upmem.platform<type = v1A, dpus = 2048, tasklets = 24>`, in `cinm.available_platforms` of a
function or a compute) and the array of DPUs a compute runs on (`#upmem.array<512x1, #upmem>`, in
`cinm.compute on accelerator #…`). This flow targets crossbars, so the attributes are only read and
printed back: the platform's `key = value` pairs and the array's shape are kept as text.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer


def _parse_value(parser: AttrParser) -> str:
    """A parameter value as written: an integer, a bare identifier, a string, or a shape like
    `32x64x24` (an integer followed by an identifier)."""
    text = ""
    while True:
        if (integer := parser.parse_optional_integer(allow_negative=True)) is not None:
            text += str(integer)
        elif (identifier := parser.parse_optional_identifier()) is not None:
            text += identifier
        elif (string := parser.parse_optional_str_literal()) is not None:
            text += f'"{string}"'
        else:
            break
    if not text:
        parser.raise_error("expected a platform parameter value")
    return text


@irdl_attr_definition
class PlatformAttr(ParametrizedAttribute):
    """`#upmem.platform<key = value, ...>`: a UPMEM platform description, kept as written."""

    name = "upmem.platform"

    keys: ArrayAttr[StringAttr] = param_def()
    values: ArrayAttr[StringAttr] = param_def()

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr[StringAttr], ArrayAttr[StringAttr]]:
        def pair() -> tuple[str, str]:
            key = parser.parse_identifier()
            parser.parse_punctuation("=")
            return key, _parse_value(parser)

        pairs = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, pair)
        return ArrayAttr(StringAttr(k) for k, _ in pairs), ArrayAttr(StringAttr(v) for _, v in pairs)

    def print_parameters(self, printer: Printer) -> None:
        pairs = [f"{k.data} = {v.data}" for k, v in zip(self.keys, self.values, strict=True)]
        printer.print_string(f"<{', '.join(pairs)}>")


@irdl_attr_definition
class ArrayOfDpusAttr(ParametrizedAttribute):
    """`#upmem.array<512x1, #platform>`: an array of DPUs of a platform, kept as written."""

    name = "upmem.array"

    shape: StringAttr = param_def()
    platform: Attribute = param_def()

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, Attribute]:
        parser.parse_punctuation("<")
        shape = _parse_value(parser)
        parser.parse_punctuation(",")
        platform = parser.parse_attribute()
        parser.parse_punctuation(">")
        return StringAttr(shape), platform

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.shape.data}, ")
        printer.print_attribute(self.platform)
        printer.print_string(">")


def names_platform(op: Operation) -> bool:
    """Whether `op` or an op nested in it carries a `#upmem.platform` or `#upmem.array` (in any
    attribute, argument attributes included)."""

    def holds(attr: Attribute) -> bool:
        if isinstance(attr, PlatformAttr | ArrayOfDpusAttr):
            return True
        if isinstance(attr, ArrayAttr):
            return any(holds(a) for a in attr.data)
        return isinstance(attr, DictionaryAttr) and any(holds(a) for a in attr.data.values())

    return any(holds(a) for o in op.walk() for a in (*o.attributes.values(), *o.properties.values()))


Upmem = Dialect("upmem", [], [PlatformAttr, ArrayOfDpusAttr])
