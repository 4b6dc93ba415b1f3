// CUDA twins of skiff.kernels.solve.fused (compiled by cupy.RawModule; a test runs nvcc -ptx).
// Grids are 3D (n0, n1, n2), C order; a 2D grid has n0 == 1. One thread per cell.
// Reductions: a block sum in shared memory, then one atomicAdd per block (needs sm_60+).

#define BLOCK 256

__device__ __forceinline__ void block_add(double v, double* total) {
    __shared__ double buf[BLOCK];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, buf[0]);
}

// sum over interior faces of coupling * neighbour (variable couplings)
__device__ __forceinline__ double nsum_var(const double* u, const double* c0, const double* c1,
                                           const double* c2, int n0, int n1, int n2,
                                           int k, int j, int i) {
    long c = ((long)k * n1 + j) * n2 + i;
    double s = 0.0;
    if (k > 0) s += c0[c] * u[c - (long)n1 * n2];
    if (k < n0 - 1) s += c0[c + (long)n1 * n2] * u[c + (long)n1 * n2];
    long f1 = ((long)k * (n1 + 1) + j) * n2 + i;
    if (j > 0) s += c1[f1] * u[c - n2];
    if (j < n1 - 1) s += c1[f1 + n2] * u[c + n2];
    long f2 = ((long)k * n1 + j) * (n2 + 1) + i;
    if (i > 0) s += c2[f2] * u[c - 1];
    if (i < n2 - 1) s += c2[f2 + 1] * u[c + 1];
    return s;
}

__device__ __forceinline__ double nsum_const(const double* u, const double* a, int n0, int n1,
                                             int n2, int k, int j, int i) {
    long c = ((long)k * n1 + j) * n2 + i;
    double s = 0.0;
    if (k > 0) s += a[0] * u[c - (long)n1 * n2];
    if (k < n0 - 1) s += a[0] * u[c + (long)n1 * n2];
    if (j > 0) s += a[1] * u[c - n2];
    if (j < n1 - 1) s += a[1] * u[c + n2];
    if (i > 0) s += a[2] * u[c - 1];
    if (i < n2 - 1) s += a[2] * u[c + 1];
    return s;
}

#define CELL_INDEX                                          \
    long c = (long)blockIdx.x * BLOCK + threadIdx.x;        \
    long n = (long)n0 * n1 * n2;                            \
    int i = 0, j = 0, k = 0;                                \
    if (c < n) { i = c % n2; j = (c / n2) % n1; k = c / ((long)n1 * n2); }

extern "C" __global__ void apply_var(const double* u, const double* c0, const double* c1,
                                     const double* c2, const double* diag, double* out,
                                     double* dot, int n0, int n1, int n2) {
    CELL_INDEX
    double v = 0.0;
    if (c < n) {
        double s = diag[c] * u[c] - nsum_var(u, c0, c1, c2, n0, n1, n2, k, j, i);
        out[c] = s;
        v = s * u[c];
    }
    block_add(v, dot);
}

extern "C" __global__ void apply_const(const double* u, const double* a, const double* d0,
                                       const double* d1, const double* d2, double* out,
                                       double* dot, int n0, int n1, int n2) {
    CELL_INDEX
    double v = 0.0;
    if (c < n) {
        double s = (d0[k] + d1[j] + d2[i]) * u[c] - nsum_const(u, a, n0, n1, n2, k, j, i);
        out[c] = s;
        v = s * u[c];
    }
    block_add(v, dot);
}

extern "C" __global__ void gs_var(double* u, const double* f, const double* c0,
                                  const double* c1, const double* c2, const double* diag,
                                  int n0, int n1, int n2, int colour) {
    CELL_INDEX
    if (c < n && ((i + j + k) & 1) == colour)
        u[c] = (f[c] + nsum_var(u, c0, c1, c2, n0, n1, n2, k, j, i)) / diag[c];
}

extern "C" __global__ void gs_const(double* u, const double* f, const double* a,
                                    const double* d0, const double* d1, const double* d2,
                                    int n0, int n1, int n2, int colour) {
    CELL_INDEX
    if (c < n && ((i + j + k) & 1) == colour)
        u[c] = (f[c] + nsum_const(u, a, n0, n1, n2, k, j, i)) / (d0[k] + d1[j] + d2[i]);
}

// fc must be zeroed; w = 1 / children per coarse cell
extern "C" __global__ void residual_restrict_var(const double* u, const double* f,
                                                 const double* c0, const double* c1,
                                                 const double* c2, const double* diag,
                                                 double* fc, double* rr, int n0, int n1, int n2,
                                                 int m0, int m1, int m2) {
    CELL_INDEX
    double v = 0.0;
    if (c < n) {
        double r = f[c] - diag[c] * u[c] + nsum_var(u, c0, c1, c2, n0, n1, n2, k, j, i);
        int K = k / (n0 / m0), J = j / (n1 / m1), I = i / (n2 / m2);
        double w = 1.0 / ((n0 / m0) * (n1 / m1) * (n2 / m2));
        atomicAdd(&fc[((long)K * m1 + J) * m2 + I], w * r);
        v = r * r;
    }
    block_add(v, rr);
}

extern "C" __global__ void residual_restrict_const(const double* u, const double* f,
                                                   const double* a, const double* d0,
                                                   const double* d1, const double* d2,
                                                   double* fc, double* rr, int n0, int n1,
                                                   int n2, int m0, int m1, int m2) {
    CELL_INDEX
    double v = 0.0;
    if (c < n) {
        double r = f[c] - (d0[k] + d1[j] + d2[i]) * u[c] + nsum_const(u, a, n0, n1, n2, k, j, i);
        int K = k / (n0 / m0), J = j / (n1 / m1), I = i / (n2 / m2);
        double w = 1.0 / ((n0 / m0) * (n1 / m1) * (n2 / m2));
        atomicAdd(&fc[((long)K * m1 + J) * m2 + I], w * r);
        v = r * r;
    }
    block_add(v, rr);
}

// r = f - A u for a uniform stencil, with |r|^2 (the first half of the symmetric
// multigrid's residual + transpose restriction; restrict_t does the second)
extern "C" __global__ void residual_const(const double* u, const double* f, const double* a,
                                          const double* d0, const double* d1,
                                          const double* d2, double* r, double* rr, int n0,
                                          int n1, int n2) {
    CELL_INDEX
    double v = 0.0;
    if (c < n) {
        double s = f[c] - (d0[k] + d1[j] + d2[i]) * u[c] + nsum_const(u, a, n0, n1, n2, k, j, i);
        r[c] = s;
        v = s * s;
    }
    block_add(v, rr);
}

__device__ __forceinline__ void weights_1d(int i, int n, int m, double slo, double shi,
                                           int* a, int* b, double* wa, double* wb) {
    if (n == m) { *a = i; *b = i; *wa = 1.0; *wb = 0.0; return; }
    int c = i / 2;
    int nb = (i % 2 == 0) ? c - 1 : c + 1;
    *wa = 0.75; *wb = 0.25;
    if (nb < 0) { nb = c; *wb = 0.25 * slo; }
    else if (nb >= m) { nb = c; *wb = 0.25 * shi; }
    *a = c; *b = nb;
}

extern "C" __global__ void prolong_add(double* u, const double* ec, const double* sg,
                                       int n0, int n1, int n2, int m0, int m1, int m2) {
    CELL_INDEX
    if (c >= n) return;
    int ka, kb, ja, jb, ia, ib;
    double vk[2], vj[2], vi[2];
    weights_1d(k, n0, m0, sg[0], sg[1], &ka, &kb, &vk[0], &vk[1]);
    weights_1d(j, n1, m1, sg[2], sg[3], &ja, &jb, &vj[0], &vj[1]);
    weights_1d(i, n2, m2, sg[4], sg[5], &ia, &ib, &vi[0], &vi[1]);
    int ks[2] = {ka, kb}, js[2] = {ja, jb}, is[2] = {ia, ib};
    double e = 0.0;
    for (int x = 0; x < 2; ++x)
        for (int y = 0; y < 2; ++y)
            for (int z = 0; z < 2; ++z)
                e += vk[x] * vj[y] * vi[z] * ec[((long)ks[x] * m1 + js[y]) * m2 + is[z]];
    u[c] += e;
}

extern "C" __global__ void axpy_norm(double* x, double* r, const double* p, const double* q,
                                     double alpha, double* rr, long n) {
    long c = (long)blockIdx.x * BLOCK + threadIdx.x;
    double v = 0.0;
    if (c < n) {
        x[c] += alpha * p[c];
        double t = r[c] - alpha * q[c];
        r[c] = t;
        v = t * t;
    }
    block_add(v, rr);
}

extern "C" __global__ void jacobi_dot(const double* r, const double* invdiag, double* z,
                                      double* rz, long n) {
    long c = (long)blockIdx.x * BLOCK + threadIdx.x;
    double v = 0.0;
    if (c < n) {
        double t = invdiag[c] * r[c];
        z[c] = t;
        v = t * r[c];
    }
    block_add(v, rz);
}

// one coarse index along an axis: up to four fine indices and weights of P^T / 2
__device__ int tweights(int ic, int n, int m, double slo, double shi, int* idx, double* w) {
    if (n == m) { idx[0] = ic; w[0] = 1.0; return 1; }
    int a = 2 * ic, cnt = 2;
    idx[0] = a; w[0] = 0.375 + (ic == 0 ? 0.125 * slo : 0.0);
    idx[1] = a + 1; w[1] = 0.375 + (ic == m - 1 ? 0.125 * shi : 0.0);
    if (ic > 0) { idx[cnt] = a - 1; w[cnt] = 0.125; ++cnt; }
    if (ic < m - 1) { idx[cnt] = a + 2; w[cnt] = 0.125; ++cnt; }
    return cnt;
}

// fc = P^T r / 2^d, one thread per coarse cell (the transpose of prolong_add)
extern "C" __global__ void restrict_t(const double* r, double* fc, const double* sg,
                                      int n0, int n1, int n2, int m0, int m1, int m2) {
    long c = (long)blockIdx.x * BLOCK + threadIdx.x;
    long m = (long)m0 * m1 * m2;
    if (c >= m) return;
    int i = (int)(c % m2), j = (int)((c / m2) % m1), k = (int)(c / ((long)m1 * m2));
    int ki[4], ji[4], ii[4];
    double kw[4], jw[4], iw[4];
    int nk = tweights(k, n0, m0, sg[0], sg[1], ki, kw);
    int nj = tweights(j, n1, m1, sg[2], sg[3], ji, jw);
    int ni = tweights(i, n2, m2, sg[4], sg[5], ii, iw);
    double s = 0.0;
    for (int x = 0; x < nk; ++x)
        for (int y = 0; y < nj; ++y)
            for (int z = 0; z < ni; ++z)
                s += kw[x] * jw[y] * iw[z] * r[((long)ki[x] * n1 + ji[y]) * n2 + ii[z]];
    fc[c] = s;
}

// y = A x for a CSR matrix (int32 row pointers and column indices, as cupyx keeps them), one
// thread per row: the flow's finite-element rows hold ~10-30 entries, and one launch costs far
// less host time than cuSPARSE's descriptors per product.
extern "C" __global__ void csr_spmv(const int* indptr, const int* indices, const double* data,
                                    const double* x, double* y, int n) {
    long row = (long)blockIdx.x * BLOCK + threadIdx.x;
    if (row >= n) return;
    double s = 0.0;
    for (int k = indptr[row]; k < indptr[row + 1]; ++k) s += data[k] * x[indices[k]];
    y[row] = s;
}

// dot += sum a[i] b[i]
extern "C" __global__ void dot(const double* a, const double* b, double* out, long n) {
    long c = (long)blockIdx.x * BLOCK + threadIdx.x;
    double v = 0.0;
    for (long i = c; i < n; i += (long)gridDim.x * BLOCK) v += a[i] * b[i];
    block_add(v, out);
}
