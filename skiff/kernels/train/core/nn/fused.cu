// GPU twins of the fused training ops of fused.py and optim.py (layer norm forward and
// backward; over all parameters at once: AdamW, and clipping's sum of squares and rescale). Loaded by fused_gpu.py as one cupy RawModule; every kernel
// exists for float (_f32) and double (_f64) and accumulates in double.
//
// Block sizes: the row kernels take any multiple of 32 up to 1024 threads (one block per row);
// ln_bwd_cols takes a (32, COLS_Y) block; the *_many kernels any multiple of 32.

#define COLS_Y 8

// Sum of v over the block (blockDim.x a multiple of 32); every thread gets the total.
// sh holds 33 doubles; back-to-back calls are safe: each call's last read of sh[32] happens
// before every thread has passed the next call's second barrier, where sh[32] is written.
__device__ __forceinline__ double block_sum(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  if (wid == 0) {
    const int nw = (blockDim.x + 31) >> 5;
    v = (lane < nw) ? sh[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) sh[32] = v;
  }
  __syncthreads();
  return sh[32];
}

// y = (x - mean) * rstd * w + b per row of x (n, c); xhat = (x - mean) * rstd; rstd (n,).
template <typename T>
__device__ void ln_fwd(const T* __restrict__ x, const T* __restrict__ w,
                       const T* __restrict__ b, T* __restrict__ y, T* __restrict__ xhat,
                       T* __restrict__ rstd, int n, int c, double eps) {
  __shared__ double sh[33];
  const int row = blockIdx.x;
  if (row >= n) return;  // the whole block leaves together
  const T* xr = x + (size_t)row * c;
  double s = 0.0;
  for (int j = threadIdx.x; j < c; j += blockDim.x) s += (double)xr[j];
  const double mu = block_sum(s, sh) / c;
  double v = 0.0;
  for (int j = threadIdx.x; j < c; j += blockDim.x) {
    const double d = (double)xr[j] - mu;
    v += d * d;
  }
  const double r = 1.0 / sqrt(block_sum(v, sh) / c + eps);
  if (threadIdx.x == 0) rstd[row] = (T)r;
  T* yr = y + (size_t)row * c;
  T* hr = xhat + (size_t)row * c;
  for (int j = threadIdx.x; j < c; j += blockDim.x) {
    const T h = (T)(((double)xr[j] - mu) * r);
    hr[j] = h;
    yr[j] = h * w[j] + b[j];
  }
}

// gx = rstd * (g w - mean(g w) - xhat * mean(g w xhat)) per row.
template <typename T>
__device__ void ln_bwd_rows(const T* __restrict__ g, const T* __restrict__ xhat,
                            const T* __restrict__ rstd, const T* __restrict__ w,
                            T* __restrict__ gx, int n, int c) {
  __shared__ double sh[33];
  const int row = blockIdx.x;
  if (row >= n) return;
  const size_t off = (size_t)row * c;
  double s1 = 0.0, s2 = 0.0;
  for (int j = threadIdx.x; j < c; j += blockDim.x) {
    const double gh = (double)g[off + j] * (double)w[j];
    s1 += gh;
    s2 += gh * (double)xhat[off + j];
  }
  const double m1 = block_sum(s1, sh) / c;
  const double m2 = block_sum(s2, sh) / c;
  const double r = (double)rstd[row];
  for (int j = threadIdx.x; j < c; j += blockDim.x) {
    const double gh = (double)g[off + j] * (double)w[j];
    gx[off + j] = (T)(r * (gh - m1 - (double)xhat[off + j] * m2));
  }
}

// Partial column sums of g * xhat (gw) and g (gb) over the rows of chunk blockIdx.y:
// part[0][chunk][col] and part[1][chunk][col]; a (32, COLS_Y) block covers 32 columns.
template <typename T>
__device__ void ln_bwd_cols(const T* __restrict__ g, const T* __restrict__ xhat,
                            double* __restrict__ part, int n, int c, int rows_per_chunk) {
  __shared__ double sw[COLS_Y][33];
  __shared__ double sb[COLS_Y][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * rows_per_chunk;
  const int r1 = min(n, r0 + rows_per_chunk);
  double aw = 0.0, ab = 0.0;
  if (col < c) {
    for (int r = r0 + threadIdx.y; r < r1; r += COLS_Y) {
      const double gv = (double)g[(size_t)r * c + col];
      aw += gv * (double)xhat[(size_t)r * c + col];
      ab += gv;
    }
  }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && col < c) {
    for (int k = 1; k < COLS_Y; ++k) {
      aw += sw[k][threadIdx.x];
      ab += sb[k][threadIdx.x];
    }
    part[(size_t)blockIdx.y * c + col] = aw;
    part[((size_t)gridDim.y + blockIdx.y) * c + col] = ab;
  }
}

// gw[col], gb[col] = the sums of the chunks' partials (one thread per column).
template <typename T>
__device__ void ln_bwd_finish(const double* __restrict__ part, T* __restrict__ gw,
                              T* __restrict__ gb, int c, int chunks) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= c) return;
  double aw = 0.0, ab = 0.0;
  for (int k = 0; k < chunks; ++k) {
    aw += part[(size_t)k * c + col];
    ab += part[((size_t)chunks + k) * c + col];
  }
  gw[col] = (T)aw;
  gb[col] = (T)ab;
}

// The multi-tensor kernels read a table `meta` of n tensors (int64 words): offsets[0..n] (the
// running element counts), then per tensor its array pointers, then per tensor its doubles (as
// their bits). A thread finds its tensor by binary search over the offsets.
__device__ __forceinline__ int tensor_of(const long long* offsets, int n, long long i) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (offsets[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// One AdamW element (torch.optim.AdamW's formula, as adamw_update): element k of tensor t of
// a table with pointers p, g, m, v per tensor, in double.
template <typename T>
__device__ __forceinline__ void adamw_element(const long long* __restrict__ meta, int n, int t,
                                              long long k, double decay, double b1, double b2,
                                              double eps, double step_size, double bc2_sqrt) {
  T* p = (T*)meta[n + 1 + 4 * t];
  const T* g = (const T*)meta[n + 1 + 4 * t + 1];
  T* m = (T*)meta[n + 1 + 4 * t + 2];
  T* v = (T*)meta[n + 1 + 4 * t + 3];
  const double gi = (double)g[k];
  const double mi = b1 * (double)m[k] + (1.0 - b1) * gi;
  const double vi = b2 * (double)v[k] + (1.0 - b2) * gi * gi;
  m[k] = (T)mi;
  v[k] = (T)vi;
  p[k] = (T)((double)p[k] * decay - step_size * mi / (sqrt(vi) / bc2_sqrt + eps));
}

// AdamW on every tensor at once: pointers p, g, m, v per tensor; doubles step_size, bc2_sqrt
// per tensor (their step counts may differ).
template <typename T>
__device__ void adamw_many(const long long* __restrict__ meta, int n, double decay, double b1,
                           double b2, double eps) {
  const long long* offsets = meta;
  const long long total = offsets[n];
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int t = tensor_of(offsets, n, i);
    adamw_element<T>(meta, n, t, i - offsets[t], decay, b1, b2, eps,
                     __longlong_as_double(meta[5 * n + 1 + 2 * t]),
                     __longlong_as_double(meta[5 * n + 1 + 2 * t + 1]));
  }
}

// out[0] += the sum of squares of every tensor (pointers x per tensor).
template <typename T>
__device__ void sumsq_many(const long long* __restrict__ meta, int n, double* __restrict__ out) {
  __shared__ double sh[33];
  const long long* offsets = meta;
  const long long total = offsets[n];
  const long long stride = (long long)gridDim.x * blockDim.x;
  double s = 0.0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int t = tensor_of(offsets, n, i);
    const double x = (double)((const T*)meta[n + 1 + t])[i - offsets[t]];
    s += x * x;
  }
  s = block_sum(s, sh);
  if (threadIdx.x == 0) atomicAdd(out, s);
}

// every tensor (pointers x per tensor) *= coef, in place.
template <typename T>
__device__ void scale_many(const long long* __restrict__ meta, int n, double coef) {
  const long long* offsets = meta;
  const long long total = offsets[n];
  const long long stride = (long long)gridDim.x * blockDim.x;
  const T c = (T)coef;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int t = tensor_of(offsets, n, i);
    ((T*)meta[n + 1 + t])[i - offsets[t]] *= c;
  }
}

// The captured training step's kernels (graph.py): their scalars live on the device, so a CUDA
// graph replays them with each step's values. status[0] is the step's loss, status[1] the sum
// of squares of its gradients (sumsq_many's out).
//
// Clipping: every gradient *= max_norm / (sqrt(status[1]) + eps) when that is below 1 and the
// sum is finite (clip_grad_norm_'s rule, the norm read on the device).
template <typename T>
__device__ void clip_many(const long long* __restrict__ meta, int n,
                          const double* __restrict__ status, double max_norm, double eps) {
  const double s = status[1];
  if (!isfinite(s)) return;
  const double coef = max_norm / (sqrt(s) + eps);
  if (coef < 1.0) scale_many<T>(meta, n, coef);
}

// AdamW with every scalar in the table: pointers p, g, m, v per tensor, then six doubles per
// tensor (decay = 1 - lr wd, beta1, beta2, eps, step_size = lr / (1 - beta1^t), bc2_sqrt =
// sqrt(1 - beta2^t)); nothing changes when the loss or the gradients are not finite (the
// eager trainer stops before its update then).
template <typename T>
__device__ void adamw_guarded(const long long* __restrict__ meta, int n,
                              const double* __restrict__ status) {
  if (!isfinite(status[0]) || !isfinite(status[1])) return;
  const long long* offsets = meta;
  const long long total = offsets[n];
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int t = tensor_of(offsets, n, i);
    const long long* d = meta + 5 * n + 1 + 6 * t;
    adamw_element<T>(meta, n, t, i - offsets[t], __longlong_as_double(d[0]),
                     __longlong_as_double(d[1]), __longlong_as_double(d[2]),
                     __longlong_as_double(d[3]), __longlong_as_double(d[4]),
                     __longlong_as_double(d[5]));
  }
}

#define SKIFF_FUSED_KERNELS(T, SFX)                                                          \
  extern "C" __global__ void ln_fwd_##SFX(const T* x, const T* w, const T* b, T* y, T* xhat, \
                                          T* rstd, int n, int c, double eps) {               \
    ln_fwd<T>(x, w, b, y, xhat, rstd, n, c, eps);                                            \
  }                                                                                          \
  extern "C" __global__ void ln_bwd_rows_##SFX(const T* g, const T* xhat, const T* rstd,     \
                                               const T* w, T* gx, int n, int c) {            \
    ln_bwd_rows<T>(g, xhat, rstd, w, gx, n, c);                                              \
  }                                                                                          \
  extern "C" __global__ void ln_bwd_cols_##SFX(const T* g, const T* xhat, double* part,      \
                                               int n, int c, int rows_per_chunk) {           \
    ln_bwd_cols<T>(g, xhat, part, n, c, rows_per_chunk);                                     \
  }                                                                                          \
  extern "C" __global__ void ln_bwd_finish_##SFX(const double* part, T* gw, T* gb, int c,    \
                                                 int chunks) {                               \
    ln_bwd_finish<T>(part, gw, gb, c, chunks);                                               \
  }                                                                                          \
  extern "C" __global__ void adamw_many_##SFX(const long long* meta, int n, double decay,    \
                                              double b1, double b2, double eps) {            \
    adamw_many<T>(meta, n, decay, b1, b2, eps);                                              \
  }                                                                                          \
  extern "C" __global__ void sumsq_many_##SFX(const long long* meta, int n, double* out) {   \
    sumsq_many<T>(meta, n, out);                                                             \
  }                                                                                          \
  extern "C" __global__ void scale_many_##SFX(const long long* meta, int n, double coef) {   \
    scale_many<T>(meta, n, coef);                                                            \
  }                                                                                          \
  extern "C" __global__ void clip_many_##SFX(const long long* meta, int n,                   \
                                             const double* status, double max_norm,          \
                                             double eps) {                                   \
    clip_many<T>(meta, n, status, max_norm, eps);                                            \
  }                                                                                          \
  extern "C" __global__ void adamw_guarded_##SFX(const long long* meta, int n,               \
                                                 const double* status) {                     \
    adamw_guarded<T>(meta, n, status);                                                       \
  }

SKIFF_FUSED_KERNELS(float, f32)
SKIFF_FUSED_KERNELS(double, f64)
