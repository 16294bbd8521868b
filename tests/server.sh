# SPDX-License-Identifier: MIT
# server.sh - sourced by the tests that drive tests/progs/server.c (e2e_ctl,
# e2e_top) after lib.sh's rp_init: a client and a server started under
# `rankprof record`.
#
#   req N [quit]                  tests/progs/client.py against the server
#                                 started last: N requests, then (quit) its end
#   start_server NAME [OPTIONS]   `rankprof record OPTIONS -o $tmp/NAME.rp`
#                                 of prog_server; sets pid, port and rec
#                                 (record's pid); the server is killed when
#                                 the test exits, whatever happened

client=$(dirname "${BASH_SOURCE[0]}")/progs/client.py
req() { python3 "$client" "$port" "$@" || fail "client: $*"; }

start_server() { # NAME [record options]: sets pid, port, rec
    local name=$1
    shift
    "$RANKPROF" record "$@" -o "$tmp/$name.rp" -- "$PROGS/prog_server" >"$tmp/$name.out" 2>&1 &
    rec=$!
    local i
    for i in $(seq 100); do
        grep -q "^pid" "$tmp/$name.out" 2>/dev/null && break
        sleep 0.1
    done
    pid=$(awk '/^pid/ {print $2}' "$tmp/$name.out")
    port=$(awk '/^pid/ {print $4}' "$tmp/$name.out")
    [[ -n $pid && -n $port ]] || fail "$name: the server did not start: $(cat "$tmp/$name.out")"
    at_exit "kill $pid 2>/dev/null" # (a failed scenario leaves no server)
}
