//! Writing the halo catalogue (CSV, HDF5) and per-particle labels (NumPy `.npy`, CSV).
