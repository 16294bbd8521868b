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
# One clang-format for all files (a process per file took most of the
# test's time); its messages begin with the file's name.
if out=$(echo "$files" | xargs "$cf" --dry-run --Werror 2>&1); then
    echo "format: $(echo "$files" | wc -l) files as .clang-format lays them out"
    exit 0
fi
echo "$out" | sed -n 's/^\([^: ]*\.[ch]\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u |
    while read -r f; do echo "format: $f differs from .clang-format (clang-format -i $f)"; done
[ -n "$out" ] && echo "$out" | grep -v 'error: code should be' | grep 'error' | head -5
exit 1
