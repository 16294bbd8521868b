#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_firmware.sh - the bare-metal recorder end to end (docs/firmware.md):
# builds examples/firmware.c for Cortex-M3 with arm-none-eabi-gcc
# (firmware/build.sh), runs it under qemu-system-arm -M mps2-an385 with
# -icount shift=0 (deterministic), and checks
#   - the program's summary line is the Linux build's, word for word;
#   - the points table the target prints (direct mode) has exact calls;
#   - `rankprof import --elf` + `report --format json`: every function
#     named from the ELF (Thumb bit), exact calls and edges (the monitor is
#     the SysTick interrupt: thread "irq", <root> -> monitor_poll 100), no
#     loss, the top of the ranking and the flags (DISPATCH, BUDGET 2 of 2);
#     the handler's time is not the interrupted functions' own: [irq]
#     (kind offcpu, off-CPU source "irq") has 100 spans under main's
#     functions and points, no shorter than the handler's (monitor_poll's)
#     inclusive;
#   - the Mermaid sequence diagram's acquire / io / timer messages;
#   - a program of its own, set up as docs/firmware.md says, on the other
#     board (lm3s6965evb) with the PL011 UART sink (QEMU -serial file:);
#   - built with -DRP_BARE_FUNC_STATS, the function table the target prints
#     (direct mode) has exact calls, and main its measured time;
#   - the tasks variant (-DFW_TASKS): two tasks switched in the middle of
#     their functions, a lock taken in a callee and released in its caller
#     (the hold is the acquirer's), a task's time switched out as [off-cpu]
#     under its open span (not its own time), exact counts;
#   - the recorder's linked flash footprint is at most 4096 bytes.
# Skipped (exit 77, saying which) when the ARM toolchain or QEMU is missing.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_firmware RANKPROF EXAMPLES
need_tools python3

if ! command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    missing arm-none-eabi-gcc "install gcc-arm-none-eabi and libnewlib-arm-none-eabi"
    finish
fi
if ! command -v qemu-system-arm >/dev/null 2>&1; then
    missing qemu-system-arm "install qemu-system-arm"
    finish
fi

fw=$tmp/fw
"$srcdir/firmware/build.sh" "$fw" >"$tmp/build.log" 2>&1 || {
    cat "$tmp/build.log" >&2
    fail "firmware/build.sh failed"
}
(cd "$fw" && $TMO qemu-system-arm -M mps2-an385 -nographic -monitor none \
    -semihosting-config enable=on,target=native -icount shift=0 \
    -kernel firmware.elf) >"$tmp/qemu.out" 2>&1 || {
    cat "$tmp/qemu.out" >&2
    fail "the firmware under QEMU exited with status $?"
}
[[ -s "$fw/firmware.rpt" ]] || fail "the firmware wrote no $fw/firmware.rpt"

summary_line() {
    want=$("$EXAMPLES/firmware")
    got=$(grep '^firmware: ticks=' "$tmp/qemu.out") || fail "no summary line in the QEMU output"
    [[ "$got" == "$want" ]] || fail "QEMU printed '$got', Linux '$want'"
}

points_table() {
    python3 - "$tmp/qemu.out" <<'EOF'
import sys
want = {"monitor.status": 100, "telemetry.pack": 200, "flash.erase": 2,
        "sensor.convert": 2000, "tick": 2000, "i2c0": 3384}
got = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5 and f[0].isdigit():
        got[f[4]] = int(f[0])
if got != want:
    sys.exit(f"e2e_firmware: points table {got}, want {want}")
EOF
}

report() {
    "$RANKPROF" import --elf "$fw/firmware.elf" -o "$tmp/fw.data" "$fw/firmware.rpt"
    "$RANKPROF" report -i "$tmp/fw.data" --format json >"$tmp/fw.json"
    python3 - "$tmp/fw.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def die(m):
    sys.exit("e2e_firmware: " + m)
T = 2000
calls = {"main": 1, "board_init": 1, "sched_run": 1, "timer_tick": T, "task_sensor": T,
         "task_control": T // 2, "filter_update": T // 2, "task_telemetry": T // 10,
         "telemetry_flush": T // 1000, "task_housekeeping": T // 50, "monitor_poll": T // 20,
         "i2c_read_reg": 1 + T + T // 10 + T // 50 + T // 20,
         "i2c_write_reg": 1 + T // 2 + T // 50,
         "i2c_xfer": 2341 + 1041 + 2}
funcs = {n["name"]: n["calls"] for n in d["nodes"] if n["kind"] == "func"}
if funcs != calls:
    die(f"function calls {sorted(funcs.items())}, want {sorted(calls.items())}")
edges = {(e["caller"], e["callee"]): e["calls"] for e in d["edges"]
         if e["callee"] in calls and (e["caller"] in calls or e["caller"] == "<root>")}
want = {("<root>", "main"): 1, ("<root>", "monitor_poll"): 100,
        ("main", "board_init"): 1, ("main", "sched_run"): 1,
        ("board_init", "i2c_read_reg"): 1, ("board_init", "i2c_write_reg"): 1,
        ("sched_run", "timer_tick"): 2000, ("sched_run", "task_sensor"): 2000,
        ("sched_run", "task_control"): 1000, ("sched_run", "task_telemetry"): 200,
        ("sched_run", "task_housekeeping"): 40, ("task_sensor", "i2c_read_reg"): 2000,
        ("task_control", "filter_update"): 1000, ("task_control", "i2c_write_reg"): 1000,
        ("task_telemetry", "i2c_read_reg"): 200, ("task_telemetry", "telemetry_flush"): 2,
        ("telemetry_flush", "i2c_xfer"): 2, ("task_housekeeping", "i2c_read_reg"): 40,
        ("task_housekeeping", "i2c_write_reg"): 40, ("monitor_poll", "i2c_read_reg"): 100,
        ("i2c_read_reg", "i2c_xfer"): 2341, ("i2c_write_reg", "i2c_xfer"): 1041}
if edges != want:
    die(f"edges {sorted(set(edges.items()) ^ set(want.items()))} differ")
others = {n["name"]: n["calls"] for n in d["nodes"] if n["kind"] != "func"}
for name, n in (("sensor.convert", 2000), ("telemetry.pack", 200), ("flash.erase", 2),
                ("i2c0", 3384), ("bus [hold]", 3384)):
    if others.get(name) != n:
        die(f"{name}: {others.get(name)} calls, want {n}")
if d["lost_events"] or d["unmatched_exits"] or d["unclosed"] or not d["ended_normally"]:
    die("lost events, unmatched exits or unclosed spans, or no END")
threads = sorted(t.get("name") for t in d["thread_list"])
if threads != ["irq", "main"]:
    die(f"threads {threads}, want irq and main")
if abs(d["ns_per_tick"] - 40.0) > 1e-9:
    die(f"ns per tick {d['ns_per_tick']}, want 40 (25 MHz)")
ranked = sorted(d["nodes"], key=lambda n: n["rank"])
top = [n["name"] for n in ranked[:2]]
if top != ["main", "sched_run"]:
    die(f"top of the ranking {top}, want main, sched_run")
flags = {n["name"]: n["flags"] for n in d["nodes"]}
if "DISPATCH" not in flags["sched_run"]:
    die(f"sched_run flags {flags['sched_run']}, want DISPATCH")
if "BUDGET" not in flags["flash.erase"]:
    die(f"flash.erase flags {flags['flash.erase']}, want BUDGET")
nodes = {n["name"]: n for n in d["nodes"]}
irq, mon = nodes.get("[irq]"), nodes["monitor_poll"]
if not irq or irq["kind"] != "offcpu" or irq["calls"] != 100 or d["offcpu"]["source"] != "irq":
    die(f"[irq]: {irq}, off-CPU source {d['offcpu']['source']}; want 100 spans of kind offcpu")
under = sum(e["calls"] for e in d["edges"] if e["callee"] == "[irq]" and e["caller"] in nodes)
if under != 100 or irq["inclusive_ns"] < mon["inclusive_ns"]:
    die(f"[irq]: {under} spans under the program's spans, {irq['inclusive_ns']} ns; "
        f"want 100, at least monitor_poll's {mon['inclusive_ns']} ns")
EOF
    "$RANKPROF" report -i "$tmp/fw.data" >"$tmp/fw.txt"
    grep -q 'BUDGET 2 of 2 runs over 1.00 ms' "$tmp/fw.txt" || fail "no 'BUDGET 2 of 2' line"
}

sequence() {
    "$RANKPROF" import --elf "$fw/firmware.elf" -o "$tmp/seq.data" "$fw/firmware.rpt"
    "$RANKPROF" export --format mermaid -O max=20000 -i "$tmp/seq.data" -o "$tmp/fw.mmd"
    grep -q '^sequenceDiagram' "$tmp/fw.mmd" || fail "not a Mermaid sequence diagram"
    grep -q 'participant P2 as T2 irq' "$tmp/fw.mmd" || fail "no irq participant"
    local io acq fire
    io=$(grep -c ': [0-9.]* [mun]*s i2c0 @0x6b [0-9]* B$' "$tmp/fw.mmd" || true)
    acq=$(grep -c ' acquire$' "$tmp/fw.mmd" || true)
    fire=$(grep -c ' fire$' "$tmp/fw.mmd" || true)
    [[ "$io $acq $fire" == "3384 3384 2000" ]] ||
        fail "diagram: $io i2c0 messages, $acq acquires, $fire timer fires; want 3384 3384 2000"
}

bad_input() {
    if "$RANKPROF" import --elf "$fw/firmware.rpt" -o "$tmp/x.data" "$fw/firmware.rpt" \
        2>"$tmp/err"; then
        fail "import took a trace as the ELF"
    fi
    grep -q 'is not an ELF file' "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"
    "$RANKPROF" import --elf "$fw/firmware.elf" -o "$tmp/y.data" "$fw/firmware.rpt"
    if "$RANKPROF" import --elf "$fw/firmware.elf" -o "$tmp/z.data" "$tmp/y.data" 2>"$tmp/err"; then
        fail "import imported twice"
    fi
    grep -q 'already has a MAPS chunk' "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"
}

# A program of its own, set up as docs/firmware.md says (its own vector
# table, reset handler and linker script with the rp_sites snippet), on the
# other QEMU board, lm3s6965evb, writing its trace through the PL011 UART
# (QEMU -serial file:) instead of semihosting, compiled at -O2.
uart_board() {
    local d=$tmp/uart
    mkdir -p "$d"
    cat >"$d/app.c" <<'EOF2'
#include <stdint.h>
#include "rankprof.h"
#include "rankprof_bare.h"
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
static uint8_t rp_buf[512];
volatile uint32_t sink;
void leaf(int n)
{
    RP_POINT("leaf.work");
    for (int i = 0; i < n; i++)
        sink += (uint32_t)i;
}
void mid(void)
{
    for (int i = 0; i < 3; i++)
        leaf(100);
}
int main(void)
{
    for (int i = 0; i < 50; i++)
        mid();
    return 0;
}
__attribute__((no_instrument_function)) void Reset_Handler(void)
{
    uint32_t *s = &_sidata, *d = &_sdata;
    while (d < &_edata)
        *d++ = *s++;
    for (d = &_sbss; d < &_ebss; d++)
        *d = 0;
    rp_bare_systick_start(0xffffff, 0);
    struct rp_bare_config c = {.hz = 12000000, .clock = rp_bare_systick_clock,
                               .sink = rp_bare_pl011_sink, .sink_ctx = (void *)0x4000c000,
                               .buf = rp_buf, .buf_size = sizeof rp_buf, .program = "app.elf"};
    rp_bare_start(&c);
    int st = main();
    rp_bare_stop(st);
    rp_bare_print_points(rp_bare_semihost_putc);
    rp_bare_semihost_exit(st);
}
__attribute__((section(".isr_vector"), used)) void (*const vec[2])(void) = {
    (void (*)(void))&_estack, Reset_Handler};
EOF2
    cat >"$d/app.ld" <<'EOF2'
MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = 256K  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 64K }
SECTIONS {
  .text : { KEEP(*(.isr_vector)) *(.text*) *(.rodata*) } > FLASH
  _sidata = LOADADDR(.data);
  .data : { _sdata = .; *(.data*)
        . = ALIGN(8);
        __start_rp_sites = .;
        KEEP(*(rp_sites))
        __stop_rp_sites = .;
        _edata = .; } > RAM AT > FLASH
  .bss : { _sbss = .; *(.bss*) *(COMMON) _ebss = .; } > RAM
  _estack = ORIGIN(RAM) + LENGTH(RAM);
}
EOF2
    local f="-mcpu=cortex-m3 -mthumb -g -O2 -I$srcdir/include -I$srcdir/src"
    (cd "$d" && arm-none-eabi-gcc $f -c "$srcdir/src/bare/rp_bare.c" "$srcdir/src/bare/rp_bare_cm.c" &&
        arm-none-eabi-gcc $f -finstrument-functions -fno-inline -c app.c &&
        arm-none-eabi-gcc $f -nostartfiles -T app.ld -o app.elf app.o rp_bare.o rp_bare_cm.o)
    (cd "$d" && $TMO qemu-system-arm -M lm3s6965evb -nographic -monitor none \
        -serial file:app.rpt -semihosting-config enable=on,target=native -icount shift=0 \
        -kernel app.elf) >"$d/out" 2>&1 || fail "the UART program failed: $(cat "$d/out")"
    grep -q '^       150 .* leaf.work$' "$d/out" || fail "no points table: $(cat "$d/out")"
    "$RANKPROF" import --elf "$d/app.elf" -o "$d/app.data" "$d/app.rpt"
    "$RANKPROF" report -i "$d/app.data" --format json >"$d/app.json"
    python3 - "$d/app.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
got = {n["name"]: n["calls"] for n in d["nodes"]}
want = {"main": 1, "mid": 50, "leaf": 150, "leaf.work": 150}
if got != want or d["lost_events"] or not d["ended_normally"]:
    sys.exit(f"e2e_firmware: UART trace {got}, want {want}")
EOF2
}

footprint() {
    local line flash
    line=$("$srcdir/firmware/footprint.sh" "$fw")
    flash=${line#*flash=}
    flash=${flash%% *}
    note "$line"
    ((flash > 0 && flash <= 4096)) || fail "recorder flash $flash bytes, over 4096"
}

# direct mode for functions (-DRP_BARE_FUNC_STATS): the table the target
# prints has every function's exact calls (named from the ELF by nm), and
# main's total is the time the start-up code measured around it
func_stats() {
    local d=$tmp/fwf
    RP_BARE_CFLAGS=-DRP_BARE_FUNC_STATS "$srcdir/firmware/build.sh" "$d" -DRP_BARE_FUNC_STATS \
        >"$tmp/fbuild.log" 2>&1 || fail "firmware/build.sh -DRP_BARE_FUNC_STATS: $(cat "$tmp/fbuild.log")"
    (cd "$d" && $TMO qemu-system-arm -M mps2-an385 -nographic -monitor none \
        -semihosting-config enable=on,target=native -icount shift=0 \
        -kernel firmware.elf) >"$tmp/fqemu.out" 2>&1 || fail "the firmware under QEMU failed"
    arm-none-eabi-nm "$d/firmware.elf" >"$tmp/fnm.txt" || fail "arm-none-eabi-nm"
    python3 - "$tmp/fqemu.out" "$tmp/fnm.txt" <<'EOF'
import re, sys
sym = {}
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) == 3 and w[1] in "tT":
        sym[int(w[0], 16) & ~1] = w[2]
got, total, main_ticks = {}, {}, None
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) == 5 and w[0].isdigit() and w[4].startswith("0x"):
        name = sym.get(int(w[4], 16), w[4])
        got[name] = int(w[0])
        total[name] = int(w[1])
    m = re.match(r"firmware: main (\d+) ticks", l)
    if m:
        main_ticks = int(m.group(1))
T = 2000
want = {"main": 1, "board_init": 1, "sched_run": 1, "timer_tick": T, "task_sensor": T,
        "task_control": T // 2, "filter_update": T // 2, "task_telemetry": T // 10,
        "telemetry_flush": T // 1000, "task_housekeeping": T // 50, "monitor_poll": T // 20,
        "i2c_read_reg": 1 + T + T // 10 + T // 50 + T // 20,
        "i2c_write_reg": 1 + T // 2 + T // 50, "i2c_xfer": 2341 + 1041 + 2}
if got != want:
    sys.exit(f"e2e_firmware: function table {sorted(got.items())}, want {sorted(want.items())}")
if not main_ticks or not 0.99 * main_ticks <= total["main"] <= main_ticks:
    sys.exit(f"e2e_firmware: main's total {total.get('main')} ticks, measured {main_ticks}")
EOF
}

# the tasks variant (-DFW_TASKS, examples/firmware.c): two tasks switched
# in the middle of their functions through rp_bare_task_switch, the bus
# taken in a callee (bus_take) and released in its caller (ta_step); the
# recorder built with -DRP_BARE_FUNC_STATS.  Checks: exact calls and edges
# on threads ta and tb; the hold is bus_take's (the acquirer), 50 times; a
# task's time switched out is [off-cpu] under the span it had open (50
# under each step, 1 under main's tasks_run), so ta_step's own time (2 x
# TA_SPIN a step) is under half of tb_step's (TB_SPIN = 8 x TA_SPIN), where
# with tb's time in it it would be more; the function table the target
# prints has exact calls (each task its own stack of open calls).
tasks() {
    local d=$tmp/fwt
    RP_BARE_CFLAGS=-DRP_BARE_FUNC_STATS "$srcdir/firmware/build.sh" "$d" -DFW_TASKS \
        -DRP_BARE_FUNC_STATS >"$tmp/tbuild.log" 2>&1 ||
        fail "firmware/build.sh -DFW_TASKS: $(cat "$tmp/tbuild.log")"
    (cd "$d" && $TMO qemu-system-arm -M mps2-an385 -nographic -monitor none \
        -semihosting-config enable=on,target=native -icount shift=0 \
        -kernel firmware.elf) >"$tmp/tqemu.out" 2>&1 || fail "the tasks firmware under QEMU failed"
    grep -q '^firmware: tasks steps=50 tb=50 bus_held=0$' "$tmp/tqemu.out" ||
        fail "tasks summary: $(grep '^firmware' "$tmp/tqemu.out")"
    arm-none-eabi-nm "$d/firmware.elf" >"$tmp/tnm.txt" || fail "arm-none-eabi-nm"
    "$RANKPROF" import --elf "$d/firmware.elf" -o "$tmp/t.data" "$d/firmware.rpt"
    "$RANKPROF" report -i "$tmp/t.data" --format json >"$tmp/t.json"
    python3 - "$tmp/t.json" "$tmp/tqemu.out" "$tmp/tnm.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def die(m):
    sys.exit("e2e_firmware: tasks: " + m)
calls = {"main": 1, "tasks_run": 1, "ta_run": 1, "tb_run": 1, "ta_step": 50, "bus_take": 50,
         "tb_step": 50}
nodes = {n["name"]: n for n in d["nodes"]}
funcs = {n["name"]: n["calls"] for n in d["nodes"] if n["kind"] == "func"}
if funcs != calls:
    die(f"function calls {sorted(funcs.items())}, want {sorted(calls.items())}")
edges = {(e["caller"], e["callee"]): e["calls"] for e in d["edges"]}
want = {("<root>", "main"): 1, ("main", "tasks_run"): 1, ("<root>", "ta_run"): 1,
        ("ta_run", "ta_step"): 50, ("ta_step", "bus_take"): 50, ("bus_take", "bus [hold]"): 50,
        ("<root>", "tb_run"): 1, ("tb_run", "tb_step"): 50, ("ta_step", "[off-cpu]"): 50,
        ("tb_step", "[off-cpu]"): 50, ("tasks_run", "[off-cpu]"): 1}
if edges != want:
    die(f"edges {sorted(set(edges.items()) ^ set(want.items()))} differ")
if d["lost_events"] or d["unmatched_exits"] or d["unclosed"] or not d["ended_normally"]:
    die("lost events, unmatched exits or unclosed spans, or no END")
threads = sorted(t.get("name") for t in d["thread_list"] if t.get("name") != "irq")
if threads != ["main", "ta", "tb"]:
    die(f"threads {threads}, want main, ta, tb")
off, a, b, h = nodes["[off-cpu]"], nodes["ta_step"], nodes["tb_step"], nodes["bus [hold]"]
if d["offcpu"]["source"] != "irq+tasks":
    die(f"off-CPU source {d['offcpu']['source']}, want irq+tasks")
if off["kind"] != "offcpu" or off["calls"] != 101:
    die(f"[off-cpu]: {off['kind']}, {off['calls']} spans; want offcpu, 101")
if not 0 < 2 * a["exclusive_ns"] < b["exclusive_ns"]:
    die(f"ta_step's own time {a['exclusive_ns']} ns, tb_step's {b['exclusive_ns']}: "
        "ta_step's has tb's time in it")
# tb runs while ta is out in ta_step: all of tb_step's own time but the
# end of its last call (after ta's last switch, a few instructions) is in
# the [off-cpu] spans under ta_step
out_a = sum(e["inclusive_ns"] for e in d["edges"]
            if e["caller"] == "ta_step" and e["callee"] == "[off-cpu]")
if not 0.99 * b["exclusive_ns"] <= out_a <= a["inclusive_ns"] - a["exclusive_ns"]:
    die(f"ta_step's time switched out {out_a} ns, want at least tb_step's own "
        f"{b['exclusive_ns']} ns")
if not b["exclusive_ns"] <= h["inclusive_ns"] <= a["inclusive_ns"]:
    die(f"bus held {h['inclusive_ns']} ns, want within ta_step's {a['inclusive_ns']} "
        f"and at least tb's work while it was held {b['exclusive_ns']}")
sym = {}
for l in open(sys.argv[3]):
    w = l.split()
    if len(w) == 3 and w[1] in "tT":
        sym[int(w[0], 16) & ~1] = w[2]
got, total = {}, {}
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) == 5 and w[0].isdigit() and w[4].startswith("0x"):
        got[sym.get(int(w[4], 16), w[4])] = int(w[0])
        total[sym.get(int(w[4], 16), w[4])] = int(w[1]) * 40  # ns: 25 MHz ticks
if got != calls:
    die(f"function table {sorted(got.items())}, want {sorted(calls.items())}")
# a call's time is from its own entry to its own exit (the task's stack), as
# in the trace (the trace's is less the flushes: at most 2 %)
for f in ("ta_step", "tb_step"):
    if not 0.98 * total[f] <= nodes[f]["inclusive_ns"] <= total[f]:
        die(f"{f}: {total[f]} ns in the function table, {nodes[f]['inclusive_ns']} in the trace")
EOF
}

scenario summary_line summary_line
scenario func_stats func_stats
scenario points_table points_table
scenario report report
scenario sequence sequence
scenario bad_input bad_input
scenario uart_board uart_board
scenario tasks tasks
scenario footprint footprint
finish
