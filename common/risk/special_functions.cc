#include "common/risk/special_functions.h"

#include <cmath>

namespace fedanon::risk {

double Digamma(double x) {
  // psi(x) = psi(x + 1) - 1 / x.
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double inv = 1 / x;
  const double inv2 = inv * inv;
  // ln x - 1/(2x) - sum B_2k / (2k x^2k), k = 1..6.
  const double series =
      inv2 * (1.0 / 12 -
              inv2 * (1.0 / 120 -
                      inv2 * (1.0 / 252 -
                              inv2 * (1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760))))));
  return result + std::log(x) - 0.5 * inv - series;
}

double Trigamma(double x) {
  // psi'(x) = psi'(x + 1) + 1 / x^2.
  double result = 0;
  while (x < 10) {
    result += 1 / (x * x);
    x += 1;
  }
  const double inv = 1 / x;
  const double inv2 = inv * inv;
  // 1/x + 1/(2x^2) + sum B_2k / x^(2k+1), k = 1..6.
  const double series =
      inv2 * inv *
      (1.0 / 6 -
       inv2 * (1.0 / 30 -
               inv2 * (1.0 / 42 - inv2 * (1.0 / 30 - inv2 * (5.0 / 66 - inv2 * (691.0 / 2730))))));
  return result + inv + 0.5 * inv2 + series;
}

}  // namespace fedanon::risk
