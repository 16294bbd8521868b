# SPDX-License-Identifier: MIT
"""protobuf.py - reading protocol buffers' wire format in the tests, an
independent decoder for the pprof and perfetto exports (and the trace
format's varints, which are the same LEB128)."""


def varint(b, i):
    """The unsigned varint at b[i:] and the offset after it.  Raises
    IndexError when b ends inside it."""
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i
