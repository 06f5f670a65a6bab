#!/usr/bin/env bash
# Every symbol the shared library exports must start with bn_ (REBOUND's rule).
set -eu
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^bn_' | grep -v '^_init$\|^_fini$\|^$' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -c '^bn_' || true)
if [ -n "$bad" ]; then
  echo "exported symbols without the bn_ prefix in $lib:"; echo "$bad"; exit 1
fi
if [ "$count" -lt 20 ]; then
  echo "only $count bn_ symbols exported from $lib: the API is missing"; exit 1
fi
echo "$count exported symbols, all with the bn_ prefix"
