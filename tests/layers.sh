#!/bin/bash
# SPDX-License-Identifier: MIT
# layers.sh - the source folders depend one way (docs/design.md "10. Layout"):
# common/ at the bottom; trace/ on common/; the recorder (record/) and the
# analyzer (analyze/) each on trace/ and common/, never on each other; the
# bare-metal recorder (bare/) and librankprof-mpi (mpi/) on trace/'s
# format.h only;
# report/ on analyze/; cli/ on report/.  Fails, naming the file and line,
# when a file includes a header of a folder its own may not use, or names
# one by a relative path ("../x/y.h") instead of from src/ ("x/y.h").
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/src" || exit 1
declare -A may=(
    [common]="common"
    [trace]="common trace"
    [record]="common trace record"
    [bare]="trace bare"
    [analyze]="common trace analyze"
    [report]="common trace analyze report"
    [cli]="common trace analyze report cli"
    [mpi]="trace mpi" # librankprof-mpi.so: the public rankprof.h and format.h's rp_mpi_arg
)
bad=0
n=0
for dir in "${!may[@]}"; do
    for f in "$dir"/*.[ch]; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        # "folder/x.h" and "../folder/x.h"; a bare "x.h" is the file's own folder
        while IFS=: read -r line inc; do
            if [[ $inc == ../* ]]; then
                echo "layers: src/$f:$line includes \"$inc\": name it from src/ (\"${inc#../}\")"
                bad=1
            fi
            top=${inc#../}
            top=${top%%/*}
            [ -d "$top" ] || continue
            case " ${may[$dir]} " in
            *" $top "*) ;;
            *)
                echo "layers: src/$f:$line includes \"$inc\": $dir/ may use only ${may[$dir]}"
                bad=1
                ;;
            esac
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' "$f" |
            sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
    done
done
for d in */; do
    d=${d%/}
    if [ -z "${may[$d]+x}" ]; then
        echo "layers: src/$d/ is in no layer (add it to tests/layers.sh)"
        bad=1
    fi
done
[ $bad = 0 ] && echo "layers: $n files include only the folders their own may use"
exit $bad
