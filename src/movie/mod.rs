//! Camera paths (keyframes, interpolation), frame export and video encoding.
