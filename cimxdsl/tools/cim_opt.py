"""`cim-opt`: `xdsl-opt` with the cimxdsl dialects and passes registered."""

import argparse
import sys
from collections.abc import Callable, Sequence
from io import StringIO
from typing import IO, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.universe import Universe
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from cimxdsl.device.settings import did_you_mean
from cimxdsl.dialects import get_all_dialects, get_upstream_dialects
from cimxdsl.parsing import LocatingParser, locate_failure
from cimxdsl.printing import print_with_mlir_names
from cimxdsl.tools import pass_help
from cimxdsl.tools.cli import run_reporting_errors, version_line
from cimxdsl.transforms import ALIASES, PASS_NAMES, get_all_passes
from cimxdsl.transforms.common.stages import nothing_to_do


class PassesHelp:
    """An argument parser whose `-p` gets a short help (xDSL's names all ~150 passes on one line)."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser

    def add_argument(self, *names: str, **options):
        if "--passes" in names:
            options["help"] = "comma-separated passes, options as 'name{key=value ...}' (see --list-passes)"
        return self.parser.add_argument(*names, **options)

    def __getattr__(self, name: str):
        return getattr(self.parser, name)


class CimOptMain(xDSLOptMain):
    """All upstream dialects and passes, plus ours (also when cimxdsl is not installed).

    Verifier errors name the file, line and column of the op that fails. `--mlir-names` prints
    values and blocks named as MLIR's printer names them (`%arg0`, `%0`, `%c0_i32`, …).
    `--list-passes` and `--help-pass NAME` describe the passes; a pass of ours that finds nothing to
    do while the module holds ops an earlier pass would give it says so on stderr."""

    version_format = version_line("cim-opt")
    op_spans: dict[Operation, Span]
    line_offset: int = 0

    def register_all_dialects(self):
        dialects = {**Universe.get_multiverse().all_dialects, **get_all_dialects(), **get_upstream_dialects()}
        for name, factory in dialects.items():
            self.ctx.register_dialect(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(cast(argparse.ArgumentParser, PassesHelp(arg_parser)))
        arg_parser.add_argument(
            "--mlir-names",
            default=False,
            action="store_true",
            help="name values and blocks as MLIR's printer does (%%arg0, %%0, %%c0_i32, ...), not as the source",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=PrintAndExit,
            text=lambda _: pass_help.list_passes(PASS_NAMES, self.available_passes, ALIASES),
            help="list the passes (cimxdsl's first) with their descriptions and options, and exit",
        )
        arg_parser.add_argument(
            "--help-pass",
            metavar="NAME",
            action=PrintAndExit,
            nargs=1,
            text=self.help_pass,
            help="describe one pass and its options, and exit",
        )

    def help_pass(self, name: str) -> str:
        if name not in self.available_passes:
            raise ValueError(f"unknown pass '{name}'{did_you_mean(name, self.available_passes)}")
        return pass_help.help_pass(name, self.available_passes[name](), ALIASES.get(name))

    def setup_pipeline(self):
        names = [spec.name for spec in parse_pipeline(self.args.passes)]
        unknown = [name for name in names if name not in self.available_passes]
        if unknown:
            hint = did_you_mean(unknown[0], self.available_passes)
            raise ValueError(f"Unrecognized passes: {unknown}{hint}")
        super().setup_pipeline()
        verify = self.pipeline.callback

        def callback(previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
            if verify is not None:
                verify(previous, module, following)
            if following is not None and (note := nothing_to_do(following.name, module)):
                print(note, file=sys.stderr)

        self.pipeline = PassPipeline(self.pipeline.passes, callback)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if not self.args.mlir_names or self.args.target != "mlir":
            return super().output_resulting_program(prog)
        output = StringIO()
        print_with_mlir_names(
            prog,
            output,
            print_generic_format=self.args.print_op_generic,
            print_properties_as_attributes=self.args.print_no_properties,
            print_debuginfo=self.args.print_debuginfo,
        )
        output.write("\n")
        return output.getvalue()

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        text = chunk.read()
        if only_comments(text):
            return ModuleOp([])  # as mlir-opt: a chunk of comments (a split file's preamble) is an empty module
        parser = LocatingParser(self.ctx, text, self.get_input_name(), start_offset)
        self.op_spans, self.line_offset = parser.op_spans, start_offset
        return parser.parse_module(not self.args.no_implicit_module)

    def apply_passes(self, prog: ModuleOp):
        try:
            super().apply_passes(prog)
        except DiagnosticException as e:
            raise type(e)(f"{locate_failure(prog, self.op_spans, self.line_offset)}{e}") from e


class PrintAndExit(argparse.Action):
    """An option that prints `text(value)` and exits 0 (as `--help` does); a ValueError of `text` is
    the option's one-line error."""

    def __init__(self, *args, text: Callable[[str | None], str], nargs: int = 0, **kwargs):
        super().__init__(*args, nargs=nargs, **kwargs)
        self.text = text

    def __call__(self, parser: argparse.ArgumentParser, namespace, values, option_string=None) -> None:
        try:
            print(self.text(values[0] if values else None))
        except ValueError as e:
            parser.exit(1, f"cim-opt: error: {e}\n")
        parser.exit()


def only_comments(text: bytes) -> bool:
    """Whether MLIR text holds nothing but whitespace and `//` line comments."""
    return all(not line.strip() or line.lstrip().startswith(b"//") for line in text.splitlines())


def main(args: Sequence[str] | None = None) -> None:
    run_reporting_errors("cim-opt", lambda: CimOptMain(description="cimxdsl modular optimizer driver", args=args).run())


if __name__ == "__main__":
    main()
