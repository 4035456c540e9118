# Set-up and entry points. `make demo` and `make test` work on a fresh machine with Python >= 3.11.
VENV ?= .venv
PYTHON ?= python3
BIN = $(VENV)/bin

.PHONY: setup demo demo-vit demo-bnn test lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@

demo: setup
	$(BIN)/cim-compile examples/digits_cnn.onnx --device cinnamon --calibrate examples/digits_train.npz --dataset examples/digits_test.npz

demo-vit: setup
	for placement in host crossbar auto; do $(BIN)/cim-compile examples/digits_vit.onnx --device cinnamon --calibrate examples/digits_train.npz --dataset examples/digits_test.npz --placement $$placement || exit 1; done

demo-bnn: setup
	for device in pair reference; do $(BIN)/cim-compile examples/digits_bnn.onnx --device examples/devices/binary/$$device.toml --calibrate examples/digits_train.npz --dataset examples/digits_test.npz || exit 1; done
	$(BIN)/cim-compile examples/digits_tnn.onnx --device examples/devices/binary/pair.toml --calibrate examples/digits_train.npz --dataset examples/digits_test.npz

test: setup
	$(BIN)/pytest

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
