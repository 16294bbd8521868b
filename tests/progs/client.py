# SPDX-License-Identifier: MIT
# client.py - the client of tests/progs/server.c, for the tests that drive
# it (tests/server.sh) and the bench (scripts/bench.sh, its service section).
#
#   python3 client.py PORT N [quit]   N requests on one connection, each
#                                     waiting for its "ok"; then (quit)
#                                     asks the server to exit
# Exits non-zero when an answer is missing.
import socket
import sys

port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rw")
for _ in range(n):
    f.write("req\n")
    f.flush()
    if f.readline() != "ok\n":
        sys.exit("no answer")
if sys.argv[3:] == ["quit"]:
    f.write("quit\n")
    f.flush()
