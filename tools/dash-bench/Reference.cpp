//===- Reference.cpp - CPU reference attention forward/backward ----------===//
//
// Part of the DASH project. Compiled with reassociation allowed so the
// length-D dot products vectorise; s = 8192, h = 16, d = 128 takes seconds
// on 16 cores. Backward is two passes (dq by query row; dk/dv by key row)
// so every output row is owned by one thread: no atomics, and the result is
// itself deterministic.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

namespace dash::bench {
namespace {

template <typename F>
void parallelFor(int64_t n, int threads, F body) {
  std::atomic<int64_t> next{0};
  const int64_t chunk = std::max<int64_t>(1, n / (int64_t(threads) * 16));
  auto worker = [&] {
    for (;;) {
      int64_t start = next.fetch_add(chunk);
      if (start >= n)
        return;
      for (int64_t i = start, e = std::min(n, start + chunk); i < e; ++i)
        body(i);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

template <typename T>
inline T dot(const T *a, const T *b, int64_t d) {
  T s = 0;
  for (int64_t i = 0; i < d; ++i)
    s += a[i] * b[i];
  return s;
}

template <typename T> std::vector<T> widen(const std::vector<float> &x) {
  return std::vector<T>(x.begin(), x.end());
}

// Visible keys of query row i: [0, end(i)).
inline int64_t keyEnd(const RefProblem &p, int64_t i) {
  if (!p.causal)
    return p.Sk;
  int64_t off = p.bottomRight ? p.Sk - p.Sq : 0;
  return std::clamp<int64_t>(i + off + 1, 0, p.Sk);
}
// Visible queries of key row j: [begin(j), Sq).
inline int64_t queryBegin(const RefProblem &p, int64_t j) {
  if (!p.causal)
    return 0;
  int64_t off = p.bottomRight ? p.Sk - p.Sq : 0;
  return std::clamp<int64_t>(j - off, 0, p.Sq);
}

template <typename T>
void forward(const RefProblem &p, const std::vector<float> &qf,
             const std::vector<float> &kf, const std::vector<float> &vf,
             std::vector<float> &o, std::vector<float> &lse) {
  std::vector<T> q = widen<T>(qf), k = widen<T>(kf), v = widen<T>(vf);
  const int64_t D = p.D, group = p.Hq / p.Hkv;
  o.assign(size_t(p.B * p.Hq * p.Sq * D), 0.f);
  lse.assign(size_t(p.B * p.Hq * p.Sq), 0.f);
  parallelFor(p.B * p.Hq * p.Sq, p.threads, [&](int64_t row) {
    int64_t i = row % p.Sq, bh = row / p.Sq, b = bh / p.Hq, h = bh % p.Hq;
    const T *qi = &q[size_t(row * D)];
    const T *kb = &k[size_t(((b * p.Hkv) + h / group) * p.Sk * D)];
    const T *vb = &v[size_t(((b * p.Hkv) + h / group) * p.Sk * D)];
    int64_t end = keyEnd(p, i);
    if (end == 0) {
      lse[size_t(row)] = std::numeric_limits<float>::infinity();
      return;
    }
    std::vector<T> s(static_cast<size_t>(end)), acc(static_cast<size_t>(D), T(0));
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < end; ++j) {
      s[size_t(j)] = T(p.scale) * dot(qi, kb + j * D, D);
      m = std::max(m, s[size_t(j)]);
    }
    T l = 0;
    for (int64_t j = 0; j < end; ++j) {
      T e = std::exp(s[size_t(j)] - m);
      l += e;
      const T *vj = vb + j * D;
      for (int64_t d = 0; d < D; ++d)
        acc[size_t(d)] += e * vj[d];
    }
    for (int64_t d = 0; d < D; ++d)
      o[size_t(row * D + d)] = float(acc[size_t(d)] / l);
    lse[size_t(row)] = float(m + std::log(l));
  });
}

template <typename T>
void backward(const RefProblem &p, const std::vector<float> &qf,
              const std::vector<float> &kf, const std::vector<float> &vf,
              const std::vector<float> &of, const std::vector<float> &dOf,
              const std::vector<float> &lsef, std::vector<float> &dq,
              std::vector<float> &dk, std::vector<float> &dv) {
  std::vector<T> q = widen<T>(qf), k = widen<T>(kf), v = widen<T>(vf),
                 dO = widen<T>(dOf);
  const int64_t D = p.D, group = p.Hq / p.Hkv;
  const T scale = T(p.scale);
  // delta_i = dO_i . o_i (with the o the kernel sees)
  std::vector<T> delta(size_t(p.B * p.Hq * p.Sq));
  for (int64_t r = 0; r < p.B * p.Hq * p.Sq; ++r) {
    T s = 0;
    for (int64_t d = 0; d < D; ++d)
      s += T(dOf[size_t(r * D + d)]) * T(of[size_t(r * D + d)]);
    delta[size_t(r)] = s;
  }
  dq.assign(q.size(), 0.f);
  dk.assign(k.size(), 0.f);
  dv.assign(v.size(), 0.f);
  // Pass A: dq_i = scale * sum_j ds_ij k_j.
  parallelFor(p.B * p.Hq * p.Sq, p.threads, [&](int64_t row) {
    int64_t i = row % p.Sq, bh = row / p.Sq, b = bh / p.Hq, h = bh % p.Hq;
    const T *qi = &q[size_t(row * D)], *gi = &dO[size_t(row * D)];
    const T *kb = &k[size_t(((b * p.Hkv) + h / group) * p.Sk * D)];
    const T *vb = &v[size_t(((b * p.Hkv) + h / group) * p.Sk * D)];
    const T l = T(lsef[size_t(row)]), dl = delta[size_t(row)];
    std::vector<T> acc(size_t(D), T(0));
    for (int64_t j = 0, end = keyEnd(p, i); j < end; ++j) {
      const T *kj = kb + j * D;
      T pij = std::exp(scale * dot(qi, kj, D) - l);
      T ds = pij * (dot(gi, vb + j * D, D) - dl);
      for (int64_t d = 0; d < D; ++d)
        acc[size_t(d)] += ds * kj[d];
    }
    for (int64_t d = 0; d < D; ++d)
      dq[size_t(row * D + d)] = float(scale * acc[size_t(d)]);
  });
  // Pass B: dk_j, dv_j summed over the query heads of the group.
  parallelFor(p.B * p.Hkv * p.Sk, p.threads, [&](int64_t row) {
    int64_t j = row % p.Sk, bh = row / p.Sk, b = bh / p.Hkv, hk = bh % p.Hkv;
    const T *kj = &k[size_t(row * D)], *vj = &v[size_t(row * D)];
    std::vector<T> accK(size_t(D), T(0)), accV(size_t(D), T(0));
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      int64_t base = (b * p.Hq + h) * p.Sq;
      for (int64_t i = queryBegin(p, j); i < p.Sq; ++i) {
        const T *qi = &q[size_t((base + i) * D)], *gi = &dO[size_t((base + i) * D)];
        T pij = std::exp(scale * dot(qi, kj, D) - T(lsef[size_t(base + i)]));
        T ds = pij * (dot(gi, vj, D) - delta[size_t(base + i)]);
        for (int64_t d = 0; d < D; ++d) {
          accV[size_t(d)] += pij * gi[d];
          accK[size_t(d)] += ds * qi[d];
        }
      }
    }
    for (int64_t d = 0; d < D; ++d) {
      dk[size_t(row * D + d)] = float(scale * accK[size_t(d)]);
      dv[size_t(row * D + d)] = float(accV[size_t(d)]);
    }
  });
}

} // namespace

void referenceForward(const RefProblem &p, const std::vector<float> &q,
                      const std::vector<float> &k, const std::vector<float> &v,
                      std::vector<float> &o, std::vector<float> &lse) {
  if (p.useDouble)
    forward<double>(p, q, k, v, o, lse);
  else
    forward<float>(p, q, k, v, o, lse);
}

void referenceBackward(const RefProblem &p, const std::vector<float> &q,
                       const std::vector<float> &k, const std::vector<float> &v,
                       const std::vector<float> &o, const std::vector<float> &dO,
                       const std::vector<float> &lse, std::vector<float> &dq,
                       std::vector<float> &dk, std::vector<float> &dv) {
  if (p.useDouble)
    backward<double>(p, q, k, v, o, dO, lse, dq, dk, dv);
  else
    backward<float>(p, q, k, v, o, dO, lse, dq, dk, dv);
}

} // namespace dash::bench
