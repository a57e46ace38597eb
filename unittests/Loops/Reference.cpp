//===- Reference.cpp - float64 attention forward/backward -----------------===//

#include "Reference.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace dash::test {

static size_t at(const AttnShape &s, int64_t b, int64_t i, int64_t h,
                 int64_t heads, int64_t seq) {
  return ((size_t)(b * seq + i) * heads + h) * s.headDim;
}

void forward(const AttnShape &s, AttnInputs &in) {
  int64_t group = s.headsQ / s.headsKV;
  in.o.assign(s.batch * s.seqQ * s.headsQ * s.headDim, 0.0);
  in.lse.assign(s.batch * s.headsQ * s.seqQ, 0.0);
  std::vector<double> p(s.seqK);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.headsQ; ++h)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!s.visible(i, j))
            continue;
          double dot = 0;
          const double *qr = &in.q[at(s, b, i, h, s.headsQ, s.seqQ)];
          const double *kr = &in.k[at(s, b, j, h / group, s.headsKV, s.seqK)];
          for (int64_t d = 0; d < s.headDim; ++d)
            dot += qr[d] * kr[d];
          p[j] = dot * s.scale;
          mx = std::max(mx, p[j]);
        }
        double &lse = in.lse[(b * s.headsQ + h) * s.seqQ + i];
        if (mx == -std::numeric_limits<double>::infinity()) {
          lse = mx; // the row sees no key: O = 0
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < s.seqK; ++j)
          if (s.visible(i, j))
            sum += std::exp(p[j] - mx);
        lse = mx + std::log(sum);
        double *orow = &in.o[at(s, b, i, h, s.headsQ, s.seqQ)];
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!s.visible(i, j))
            continue;
          double w = std::exp(p[j] - lse);
          const double *vr = &in.v[at(s, b, j, h / group, s.headsKV, s.seqK)];
          for (int64_t d = 0; d < s.headDim; ++d)
            orow[d] += w * vr[d];
        }
      }
}

void backward(const AttnShape &s, const AttnInputs &in, std::vector<double> &dq,
              std::vector<double> &dk, std::vector<double> &dv) {
  int64_t group = s.headsQ / s.headsKV, D = s.headDim;
  dq.assign(in.q.size(), 0.0);
  dk.assign(in.k.size(), 0.0);
  dv.assign(in.v.size(), 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.headsQ; ++h)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        size_t qi = at(s, b, i, h, s.headsQ, s.seqQ);
        double lse = in.lse[(b * s.headsQ + h) * s.seqQ + i];
        double rowsum = 0;
        for (int64_t d = 0; d < D; ++d)
          rowsum += in.dO[qi + d] * in.o[qi + d];
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!s.visible(i, j))
            continue;
          size_t kj = at(s, b, j, h / group, s.headsKV, s.seqK);
          double dot = 0, dp = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += in.q[qi + d] * in.k[kj + d];
            dp += in.dO[qi + d] * in.v[kj + d];
          }
          double p = std::exp(dot * s.scale - lse);
          double ds = p * (dp - rowsum);
          for (int64_t d = 0; d < D; ++d) {
            dq[qi + d] += s.scale * ds * in.k[kj + d];
            dk[kj + d] += s.scale * ds * in.q[qi + d];
            dv[kj + d] += p * in.dO[qi + d];
          }
        }
      }
}

double relError(const std::vector<float> &x, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]))
      return std::numeric_limits<double>::infinity();
    num += (x[i] - ref[i]) * (x[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

uint16_t toBF16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffff) > 0x7f800000)
    return 0x7fc0; // NaN
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

float fromBF16(uint16_t x) {
  uint32_t u = (uint32_t)x << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace dash::test
