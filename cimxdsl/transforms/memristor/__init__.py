"""The Cinnamon-style flow: `cinm` products tiled, lowered to `cim` and `memristor` ops,
scheduled on a device's crossbars, then lowered to runtime calls."""
