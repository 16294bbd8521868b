# SPDX-License-Identifier: MIT
# server.sh - sourced by the tests that drive tests/progs/server.c (e2e_ctl,
# e2e_top) after lib.sh's rp_init: a client and a server started under
# `rankprof record`.
#
#   $tmp/client.py PORT N [quit]  N requests on one connection, then
#                                 (quit) asks the server to exit
#   req N [quit]                  the client against the server started last
#   start_server NAME [OPTIONS]   `rankprof record OPTIONS -o $tmp/NAME.rp`
#                                 of prog_server; sets pid, port and rec
#                                 (record's pid); the server is killed when
#                                 the test exits, whatever happened

cat >"$tmp/client.py" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rw")
for _ in range(n):
    f.write("req\n"); f.flush()
    if f.readline() != "ok\n":
        sys.exit("no answer")
if sys.argv[3:] == ["quit"]:
    f.write("quit\n"); f.flush()
PY

req() { python3 "$tmp/client.py" "$port" "$@" || fail "client: $*"; }

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
