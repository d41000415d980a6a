# make demo: install what is missing, build, run the main job.
# make test: the same set-up, then the whole test suite.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# The demo builds on its own, quietly (scripts/demo.sh keeps the log).
demo: deps
	@CMAKE_FLAGS="$(CMAKE_FLAGS)" bash scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build
	bash scripts/install-deps.sh --bench
	bash scripts/bench-host.sh --build $(BUILD)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
