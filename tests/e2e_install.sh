#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_install.sh - `cmake --install` gives a usable package: a program built
# against it with pkg-config, and one with find_package(rankprof), link the
# recorder, run, and write a trace that rankprof reads; the man pages are
# installed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_install RANKPROF
build=$(dirname "$RANKPROF")
src=$(cd "$(dirname "$0")/.." && pwd)

# where the library went (the lib directory of the prefix)
libdir() { dirname "$(find "$tmp/prefix" -name librankprof.so -print -quit)"; }

install_prefix() {
    cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || fail "cmake --install"
    [ -f "$tmp/prefix/include/rankprof.h" ] || fail "rankprof.h not installed"
    local page
    for page in rankprof rankprof-report rankprof-diff; do
        [ -f "$tmp/prefix/share/man/man1/$page.1" ] || fail "man page $page.1 not installed"
    done
}

# a program built with pkg-config links the recorder, runs and is recorded
pkg_config() {
    libdir=$(libdir)
    cat > "$tmp/app.c" <<'C'
#include <rankprof.h>
#include <stdio.h>
int twice(int x) { return 2 * x; }
int main(void) { int s = 0; for (int i = 0; i < 10; i++) s += twice(i);
  int rc = rp_flush(); printf("%d %s\n", s, rp_strerror(rc)); return rc != 0; }
C
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    cc -O1 -finstrument-functions -o "$tmp/app" "$tmp/app.c" $(pkg-config --cflags --libs rankprof) \
      -Wl,-rpath,"$libdir" -fno-sanitize=all || fail "build with pkg-config"
    # a sanitized build of the recorder needs its sanitizer runtime loaded first
    san=$(ldd "$libdir/librankprof.so" | awk '/lib[at]san/ {print $3; exit}')
    (cd "$tmp" && LD_PRELOAD="$san" RANKPROF_OUTPUT="$tmp/app.data" ./app) | grep -q '^90 success$' || fail "app run"
    "$RANKPROF" report -i "$tmp/app.data" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
n = {x["name"]: x["calls"] for x in r["nodes"]}
sys.exit(0 if n.get("twice") == 10 and n.get("main") == 1 else 1)' || fail "pkg-config app: counts"
}

# the same program built with CMake's find_package(rankprof)
find_package() {
    mkdir -p "$tmp/cm"
    cat > "$tmp/cm/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(rankprof REQUIRED)
add_executable(app ../app.c)
target_link_libraries(app PRIVATE rankprof::rankprof_rt)
C
    cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null || fail "find_package"
    cmake --build "$tmp/cm/b" >/dev/null || fail "build with find_package"
}

scenario install install_prefix
scenario pkg_config pkg_config
scenario find_package find_package
finish
