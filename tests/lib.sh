# SPDX-License-Identifier: MIT
# tests/lib.sh - the start-up and reporting shared by the e2e_*.sh scripts.
#
# Sourced at the top of each script:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   rp_init NAME [VAR...]     # e.g. rp_init e2e_basic RANKPROF PROGS RP_LIB
#
# Sourcing it sets `set -euo pipefail` (a script that takes each status
# itself says `set +e` after rp_init).  rp_init checks that each named environment
# variable is set (ctest sets RANKPROF, PROGS, RP_LIB, EXAMPLES, RP_SANITIZE;
# RANKPROF must be executable and RP_LIB must exist when named), makes the
# temporary directory $tmp (removed on exit, with whatever `at_exit` added)
# and sets $here (tests/) and $srcdir (the source tree).
#
#   note MSG...        a line "NAME: MSG" on stdout
#   fail MSG...        "NAME: FAIL: MSG" on stderr, then exit 1: outside a
#                      scenario it ends the script, inside one the scenario
#   need_progs P...    fail unless $PROGS/prog_P is executable for each P
#   need_tools T...    fail unless each command T is on PATH
#   missing TOOL WHY   a consumer is absent: a failure when
#                      RP_REQUIRE_CONSUMERS=1, else a noted skip that makes
#                      `finish` exit 77 (ctest SKIP) if nothing failed
#   sanitized          true under any sanitizer (RP_SANITIZE non-empty)
#   under_tsan         true under ThreadSanitizer
#   under_asan         true under AddressSanitizer
#   $TMO CMD...        CMD under `timeout -k 5 120` ($TMO unquoted: a
#                      plain command, so `$TMO cmd &` gives timeout's pid)
#   at_exit CMD        run CMD (a string, eval'ed) at exit, before $tmp goes
#
# Scenarios: `scenario NAME FUNC [ARG...]` runs FUNC in a subshell with
# `set -e`, so a failed check (fail, or a command failing) ends only that
# scenario; the others still run.  `finish` prints the summary and exits:
# 1 when any scenario failed ("e2e_basic: 2 of 11 scenarios failed:
# calltree, bad_command_line"), 77 when something was skipped by `missing`
# and none failed, else 0 (also in a script without scenarios).  A scenario's subshell keeps no variables: scenarios that feed
# later ones leave files in $tmp.  RP_SCENARIOS="a b" (a
# space-separated list) runs just the named scenarios, for debugging.

set -euo pipefail

RP_TEST=e2e
RP_SCENARIO=
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(dirname "$here")
# the tests' Python helpers (consumers/dense_rank.py ...) for every python3
export PYTHONPATH="$here/consumers${PYTHONPATH:+:$PYTHONPATH}"
_rp_exit_cmds=()
_rp_failed=()
_rp_ran=0
_rp_state=

_rp_who() {
    if [[ -n "$RP_SCENARIO" ]]; then
        printf '%s: %s' "$RP_TEST" "$RP_SCENARIO"
    else
        printf '%s' "$RP_TEST"
    fi
}

note() { echo "$(_rp_who): $*"; }

# Ends the script, or the scenario when called inside one (its subshell).
fail() {
    echo "$(_rp_who): FAIL: $*" >&2
    exit 1
}

_rp_cleanup() {
    local c
    for c in "${_rp_exit_cmds[@]}"; do
        eval "$c" || true
    done
    [[ -n "${tmp:-}" ]] && rm -rf "$tmp"
    [[ -n "$_rp_state" ]] && rm -rf "$_rp_state"
    return 0
}

at_exit() { _rp_exit_cmds+=("$1"); }

# rp_init NAME [VAR...]: fails (exit 1) when a variable is unset or names a
# missing command/library, or when no temporary directory can be made.
rp_init() {
    RP_TEST=$1
    shift
    local v
    for v in "$@"; do
        [[ -n "${!v:-}" ]] || fail "environment variable $v is not set (run through ctest)"
        case $v in
        RANKPROF) [[ -x "$RANKPROF" ]] || fail "RANKPROF=$RANKPROF is not an executable" ;;
        RP_LIB) [[ -f "$RP_LIB" ]] || fail "RP_LIB=$RP_LIB does not exist" ;;
        PROGS) [[ -d "$PROGS" ]] || fail "PROGS=$PROGS is not a directory" ;;
        esac
    done
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rp_${RP_TEST#e2e_}.XXXXXX") || fail "mktemp failed"
    _rp_state=$(mktemp -d "${TMPDIR:-/tmp}/rp_state.XXXXXX") || fail "mktemp failed"
    trap _rp_cleanup EXIT
    _rp_direct_python
}

# A python3 that is a version manager's shim (pyenv's is a shell script
# that runs a few more programs to pick the version) costs about 0.3 s a
# call, ten times the interpreter's start, and the tests call it hundreds
# of times: put the interpreter it resolves to first in PATH, for this
# script and every program it starts.
_rp_direct_python() {
    local sh py
    sh=$(command -v python3) || return 0
    py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || return 0
    [[ -x "$py" && "$(readlink -f "$sh")" != "$(readlink -f "$py")" ]] || return 0
    mkdir -p "$_rp_state/bin" && ln -s "$py" "$_rp_state/bin/python3" || return 0
    PATH="$_rp_state/bin:$PATH"
}

need_progs() {
    local p
    for p in "$@"; do
        [[ -x "$PROGS/prog_$p" ]] || fail "$PROGS/prog_$p is missing"
    done
}

need_tools() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null || fail "$t is needed"
    done
}

missing() { # missing TOOL WHY: a consumer is absent
    if [[ "${RP_REQUIRE_CONSUMERS:-0}" == 1 ]]; then
        fail "consumer $1 is missing ($2) and RP_REQUIRE_CONSUMERS=1"
    fi
    note "SKIP $1 checks: $2"
    echo "$1" >>"$_rp_state/skipped"
}

# tp_query_build OUT: builds tests/consumers/tp_query.cc, a query tool over
# the trace_processor library chromium-shell ships ($TP_LIB), into OUT.
# Returns 1, building nothing, when the library, clang++ or libc++ is
# missing (the caller says so with `missing`); fails the test when it does
# not build.
TP_LIB=/usr/lib/chromium/libtest_trace_processor.so
tp_query_build() {
    local libcxx
    libcxx=$(ls -d /usr/lib/llvm-*/include/c++/v1 2>/dev/null | head -1 || true)
    [[ -f $TP_LIB ]] && command -v clang++ >/dev/null && [[ -n $libcxx ]] || return 1
    # the library carries its own libc++ (std::__1): see tp_query.cc
    clang++ -std=c++17 -O1 -stdlib=libc++ -nostdlib++ "$here/consumers/tp_query.cc" -o "$1" \
        -L"$(dirname "$TP_LIB")" -ltest_trace_processor -Wl,-rpath,"$(dirname "$TP_LIB")" ||
        fail "building tests/consumers/tp_query.cc"
}

sanitized() { [[ -n "${RP_SANITIZE:-}" ]]; }
under_tsan() { [[ "${RP_SANITIZE:-}" == *thread* ]]; }
under_asan() { [[ "${RP_SANITIZE:-}" == *address* ]]; }

TMO="timeout -k 5 120"

# scenario NAME FUNC [ARG...]: runs FUNC in a subshell under set -e; never
# fails itself (a failure is recorded for `finish`).
scenario() {
    local name=$1
    shift
    if [[ -n "${RP_SCENARIOS:-}" && " $RP_SCENARIOS " != *" $name "* ]]; then
        return 0
    fi
    local had_e=0 rc t0=$SECONDS
    [[ $- == *e* ]] && had_e=1
    _rp_ran=$((_rp_ran + 1))
    set +e
    (
        set -eE
        RP_SCENARIO=$name
        _rp_level=$BASH_SUBSHELL
        # the command that ends the scenario under set -e, named once (not
        # in a set +e stretch, not again from inside a $(...))
        trap '_rp_rc=$?; [[ $- == *e* && $BASH_SUBSHELL == "$_rp_level" ]] &&
            echo "$(_rp_who): FAIL: line $LINENO: \"${BASH_COMMAND%%$'"'\\n'"'*}\" exited $_rp_rc" >&2' ERR
        "$@"
    )
    rc=$?
    ((had_e)) && set -e
    if ((rc == 0)); then
        echo "$RP_TEST: $name: ok ($((SECONDS - t0)) s)"
    else
        echo "$RP_TEST: $name: FAILED (exit $rc)" >&2
        _rp_failed+=("$name")
    fi
    return 0
}

# finish: the summary line and the script's exit status (see above); in a
# script without scenarios, 77 when `missing` skipped something, else 0.
finish() {
    local skipped=()
    [[ -f "$_rp_state/skipped" ]] && mapfile -t skipped <"$_rp_state/skipped"
    if ((${#_rp_failed[@]})); then
        local IFS=,
        local list="${_rp_failed[*]}"
        echo "$RP_TEST: ${#_rp_failed[@]} of $_rp_ran scenarios failed: ${list//,/, }" >&2
        exit 1
    fi
    local what="all $_rp_ran scenarios passed"
    ((_rp_ran)) || what="all checks passed"
    if ((${#skipped[@]})); then
        echo "$RP_TEST: $what, but skipped (consumers missing): ${skipped[*]}"
        exit 77
    fi
    echo "$RP_TEST: $what"
    exit 0
}
