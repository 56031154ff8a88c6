#!/usr/bin/env bash
# Open MPI without installing it: unpacks the .deb files of DEB_DIR (made here with
# `apt-get download`, see scripts/bench/mpi-gpu.sh) under ROOT with dpkg -x, never over /, and
# sets PATH, LD_LIBRARY_PATH and OPAL_PREFIX (plus PMIx's own prefix and plug-in folder) so that
# `mpirun` and programs linked with libmpi use that copy. Source it:
#
#   source scripts/bench/mpi-env.sh DEB_DIR ROOT
#
# Then `mpirun --allow-run-as-root -n K PROGRAM` runs on the unpacked copy.
deb_dir=${1:?usage: source mpi-env.sh DEB_DIR ROOT}
mpi_root=$(mkdir -p "${2:?usage: source mpi-env.sh DEB_DIR ROOT}" && cd "$2" && pwd)
for deb in "$deb_dir"/*.deb; do
    dpkg -x "$deb" "$mpi_root"
done
# Debian installs `mpirun` through update-alternatives, which dpkg -x does not run.
ln -sf orterun "$mpi_root/usr/bin/mpirun"
multiarch=$mpi_root/usr/lib/x86_64-linux-gnu
export PATH=$mpi_root/usr/bin:$PATH
export LD_LIBRARY_PATH=$multiarch:$multiarch/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$mpi_root/usr
export PMIX_INSTALL_PREFIX=$mpi_root/usr
export PMIX_MCA_mca_base_component_path=$multiarch/pmix2/lib/pmix
# One host, no InfiniBand: shared memory and TCP only, without probing for fabrics; shared
# memory by plain copies (sandboxed hosts may refuse cross-process memory access), or by
# MPI_SINGLE_COPY=cma where the host allows it (the 2x H200 host does: the FoF exchange's
# transfer went from 3.2 to 4.9 GB/s, BENCHMARKS.md).
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2
export OMPI_MCA_btl_vader_single_copy_mechanism=${MPI_SINGLE_COPY:-none}
# A host with another PMIx's plug-ins (seen on the GPU machine) makes PMIx warn about zlib.
export PMIX_MCA_pcompress_base_silence_warning=1
