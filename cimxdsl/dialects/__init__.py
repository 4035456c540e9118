"""The cimxdsl dialects: cinm, cim, memristor (Cinnamon flow) and spat, pim (RAPTOR flow); and the
upstream dialects with the ops MLIR has and xDSL 0.74 lacks (`upstream.py`)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Lazy factories for every cimxdsl dialect, keyed by dialect name."""

    def get_cinm():
        from cimxdsl.dialects.cinm import Cinm

        return Cinm

    def get_cim():
        from cimxdsl.dialects.cim import Cim

        return Cim

    def get_memristor():
        from cimxdsl.dialects.memristor import Memristor

        return Memristor

    def get_spat():
        from cimxdsl.dialects.spatial import Spatial

        return Spatial

    def get_pim():
        from cimxdsl.dialects.pim import Pim

        return Pim

    def get_upmem():
        from cimxdsl.dialects.upmem import Upmem

        return Upmem

    return {
        "cinm": get_cinm,
        "cim": get_cim,
        "memristor": get_memristor,
        "spat": get_spat,
        "pim": get_pim,
        "upmem": get_upmem,
    }


def get_upstream_dialects() -> dict[str, Callable[[], Dialect]]:
    """Lazy factories for the upstream dialects cimxdsl registers in place of xDSL's (`upstream.py`)."""

    def factory(name: str) -> Callable[[], Dialect]:
        def load() -> Dialect:
            from cimxdsl.dialects import upstream

            return getattr(upstream, name)

        return load

    return {
        "memref": factory("MemRef"),
        "bufferization": factory("Bufferization"),
        "linalg": factory("Linalg"),
        "tensor": factory("Tensor"),
    }
