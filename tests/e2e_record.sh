#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_record.sh - `rankprof record` tells the truth about its output: it
# exits non-zero and says why when it recorded nothing or not everything,
# and never reports a stale file as written.
#   - a missing directory, an output that is a FIFO: refused before the
#     program runs (no hang); a symbolic link: refused, --force follows it;
#   - an older trace at the name: replaced by a new file (truncated in
#     place through a symbolic link or when it has another link);
#   - a static program (nothing can be preloaded), with no file and with an
#     older trace in place: "was not written", the stale file untouched;
#   - a full disk (a 64 KiB tmpfs, when root): "incomplete", exit 1;
#   - a file-size limit (ulimit -f 64): the same, and the program, which
#     SIGXFSZ would end, runs to its end;
#   - -i naming a FIFO: refused at once;
#   - the -finstrument-functions hint only for a program without the hooks.
# Run by ctest with RANKPROF, PROGS, RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_record RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"
mnt=""
at_exit '[[ -n "$mnt" ]] && umount "$mnt" 2>/dev/null || true'
cd "$tmp"
T="$PROGS/prog_tiny"

expect() { # expect RC PATTERN -- command...: exit status and a message
    local want=$1 pat=$2 rc=0
    shift 3
    timeout 60 "$@" >out.txt 2>err.txt || rc=$?
    [[ $rc -eq $want ]] || fail "$* exited $rc, expected $want: $(cat err.txt)"
    grep -q -- "$pat" err.txt || fail "$*: no message matching '$pat': $(cat err.txt)"
}

# the ordinary case: written, complete, exit 0
scenario ordinary expect 0 "wrote ok.data" -- "$RANKPROF" record -o ok.data -- "$T"

# a missing directory: refused before the program runs
nodir() {
    expect 1 "cannot create nodir/x.data: directory" -- "$RANKPROF" record -o nodir/x.data -- "$T"
    if grep -q "fib" out.txt; then fail "the program ran although its output could not be created"; fi
}
scenario nodir nodir

# a symbolic link: refused; --force writes through it
symlink() {
    ln -s target.data link.data
    expect 1 "is a symbolic link" -- "$RANKPROF" record -o link.data -- "$T"
    if [[ -e target.data ]]; then fail "the trace was written through the symbolic link"; fi
    expect 0 "wrote link.data" -- "$RANKPROF" record --force -o link.data -- "$T"
    [[ -s target.data ]] || fail "--force did not write through the link"
}
scenario symlink symlink

# an older trace at the name: replaced by a new file (not truncated, which
# makes the file system write the new trace back at its close), the old
# one's inode left to whoever else has it; through a symbolic link (--force)
# and with a second hard link the file is truncated in place instead
replace() {
    expect 0 "wrote again.data" -- "$RANKPROF" record -o again.data -- "$T"
    ln again.data kept.data
    local ino
    ino=$(stat -c %i kept.data)
    expect 0 "wrote again.data" -- "$RANKPROF" record -o again.data -- "$T"
    [[ $(stat -c %i kept.data) == "$ino" && $(stat -c %h kept.data) == 2 ]] ||
        fail "a trace with two links was not truncated in place"
    rm kept.data
    expect 0 "wrote again.data" -- "$RANKPROF" record -o again.data -- "$T"
    [[ $(stat -c %i again.data) != "$ino" ]] || fail "the older trace was truncated, not replaced"
    "$RANKPROF" report -i again.data >rep.txt 2>&1 || fail "the new trace does not read: $(cat rep.txt)"
    grep -q fib rep.txt || fail "the new trace has no fib: $(cat rep.txt)"
    [[ $(find . -maxdepth 1 -name 'again.data*' | wc -l) == 1 ]] || fail "files left beside it: $(ls)"
    # neither a forked child that lives on (a daemon) nor its parent keeps
    # the replaced file open, which would keep its blocks taken, also when
    # they record nothing for a long time (only points recorded: none here)
    RANKPROF_FLUSH_MS=50 timeout 60 "$RANKPROF" record --classes point -o again.data -- \
        "$PROGS/prog_endings" forkwait 1000 >fw.out 2>fw.err &
    local rec=$! pid= parent held
    for _ in $(seq 600); do
        pid=$(sed -n 's/^done \([0-9]*\)$/\1/p' fw.out 2>/dev/null || true)
        [[ -n $pid ]] && break
        sleep 0.1
    done
    [[ -n $pid ]] || { kill $rec 2>/dev/null; fail "forkwait: the child never said done"; }
    parent=$(awk '{print $4}' "/proc/$pid/stat")
    held=$(ls -l "/proc/$pid/fd" "/proc/$parent/fd" 2>/dev/null | grep -c "again.data (deleted)" || true)
    kill -KILL "$pid"
    wait $rec || true
    [[ $held == 0 ]] || fail "the replaced trace is still open in the parent or its child"
    ln -s again.data link2.data
    ino=$(stat -c %i again.data)
    expect 0 "wrote link2.data" -- "$RANKPROF" record --force -o link2.data -- "$T"
    [[ -L link2.data && $(stat -c %i again.data) == "$ino" ]] ||
        fail "recording through a symbolic link replaced the link or its target"
}
scenario replace replace

# a FIFO as -o: refused, no hang; as -i: refused at once, no hang
fifo() {
    mkfifo out.fifo
    expect 1 "not a regular file" -- "$RANKPROF" record -o out.fifo -- "$T"
    expect 1 "is a FIFO" -- "$RANKPROF" report -i out.fifo
    expect 1 "is a FIFO" -- "$RANKPROF" info -i out.fifo
}
scenario fifo fifo

# a static program: nothing preloaded, nothing written
static() {
    local cc=${CC:-cc} sum
    if printf 'int main(void){return 0;}\n' >s.c && "$cc" -static -o static s.c 2>/dev/null; then
        expect 1 "was not written: ./static is statically linked" -- \
            "$RANKPROF" record -o st.data -- ./static
        # with an older trace in place: not reported as written, left as it was
        cp ok.data st.data
        sum=$(cksum <st.data)
        expect 1 "st.data was not written: the file there is from an earlier run" -- \
            "$RANKPROF" record -o st.data -- ./static
        if grep -q "wrote" err.txt; then fail "a stale file was reported as written"; fi
        [[ $(cksum <st.data) == "$sum" ]] || fail "the older trace was changed"
    else
        note "SKIP the static program: $cc -static does not link here"
    fi
}
scenario static static

# a full disk: the recorder stops, record says the trace is incomplete
# (not a scenario: the clean-up at exit must see the mount)
if [[ $(id -u) == 0 ]] && mkdir -p full && mount -t tmpfs -o size=64k tmpfs full 2>/dev/null; then
    mnt=$tmp/full
    expect 1 "full/x.data (65536 bytes) is incomplete" -- "$RANKPROF" record -o full/x.data -- "$T"
    grep -q "No space left" err.txt || fail "the recorder's own message is missing: $(cat err.txt)"
    grep -q "wrote" err.txt && fail "an incomplete trace was reported as written"
    umount "$mnt" && mnt=""
else
    note "SKIP the full disk: not root, or tmpfs cannot be mounted"
fi

# a file-size limit (ulimit -f): the write past it fails with EFBIG and
# raises SIGXFSZ, which ends a process by default; the recorder takes the
# signal back, so the recording stops, says so, and the program runs on
fsize() {
    expect 1 "fs.data (65536 bytes) is incomplete" -- \
        bash -c 'ulimit -f 64 && exec "$@"' fsize "$RANKPROF" record -o fs.data -- "$T"
    grep -q "File too large" err.txt || fail "the recorder's own message is missing: $(cat err.txt)"
    grep -q "events could not be written" err.txt || fail "no count of the lost events: $(cat err.txt)"
    if grep -q "killed by signal" err.txt; then fail "the limit killed the program: $(cat err.txt)"; fi
    grep -q "fib" out.txt || fail "the program did not run to its end: $(cat out.txt)"
}
scenario fsize fsize

# the hint blames -finstrument-functions only when the hooks are missing
hint() {
    "$RANKPROF" record -o true.data -- /bin/true 2>/dev/null || fail "recording /bin/true"
    "$RANKPROF" report -i true.data >/dev/null 2>err.txt || fail "report of true.data"
    grep -q "has no -finstrument-functions hooks" err.txt || fail "no hint for /bin/true: $(cat err.txt)"
    RANKPROF_CLASSES=point "$RANKPROF" record -o pt.data -- "$T" >/dev/null 2>&1 ||
        fail "recording with RANKPROF_CLASSES=point"
    "$RANKPROF" report -i pt.data >/dev/null 2>err.txt || fail "report of pt.data"
    grep -q "holds no events" err.txt || fail "no 'holds no events' warning: $(cat err.txt)"
    if grep -q "finstrument" err.txt; then
        fail "blamed -finstrument-functions for an instrumented program"
    fi
}
scenario hint hint
finish
