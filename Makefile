# latte: the commands a newcomer needs. Everything else is CMake (see CMakeLists.txt).
#   make            build (Release) into build/
#   make test       every test that can run on this machine (GPU tests skip without a GPU)
#   make demo       the main job: the MLA layer at the reference shapes (GPU) or a small CPU case
#   make bench      latte-bench: ceilings + operations + peers, JSON into bench/results/
#   make gpu-test   the GPU suite only; fails when there is no GPU
#   make install PREFIX=/usr/local
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PYTHON ?= python3
# PYTEST=0 skips the Python tests (the sanitizer build: a python process would need LD_PRELOAD=libasan)
PYTEST ?= 1

.PHONY: all configure test demo bench gpu-test install clean pytest
all: configure
	cmake --build $(BUILD) -j $(JOBS)

configure:
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory pytest

# Python tests run on the CPU backend where NumPy and ml_dtypes are importable (.ci/run installs them).
pytest: all
	@if [ "$(PYTEST)" = 0 ]; then echo "pytest: skipped (PYTEST=0)"; \
	elif [ -d python/tests ] && $(PYTHON) -c "import numpy, ml_dtypes, pytest" 2>/dev/null; then \
	  LATTE_LIBRARY=$(abspath $(BUILD))/liblatte.so PYTHONPATH=$(abspath python) $(PYTHON) -m pytest -q python/tests; \
	else echo "pytest: skipped (python/tests missing, or numpy/ml_dtypes/pytest not importable)"; fi

demo: all
	$(BUILD)/examples/latte-demo

bench: all
	$(BUILD)/bench/latte-bench --json bench/results/latest.json

gpu-test: all
	cd $(BUILD) && LATTE_REQUIRE_GPU=1 ctest --output-on-failure -L gpu

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
