# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl
export SDL_VIDEODRIVER ?= offscreen

LOGDIR ?= runs/cartpole-swingup

.PHONY: run test lint install clean

$(STAMP): pyproject.toml constraints.txt scripts/debian-packages.sh
	bash scripts/debian-packages.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all]"
	touch $(STAMP)

install: $(STAMP)

# The main job: PlaNet on cartpole-swingup from pixels, sized for a 2-core CPU (about 80 minutes with
# native bf16; longer on an AVX2 CPU in fp32, where batch 8 took 1.8 to 2.7 hours: README).
# Running it again resumes; the logs and videos are printed at the end.
run: $(STAMP)
	$(BIN)/planetrl train --task cartpole-swingup --preset cpu --logdir $(LOGDIR)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/lint-imports

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache
