"""The `upmem` platform attribute of Cinnamon's programs, kept opaque.

Cinnamon's benchmarks name the near-memory platform they were written for
(`#upmem.platform<type = v1A, dpus = 2048, tasklets = 24>`, in `cinm.available_platforms` of a
function or a compute). This flow targets crossbars, so the attribute is only read and printed back:
its `key = value` pairs are kept as text.
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


def names_platform(op: Operation) -> bool:
    """Whether `op` or an op nested in it carries a `#upmem.platform` (in any attribute, argument
    attributes included)."""

    def holds(attr: Attribute) -> bool:
        if isinstance(attr, PlatformAttr):
            return True
        if isinstance(attr, ArrayAttr):
            return any(holds(a) for a in attr.data)
        return isinstance(attr, DictionaryAttr) and any(holds(a) for a in attr.data.values())

    return any(holds(a) for o in op.walk() for a in (*o.attributes.values(), *o.properties.values()))


Upmem = Dialect("upmem", [], [PlatformAttr])
