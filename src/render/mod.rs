//! Splotch renderer: camera, palettes, projection and classification, CPU splatter, tone mapping.
