"""Passes and helpers both flows share: the entry lowering `linalg-to-cinm`, the pass contract
(options, errors, the device option, the pipeline base) and the stage table."""
