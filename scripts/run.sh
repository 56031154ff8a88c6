#!/usr/bin/env bash
# Sets up what is missing, then starts Haloscope (the demo data when no file is given).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec cargo run --release -- "$@"
