#!/usr/bin/env bash
# Sets up what is missing, then runs the whole test suite (GPU tests are #[ignore]d; run them on
# a CUDA machine with `cargo test --release -- --ignored`), then the MPI tests: the build with
# `--features mpi`, its tests/mpi_*.rs run the binary under `mpirun -n 1..4`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Tests run on threads of one process and some start the binary (or mpirun) as a child, which
# inherits any HDF5 file another thread has open at that moment (HDF5 opens without
# close-on-exec) and with it that file's lock, so a later open of the file fails ("unable to
# lock file, errno = 11"). Every test file is private to its test, so the lock guards nothing.
export HDF5_USE_FILE_LOCKING=FALSE
cargo test --all-targets "$@"
mpi_tests=()
for test in tests/mpi_*.rs; do
    mpi_tests+=(--test "$(basename "$test" .rs)")
done
# One test at a time: each starts up to four ranks on a machine of two cores.
RUST_TEST_THREADS=1 exec cargo test --features mpi "${mpi_tests[@]}" "$@"
