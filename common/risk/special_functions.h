// The digamma and trigamma functions (psi = d/dx ln Gamma, psi' = d^2/dx^2 ln Gamma) for x > 0,
// which the C++ standard library lacks; the population-uniqueness models (population_models.h)
// write their likelihood equations with them. Recurrence up to x >= 10, then the asymptotic
// series (Abramowitz & Stegun 6.3.18 and 6.4.12): absolute error below 1e-13.
#pragma once

namespace fedanon::risk {

double Digamma(double x);
double Trigamma(double x);

}  // namespace fedanon::risk
