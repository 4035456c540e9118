"""The RAPTOR/PIMCOMP-style flow: `cinm` products mapped to `spatial` computes on cores and
lowered to `pim` per-core instructions."""
