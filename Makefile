# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl
export SDL_VIDEODRIVER ?= offscreen

RUN_DIR ?= runs/collect-cartpole-swingup

.PHONY: run test lint install clean

$(STAMP): pyproject.toml constraints.txt scripts/debian-packages.sh
	bash scripts/debian-packages.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/planetrl collect --task cartpole-swingup --episodes 4 --processes 2 \
		--outdir $(RUN_DIR) --gif

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache
