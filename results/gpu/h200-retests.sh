#!/bin/bash
# h200-retests.sh NAME U [U ...]: re-test the kept models of out-gpu/NAME/run-00 at updates U on the run's
# same 20 start states, side by side on the card (`planetrl eval --checkpoint U --episodes 20 --device cuda`,
# the run's planner in fp32), writing $OUT/NAME-eval-U.json. out-gpu/NAME/run-00 holds the run's config.yaml,
# run_info.json and checkpoints/model-U.pt files, carried to the device (carry: .whl, .gl, out-gpu).
# For an averaging run's trained weights instead of its average, `python benchmarks/trained_weights.py RUN
# out-gpu/NAME/run-00` writes them from the run's previous.pt and latest.pt as such model-U.pt files.
# Ran on 2026-11-27 (three calls, each then a script of its own with these commands):
#   finger-avg-s0 4000 5000 6000 7000 -> results/cpu/finger-spin/seed-0/retests/h200-fp32-U.json
#   finger-avg-raw-s0 6900 7000 -> results/cpu/finger-spin/seed-0/retests/h200-fp32-trained-U.json
#   cheetah-avg-raw-s1 6900 7000 -> results/cpu/cheetah-run/seed-1/retests/h200-fp32-trained-U.json
name=$1; shift
pairs=()
for u in "$@"; do pairs+=("$name:$u"); done
THREADS=4 TIMEOUT=300 exec bash "$(dirname "$0")/h200-retests-many.sh" "${pairs[@]}"
