#!/bin/bash
# SPDX-License-Identifier: MIT
# format.sh - every C source and header of the repository is as .clang-format
# lays it out.  Skipped (77) without clang-format 14, the version the style
# was checked with: other versions lay out some constructs differently.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cf=$(command -v clang-format || true)
if [ -z "$cf" ] || ! "$cf" --version | grep -q 'version 14\.'; then
    echo "format: clang-format 14 not found, skipped"
    exit 77
fi
cd "$root" || exit 1
files=$(find src include tests bench examples -name '*.[ch]' | sort)
bad=0
for f in $files; do
    if ! "$cf" --dry-run --Werror "$f" 2>/dev/null; then
        echo "format: $f differs from .clang-format (clang-format -i $f)"
        bad=1
    fi
done
[ $bad = 0 ] && echo "format: $(echo "$files" | wc -l) files as .clang-format lays them out"
exit $bad
