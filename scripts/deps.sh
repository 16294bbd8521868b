#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deps.sh - installs the Debian packages rankprof needs to build and test,
# when they are missing.  Usage: scripts/deps.sh [build|test|ci]
#   build: compiler, cmake, ninja, pkg-config, elfutils' libdw/libelf, zlib,
#          libdeflate, ncurses, libotf2 (the OTF2 export; a build without it
#          says the format is unavailable)
#   test:  + python3 (the tests check JSON/CSV with python's parsers), g++
#          and clang++ (tests/progs/cxx: exceptions from both compilers),
#          Open MPI and otf2-tools (tests/e2e_mpi.sh)
#   ci:    what CI needs beyond test: the third-party consumers the tests
#          read outputs back with: plantuml, chromium and npm, Perfetto's
#          trace_processor (chromium-shell), valgrind, golang-go, flamegraph.pl
#          (libdevel-nytprof-perl) for tests/e2e_export.sh, and
#          @mermaid-js/mermaid-cli from npm (driven by that chromium, no
#          browser download) in ~/.cache/rankprof-npm (tests/e2e_seq.sh),
#          gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm
#          (tests/e2e_firmware.sh, make firmware-demo)
#   bench: + the peers of `make bench`: uftrace, binutils (gprof), valgrind
#          (callgrind), and g++ with libcapstone-dev to build Tracy's capture
#          tool (scripts/bench.sh builds it in /tmp from a Tracy checkout)
# Installs with apt-get as root, or through sudo -n; otherwise prints the
# command to run and fails.
set -euo pipefail
level=${1:-build}

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

have_cmd cc || need+=(gcc)
have_cmd make || need+=(make)
have_cmd cmake || need+=(cmake)
have_cmd ninja || need+=(ninja-build)
have_cmd pkg-config || need+=(pkg-config)
have_pkg libdw-dev || need+=(libdw-dev)
have_pkg libelf-dev || need+=(libelf-dev)
have_pkg zlib1g-dev || need+=(zlib1g-dev) # pprof exports are gzipped
have_pkg libdeflate-dev || need+=(libdeflate-dev) # the analyzer's chunk CRC
have_pkg libncurses-dev || need+=(libncurses-dev) # rankprof tui
have_pkg libotf2-trace-dev || need+=(libotf2-trace-dev) # export --format otf2 (optional)
if [ "$level" != build ]; then
  have_cmd python3 || need+=(python3)
  [ -x /usr/bin/time ] || need+=(time) # e2e_stress: peak RSS of record and report
  # e2e_unwind: C++ exceptions built by each compiler (g++ runs the exit
  # hooks while unwinding, clang++ does not)
  have_cmd g++ || need+=(g++)
  have_cmd clang++ || need+=(clang)
  have_cmd tmux || need+=(tmux) # e2e_tui drives the terminal browser
  # e2e_mpi: an MPI job under mpirun, its OTF2 export read by otf2-print
  have_cmd mpirun || need+=(openmpi-bin)
  have_cmd mpicc || need+=(libopenmpi-dev)
  have_cmd otf2-print || need+=(otf2-tools)
fi
if [ "$level" = ci ]; then
  have_cmd clang || need+=(clang) # the fuzzer (tests/fuzz, scripts/fuzz.sh)
  have_pkg libclang-rt-14-dev || need+=(libclang-rt-14-dev)
  have_cmd plantuml || need+=(plantuml)
  have_cmd chromium || need+=(chromium)
  have_cmd npm || need+=(npm)
  # tests/e2e_export.sh's consumers: Perfetto's trace_processor (chromium-shell ships
  # it as a library; tests/consumers/tp_query.cc is built with clang++ and libc++),
  # callgrind_annotate, go tool pprof, Brendan Gregg's flamegraph.pl
  [ -f /usr/lib/chromium/libtest_trace_processor.so ] || need+=(chromium-shell)
  have_pkg libc++-dev || need+=(libc++-dev)
  have_cmd callgrind_annotate || need+=(valgrind)
  have_cmd go || need+=(golang-go)
  [ -f /usr/share/perl5/Devel/NYTProf/flamegraph.pl ] || need+=(libdevel-nytprof-perl)
  # tests/e2e_firmware.sh: the example built for Cortex-M3, run under QEMU
  have_cmd arm-none-eabi-gcc || need+=(gcc-arm-none-eabi)
  have_pkg libnewlib-arm-none-eabi || need+=(libnewlib-arm-none-eabi)
  have_cmd qemu-system-arm || need+=(qemu-system-arm)
fi
# Mermaid's command line, from npm, outside the repository.
ci_npm() {
  local dir="$HOME/.cache/rankprof-npm"
  [ "$level" = ci ] && [ ! -x "$dir/node_modules/.bin/mmdc" ] || return 0
  mkdir -p "$dir"
  (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error \
    @mermaid-js/mermaid-cli@11 >/dev/null)
}
if [ "$level" = bench ]; then
  have_cmd uftrace || need+=(uftrace)
  have_cmd gprof || need+=(binutils)
  have_cmd valgrind || need+=(valgrind)
  have_cmd g++ || need+=(g++)
  have_pkg libcapstone-dev || need+=(libcapstone-dev)
  [ -x /usr/bin/time ] || need+=(time) # the analyzer's peak RSS
  have_cmd clang || need+=(clang) # the real program built after inlining
  have_cmd git || need+=(git)     # the real program's source (a shallow clone)
fi

[ ${#need[@]} -eq 0 ] && { ci_npm; exit 0; }
echo "rankprof: installing missing packages: ${need[*]}" >&2
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif have_cmd sudo && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "rankprof: please install: apt-get install ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq || true
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
ci_npm
