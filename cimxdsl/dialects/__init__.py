"""The cimxdsl dialects: cinm, cim, memristor (Cinnamon flow) and spat, pim (RAPTOR flow)."""

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

    return {
        "cinm": get_cinm,
        "cim": get_cim,
        "memristor": get_memristor,
        "spat": get_spat,
        "pim": get_pim,
    }
