#!/bin/sh
# expect_refusal.sh PATTERN COMMAND...: COMMAND exits with status 2 (bad input) and prints PATTERN.
pattern=$1
shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -ne 2 ]; then
  echo "exit status $status, expected 2"
  exit 1
fi
if ! printf '%s\n' "$output" | grep -q -- "$pattern"; then
  echo "missing from the output: $pattern"
  exit 1
fi
