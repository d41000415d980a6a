# make demo: install what is missing, build, run the main job.
# make test: the same set-up, then the whole test suite.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench install clean

all: build

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/bin/hetccl-info
	$(BUILD)/bin/hetccl-perf allreduce -N 4 -b 1K -e 64M -f 4 -n 10 -w 2
	$(BUILD)/bin/hetccl-perf allreduce -N 4 --domains 2,2 -b 1K -e 64M -f 4 -n 10 -w 2

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build
	bash scripts/install-deps.sh --bench
	bash scripts/bench-host.sh $(BUILD)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
