#!/usr/bin/env bash
# Fails (and prints them) when a sanitizer left reports in DIR: the test
# suite's sanitizer pass sets ASAN_OPTIONS/UBSAN_OPTIONS log_path there, so
# a leak or an error in any process run by any test shows up here.
# usage: scripts/sanitizer-reports.sh DIR
set -u
dir=$1
shopt -s nullglob
reports=("$dir"/*)
if [ ${#reports[@]} -eq 0 ]; then
  echo "sanitizers: no reports"
  exit 0
fi
echo "sanitizers: ${#reports[@]} report(s) in $dir:"
for r in "${reports[@]}"; do
  echo "---- $r"
  head -40 "$r"
done
exit 1
