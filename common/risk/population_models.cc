#include "common/risk/population_models.h"

#include <cmath>
#include <functional>

#include "absl/strings/str_format.h"
#include "common/risk/special_functions.h"

namespace fedanon::risk {
namespace {

struct Totals {
  double records = 0;  // n
  double classes = 0;  // u
  double uniques = 0;  // f1
  double pairs = 0;    // f2
};

Totals Summarize(const ClassSizeHistogram& histogram) {
  Totals t;
  for (const auto& [size, count] : histogram) {
    t.records += static_cast<double>(size) * static_cast<double>(count);
    t.classes += static_cast<double>(count);
    if (size == 1) t.uniques = static_cast<double>(count);
    if (size == 2) t.pairs = static_cast<double>(count);
  }
  return t;
}

PopulationEstimate NotAvailable(std::string note) {
  return PopulationEstimate{.available = false, .uniques = 0, .note = std::move(note)};
}

// An estimate of population uniques is kept only inside [0, N].
PopulationEstimate Checked(double uniques, double population_size, std::string note) {
  if (!std::isfinite(uniques) || uniques < 0 || uniques > population_size) {
    return NotAvailable(absl::StrFormat("the estimate %g lies outside [0, N]", uniques));
  }
  return PopulationEstimate{.available = true, .uniques = uniques, .note = std::move(note)};
}

// Bisection for a sign change of f on [lo, hi] (f(lo) and f(hi) of opposite signs).
double Bisect(const std::function<double(double)>& f, double lo, double hi, int iterations = 200) {
  const bool lo_positive = f(lo) > 0;
  for (int i = 0; i < iterations; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    if ((f(mid) > 0) == lo_positive) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

// ---------------------------------------------------------------------------------------------
// Pitman (Hoshino 2001). Log-likelihood of a partition of n records into u classes of sizes s_j:
//   L = sum_{i=1}^{u-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
//       + sum_j sum_{k=1}^{s_j - 1} log(k - alpha).
// Its score equations, dL/dtheta = S1 - S2 = 0 and dL/dalpha = S3 - S4 = 0, with
//   S1 = sum_{i<u} 1/(theta + i alpha) = (psi(theta/alpha + u) - psi(theta/alpha + 1)) / alpha,
//   S2 = sum_{i<n} 1/(theta + i)       = psi(theta + n) - psi(theta + 1),
//   S3 = sum_{i<u} i/(theta + i alpha) = ((u - 1) - theta S1) / alpha,
//   S4 = sum_j sum_{k<s_j} 1/(k - alpha) = sum_j (psi(s_j - alpha) - psi(1 - alpha)).
// For fixed alpha, S1 - S2 falls from +inf (theta -> -alpha) to below 0 (theta -> inf, as u < n):
// theta(alpha) is found by bisection; then alpha by bisection on S3 - S4 along theta(alpha), which
// is +/- at alpha = 0 / alpha -> 1 exactly when the maximum is inside (0, 1).

struct PitmanSums {
  double s1 = 0;
  double s3 = 0;
};

// S1 and S3; for alpha * (u - 1) much smaller than theta the closed forms cancel, so the
// expansion in x = i alpha / theta (to x^2) is used there.
PitmanSums PitmanS1S3(double theta, double alpha, double u) {
  const double m = u - 1;
  if (alpha == 0 || alpha * m < 1e-4 * theta) {
    const double sum1 = m * (m + 1) / 2;
    const double sum2 = m * (m + 1) * (2 * m + 1) / 6;
    const double sum3 = sum1 * sum1;
    const double x = alpha / theta;
    return {.s1 = (m - x * sum1 + x * x * sum2) / theta,
            .s3 = (sum1 - x * sum2 + x * x * sum3) / theta};
  }
  const double y = theta / alpha;
  const double s1 = (Digamma(y + u) - Digamma(y + 1)) / alpha;
  return {.s1 = s1, .s3 = (m - theta * s1) / alpha};
}

}  // namespace

std::optional<PitmanParameters> FitPitman(const ClassSizeHistogram& histogram) {
  const Totals t = Summarize(histogram);
  const double n = t.records;
  const double u = t.classes;
  if (u < 2 || u >= n) return std::nullopt;  // one class, or every record unique: no maximum
  auto s4 = [&](double alpha) {
    double sum = 0;
    const double base = Digamma(1 - alpha);
    for (const auto& [size, count] : histogram) {
      if (size >= 2) {
        sum += static_cast<double>(count) * (Digamma(static_cast<double>(size) - alpha) - base);
      }
    }
    return sum;
  };
  // theta(alpha), searched as log(theta + alpha) (theta spans orders of magnitude).
  auto theta_of = [&](double alpha) -> std::optional<double> {
    auto g1 = [&](double y) {
      const double theta = std::exp(y) - alpha;
      return PitmanS1S3(theta, alpha, u).s1 - (Digamma(theta + n) - Digamma(theta + 1));
    };
    const double lo = std::log(1e-12);
    double hi = 0;
    while (g1(hi) > 0) {
      hi += 2;
      if (hi > std::log(1e15)) return std::nullopt;
    }
    if (g1(lo) <= 0) return std::nullopt;
    return std::exp(Bisect(g1, lo, hi)) - alpha;
  };
  auto h = [&](double alpha) -> std::optional<double> {
    const std::optional<double> theta = theta_of(alpha);
    if (!theta.has_value()) return std::nullopt;
    return PitmanS1S3(*theta, alpha, u).s3 - s4(alpha);
  };
  const double alpha_hi = 1 - 1e-9;
  const std::optional<double> h_lo = h(0);
  const std::optional<double> h_hi = h(alpha_hi);
  if (!h_lo.has_value() || !h_hi.has_value() || *h_lo <= 0 || *h_hi >= 0) return std::nullopt;
  const double alpha = Bisect(
      [&](double a) {
        const std::optional<double> v = h(a);
        return v.has_value() ? *v : -1.0;
      },
      0, alpha_hi, 100);
  const std::optional<double> theta = theta_of(alpha);
  if (!theta.has_value()) return std::nullopt;
  return PitmanParameters{.theta = *theta, .alpha = alpha};
}

PopulationEstimate PitmanUniques(const ClassSizeHistogram& histogram, double population_size) {
  const Totals t = Summarize(histogram);
  if (t.uniques == 0) return {.available = true, .uniques = 0, .note = "no sample unique"};
  const std::optional<PitmanParameters> p = FitPitman(histogram);
  if (!p.has_value()) {
    return NotAvailable(
        "the likelihood of Pitman's sampling formula has no maximum with 0 < alpha < 1");
  }
  // Hoshino 2001: E[population uniques] ~ Gamma(theta + 1) / Gamma(theta + alpha) N^alpha.
  const double uniques = std::exp(std::lgamma(p->theta + 1) - std::lgamma(p->theta + p->alpha) +
                                  p->alpha * std::log(population_size));
  return Checked(uniques, population_size,
                 absl::StrFormat("theta %.6g, alpha %.6g", p->theta, p->alpha));
}

PopulationEstimate ZayatzUniques(const ClassSizeHistogram& histogram, double population_size) {
  const Totals t = Summarize(histogram);
  if (t.uniques == 0) return {.available = true, .uniques = 0, .note = "no sample unique"};
  const double n = t.records;
  const double big_n = population_size;
  // P(X = 1) for X ~ Hypergeometric(N, s successes, n draws): s C(N - s, n - 1) / C(N, n)
  // = s (n / N) prod_{i=1}^{s-1} (N - n - i + 1) / (N - i), in logs; sizes ascending, so the
  // product is carried from one size to the next.
  double log_product = 0;
  uint64_t product_up_to = 1;  // the product covers i < product_up_to
  bool zero = false;
  double numerator = 0;
  double denominator = 0;
  for (const auto& [size, count] : histogram) {
    for (; product_up_to < size && !zero; ++product_up_to) {
      const double i = static_cast<double>(product_up_to);
      if (big_n - n - i + 1 <= 0) {
        zero = true;
      } else {
        log_product += std::log1p(-(n - 1) / (big_n - i));
      }
    }
    if (zero) break;  // larger classes cannot give exactly one sampled record
    const double s = static_cast<double>(size);
    const double p_one = std::exp(std::log(s) + std::log(n / big_n) + log_product);
    denominator += static_cast<double>(count) * p_one;
    if (size == 1) numerator = static_cast<double>(count) * p_one;
  }
  const double share = numerator / denominator;  // P(population unique | sample unique)
  const double uniques = t.uniques * share / (n / big_n);
  return Checked(uniques, population_size,
                 absl::StrFormat("share of sample uniques unique in the population %.6g", share));
}

double ShlosserClasses(const ClassSizeHistogram& histogram, double pi) {
  double v1 = 0, v2 = 0, v3 = 0, v4 = 0, u = 0, f1 = 0;
  for (const auto& [size, count] : histogram) {
    const double i = static_cast<double>(size);
    const double f = static_cast<double>(count);
    v1 += i * pi * pi * std::pow(1 - pi * pi, i - 1) * f;
    v2 += std::pow(1 - pi, i) * (std::pow(1 + pi, i) - 1) * f;
    v3 += std::pow(1 - pi, i) * f;
    v4 += i * pi * std::pow(1 - pi, i - 1) * f;
    u += f;
    if (size == 1) f1 = f;
  }
  if (v2 == 0 || v4 == 0) return u;
  return u + f1 * (v1 / v2) * (v3 / v4) * (v3 / v4);
}

// With x = 1 - p (p = b / (1 - d)) and r = (1 - pi) / pi, d / (1 - d) = x r and
//   E[c1] / (K pi)   = (1 - x)^a (1 + a x r),
//   E[c2] / E[c1]    = a x (1 + (a + 1) x r / 2) / (1 + a x r),
// the second increasing in a from 0 to infinity: for each x its a(x) is found by bisection, and x
// by the first sign change of the first equation along a grid of (0, 1), then bisection.
std::optional<SnbParameters> FitSnb(double classes, double pi, double c1, double c2) {
  if (!(pi > 0 && pi < 1) || !(c1 > 0) || !(c2 > 0) || !(classes > 0)) return std::nullopt;
  const double r = (1 - pi) / pi;
  const double ratio = c2 / c1;
  const double target = c1 / (classes * pi);
  auto ratio_of = [&](double a, double x) {
    return a * x * (1 + (a + 1) * x * r / 2) / (1 + a * x * r);
  };
  auto alpha_of = [&](double x) -> std::optional<double> {
    double hi = 1;
    while (ratio_of(hi, x) < ratio) {
      hi *= 2;
      if (hi > 1e12) return std::nullopt;
    }
    return Bisect([&](double a) { return ratio_of(a, x) - ratio; }, 0, hi);
  };
  auto first = [&](double x) -> std::optional<double> {
    const std::optional<double> a = alpha_of(x);
    if (!a.has_value()) return std::nullopt;
    return std::pow(1 - x, *a) * (1 + *a * x * r) - target;
  };
  constexpr int kGrid = 1000;
  std::optional<double> previous;
  double previous_x = 0;
  for (int i = 1; i < kGrid; ++i) {
    const double x = static_cast<double>(i) / kGrid;
    const std::optional<double> value = first(x);
    if (!value.has_value()) {
      previous.reset();
      continue;
    }
    if (previous.has_value() && (*previous > 0) != (*value > 0)) {
      const double root = Bisect(
          [&](double y) {
            const std::optional<double> v = first(y);
            return v.has_value() ? *v : 0.0;
          },
          previous_x, x);
      const std::optional<double> a = alpha_of(root);
      if (!a.has_value()) return std::nullopt;
      const double p = 1 - root;
      const double beta = p * pi / (1 - p * (1 - pi));
      return SnbParameters{.alpha = *a, .beta = beta};
    }
    previous = value;
    previous_x = x;
  }
  return std::nullopt;
}

PopulationEstimate SnbUniques(const ClassSizeHistogram& histogram, double population_size) {
  const Totals t = Summarize(histogram);
  if (t.uniques == 0) return {.available = true, .uniques = 0, .note = "no sample unique"};
  const double pi = t.records / population_size;
  const double classes = ShlosserClasses(histogram, pi);
  const std::optional<SnbParameters> p = FitSnb(classes, pi, t.uniques, t.pairs);
  if (!p.has_value()) {
    return NotAvailable(absl::StrFormat(
        "the SNB equations have no root with alpha > 0, 0 < beta < 1 (K = %.6g)", classes));
  }
  return Checked(classes * std::pow(p->beta, p->alpha), population_size,
                 absl::StrFormat("K %.6g, alpha %.6g, beta %.6g", classes, p->alpha, p->beta));
}

const char* UniquenessModelName(UniquenessModel model) {
  switch (model) {
    case UniquenessModel::kPitman:
      return "pitman";
    case UniquenessModel::kZayatz:
      return "zayatz";
    case UniquenessModel::kSnb:
      return "snb";
  }
  return "?";
}

DankarEstimate DankarRule(double sampling_fraction, const PopulationEstimate& pitman,
                          const PopulationEstimate& zayatz, const PopulationEstimate& snb) {
  if (sampling_fraction <= 0.1) {
    if (pitman.available) return {.estimate = pitman, .chosen = UniquenessModel::kPitman};
    return {.estimate = zayatz, .chosen = UniquenessModel::kZayatz};
  }
  if (snb.available && (!zayatz.available || snb.uniques <= zayatz.uniques)) {
    return {.estimate = snb, .chosen = UniquenessModel::kSnb};
  }
  return {.estimate = zayatz, .chosen = UniquenessModel::kZayatz};
}

}  // namespace fedanon::risk
