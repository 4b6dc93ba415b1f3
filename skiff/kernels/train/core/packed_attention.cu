// Packed variable-length causal attention, fused forward and backward.
//
// Layout: q, k, v, o, do, dq, dk, dv are (T_total, H, D) row-major; lse and delta are
// (T_total, H) in the data type. cu[s] .. cu[s+1] are the rows of sequence s; seq_of[t] is the
// sequence of row t. A query never reads a key outside its own sequence.
//
// One thread per (row, head). The forward keeps a running max / sum (online softmax), so it
// never materialises the (L, L) score matrix; the backward recomputes the probabilities from
// the saved log-sum-exp. dq is gathered per query row, dk/dv per key row, so no atomics.
// D is at most MAX_D (checked on the host).

#define MAX_D 128

// accumulate in float for float data and in double for double data
template <typename T> struct Acc { typedef float type; };
template <> struct Acc<double> { typedef double type; };

template <typename T>
__device__ inline typename Acc<T>::type dot_row(const T* a, const T* b, int d) {
    typedef typename Acc<T>::type A;
    A s = 0;
    for (int i = 0; i < d; ++i) s += (A)a[i] * (A)b[i];
    return s;
}

template <typename T>
__device__ void packed_fwd(const T* __restrict__ q, const T* __restrict__ k,
                           const T* __restrict__ v, const int* __restrict__ cu,
                           const int* __restrict__ seq_of, T* __restrict__ o,
                           typename Acc<T>::type* __restrict__ lse, int total, int H, int D, typename Acc<T>::type scale) {
    typedef typename Acc<T>::type A;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total * H) return;
    int t = idx / H, h = idx % H;
    int start = cu[seq_of[t]];
    const T* qi = q + ((size_t)t * H + h) * D;
    A acc[MAX_D];
    for (int d = 0; d < D; ++d) acc[d] = 0;
    A m = -1e30, l = 0;  // below any score; no math.h macro needed under NVRTC
    for (int j = start; j <= t; ++j) {
        const T* kj = k + ((size_t)j * H + h) * D;
        const T* vj = v + ((size_t)j * H + h) * D;
        A s = dot_row(qi, kj, D) * scale;
        A m_new = m > s ? m : s;
        A corr = exp(m - m_new);
        A p = exp(s - m_new);
        l = l * corr + p;
        for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * (A)vj[d];
        m = m_new;
    }
    T* oi = o + ((size_t)t * H + h) * D;
    A inv = 1 / l;
    for (int d = 0; d < D; ++d) oi[d] = (T)(acc[d] * inv);
    lse[idx] = m + log(l);
}

template <typename T>
__device__ void packed_bwd_dq(const T* __restrict__ q, const T* __restrict__ k,
                              const T* __restrict__ v, const T* __restrict__ o,
                              const T* __restrict__ dout, const typename Acc<T>::type* __restrict__ lse,
                              const int* __restrict__ cu, const int* __restrict__ seq_of,
                              T* __restrict__ dq, typename Acc<T>::type* __restrict__ delta, int total, int H,
                              int D, typename Acc<T>::type scale) {
    typedef typename Acc<T>::type A;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total * H) return;
    int t = idx / H, h = idx % H;
    int start = cu[seq_of[t]];
    size_t row = ((size_t)t * H + h) * D;
    A dl = dot_row(dout + row, o + row, D);
    delta[idx] = dl;
    A acc[MAX_D];
    for (int d = 0; d < D; ++d) acc[d] = 0;
    A li = lse[idx];
    for (int j = start; j <= t; ++j) {
        size_t rj = ((size_t)j * H + h) * D;
        A p = exp(dot_row(q + row, k + rj, D) * scale - li);
        A ds = p * (dot_row(dout + row, v + rj, D) - dl);
        for (int d = 0; d < D; ++d) acc[d] += ds * (A)k[rj + d];
    }
    for (int d = 0; d < D; ++d) dq[row + d] = (T)(acc[d] * scale);
}

template <typename T>
__device__ void packed_bwd_dkdv(const T* __restrict__ q, const T* __restrict__ k,
                                const T* __restrict__ v, const T* __restrict__ dout,
                                const typename Acc<T>::type* __restrict__ lse, const typename Acc<T>::type* __restrict__ delta,
                                const int* __restrict__ cu, const int* __restrict__ seq_of,
                                T* __restrict__ dk, T* __restrict__ dv, int total, int H, int D,
                                typename Acc<T>::type scale) {
    typedef typename Acc<T>::type A;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total * H) return;
    int j = idx / H, h = idx % H;
    int end = cu[seq_of[j] + 1];
    size_t rj = ((size_t)j * H + h) * D;
    A ak[MAX_D], av[MAX_D];
    for (int d = 0; d < D; ++d) { ak[d] = 0; av[d] = 0; }
    for (int i = j; i < end; ++i) {
        size_t ri = ((size_t)i * H + h) * D;
        int ih = i * H + h;
        A p = exp(dot_row(q + ri, k + rj, D) * scale - lse[ih]);
        A ds = p * (dot_row(dout + ri, v + rj, D) - delta[ih]);
        for (int d = 0; d < D; ++d) {
            av[d] += p * (A)dout[ri + d];
            ak[d] += ds * (A)q[ri + d];
        }
    }
    for (int d = 0; d < D; ++d) { dk[rj + d] = (T)(ak[d] * scale); dv[rj + d] = (T)av[d]; }
}

#define INSTANTIATE(T, SUFFIX)                                                                \
    extern "C" __global__ void packed_attn_fwd_##SUFFIX(                                     \
        const T* q, const T* k, const T* v, const int* cu, const int* seq_of, T* o,          \
        T* lse, int total, int H, int D, T scale) {                                  \
        packed_fwd<T>(q, k, v, cu, seq_of, o, lse, total, H, D, scale);                      \
    }                                                                                         \
    extern "C" __global__ void packed_attn_bwd_dq_##SUFFIX(                                  \
        const T* q, const T* k, const T* v, const T* o, const T* dout, const T* lse,     \
        const int* cu, const int* seq_of, T* dq, T* delta, int total, int H, int D,      \
        T scale) {                                                                        \
        packed_bwd_dq<T>(q, k, v, o, dout, lse, cu, seq_of, dq, delta, total, H, D, scale);  \
    }                                                                                         \
    extern "C" __global__ void packed_attn_bwd_dkdv_##SUFFIX(                                \
        const T* q, const T* k, const T* v, const T* dout, const T* lse,                 \
        const T* delta, const int* cu, const int* seq_of, T* dk, T* dv, int total,       \
        int H, int D, T scale) {                                                          \
        packed_bwd_dkdv<T>(q, k, v, dout, lse, delta, cu, seq_of, dk, dv, total, H, D,       \
                           scale);                                                            \
    }

INSTANTIATE(float, f32)
INSTANTIATE(double, f64)
