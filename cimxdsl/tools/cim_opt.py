"""`cim-opt`: `xdsl-opt` with the cimxdsl dialects and passes registered."""

import argparse
from collections.abc import Sequence
from io import StringIO
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException
from xdsl.universe import Universe
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from cimxdsl.dialects import get_all_dialects, get_upstream_dialects
from cimxdsl.parsing import LocatingParser, locate_failure
from cimxdsl.printing import print_with_mlir_names
from cimxdsl.tools.cli import run_reporting_errors
from cimxdsl.transforms import get_all_passes


class CimOptMain(xDSLOptMain):
    """All upstream dialects and passes, plus ours (also when cimxdsl is not installed).

    Verifier errors name the file, line and column of the op that fails. `--mlir-names` prints
    values and blocks named as MLIR's printer names them (`%arg0`, `%0`, `%c0_i32`, …)."""

    version_format = "cim-opt built from xdsl version {xdsl_version}"
    op_spans: dict[Operation, Span]
    line_offset: int = 0

    def register_all_dialects(self):
        dialects = {**Universe.get_multiverse().all_dialects, **get_all_dialects(), **get_upstream_dialects()}
        for name, factory in dialects.items():
            self.ctx.register_dialect(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--mlir-names",
            default=False,
            action="store_true",
            help="name values and blocks as MLIR's printer does (%%arg0, %%0, %%c0_i32, ...), not as the source",
        )

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


def only_comments(text: bytes) -> bool:
    """Whether MLIR text holds nothing but whitespace and `//` line comments."""
    return all(not line.strip() or line.lstrip().startswith(b"//") for line in text.splitlines())


def main(args: Sequence[str] | None = None) -> None:
    run_reporting_errors("cim-opt", lambda: CimOptMain(description="cimxdsl modular optimizer driver", args=args).run())


if __name__ == "__main__":
    main()
