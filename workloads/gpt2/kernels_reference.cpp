// Naive kernels: one loop nest per formula, double accumulators, no threads.
// They define what the fast kernels compute; tests compare the two.
#include <cmath>
#include <vector>

#include "workloads/gpt2/kernels.h"

namespace flopwatt::gpt2::reference {

namespace {
constexpr double kGeluK = 0.7978845608028654;  // sqrt(2/pi)
}

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < C; ++i)
        out[(std::int64_t(b) * T + t) * C + i] = wte[std::int64_t(inp[b * T + t]) * C + i] + wpe[std::int64_t(t) * C + i];
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < C; ++i) {
        const float d = dout[(std::int64_t(b) * T + t) * C + i];
        dwte[std::int64_t(inp[b * T + t]) * C + i] += d;
        dwpe[std::int64_t(t) * C + i] += d;
      }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int N, int C) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + std::int64_t(n) * C;
    double m = 0;
    for (int i = 0; i < C; ++i) m += x[i];
    m /= C;
    double v = 0;
    for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    for (int i = 0; i < C; ++i) out[std::int64_t(n) * C + i] = static_cast<float>((x[i] - m) * s * w[i] + b[i]);
    mean[n] = static_cast<float>(m);
    rstd[n] = static_cast<float>(s);
  }
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int N, int C, bool accumulate_dinp) {
  std::vector<double> dwd(C, 0.0), dbd(C, 0.0);
  for (int n = 0; n < N; ++n) {
    const float* dy = dout + std::int64_t(n) * C;
    const float* x = inp + std::int64_t(n) * C;
    const double m = mean[n], s = rstd[n];
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int i = 0; i < C; ++i) {
      const double norm = (x[i] - m) * s;
      const double dnorm = double(w[i]) * dy[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; ++i) {
      const double norm = (x[i] - m) * s;
      const double dnorm = double(w[i]) * dy[i];
      dbd[i] += dy[i];
      dwd[i] += norm * dy[i];
      const double dval = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
      float& o = dinp[std::int64_t(n) * C + i];
      o = static_cast<float>(accumulate_dinp ? o + dval : dval);
    }
  }
  for (int i = 0; i < C; ++i) {
    dw[i] = static_cast<float>(dw[i] + dwd[i]);
    db[i] = static_cast<float>(db[i] + dbd[i]);
  }
}

void bias_forward(float* out, const float* bias, int N, int OC) {
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o) out[std::int64_t(n) * OC + o] += bias[o];
}

void bias_backward(float* dbias, const float* dout, int N, int OC) {
  for (int o = 0; o < OC; ++o) {
    double s = 0;
    for (int n = 0; n < N; ++n) s += dout[std::int64_t(n) * OC + o];
    dbias[o] = static_cast<float>(dbias[o] + s);
  }
}

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int C3 = 3 * C, hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  std::vector<double> pre(T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + (std::int64_t(b) * T + t) * C3 + h * hs;
        float* a = att + ((std::int64_t(b) * NH + h) * T + t) * T;
        double mx = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (std::int64_t(b) * T + t2) * C3 + C + h * hs;
          double d = 0;
          for (int i = 0; i < hs; ++i) d += double(q[i]) * k[i];
          pre[t2] = d * scale;
          mx = std::max(mx, pre[t2]);
        }
        double sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) sum += std::exp(pre[t2] - mx);
        for (int t2 = 0; t2 < T; ++t2) a[t2] = t2 <= t ? static_cast<float>(std::exp(pre[t2] - mx) / sum) : 0.0f;
        float* o = out + (std::int64_t(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) {
          double acc = 0;
          for (int t2 = 0; t2 <= t; ++t2) acc += double(a[t2]) * qkv[(std::int64_t(b) * T + t2) * C3 + 2 * C + h * hs + i];
          o[i] = static_cast<float>(acc);
        }
      }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH) {
  const int C3 = 3 * C, hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  std::vector<double> acc(std::size_t(B) * T * C3, 0.0), datt(T), dpre(T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < NH; ++h) {
        const float* a = att + ((std::int64_t(b) * NH + h) * T + t) * T;
        const float* dy = dout + (std::int64_t(b) * T + t) * C + h * hs;
        const std::int64_t qrow = (std::int64_t(b) * T + t) * C3 + h * hs;
        // out = sum_t2 a[t2] v[t2]
        for (int t2 = 0; t2 <= t; ++t2) {
          const std::int64_t vrow = (std::int64_t(b) * T + t2) * C3 + 2 * C + h * hs;
          double d = 0;
          for (int i = 0; i < hs; ++i) {
            d += double(qkv[vrow + i]) * dy[i];
            acc[vrow + i] += double(a[t2]) * dy[i];
          }
          datt[t2] = d;
        }
        // softmax: dpre[t3] = sum_t2 a[t2] (delta(t2,t3) - a[t3]) datt[t2]
        for (int t3 = 0; t3 <= t; ++t3) {
          double s = 0;
          for (int t2 = 0; t2 <= t; ++t2) s += double(a[t2]) * ((t2 == t3 ? 1.0 : 0.0) - a[t3]) * datt[t2];
          dpre[t3] = s;
        }
        // pre[t2] = scale q . k[t2]
        for (int t2 = 0; t2 <= t; ++t2) {
          const std::int64_t krow = (std::int64_t(b) * T + t2) * C3 + C + h * hs;
          for (int i = 0; i < hs; ++i) {
            acc[qrow + i] += double(qkv[krow + i]) * dpre[t2] * scale;
            acc[krow + i] += double(qkv[qrow + i]) * dpre[t2] * scale;
          }
        }
      }
  for (std::size_t i = 0; i < acc.size(); ++i) dqkv[i] = static_cast<float>(acc[i]);
}

void gelu_forward(float* out, const float* inp, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    out[i] = static_cast<float>(0.5 * x * (1.0 + std::tanh(kGeluK * (x + 0.044715 * x * x * x))));
  }
}

void gelu_backward_inplace(float* d, const float* inp, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    const double u = kGeluK * (x + 0.044715 * x * x * x);
    const double th = std::tanh(u);
    const double sech2 = 1.0 - th * th;
    const double g = 0.5 * (1.0 + th) + 0.5 * x * sech2 * kGeluK * (1.0 + 3.0 * 0.044715 * x * x);
    d[i] = static_cast<float>(g * d[i]);
  }
}

void residual_forward(float* out, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void softmax_xent_forward(float* losses, float* lse, const float* logits, const int* targets, int N, int V, int Vp) {
  for (int n = 0; n < N; ++n) {
    const float* x = logits + std::int64_t(n) * Vp;
    double mx = -INFINITY;
    for (int i = 0; i < V; ++i) mx = std::max(mx, double(x[i]));
    double s = 0;
    for (int i = 0; i < V; ++i) s += std::exp(double(x[i]) - mx);
    const double l = mx + std::log(s);
    lse[n] = static_cast<float>(l);
    losses[n] = static_cast<float>(l - x[targets[n]]);
  }
}

void softmax_xent_backward_inplace(float* logits, const float* lse, const int* targets, float dloss, int N, int V,
                                   int Vp) {
  for (int n = 0; n < N; ++n) {
    float* x = logits + std::int64_t(n) * Vp;
    for (int i = 0; i < V; ++i) {
      const double p = std::exp(double(x[i]) - lse[n]);
      x[i] = static_cast<float>((p - (i == targets[n] ? 1.0 : 0.0)) * dloss);
    }
    for (int i = V; i < Vp; ++i) x[i] = 0.0f;
  }
}

}  // namespace flopwatt::gpt2::reference
