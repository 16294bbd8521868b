#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_seq.sh - end-to-end test of the sequence diagrams (`rankprof export
# --format plantuml|mermaid`, docs/sequence.md):
#   - examples/firmware: every timer tick (2000) and I2C transaction (3384)
#     is a message, and the bytes in the messages add up to the bus_bytes the
#     program itself prints;
#   - tests/progs/contend: lock requests, grants, releases and the wake-ups
#     of the forced contention; the cap's note; filters;
#   - the diagrams are read back by the real consumers: Debian's plantuml
#     renders them (`plantuml -tsvg` exits 0; 200 on bad syntax) and
#     @mermaid-js/mermaid-cli (mmdc, driven by Debian's chromium) parses and
#     renders them; the SVGs must contain the lifelines and messages.
#
# Consumers (installed in CI by scripts/deps.sh ci): mmdc is looked up in
# $RP_MMDC, then PATH, then ~/.cache/rankprof-npm.  When one is missing its
# part is skipped with a message and the script exits 77 (ctest SKIP) at the
# end, unless RP_REQUIRE_CONSUMERS=1, which makes it a failure.
#
# Run by ctest with RANKPROF, PROGS, RP_LIB, EXAMPLES in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_seq RANKPROF PROGS RP_LIB EXAMPLES

export RANKPROF_LIB="$RP_LIB"
cd "$tmp"

# --- firmware: exact counts through the diagram --------------------------------
firmware() {
    fw_out=$("$RANKPROF" record -o fw.data -- "$EXAMPLES/firmware" 2>/dev/null) || fail "recording firmware"
    bus_bytes=$(sed -n 's/.*bus_bytes=\([0-9]*\).*/\1/p' <<<"$fw_out")
    [[ -n "$bus_bytes" ]] || fail "firmware did not print bus_bytes: $fw_out"
    "$RANKPROF" export -i fw.data --format plantuml -O classes=timer,io -O max=100000 -o all.puml ||
        fail "export plantuml (all timer and io messages)"
    ticks=$(grep -c ' : [0-9.]* [mun]*s fire$' all.puml || true)
    [[ "$ticks" == 2000 ]] || fail "firmware: $ticks timer fires in the diagram, expected 2000"
    xfers=$(grep -c ' i2c0 @0x6b [0-9]* B$' all.puml || true)
    [[ "$xfers" == 3384 ]] || fail "firmware: $xfers I2C transactions in the diagram, expected 3384"
    bytes=$(sed -n 's/.* i2c0 @0x6b \([0-9]*\) B$/\1/p' all.puml | awk '{ s += $1 } END { print s }')
    [[ "$bytes" == "$bus_bytes" ]] || fail "firmware: the diagram's bytes add up to $bytes, the program says $bus_bytes"
    dones=$(grep -c ' done in ' all.puml || true)
    [[ "$dones" == 3384 ]] || fail "firmware: $dones transaction replies, expected 3384"
    grep -q '^database "i2c0" as P' all.puml || fail "firmware: no device lifeline i2c0"
    grep -q '^control "tick" as P' all.puml || fail "firmware: no timer lifeline tick"
    if grep -q 'cut:' all.puml; then fail "firmware: a note says messages were cut under a cap of 100000"; fi
}

# the default cap (400) cuts, and says so
capped() {
    [[ -s fw.data ]] || fail "no trace from the firmware scenario"
    "$RANKPROF" export -i fw.data --format plantuml -o fw.puml || fail "export plantuml"
    "$RANKPROF" export -i fw.data --format mermaid -o fw.mmd || fail "export mermaid"
    # (wake-ups are derived from the kept messages and come on top of the cap)
    kept=$(grep -- '->' fw.puml | grep -vc ' wakes via ' || true)
    [[ "$kept" == 400 ]] || fail "firmware: the capped diagram has $kept messages, not 400"
    grep -q '^note over P1, P[0-9]* : cut: [0-9]* more messages from .* on are not shown (the cap is 400' fw.puml ||
        fail "firmware: no note about the cut"
    grep -q 'Note over P1,P[0-9]*: cut: ' fw.mmd || fail "firmware: no cut note in the Mermaid diagram"
}

# --- contend: locks, wake-ups, filters -------------------------------------------
contend() {
    "$RANKPROF" record -o c.data -- "$PROGS/prog_contend" 1000 >/dev/null 2>&1 || fail "recording prog_contend"
    "$RANKPROF" export -i c.data --format plantuml -O classes=lock -O max=60 -o c.puml || fail "export contend"
    "$RANKPROF" export -i c.data --format mermaid -O classes=lock -O max=60 -o c.mmd || fail "export contend mermaid"
    for what in ' request$' ' grant after ' ' release, held ' ' wakes via '; do
        grep -q -- "$what" c.puml || fail "contend: no '$what' message in the lock diagram"
    done
    # each wake-up comes right before the grant it causes, to the same thread
    python3 - <<'PYEOF' || exit 1
import re, sys
lines = open("c.puml").read().splitlines()
msgs = [re.match(r"P(\d+) (-->|->) P(\d+) : ", l) for l in lines]
n = 0
for i, m in enumerate(msgs):
    if m and " wakes via " in lines[i]:
        g = msgs[i + 1] if i + 1 < len(msgs) else None
        if not g or " grant after " not in lines[i + 1] or g.group(3) != m.group(3):
            sys.exit("e2e_seq: FAIL: a wake-up is not followed by the woken thread's grant: " + lines[i])
        n += 1
if n < 1:
    sys.exit("e2e_seq: FAIL: no wake-up in the contend diagram")
PYEOF
    if "$RANKPROF" export -i c.data --format plantuml -O classes=nosuch >/dev/null 2>err.txt; then
        fail "classes=nosuch was accepted"
    fi
    grep -q nosuch err.txt || fail "the classes error does not name the class"
    if "$RANKPROF" export -i c.data --format plantuml -O from=soon >/dev/null 2>err.txt; then
        fail "from=soon was accepted"
    fi
}

# --- the consumers ------------------------------------------------------------------
# A sanitizer build writes the same text: its consumers run in the plain build
# (one JVM and two browsers per run are CI's slowest steps).
plantuml_check() {
    [[ -s fw.puml && -s c.puml ]] || fail "no diagrams from the capped and contend scenarios"
    if command -v plantuml >/dev/null; then
        # one JVM for both files; exits 200 if either has a syntax error
        plantuml -tsvg fw.puml c.puml >plantuml.log 2>&1 || fail "plantuml rejected a diagram: $(cat plantuml.log)"
        for f in fw.svg c.svg; do
            [[ -s "$f" ]] || fail "plantuml wrote no $f"
        done
        grep -q 'i2c0' fw.svg && grep -q 'tick' fw.svg && grep -q 'fire' fw.svg ||
            fail "fw.svg lacks the i2c0/tick lifelines or the fire messages"
        grep -q 'cut: ' fw.svg || fail "fw.svg lacks the cut note"
        grep -q 'wakes via' c.svg && grep -q 'grant after' c.svg || fail "c.svg lacks the lock messages"
        note "plantuml rendered both diagrams"
    else
        missing plantuml "apt-get install plantuml"
    fi
}

mermaid_check() {
    [[ -s fw.mmd && -s c.mmd ]] || fail "no diagrams from the capped and contend scenarios"

    mmdc=${RP_MMDC:-$(command -v mmdc || true)}
    [[ -z "$mmdc" && -x "$HOME/.cache/rankprof-npm/node_modules/.bin/mmdc" ]] &&
        mmdc="$HOME/.cache/rankprof-npm/node_modules/.bin/mmdc"
    chromium=${RP_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
    if [[ -n "$mmdc" && -n "$chromium" ]]; then
        printf '{"executablePath": "%s", "args": ["--no-sandbox", "--disable-gpu"]}\n' "$chromium" >pptr.json
        for f in fw c; do
            "$mmdc" -q -p pptr.json -i "$f.mmd" -o "$f.mmd.svg" >mmdc.log 2>&1 ||
                fail "mermaid-cli rejected $f.mmd: $(cat mmdc.log)"
        done
        grep -q 'i2c0' fw.mmd.svg && grep -q 'fire' fw.mmd.svg || fail "fw.mmd.svg lacks the i2c0 lifeline or fire messages"
        grep -q 'wakes via' c.mmd.svg && grep -q 'grant after' c.mmd.svg || fail "c.mmd.svg lacks the lock messages"
        # the negative control: mermaid-cli does reject a broken diagram
        printf 'sequenceDiagram\n    P1->>: broken\n' >bad.mmd
        if "$mmdc" -q -p pptr.json -i bad.mmd -o bad.svg >/dev/null 2>&1; then
            fail "mermaid-cli accepted a broken diagram: the check above proves nothing"
        fi
        note "mermaid-cli parsed and rendered both diagrams"
    else
        missing mermaid-cli "scripts/deps.sh ci installs chromium and @mermaid-js/mermaid-cli"
    fi

}

scenario firmware firmware
scenario capped capped
scenario contend contend
if sanitized; then
    note "consumers are checked in the plain build, not under RP_SANITIZE=$RP_SANITIZE"
else
    scenario plantuml plantuml_check
    scenario mermaid mermaid_check
fi
finish
