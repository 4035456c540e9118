"""What `cim-opt --list-passes` and `--help-pass NAME` print, read from the pass classes: the
docstring's first sentence (or all of it), and the options: the dataclass fields of the pass with
their types, defaults and the docstrings written under them."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xdsl.passes import ModulePass


@dataclass(frozen=True)
class PassOption:
    name: str
    type: str
    default: str | None
    """the default as the pipeline text writes it; None when the option is required"""
    doc: str = ""

    def __str__(self) -> str:
        default = "required" if self.default is None else f"default {self.default}"
        return f"{self.name}: {self.type} ({default})"


def description(cls: type[ModulePass]) -> str:
    """The pass's docstring without its indentation ('' when it has none: a dataclass without one
    gets its signature as docstring)."""
    doc = cls.__doc__ or ""
    return "" if doc.startswith(f"{cls.__name__}(") else inspect.cleandoc(doc)


def summary(cls: type[ModulePass], width: int = 100) -> str:
    """The docstring's first sentence (up to its first `;`), on one line of at most `width` characters."""
    paragraph = " ".join(description(cls).split("\n\n")[0].split())
    ends = [i for i in (paragraph.find(". "), paragraph.find("; ")) if i >= 0]
    sentence = paragraph[: min(ends) + 1].rstrip(";") if ends else paragraph
    return textwrap.shorten(sentence, width, placeholder=" …")


def type_name(hint: object) -> str:
    if isinstance(hint, type):
        return hint.__name__
    if typing.get_origin(hint) is typing.Literal:
        return " | ".join(map(str, typing.get_args(hint)))
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def spec_text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"' if not value or not value.replace("-", "").replace("_", "").isalnum() else value
    return "none" if value is None else str(value)


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under the class's annotated fields, through its bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, body[1:], strict=False):
            documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and documented:
                docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


def options(cls: type[ModulePass]) -> list[PassOption]:
    """The options of a pass: its dataclass fields that the pipeline text can set."""
    if not dataclasses.is_dataclass(cls):
        return []
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):
        hints = {}
    docs = field_docs(cls)
    found = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            default = spec_text(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = spec_text(f.default_factory())
        else:
            default = None
        found.append(PassOption(f.name, type_name(hints.get(f.name, f.type)), default, docs.get(f.name, "")))
    return found


def list_passes(ours: Iterable[str], passes: dict[str, Callable[[], type[ModulePass]]], aliases: dict[str, str]) -> str:
    """Our passes (with their options), Cinnamon's names for them, then every other pass."""
    ours = list(ours)
    lines = ["cimxdsl passes:"]
    for name in ours:
        cls = passes[name]()
        lines.append(f"  {name:<22} {summary(cls)}")
        lines += [f"  {'':<24}{option}" for option in options(cls)]
    lines.append("")
    lines.append("Cinnamon's pass names (aliases):")
    lines += [f"  {alias:<30} = {name}" for alias, name in aliases.items()]
    lines.append("")
    lines.append("xDSL passes:")
    for name in sorted(set(passes) - set(ours) - set(aliases)):
        lines.append(f"  {name:<30} {summary(passes[name]())}".rstrip())
    lines.append("")
    lines.append("`cim-opt --help-pass NAME` describes one pass; `-p 'name{option=value ...}'` sets options.")
    return "\n".join(lines)


def help_pass(name: str, cls: type[ModulePass], alias_of: str | None = None) -> str:
    """The pass's whole docstring and every option with its type, default and docstring."""
    title = f"{name} (Cinnamon's name for {alias_of})" if alias_of else name
    doc = description(cls) if not alias_of else description(cls.__mro__[1])
    lines = [title, "", doc or "(no description)"]
    found = options(cls)
    if found:
        lines += ["", "options:"]
        for option in found:
            lines.append(f"  {option}")
            if option.doc:
                lines += textwrap.wrap(option.doc, 96, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)
