//! Friends-of-friends halos (CPU reference and CUDA twin) and the halo catalogue.
