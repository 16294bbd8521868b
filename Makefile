# SPDX-License-Identifier: MIT
# rankprof - the two commands of the README, and a few more.
#
#   make demo    build everything (installing missing Debian packages),
#                profile the bundled firmware example, show the ranked report
#   make firmware-demo  the same example built for Cortex-M3, run under QEMU
#                with the bare-metal recorder, reported on the host
#   make test    build and run every test through ctest
#   make bench   the benchmarks of bench/ (side by side with the peers)
#   make asan    the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make tsan    the tests under ThreadSanitizer (but those labelled serial:
#                tests/CMakeLists.txt says why)
#   make install PREFIX=/usr/local
BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
GEN := $(shell command -v ninja >/dev/null 2>&1 && echo -G Ninja)

.PHONY: all deps test-deps demo firmware-demo test bench asan tsan install clean

all: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/deps.sh build

test-deps:
	@scripts/deps.sh test

demo: all
	@scripts/demo.sh $(BUILD)

firmware-demo: all
	@scripts/firmware-demo.sh $(BUILD)

test: test-deps all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

bench: all
	@scripts/deps.sh bench
	@scripts/bench.sh $(BUILD)

asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan CMAKE_FLAGS="-DRP_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug"

tsan:
	@$(MAKE) --no-print-directory test BUILD=build-tsan CTEST_FLAGS="-LE serial" CMAKE_FLAGS="-DRP_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo"

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-tsan
