"""The compile flows, each in one call: the passes of `cimxdsl.transforms` run in order, then what
the back end (`cimxdsl.backend`) reads from their IR. `pim`: `compile_to_pim`."""
