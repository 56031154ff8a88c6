// Shared device code of the CUDA Splotch renderer: the per-particle projection and
// classification, and the per-pixel splat weight. These mirror src/render/project.rs
// (`project_particle`, `Normaliser::apply`, `Palette::sample`) and src/render/splat_cpu.rs
// (`pixel_box`, `splat_one`) line for line: the same f32/f64 choices and operation order.
// NVRTC compiles with --fmad=false and IEEE division/sqrt, so every value up to expf/log10f is
// bit-identical to the CPU reference.
//
// tau is accumulated in 64-bit fixed point (value * 2^k, rounded to nearest), so that atomic
// additions in any order give the same bits: deterministic output, and chunked == unchunked.

#define KEY_SMALL 0xFFFFFFFDu
#define KEY_LARGE 0xFFFFFFFEu
#define KEY_INACTIVE 0xFFFFFFFFu

#define CLASS_INACTIVE 0
#define CLASS_SMALL 1
#define CLASS_MEDIUM 2
#define CLASS_LARGE 3

// Rust `ViewParams` (src/render/project.rs); the f64 look-at first so that the layout has no holes.
struct ViewC {
    double lookat[3];
    float x_hat[3];
    float y_hat[3];
    float z_hat[3];
    float distance;
    int perspective;
    float scale;
    float half_width;
    float half_height;
    int width_px;
    int height_px;
    float near_depth;
    float far_depth;
    float min_radius_px;
    float border_px;
};

// Rust `StyleParams` plus the palette length (the stops are a separate array).
struct StyleC {
    int has_intensity;
    int intensity_log;
    float intensity_lo;
    float intensity_hi;
    int has_colour;
    int colour_log;
    float colour_lo;
    float colour_hi;
    float brightness;
    float size_factor;
    int palette_len;
    int pad;
};

// Rust `Splat`.
struct SplatC {
    float x_px;
    float y_px;
    float sigma_px;
    float cut_px;
    float rgb[3];
};

// A large splat with its particle index (the CPU sorts by it for a deterministic order).
struct LargeC {
    SplatC splat;
    unsigned int index;
};

// Particle data of one chunk (structure of arrays; intensity/colour may be null).
struct ParticlesC {
    const float* __restrict__ pos;  // 3 per particle
    const float* __restrict__ h;
    const float* __restrict__ intensity;
    const float* __restrict__ colour;
    const float* __restrict__ palette;  // 3 per stop
};

__device__ __forceinline__ int sat_int(float v) {
    // Rust `as i32`: saturating, NaN -> 0 (cvt.rzi.sat does exactly this).
    return __float2int_rz(v);
}

__device__ __forceinline__ int sat_sub1(int v) { return v == -2147483647 - 1 ? v : v - 1; }
__device__ __forceinline__ int sat_add1(int v) { return v == 2147483647 ? v : v + 1; }

// `Normaliser::apply`.
__device__ __forceinline__ float normalise(int log_flag, float lo, float hi, float v) {
    float t;
    bool ok;
    if (log_flag) {
        ok = v > 0.0f;
        t = ok ? log10f(v) : 0.0f;
    } else {
        ok = true;
        t = v;
    }
    if (!ok || isnan(t)) t = lo;
    if (hi == lo) return 1.0f;
    float c = t < lo ? lo : t;
    c = c > hi ? hi : c;
    return (c - lo) / (hi - lo);
}

// `Palette::sample` (matplotlib's lookup): entry clip(floor(x * n), 0, n - 1), NaN -> entry 0.
__device__ __forceinline__ void palette_sample(const float* __restrict__ stops, int n, float x,
                                               float* out) {
    if (n < 1) {
        out[0] = 1.0f;
        out[1] = 1.0f;
        out[2] = 1.0f;
        return;
    }
    float t = x * (float)n;
    // Comparisons with NaN are false, so NaN takes entry 0 as on the CPU.
    int i = t >= (float)n ? n - 1 : (t > 0.0f ? (int)t : 0);
    const float* c = stops + 3 * i;
    out[0] = c[0];
    out[1] = c[1];
    out[2] = c[2];
}

// `project_particle`: returns the class and fills the splat (meaningless when inactive).
__device__ __forceinline__ int project_particle(const ViewC& v, const StyleC& st,
                                                const ParticlesC& p, unsigned int i,
                                                SplatC* out) {
    float px = p.pos[3 * (size_t)i], py = p.pos[3 * (size_t)i + 1], pz = p.pos[3 * (size_t)i + 2];
    float h = p.h[i];
    float q0 = (float)((double)px - v.lookat[0]);
    float q1 = (float)((double)py - v.lookat[1]);
    float q2 = (float)((double)pz - v.lookat[2]);
    float x_c = q0 * v.x_hat[0] + q1 * v.x_hat[1] + q2 * v.x_hat[2];
    float y_c = q0 * v.y_hat[0] + q1 * v.y_hat[1] + q2 * v.y_hat[2];
    float z_c = (q0 * v.z_hat[0] + q1 * v.z_hat[1] + q2 * v.z_hat[2]) - v.distance;
    float depth = -z_c;
    if (!(depth > v.near_depth && depth < v.far_depth && h > 0.0f && isfinite(h))) {
        return CLASS_INACTIVE;
    }
    float s = v.perspective ? v.scale / depth : v.scale;
    float x_px = v.half_width + s * x_c;
    float y_px = v.half_height - s * y_c;
    float n = st.has_intensity
                  ? normalise(st.intensity_log, st.intensity_lo, st.intensity_hi, p.intensity[i])
                  : 1.0f;
    float radius_px = 2.0f * h * s * st.size_factor;
    float amplitude = n * 0.096304914f / h;
    if (v.min_radius_px > 0.0f) {
        float m = v.min_radius_px;
        float c = sqrtf(radius_px * radius_px + m * m) / radius_px;
        radius_px *= c;
        amplitude /= c;
    }
    if (!(radius_px > 0.0f && isfinite(radius_px) && isfinite(x_px) && isfinite(y_px))) {
        return CLASS_INACTIVE;
    }
    float sigma_px = 0.41315374f * radius_px;
    float cut_px = 0.75f * radius_px;
    int i0 = sat_int(ceilf(x_px - cut_px - 0.5f));
    int i1 = sat_int(floorf(x_px + cut_px - 0.5f));
    int j0 = sat_int(ceilf(y_px - cut_px - 0.5f));
    int j1 = sat_int(floorf(y_px + cut_px - 0.5f));
    if (i0 > i1 || j0 > j1 || i1 < 0 || j1 < 0 || i0 >= v.width_px || j0 >= v.height_px) {
        return CLASS_INACTIVE;
    }
    bool centre_on_image = x_px >= 0.0f && x_px < (float)v.width_px && y_px >= 0.0f &&
                           y_px < (float)v.height_px;
    int cls;
    if (cut_px >= v.border_px || !centre_on_image) {
        cls = CLASS_LARGE;
    } else if (i0 == i1 && j0 == j1) {
        cls = CLASS_SMALL;
    } else {
        cls = CLASS_MEDIUM;
    }
    float colour[3];
    if (st.has_colour) {
        palette_sample(p.palette, st.palette_len,
                       normalise(st.colour_log, st.colour_lo, st.colour_hi, p.colour[i]), colour);
    } else {
        colour[0] = colour[1] = colour[2] = 1.0f;
    }
    float b = st.brightness;
    out->x_px = x_px;
    out->y_px = y_px;
    out->sigma_px = sigma_px;
    out->cut_px = cut_px;
    out->rgb[0] = colour[0] * amplitude * b;
    out->rgb[1] = colour[1] * amplitude * b;
    out->rgb[2] = colour[2] * amplitude * b;
    return cls;
}

// Colour channels accumulated per pixel: 3, or 1 when every species of the frame is grey (no
// colour field: rgb[0] == rgb[1] == rgb[2] for every splat, so the three fixed-point sums are the
// same integers and one is enough; `compose` reads it for all three). Set by the Rust loader.
#ifndef CHANNELS
#define CHANNELS 3
#endif

// 1: shared-memory 64-bit adds are done as two native 32-bit atomics with a carry (Hopper has no
// native 64-bit shared atomicAdd: it compiles to a compare-and-swap loop). Set by the loader.
#ifndef SPLIT_SHARED_ATOMICS
#define SPLIT_SHARED_ATOMICS 1
#endif

// The largest of v over the warp (every lane calls it: warp-uniform result).
__device__ __forceinline__ int warp_max(int v) {
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(0xffffffffu, v);
#else
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        int o = __shfl_xor_sync(0xffffffffu, v, d);
        v = o > v ? o : v;
    }
    return v;
#endif
}

// `sample_range` of splat_cpu.rs: the indices i with ((i + 0.5) - centre)^2 <= cut^2 in f32,
// from ceil/floor of centre -+ cut - 0.5 moved by one where rounding put an end on the wrong side.
__device__ __forceinline__ bool sample_inside(int i, float centre, float cut2) {
    float d = ((float)i + 0.5f) - centre;
    return d * d <= cut2;
}

__device__ __forceinline__ void sample_range(float centre, float cut, float cut2, int* lo_out,
                                             int* hi_out) {
    int lo = sat_int(ceilf(centre - cut - 0.5f));
    int hi = sat_int(floorf(centre + cut - 0.5f));
    if (sample_inside(sat_sub1(lo), centre, cut2)) {
        lo = sat_sub1(lo);
    } else if (!sample_inside(lo, centre, cut2)) {
        lo = sat_add1(lo);
    }
    if (sample_inside(sat_add1(hi), centre, cut2)) {
        hi = sat_add1(hi);
    } else if (!sample_inside(hi, centre, cut2)) {
        hi = sat_sub1(hi);
    }
    *lo_out = lo;
    *hi_out = hi;
}

// `pixel_box` of splat_cpu.rs: the exact footprint box (columns with dx^2 <= R^2, rows with
// dy^2 <= R^2; a pixel outside it fails the disc test dx^2 + dy^2 <= R^2 too, since adding
// dy^2 >= 0 cannot round below dx^2), clamped; false when empty or not finite.
__device__ __forceinline__ bool pixel_box(const SplatC& s, int x_lo, int x_hi, int y_lo, int y_hi,
                                          int* b) {
    if (!(s.cut_px >= 0.0f && s.sigma_px > 0.0f && isfinite(s.x_px) && isfinite(s.y_px) &&
          isfinite(s.cut_px))) {
        return false;
    }
    float cut2 = s.cut_px * s.cut_px;
    int i0, i1, j0, j1;
    sample_range(s.x_px, s.cut_px, cut2, &i0, &i1);
    sample_range(s.y_px, s.cut_px, cut2, &j0, &j1);
    b[0] = i0 > x_lo ? i0 : x_lo;
    b[1] = i1 < x_hi ? i1 : x_hi;
    b[2] = j0 > y_lo ? j0 : y_lo;
    b[3] = j1 < y_hi ? j1 : y_hi;
    return b[0] <= b[1] && b[2] <= b[3];
}

// Whether fixed_of<true> is used: in RGB frames where scale = 2^k (launch.rs fixed_exponent) is
// a normal f32. Grey frames keep the f64 product (see SHFL_WY_ONLY in render_medium.cu: the two
// changes were measured together, and grey tile passes went slower).
__device__ __forceinline__ bool f32_fixed_exact(double scale) {
    float f = (float)scale;
    return CHANNELS > 1 && (double)f == scale && f >= 1.17549435e-38f;
}

// The fixed-point value of weight w, rn(w * scale) as an unsigned integer (saturating; NaN and
// negatives give 0). F32 (only where f32_fixed_exact): the product w * 2^k in f32 is exact
// wherever it is a normal number (a power of two only moves the exponent); where it is below
// 2^-126 both products are below 1/2 and round to 0; where it is 2^128 or more (f32 infinity)
// both conversions saturate. So the f32 product converts to the same integer as the f64 one,
// without the f32 -> f64 conversion and the f64 multiply.
template <bool F32>
__device__ __forceinline__ unsigned long long fixed_of(float w, double scale, float scale_f) {
    if (F32) return __float2ull_rn(w * scale_f);
    return __double2ull_rn((double)w * scale);
}

// The contribution of splat `s` to pixel (col, row), in the CPU splatter's order
// (wx * (rgb * wy)), converted to fixed point (CHANNELS values, fixed_of); false when the pixel
// is outside the disc.
template <bool F32>
__device__ __forceinline__ bool splat_weight(const SplatC& s, int col, int row, double scale,
                                             float scale_f, unsigned long long* out) {
    float cut2 = s.cut_px * s.cut_px;
    float inv_sigma2 = 1.0f / (s.sigma_px * s.sigma_px);
    float dy = ((float)row + 0.5f) - s.y_px;
    float dy2 = dy * dy;
    if (dy2 > cut2) return false;
    float dx = ((float)col + 0.5f) - s.x_px;
    float dx2 = dx * dx;
    if (!(dx2 + dy2 <= cut2)) return false;
    float wx = expf(-dx2 * inv_sigma2);
    float wy = expf(-dy2 * inv_sigma2);
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) {
        float e = s.rgb[c] * wy;
        float w = wx * e;
        out[c] = fixed_of<F32>(w, scale, scale_f);
    }
    return true;
}

// *p += v on a 64-bit shared-memory word. With SPLIT_SHARED_ATOMICS the low 32-bit half gets
// a native atomicAdd and the high half v_hi plus the carry out of the low half (old + v_lo
// wrapped): the word ends as the exact 64-bit sum modulo 2^64 whatever the order, and the frame's
// bound keeps every sum below 2^62, so the result is the same as a 64-bit atomicAdd's.
__device__ __forceinline__ void shared_add_u64(unsigned long long* p, unsigned long long v) {
#if SPLIT_SHARED_ATOMICS
    unsigned int* half = reinterpret_cast<unsigned int*>(p);  // little-endian: [0] low, [1] high
    unsigned int lo = (unsigned int)v;
    unsigned int hi = (unsigned int)(v >> 32);
    if (lo != 0) {
        unsigned int old = atomicAdd(&half[0], lo);
        hi += (old + lo < old) ? 1u : 0u;
    }
    if (hi != 0) atomicAdd(&half[1], hi);
#else
    atomicAdd(p, v);
#endif
}
