#!/usr/bin/env bash
# The long run of `polyc fuzz-schedules` that docs/testing.md reports: seeds FROM..TO in
# chunks of 250, each `POLYC fuzz-schedules --count 250 --seed S --compile --jobs $JOBS`
# (default 2), one line per chunk appended to RECORDS: its seed, exit code, CPU and wall
# seconds and the summary polyc printed. A chunk already in RECORDS is skipped, so a run
# stopped anywhere resumes where it stopped, with the same binary (its version is the
# first line of RECORDS; another binary is refused). The failures of a chunk are kept in
# RECORDS.failures/seed-S.txt.
#
# Usage: scripts/fuzz-run.sh POLYC FROM TO RECORDS
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 POLYC FROM TO RECORDS" >&2
  exit 1
fi
polyc=$1 from=$2 to=$3 records=$4
jobs=${JOBS:-2}
chunk=250

version=$("$polyc" --version)
if [ -s "$records" ]; then
  recorded=$(head -n 1 "$records")
  if [ "$recorded" != "binary: $version" ]; then
    echo "$records was made by another binary ($recorded), not $version" >&2
    exit 1
  fi
else
  echo "binary: $version" > "$records"
fi
failures="$records.failures"
mkdir -p "$failures"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for ((seed = from; seed < to; seed += chunk)); do
  if grep -q "^seed $seed " "$records"; then
    continue
  fi
  set +e
  /usr/bin/time -f '%U %S %e' -o "$scratch/time" \
    "$polyc" fuzz-schedules --count "$chunk" --seed "$seed" --compile --jobs "$jobs" \
    > "$scratch/out" 2> "$scratch/err"
  rc=$?
  set -e
  read -r user sys wall < <(tail -n 1 "$scratch/time")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
  echo "seed $seed rc=$rc cpu=${cpu}s wall=${wall}s $(tail -n 1 "$scratch/out")" >> "$records"
  if [ "$rc" -ne 0 ]; then
    grep -v '^Command exited' "$scratch/err" > "$failures/seed-$seed.txt" || true
  fi
done
