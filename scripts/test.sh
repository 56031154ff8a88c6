#!/usr/bin/env bash
# Sets up what is missing, then runs the whole test suite (GPU tests are #[ignore]d; run them on
# a CUDA machine with `cargo test --release -- --ignored`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec cargo test --all-targets "$@"
