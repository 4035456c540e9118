"""The importers of ONNX ops, by op type.

A handler is one function, registered with a decorator where it is defined:

    @importer("Relu")
    def import_relu(im: OnnxImporter, node, attrs) -> list[SSAValue]: ...

It gets the importer (whose helpers read inputs and build ops), the node and its checked, defaulted
attributes (`NodeAttributes`). The float import (`onnx_importer.py`, handlers in `ops/`) and the
integer import for the PIM target (`integer.py`) each have one table; an op a table lacks is a
one-line error naming the op and the node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

Handler = Callable[..., Any]
"""`(importer, node, attributes) -> results`, as the table's importer defines them."""

H = TypeVar("H", bound=Handler)


class Importers:
    """A table of handlers by ONNX op type; each op type is registered once."""

    def __init__(self, name: str):
        self.name = name
        self.handlers: dict[str, Handler] = {}

    def __call__(self, *op_types: str) -> Callable[[H], H]:
        """A decorator registering the function as the handler of `op_types`."""

        def register(handler: H) -> H:
            for op_type in op_types:
                self.register(op_type, handler)
            return handler

        return register

    def register(self, op_type: str, handler: Handler) -> None:
        if op_type in self.handlers:
            raise ValueError(f"the {self.name} import registers ONNX op '{op_type}' twice")
        self.handlers[op_type] = handler

    def get(self, op_type: str) -> Handler | None:
        return self.handlers.get(op_type)

    def __contains__(self, op_type: str) -> bool:
        return op_type in self.handlers

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.handlers))

    def __len__(self) -> int:
        return len(self.handlers)


importer = Importers("float")
"""The float import's handlers (`frontend/ops/`)."""

integer_importer = Importers("integer (PIM)")
"""The integer import's handlers (`frontend/integer.py`)."""
