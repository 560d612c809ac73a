// Population-uniqueness models: from a sample's equivalence-class sizes, an estimate of how many
// records are unique in the population the sample was drawn from (docs/risk.md). They need the
// population size N (or the sampling fraction pi = n / N), an input the data cannot give.
//
//  * Pitman: Hoshino, "Applying Pitman's sampling formula to microdata disclosure risk
//    assessment", J. Official Statistics 17(4), 2001. The sample's partition follows Pitman's
//    two-parameter sampling formula; (theta, alpha) are the maximum-likelihood estimates and the
//    population uniques are Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha.
//  * Zayatz: Zayatz, "Estimation of the percent of unique population elements on a microdata
//    file using the sample", US Census Bureau SRD report RR-91/08, 1991. The share of sample
//    uniques that are population uniques, from hypergeometric draws with the sample's class-size
//    distribution standing in for the population's; population uniques = that share * f1 / pi.
//  * SNB: Chen & Keller-McNulty, "Estimation of identification disclosure risk in microdata",
//    J. Official Statistics 14(1), 1998: population class sizes F with F - 1 negative binomial
//    (alpha, beta), Bernoulli sampling with probability pi; (alpha, beta) solve the expected
//    numbers of sample classes of size 1 and 2, the number of population classes K is Haas &
//    Stokes's Shlosser-type estimate (JASA 93, 1998); population uniques = K * beta^alpha.
//  * Dankar: Dankar, El Emam, Neisa & Roffey, "Estimating the re-identification risk of clinical
//    data sets", BMC Medical Informatics and Decision Making 12:66, 2012: the decision rule
//    choosing among the three — Pitman when pi <= 0.1 (Zayatz if Pitman has no solution), else
//    the smaller of Zayatz and SNB (Zayatz if SNB has none), as ARX implements it.
//
// A model "has no solution" (PopulationEstimate::available false) when its equations have no
// root in the parameter space (e.g. Pitman's alpha at 0, every record unique) or the estimate
// falls outside [0, N]. With no sample unique every model estimates 0.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace fedanon::risk {

// Class size -> number of classes of that size (f_1, f_2, ...), ascending; every size >= 1.
using ClassSizeHistogram = std::map<uint64_t, uint64_t>;

struct PopulationEstimate {
  bool available = false;
  double uniques = 0;  // estimated population uniques
  std::string note;    // why it is not available, or the fitted parameters
};

// The maximum-likelihood (theta, alpha) of Pitman's sampling formula for the partition
// `histogram`, alpha in (0, 1); nullopt when the likelihood has no maximum there.
struct PitmanParameters {
  double theta = 0;
  double alpha = 0;
};
std::optional<PitmanParameters> FitPitman(const ClassSizeHistogram& histogram);

PopulationEstimate PitmanUniques(const ClassSizeHistogram& histogram, double population_size);
PopulationEstimate ZayatzUniques(const ClassSizeHistogram& histogram, double population_size);
PopulationEstimate SnbUniques(const ClassSizeHistogram& histogram, double population_size);

// Haas & Stokes's Shlosser-type estimate of the number of population classes (for SNB), with
// sampling fraction `pi`: u + f1 * [sum i pi^2 (1 - pi^2)^(i-1) f_i / sum (1 - pi)^i
// ((1 + pi)^i - 1) f_i] * [sum (1 - pi)^i f_i / sum i pi (1 - pi)^(i-1) f_i]^2.
double ShlosserClasses(const ClassSizeHistogram& histogram, double pi);

// The SNB model's (alpha, beta) for K population classes, sampling fraction pi and c1, c2 sample
// classes of size 1 and 2: E[c1] = K pi p^a (1 + a d / (1 - d)) and E[c2] = K a b^a (1 - b) pi^2
// (2 - (1 - a) d) / (2 (1 - d)^(a + 2)) with d = (1 - b)(1 - pi), p = b / (1 - d); nullopt
// without a root with a > 0, 0 < b < 1.
struct SnbParameters {
  double alpha = 0;
  double beta = 0;
};
std::optional<SnbParameters> FitSnb(double classes, double pi, double c1, double c2);

enum class UniquenessModel { kPitman, kZayatz, kSnb };
const char* UniquenessModelName(UniquenessModel model);  // "pitman", "zayatz", "snb"

struct DankarEstimate {
  PopulationEstimate estimate;
  UniquenessModel chosen = UniquenessModel::kPitman;
};
// Dankar et al.'s rule over the three estimates (computed by the caller for the same table).
DankarEstimate DankarRule(double sampling_fraction, const PopulationEstimate& pitman,
                          const PopulationEstimate& zayatz, const PopulationEstimate& snb);

}  // namespace fedanon::risk
