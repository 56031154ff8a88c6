#!/usr/bin/env bash
# Sets up what is missing, then runs the whole test suite (GPU tests are #[ignore]d; run them on
# a CUDA machine with `cargo test --release -- --ignored`), then the MPI tests: the build with
# `--features mpi`, its tests/mpi_*.rs run the binary under `mpirun -n 1..4`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --all-targets "$@"
mpi_tests=()
for test in tests/mpi_*.rs; do
    mpi_tests+=(--test "$(basename "$test" .rs)")
done
# One test at a time: a test that writes an HDF5 file while another test's thread starts mpirun
# leaks the writer's locked descriptor into that job, and a rank then fails to open the file
# ("unable to lock file").
RUST_TEST_THREADS=1 exec cargo test --features mpi "${mpi_tests[@]}" "$@"
