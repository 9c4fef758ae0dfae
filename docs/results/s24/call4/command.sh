#!/usr/bin/env bash
# s24 call 4 (one H200): device_calibrate.sh again, its whole output tarred (call 3's profile.json did not come back).
set -u
. tests/bench/device_env.sh
OUT=$L/cal timeout 280 bash tests/bench/device_calibrate.sh 2>&1 | tail -40
tar czf $OUT/cal.tgz -C $L cal
