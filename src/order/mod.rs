//! Morton and Hilbert keys and particle reordering for locality.
