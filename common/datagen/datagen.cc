#include "common/datagen/datagen.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace fedanon::datagen {
namespace {

// ----------------------------------------------------------------------------------------------
// Random numbers: xoshiro256** seeded through splitmix64 (Blackman & Vigna). Only integer
// arithmetic is used from here to the output, so results do not depend on the platform's libm,
// floating-point contraction or the standard library's distributions.

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (uint64_t& word : s_) word = SplitMix64(s);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  uint32_t Bits32() { return static_cast<uint32_t>(Next() >> 32); }
  // Uniform in [0, n) for 0 < n < 2^32 (multiply-shift; the bias of < n / 2^32 is irrelevant here).
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>((uint64_t{Bits32()} * n) >> 32); }
  // Uniform in [lo, hi].
  int Between(int lo, int hi) {
    return lo + static_cast<int>(Below(static_cast<uint32_t>(hi - lo + 1)));
  }
  // True with probability per_mille / 1000.
  bool PerMille(uint32_t per_mille) { return Below(1000) < per_mille; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_;
};

// A discrete distribution over indices 0..n-1 with integer weights.
class Choice {
 public:
  Choice() = default;
  explicit Choice(std::span<const uint32_t> weights) {
    uint32_t total = 0;
    for (uint32_t w : weights) cumulative_.push_back(total += w);
  }
  int Sample(Rng& rng) const { return SamplePrefix(rng, static_cast<int>(cumulative_.size())); }
  // Samples among the first n indices only (the distribution truncated to them).
  int SamplePrefix(Rng& rng, int n) const {
    const uint32_t r = rng.Below(cumulative_[n - 1]);
    int i = 0;
    while (cumulative_[i] <= r) ++i;
    return i;
  }

 private:
  std::vector<uint32_t> cumulative_;
};

// Piecewise-linear inverse CDF: `q` in parts per million (first 0, last 1,000,000), value `v`.
struct Knot {
  int64_t q;
  int64_t v;
};

int64_t SampleQuantiles(Rng& rng, std::span<const Knot> knots) {
  const int64_t r = rng.Below(1'000'000'000);  // parts per billion
  size_t i = 1;
  while (i + 1 < knots.size() && knots[i].q * 1000 <= r) ++i;
  const Knot& a = knots[i - 1];
  const Knot& b = knots[i];
  return a.v + (b.v - a.v) * (r - a.q * 1000) / ((b.q - a.q) * 1000);
}

// ----------------------------------------------------------------------------------------------
// Vocabularies (UCI Adult's value spellings) and the generator's hand-rounded model.

constexpr std::array<absl::string_view, 15> kColumns = {"age",
                                                        "workclass",
                                                        "fnlwgt",
                                                        "education",
                                                        "education-num",
                                                        "marital-status",
                                                        "occupation",
                                                        "relationship",
                                                        "race",
                                                        "sex",
                                                        "capital-gain",
                                                        "capital-loss",
                                                        "hours-per-week",
                                                        "native-country",
                                                        "income"};
constexpr int kIncomeColumn = 14;
constexpr int kAttributeCount = 14;  // every column but income

enum Workclass {
  kPrivate,
  kSelfEmpNotInc,
  kSelfEmpInc,
  kFederalGov,
  kLocalGov,
  kStateGov,
  kWithoutPay
};
constexpr std::array<absl::string_view, 7> kWorkclass = {
    "Private",   "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
    "Local-gov", "State-gov",        "Without-pay"};

// Index = education-num - 1.
constexpr std::array<absl::string_view, 16> kEducation = {
    "Preschool", "1st-4th", "5th-6th",     "7th-8th",      "9th",       "10th",
    "11th",      "12th",    "HS-grad",     "Some-college", "Assoc-voc", "Assoc-acdm",
    "Bachelors", "Masters", "Prof-school", "Doctorate"};

enum Marital {
  kMarriedCiv,
  kNeverMarried,
  kDivorced,
  kSeparated,
  kWidowed,
  kSpouseAbsent,
  kMarriedAf
};
constexpr std::array<absl::string_view, 7> kMarital = {
    "Married-civ-spouse",    "Never-married",    "Divorced", "Separated", "Widowed",
    "Married-spouse-absent", "Married-AF-spouse"};

enum Relationship { kHusband, kWife, kOwnChild, kNotInFamily, kOtherRelative, kUnmarried };
constexpr std::array<absl::string_view, 6> kRelationship = {
    "Husband", "Wife", "Own-child", "Not-in-family", "Other-relative", "Unmarried"};

enum Occupation {
  kAdmClerical,
  kArmedForces,
  kCraftRepair,
  kExecManagerial,
  kFarmingFishing,
  kHandlersCleaners,
  kMachineOpInspct,
  kOtherService,
  kPrivHouseServ,
  kProfSpecialty,
  kProtectiveServ,
  kSales,
  kTechSupport,
  kTransportMoving
};
constexpr std::array<absl::string_view, 14> kOccupation = {
    "Adm-clerical",    "Armed-Forces",      "Craft-repair",      "Exec-managerial",
    "Farming-fishing", "Handlers-cleaners", "Machine-op-inspct", "Other-service",
    "Priv-house-serv", "Prof-specialty",    "Protective-serv",   "Sales",
    "Tech-support",    "Transport-moving"};

constexpr std::array<absl::string_view, 5> kRace = {"White", "Black", "Asian-Pac-Islander",
                                                    "Amer-Indian-Eskimo", "Other"};
constexpr std::array<absl::string_view, 2> kSex = {"Male", "Female"};

// Regions of native-country: taxonomy parents and the race mix of people born there.
struct Region {
  absl::string_view name;
  absl::string_view continent;
  int race_mix;  // index into kRaceByOrigin
};
constexpr std::array<Region, 9> kRegions = {{
    {"North-America", "Americas", 0},
    {"Central-America", "Americas", 1},
    {"Caribbean", "Americas", 2},
    {"South-America", "Americas", 1},
    {"Western-Europe", "Europe", 3},
    {"Eastern-Europe", "Europe", 3},
    {"East-Asia", "Asia", 4},
    {"Southeast-Asia", "Asia", 4},
    {"South-and-West-Asia", "Asia", 4},
}};
// Race weights (White, Black, Asian-Pac-Islander, Amer-Indian-Eskimo, Other) per origin.
constexpr uint32_t kRaceByOrigin[5][5] = {
    {8650, 1030, 80, 110, 70},   // North America
    {8000, 300, 50, 250, 1400},  // Latin America
    {4500, 4800, 50, 50, 600},   // Caribbean
    {9700, 100, 100, 20, 80},    // Europe
    {1000, 50, 8800, 20, 130},   // Asia
};

struct Country {
  absl::string_view name;
  uint32_t weight;  // per 100,000
  int region;
};
constexpr std::array<Country, 41> kCountries = {{
    {"United-States", 91300, 0},
    {"Mexico", 2000, 1},
    {"Philippines", 630, 7},
    {"Germany", 430, 4},
    {"Puerto-Rico", 390, 2},
    {"Canada", 360, 0},
    {"India", 330, 8},
    {"El-Salvador", 330, 1},
    {"Cuba", 290, 2},
    {"England", 260, 4},
    {"China", 250, 6},
    {"Jamaica", 230, 2},
    {"South", 220, 6},
    {"Italy", 220, 4},
    {"Dominican-Republic", 210, 2},
    {"Japan", 200, 6},
    {"Guatemala", 190, 1},
    {"Vietnam", 180, 7},
    {"Columbia", 180, 3},
    {"Poland", 180, 5},
    {"Haiti", 150, 2},
    {"Portugal", 140, 4},
    {"Iran", 120, 8},
    {"Taiwan", 120, 6},
    {"Greece", 110, 4},
    {"Nicaragua", 110, 1},
    {"Peru", 100, 3},
    {"Ecuador", 100, 3},
    {"France", 80, 4},
    {"Ireland", 80, 4},
    {"Thailand", 60, 7},
    {"Hong", 60, 6},
    {"Cambodia", 60, 7},
    {"Trinadad&Tobago", 60, 2},
    {"Yugoslavia", 50, 5},
    {"Outlying-US(Guam-USVI-etc)", 50, 0},
    {"Laos", 50, 7},
    {"Scotland", 40, 4},
    {"Honduras", 40, 1},
    {"Hungary", 40, 5},
    {"Holand-Netherlands", 5, 4},
}};

// Taxonomies (own trees; root ANY). Every value above is a leaf; native-country's tree is built
// from kCountries / kRegions.
struct TaxonomyLine {
  absl::string_view leaf;
  absl::string_view ancestors;  // parent;...;(without the root)
};
constexpr TaxonomyLine kWorkclassTax[] = {
    {"Private", "Private-sector;With-pay"},     {"Self-emp-not-inc", "Self-employed;With-pay"},
    {"Self-emp-inc", "Self-employed;With-pay"}, {"Federal-gov", "Government;With-pay"},
    {"Local-gov", "Government;With-pay"},       {"State-gov", "Government;With-pay"},
    {"Without-pay", "Unpaid;No-pay"},
};
constexpr TaxonomyLine kEducationTax[] = {
    {"Preschool", "Elementary;No-HS-diploma"},
    {"1st-4th", "Elementary;No-HS-diploma"},
    {"5th-6th", "Elementary;No-HS-diploma"},
    {"7th-8th", "Middle-school;No-HS-diploma"},
    {"9th", "Some-high-school;No-HS-diploma"},
    {"10th", "Some-high-school;No-HS-diploma"},
    {"11th", "Some-high-school;No-HS-diploma"},
    {"12th", "Some-high-school;No-HS-diploma"},
    {"HS-grad", "High-school-diploma;HS-or-some-college"},
    {"Some-college", "College-no-degree;HS-or-some-college"},
    {"Assoc-voc", "Associate-degree;HS-or-some-college"},
    {"Assoc-acdm", "Associate-degree;HS-or-some-college"},
    {"Bachelors", "Undergraduate-degree;University-degree"},
    {"Masters", "Graduate-degree;University-degree"},
    {"Prof-school", "Graduate-degree;University-degree"},
    {"Doctorate", "Graduate-degree;University-degree"},
};
constexpr TaxonomyLine kMaritalTax[] = {
    {"Married-civ-spouse", "Spouse-present;Married"},
    {"Married-AF-spouse", "Spouse-present;Married"},
    {"Married-spouse-absent", "Spouse-absent;Married"},
    {"Separated", "Spouse-absent;Married"},
    {"Never-married", "Single;Not-married"},
    {"Divorced", "Formerly-married;Not-married"},
    {"Widowed", "Formerly-married;Not-married"},
};
constexpr TaxonomyLine kOccupationTax[] = {
    {"Exec-managerial", "Management-professional;White-collar"},
    {"Prof-specialty", "Management-professional;White-collar"},
    {"Tech-support", "Office-sales-technical;White-collar"},
    {"Sales", "Office-sales-technical;White-collar"},
    {"Adm-clerical", "Office-sales-technical;White-collar"},
    {"Craft-repair", "Skilled-trades;Blue-collar"},
    {"Farming-fishing", "Skilled-trades;Blue-collar"},
    {"Machine-op-inspct", "Operators-laborers;Blue-collar"},
    {"Transport-moving", "Operators-laborers;Blue-collar"},
    {"Handlers-cleaners", "Operators-laborers;Blue-collar"},
    {"Other-service", "Personal-service;Service"},
    {"Priv-house-serv", "Personal-service;Service"},
    {"Protective-serv", "Security-defense;Service"},
    {"Armed-Forces", "Security-defense;Service"},
};
constexpr TaxonomyLine kRelationshipTax[] = {
    {"Husband", "Spouse;Family-member"},
    {"Wife", "Spouse;Family-member"},
    {"Own-child", "Relative;Family-member"},
    {"Other-relative", "Relative;Family-member"},
    {"Not-in-family", "No-relatives;Not-family-member"},
    {"Unmarried", "Unmarried-householder;Not-family-member"},
};
constexpr TaxonomyLine kRaceTax[] = {
    {"White", "Majority"},
    {"Black", "Minority"},
    {"Asian-Pac-Islander", "Minority"},
    {"Amer-Indian-Eskimo", "Minority"},
    {"Other", "Minority"},
};
constexpr TaxonomyLine kSexTax[] = {{"Male", ""}, {"Female", ""}};

// Ages: 5-year buckets (first 17-19, last 90) with per-mille weights; uniform within a bucket.
constexpr int kAgeBucketLo[] = {17, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90};
constexpr int kAgeBucketHi[] = {19, 24, 29, 34, 39, 44, 49, 54, 59, 64, 69, 74, 79, 84, 89, 90};
constexpr uint32_t kAgeBucketWeight[] = {45, 116, 127, 137, 136, 122, 106, 80,
                                         58, 37,  18,  9,   4,   2,   1,   1};

// Coarser age classes for the conditional tables: 17-19, 20-24, 25-29, 30-34, 35-44, 45-54,
// 55-64, 65+.
int AgeClass(int age) {
  if (age < 20) return 0;
  if (age < 25) return 1;
  if (age < 30) return 2;
  if (age < 35) return 3;
  if (age < 45) return 4;
  if (age < 55) return 5;
  if (age < 65) return 6;
  return 7;
}
constexpr uint32_t kMalePerMille[8] = {510, 570, 650, 700, 710, 710, 710, 660};

// Marital status by [sex][age class], in kMarital order.
constexpr uint32_t kMaritalWeight[2][8][7] = {
    {
        {15, 983, 1, 1, 0, 0, 0},
        {170, 795, 15, 10, 0, 8, 2},
        {420, 495, 50, 20, 2, 11, 2},
        {620, 260, 80, 22, 3, 13, 2},
        {720, 130, 110, 25, 3, 12, 1},
        {790, 60, 110, 20, 8, 12, 1},
        {820, 40, 90, 14, 22, 12, 1},
        {800, 50, 45, 8, 88, 9, 0},
    },
    {
        {10, 970, 8, 5, 0, 5, 2},
        {60, 880, 30, 18, 1, 9, 2},
        {150, 660, 130, 38, 3, 17, 2},
        {190, 450, 250, 75, 8, 23, 2},
        {210, 260, 390, 80, 30, 23, 1},
        {190, 150, 450, 90, 100, 20, 1},
        {170, 100, 370, 60, 280, 20, 0},
        {70, 100, 220, 20, 590, 10, 0},
    },
};

// Relationship of people living with their spouse, by sex (kRelationship order). Husband and Wife
// occur only here, so Husband => Male and married, Wife => Female and married.
constexpr uint32_t kSpouseRelationship[2][6] = {{990, 0, 4, 0, 6, 0}, {0, 930, 28, 2, 40, 0}};
// Everybody else, by age class: Own-child, Not-in-family, Other-relative, Unmarried; the
// Unmarried (single householder) weight is scaled by kUnmarriedBySexPercent.
constexpr uint32_t kOtherRelationship[8][4] = {
    {790, 120, 70, 20},  {530, 340, 60, 70}, {280, 530, 60, 130}, {180, 550, 40, 230},
    {110, 540, 30, 320}, {60, 580, 40, 330}, {30, 660, 50, 260},  {10, 740, 60, 180},
};
constexpr uint32_t kUnmarriedBySexPercent[2] = {60, 160};

// Education (index = education-num - 1): weights per 10,000 for adults, and for 17/18-year-olds.
constexpr uint32_t kEducationWeight[16] = {16,   50,   100, 180, 150,  270, 360, 130,
                                           3270, 2190, 430, 330, 1670, 560, 170, 120};
constexpr uint32_t kEducationAge17[16] = {0, 0, 3, 4, 30, 150, 230, 60, 12, 3, 0, 0, 0, 0, 0, 0};
constexpr uint32_t kEducationAge18[16] = {0, 0, 5, 6, 9, 45, 220, 75, 205, 135, 0, 0, 0, 0, 0, 0};
// Highest education-num reachable at a given age (>= 19).
int MaxEducationNum(int age) {
  if (age <= 21) return 12;
  if (age <= 23) return 13;
  if (age <= 24) return 14;
  return 16;
}

// Workclass: base weights per 10,000 and percent multipliers.
constexpr uint32_t kWorkclassWeight[7] = {7370, 840, 360, 310, 690, 430, 5};
constexpr uint32_t kWorkclassYoungPercent[7] = {125, 30, 30, 100, 100, 100, 100};    // age < 25
constexpr uint32_t kWorkclassOldPercent[7] = {100, 180, 180, 100, 100, 100, 100};    // age >= 50
constexpr uint32_t kWorkclassDegreePercent[7] = {85, 100, 150, 180, 180, 180, 100};  // num >= 13

// Occupation per 10,000 by education group (num <= 8, 9-10, 11-12, >= 13), and percent
// multipliers by sex.
constexpr uint32_t kOccupationWeight[4][14] = {
    {500, 1, 1750, 300, 750, 1000, 1300, 2150, 180, 150, 100, 930, 50, 900},
    {1550, 3, 1670, 1000, 330, 540, 810, 1230, 40, 390, 250, 1230, 280, 650},
    {1550, 3, 1550, 1350, 320, 220, 420, 760, 20, 1290, 340, 1060, 850, 260},
    {760, 1, 320, 2530, 120, 70, 90, 250, 10, 3950, 150, 1300, 360, 90},
};
constexpr uint32_t kOccupationSexPercent[2][14] = {
    {48, 180, 140, 106, 138, 130, 108, 67, 5, 94, 130, 95, 90, 140},
    {210, 20, 16, 90, 18, 37, 82, 170, 300, 113, 37, 110, 120, 18},
};
int EducationGroup(int num) { return num <= 8 ? 0 : num <= 10 ? 1 : num <= 12 ? 2 : 3; }

// Hours per week: classes 1-24, 25-34, 35-39, 40, 41-44, 45-49, 50-54, 55-59, 60-99; per mille for
// men, women, the young (< 22) and the old (>= 65).
constexpr uint32_t kHoursWeight[4][9] = {
    {45, 55, 40, 470, 35, 75, 140, 35, 105},
    {140, 120, 70, 465, 30, 50, 70, 15, 40},
    {300, 200, 80, 300, 30, 30, 40, 5, 15},
    {300, 150, 60, 300, 30, 40, 60, 20, 40},
};

// Income: P(>50K) = 1 / (1 + exp(-points / 10)), points = intercept + the terms below (tenths of a
// logit), clamped to [-100, 100]. kSigmoid[points + 100] = round(2^32 * P) (precomputed so that no
// floating point is involved at run time).
constexpr int kIncomeIntercept = 2;
constexpr int kIncomeEducation[16] = {-27, -27, -27, -27, -25, -22, -20, -17,
                                      -14, -10, -9,  -8,  -2,  1,   9,   8};
int IncomeAgePoints(int age) {
  constexpr int kPoints[] = {-29, -18, -8, -2, 1, 3, 5, 5, 4, 2, 1};  // 17-19, 20-24, ..., 65+
  const int bucket = age < 20 ? 0 : std::min(10, (age - 15) / 5);
  return kPoints[bucket];
}
constexpr int kIncomeRelationship[6] = {5, 11, -10, -4, -8, -9};
constexpr int kIncomeMarital[7] = {1, -11, -10, -9, -6, -7, 7};
constexpr int kIncomeOccupation[14] = {-2, 2, -1, 8, -9, -8, -5, -11, -16, 6, 4, 1, 4, -2};
constexpr int kIncomeWorkclass[7] = {0, -4, 6, 5, -1, -3, -7};
constexpr int kIncomeRace[5] = {0, -10, -2, -8, -8};
int IncomeHoursPoints(int hours) {
  if (hours < 25) return -11;
  if (hours < 35) return -10;
  if (hours < 40) return -3;
  if (hours == 40) return -1;
  if (hours < 50) return 3;
  if (hours < 60) return 5;
  return 3;
}
constexpr uint32_t kSigmoid[201] = {
    194982u,     215488u,     238150u,     263194u,     290873u,     321462u,     355268u,
    392628u,     433917u,     479547u,     529976u,     585706u,     647296u,     715361u,
    790583u,     873712u,     965581u,     1067106u,    1179304u,    1303295u,    1440318u,
    1591741u,    1759078u,    1943998u,    2148347u,    2374166u,    2623707u,    2899458u,
    3204169u,    3540877u,    3912935u,    4324048u,    4778306u,    5280227u,    5834799u,
    6447529u,    7124496u,    7872413u,    8698685u,    9611486u,    10619836u,   11733682u,
    12963999u,   14322888u,   15823690u,   17481108u,   19311346u,   21332251u,   23563474u,
    26026649u,   28745576u,   31746428u,   35057976u,   38711823u,   42742664u,   47188559u,
    52091232u,   57496374u,   63453983u,   70018702u,   77250184u,   85213464u,   93979343u,
    103624768u,  114233218u,  125895072u,  138707965u,  152777095u,  168215499u,  185144250u,
    203692574u,  223997848u,  246205461u,  270468505u,  296947254u,  325808402u,  357224011u,
    391370137u,  428425089u,  468567279u,  511972652u,  558811642u,  609245685u,  663423262u,
    721475542u,  783511659u,  849613729u,  919831744u,  994178485u,  1072624679u, 1155094609u,
    1241462433u, 1331549464u, 1425122667u, 1521894576u, 1621524825u, 1723623375u, 1827755473u,
    1933448259u, 2040198855u, 2147483648u, 2254768441u, 2361519037u, 2467211823u, 2571343921u,
    2673442471u, 2773072720u, 2869844629u, 2963417832u, 3053504863u, 3139872687u, 3222342617u,
    3300788811u, 3375135552u, 3445353567u, 3511455637u, 3573491754u, 3631544034u, 3685721611u,
    3736155654u, 3782994644u, 3826400017u, 3866542207u, 3903597159u, 3937743285u, 3969158894u,
    3998020042u, 4024498791u, 4048761835u, 4070969448u, 4091274722u, 4109823046u, 4126751797u,
    4142190201u, 4156259331u, 4169072224u, 4180734078u, 4191342528u, 4200987953u, 4209753832u,
    4217717112u, 4224948594u, 4231513313u, 4237470922u, 4242876064u, 4247778737u, 4252224632u,
    4256255473u, 4259909320u, 4263220868u, 4266221720u, 4268940647u, 4271403822u, 4273635045u,
    4275655950u, 4277486188u, 4279143606u, 4280644408u, 4282003297u, 4283233614u, 4284347460u,
    4285355810u, 4286268611u, 4287094883u, 4287842800u, 4288519767u, 4289132497u, 4289687069u,
    4290188990u, 4290643248u, 4291054361u, 4291426419u, 4291763127u, 4292067838u, 4292343589u,
    4292593130u, 4292818949u, 4293023298u, 4293208218u, 4293375555u, 4293526978u, 4293664001u,
    4293787992u, 4293900190u, 4294001715u, 4294093584u, 4294176713u, 4294251935u, 4294320000u,
    4294381590u, 4294437320u, 4294487749u, 4294533379u, 4294574668u, 4294612028u, 4294645834u,
    4294676423u, 4294704102u, 4294729146u, 4294751808u, 4294772314u};

// Capital gain / loss: probability of a non-zero value per mille by class, and value quantiles.
constexpr uint32_t kGainPerMille[2] = {42, 212};  // <=50K, >50K
constexpr uint32_t kTopGainPerMille = 100;        // of >50K gains: the 99999 top code
constexpr Knot kGainLow[] = {{0, 100},       {100000, 900},  {300000, 2000},  {600000, 3200},
                             {850000, 4600}, {970000, 7500}, {1000000, 15000}};
constexpr Knot kGainHigh[] = {{0, 3100},       {150000, 5000},  {400000, 7700},
                              {700000, 15000}, {950000, 27000}, {1000000, 41000}};
constexpr uint32_t kLossPerMille[2] = {32, 123};  // given no capital gain
constexpr Knot kLossLow[] = {{0, 150},       {50000, 1000},  {200000, 1500},
                             {600000, 1750}, {900000, 2100}, {1000000, 4350}};
constexpr Knot kLossHigh[] = {{0, 650},       {50000, 1500},  {200000, 1850},
                              {700000, 2000}, {950000, 2450}, {1000000, 3700}};
constexpr Knot kFnlwgt[] = {{0, 12000},       {10000, 27000},    {100000, 66000},  {250000, 117000},
                            {500000, 178000}, {750000, 238000},  {900000, 328000}, {990000, 510000},
                            {999000, 900000}, {1000000, 1500000}};

struct Person {
  int age = 0;
  int workclass = 0;
  int fnlwgt = 0;
  int education_num = 0;  // 1..16
  int marital = 0;
  int occupation = 0;
  int relationship = 0;
  int race = 0;
  int sex = 0;
  int capital_gain = 0;
  int capital_loss = 0;
  int hours = 0;
  int country = 0;
  bool high_income = false;
};

template <size_t N>
Choice Weighted(const uint32_t (&w)[N]) {
  return Choice(std::span<const uint32_t>(w, N));
}

class Model {
 public:
  Model() {
    age_bucket_ = Weighted(kAgeBucketWeight);
    for (int s = 0; s < 2; ++s) {
      for (int a = 0; a < 8; ++a) {
        marital_[s][a] = Weighted(kMaritalWeight[s][a]);
        uint32_t w[4];
        std::copy(std::begin(kOtherRelationship[a]), std::end(kOtherRelationship[a]), w);
        w[3] = w[3] * kUnmarriedBySexPercent[s] / 100;
        other_relationship_[s][a] = Weighted(w);
      }
      spouse_relationship_[s] = Weighted(kSpouseRelationship[s]);
      for (int g = 0; g < 4; ++g) {
        uint32_t w[14];
        for (int o = 0; o < 14; ++o) w[o] = kOccupationWeight[g][o] * kOccupationSexPercent[s][o];
        occupation_[s][g] = Weighted(w);
      }
    }
    education_ = Weighted(kEducationWeight);
    education17_ = Weighted(kEducationAge17);
    education18_ = Weighted(kEducationAge18);
    for (int a = 0; a < 3; ++a) {
      for (int d = 0; d < 2; ++d) {
        uint32_t w[7];
        for (int i = 0; i < 7; ++i) {
          w[i] = kWorkclassWeight[i];
          if (a == 0) w[i] = w[i] * kWorkclassYoungPercent[i] / 100;
          if (a == 2) w[i] = w[i] * kWorkclassOldPercent[i] / 100;
          if (d == 1) w[i] = w[i] * kWorkclassDegreePercent[i] / 100;
        }
        workclass_[a][d] = Weighted(w);
      }
    }
    for (int h = 0; h < 4; ++h) hours_[h] = Weighted(kHoursWeight[h]);
    uint32_t cw[kCountries.size()];
    for (size_t c = 0; c < kCountries.size(); ++c) cw[c] = kCountries[c].weight;
    country_ = Weighted(cw);
    for (int o = 0; o < 5; ++o) race_[o] = Weighted(kRaceByOrigin[o]);
  }

  Person Sample(Rng& rng) const {
    Person p;
    const int bucket = age_bucket_.Sample(rng);
    p.age = rng.Between(kAgeBucketLo[bucket], kAgeBucketHi[bucket]);
    const int age_class = AgeClass(p.age);
    p.sex = rng.PerMille(kMalePerMille[age_class]) ? 0 : 1;
    p.marital = marital_[p.sex][age_class].Sample(rng);
    if (p.marital == kMarriedCiv || p.marital == kMarriedAf) {
      p.relationship = spouse_relationship_[p.sex].Sample(rng);
    } else {
      constexpr int kOther[4] = {kOwnChild, kNotInFamily, kOtherRelative, kUnmarried};
      p.relationship = kOther[other_relationship_[p.sex][age_class].Sample(rng)];
    }
    if (p.age == 17) {
      p.education_num = education17_.Sample(rng) + 1;
    } else if (p.age == 18) {
      p.education_num = education18_.Sample(rng) + 1;
    } else {
      p.education_num = education_.SamplePrefix(rng, MaxEducationNum(p.age)) + 1;
    }
    const int degree = p.education_num >= 13 ? 1 : 0;
    p.workclass = workclass_[p.age < 25 ? 0 : p.age < 50 ? 1 : 2][degree].Sample(rng);
    p.occupation = occupation_[p.sex][EducationGroup(p.education_num)].Sample(rng);
    if (p.occupation == kArmedForces) p.workclass = kFederalGov;
    if (p.occupation == kPrivHouseServ) p.workclass = kPrivate;
    p.hours = SampleHours(rng, p);
    p.country = country_.Sample(rng);
    p.race = race_[kRegions[kCountries[p.country].region].race_mix].Sample(rng);

    int points = kIncomeIntercept + kIncomeEducation[p.education_num - 1] + IncomeAgePoints(p.age) +
                 kIncomeRelationship[p.relationship] + kIncomeMarital[p.marital] +
                 kIncomeOccupation[p.occupation] + kIncomeWorkclass[p.workclass] +
                 kIncomeRace[p.race] + IncomeHoursPoints(p.hours);
    points = std::clamp(points, -100, 100);
    p.high_income = rng.Bits32() < kSigmoid[points + 100];

    const int cls = p.high_income ? 1 : 0;
    if (rng.PerMille(kGainPerMille[cls])) {
      if (cls == 1 && rng.PerMille(kTopGainPerMille)) {
        p.capital_gain = 99999;
      } else {
        p.capital_gain = static_cast<int>(
            SampleQuantiles(rng, cls == 1 ? std::span<const Knot>(kGainHigh) : kGainLow));
      }
    } else if (rng.PerMille(kLossPerMille[cls])) {
      p.capital_loss = static_cast<int>(
          SampleQuantiles(rng, cls == 1 ? std::span<const Knot>(kLossHigh) : kLossLow));
    }
    p.fnlwgt = static_cast<int>(SampleQuantiles(rng, kFnlwgt));
    return p;
  }

 private:
  int SampleHours(Rng& rng, const Person& p) const {
    const int table = p.age < 22 ? 2 : p.age >= 65 ? 3 : p.sex;
    switch (hours_[table].Sample(rng)) {
      case 0: {
        constexpr int kRound[] = {5, 10, 10, 15, 15, 20, 20, 20, 20};
        return rng.PerMille(600) ? kRound[rng.Below(9)] : rng.Between(1, 24);
      }
      case 1:
        return rng.PerMille(600) ? (rng.PerMille(333) ? 25 : 30) : rng.Between(25, 34);
      case 2:
        return rng.PerMille(700) ? 35 : rng.Between(36, 39);
      case 3:
        return 40;
      case 4:
        return rng.Between(41, 44);
      case 5:
        return rng.PerMille(700) ? 45 : rng.Between(46, 49);
      case 6:
        return rng.PerMille(800) ? 50 : rng.Between(51, 54);
      case 7:
        return rng.PerMille(750) ? 55 : rng.Between(56, 59);
      default: {
        const uint32_t r = rng.Below(100);
        if (r < 45) return 60;
        if (r < 70) {
          constexpr int kLong[] = {65, 70, 70, 72, 75, 80};
          return kLong[rng.Below(6)];
        }
        if (r < 97) return rng.Between(61, 98);
        return 99;
      }
    }
  }

  Choice age_bucket_;
  Choice marital_[2][8];
  Choice spouse_relationship_[2];
  Choice other_relationship_[2][8];
  Choice education_, education17_, education18_;
  Choice workclass_[3][2];
  Choice occupation_[2][4];
  Choice hours_[4];
  Choice country_;
  Choice race_[5];
};

// ----------------------------------------------------------------------------------------------
// Output.

void Append(std::string& out, absl::string_view s) { out.append(s.data(), s.size()); }

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  char* end = buf + sizeof(buf);
  char* p = end;
  const bool negative = v < 0;
  uint64_t u = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  do {
    *--p = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (negative) *--p = '-';
  out.append(p, end);
}

void AppendId(std::string& out, uint64_t row, int width) {
  char buf[24];
  char* end = buf + sizeof(buf);
  char* p = end;
  do {
    *--p = static_cast<char>('0' + row % 10);
    row /= 10;
  } while (row != 0);
  while (end - p < width) *--p = '0';
  *--p = 'r';
  out.append(p, end);
}

void AppendColumn(std::string& out, const Person& p, int column) {
  switch (column) {
    case 0:
      AppendInt(out, p.age);
      break;
    case 1:
      Append(out, kWorkclass[p.workclass]);
      break;
    case 2:
      AppendInt(out, p.fnlwgt);
      break;
    case 3:
      Append(out, kEducation[p.education_num - 1]);
      break;
    case 4:
      AppendInt(out, p.education_num);
      break;
    case 5:
      Append(out, kMarital[p.marital]);
      break;
    case 6:
      Append(out, kOccupation[p.occupation]);
      break;
    case 7:
      Append(out, kRelationship[p.relationship]);
      break;
    case 8:
      Append(out, kRace[p.race]);
      break;
    case 9:
      Append(out, kSex[p.sex]);
      break;
    case 10:
      AppendInt(out, p.capital_gain);
      break;
    case 11:
      AppendInt(out, p.capital_loss);
      break;
    case 12:
      AppendInt(out, p.hours);
      break;
    case 13:
      Append(out, kCountries[p.country].name);
      break;
    default:
      out.append(p.high_income ? ">50K" : "<=50K");
      break;
  }
}

// A file written through a large in-memory buffer.
class OutputFile {
 public:
  static constexpr size_t kFlushBytes = 1 << 20;

  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() {
    if (file_ != nullptr) std::fclose(file_);
  }

  absl::Status Open(std::filesystem::path path) {
    path_ = std::move(path);
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) return base::ErrnoStatus(errno, "cannot create", path_.string());
    buffer_.reserve(kFlushBytes + 4096);
    return absl::OkStatus();
  }
  std::string& buffer() { return buffer_; }
  absl::Status MaybeFlush() { return buffer_.size() >= kFlushBytes ? Flush() : absl::OkStatus(); }
  absl::Status Close() {
    RETURN_IF_ERROR(Flush());
    std::FILE* f = std::exchange(file_, nullptr);
    if (std::fclose(f) != 0) return base::ErrnoStatus(errno, "cannot write", path_.string());
    return absl::OkStatus();
  }

 private:
  absl::Status Flush() {
    if (!buffer_.empty() &&
        std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      return base::ErrnoStatus(errno, "cannot write", path_.string());
    }
    buffer_.clear();
    return absl::OkStatus();
  }

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
};

absl::Status WriteFile(const std::filesystem::path& path, absl::string_view contents) {
  OutputFile file;
  RETURN_IF_ERROR(file.Open(path));
  Append(file.buffer(), contents);
  return file.Close();
}

std::string TaxonomyText(std::span<const TaxonomyLine> lines) {
  std::string text;
  for (const TaxonomyLine& line : lines) {
    absl::StrAppend(&text, line.leaf, ";", line.ancestors, line.ancestors.empty() ? "" : ";",
                    "ANY\n");
  }
  return text;
}

std::string CountryTaxonomyText() {
  std::string text;
  // Grouped by region (in kRegions order) so that the file reads as a tree.
  for (size_t r = 0; r < kRegions.size(); ++r) {
    for (const Country& c : kCountries) {
      if (c.region != static_cast<int>(r)) continue;
      absl::StrAppend(&text, c.name, ";", kRegions[r].name, ";", kRegions[r].continent, ";ANY\n");
    }
  }
  return text;
}

// The categorical attributes with a taxonomy file, and whether the job uses it (QIDs only).
struct TaxonomyFile {
  absl::string_view attribute;
  bool qid;
};
constexpr TaxonomyFile kTaxonomyFiles[] = {
    {"workclass", true},  {"education", true},      {"marital-status", false},
    {"occupation", true}, {"relationship", true},   {"race", true},
    {"sex", true},        {"native-country", true},
};

std::string TaxonomyFor(absl::string_view attribute) {
  if (attribute == "workclass") return TaxonomyText(kWorkclassTax);
  if (attribute == "education") return TaxonomyText(kEducationTax);
  if (attribute == "marital-status") return TaxonomyText(kMaritalTax);
  if (attribute == "occupation") return TaxonomyText(kOccupationTax);
  if (attribute == "relationship") return TaxonomyText(kRelationshipTax);
  if (attribute == "race") return TaxonomyText(kRaceTax);
  if (attribute == "sex") return TaxonomyText(kSexTax);
  return CountryTaxonomyText();
}

bool IsContinuous(absl::string_view column) {
  return column == "age" || column == "fnlwgt" || column == "education-num" ||
         column == "capital-gain" || column == "capital-loss" || column == "hours-per-week";
}

// First attribute index (0..13) of each party's contiguous block; entry `parties` = 14.
std::vector<int> VerticalBlocks(int parties) {
  std::vector<int> start(parties + 1);
  for (int i = 0; i <= parties; ++i) start[i] = i * kAttributeCount / parties;
  return start;
}

std::string JobYaml(const DatagenOptions& options, bool vertical) {
  std::string y;
  absl::StrAppend(&y, "# Synthetic Adult-like data written by `fedanon gen-data` (", options.rows,
                  " rows, seed ", options.seed, ").\n");
  absl::StrAppend(&y, "name: generated-adult\n");
  absl::StrAppend(&y, "partitioning: ", vertical ? "vertical" : "horizontal", "\n");
  absl::StrAppend(&y, "attributes:\n");
  if (vertical) {
    absl::StrAppend(&y, "  # id and income are held by every party.\n");
    absl::StrAppend(&y, "  - {name: id, role: id}\n");
  }
  const std::vector<int> blocks = VerticalBlocks(vertical ? options.parties : 1);
  for (int c = 0; c < static_cast<int>(kColumns.size()); ++c) {
    const absl::string_view name = kColumns[c];
    absl::StrAppend(&y, "  - {name: ", name);
    if (c == kIncomeColumn) {
      absl::StrAppend(&y, ", role: class, type: categorical");
    } else if (name == "fnlwgt") {
      absl::StrAppend(&y, ", role: other, type: continuous");
    } else if (name == "marital-status") {
      absl::StrAppend(&y, ", role: sensitive, type: categorical");
    } else if (IsContinuous(name)) {
      absl::StrAppend(&y, ", role: qid, type: continuous");
    } else {
      absl::StrAppend(&y, ", role: qid, type: categorical, taxonomy: tax/", name, ".csv");
    }
    if (vertical && c != kIncomeColumn) {
      int party = 0;
      while (blocks[party + 1] <= c) ++party;
      absl::StrAppend(&y, ", party: party", party + 1);
    }
    absl::StrAppend(&y, "}\n");
  }
  absl::StrAppend(&y,
                  "privacy:\n"
                  "  model: lkc\n"
                  "  L: 4\n"
                  "  K: 20\n"
                  "  C: 0.2\n"
                  "  sensitive_values: [Divorced, Separated]\n"
                  "score: infogain\n"
                  "missing: drop\n");
  return y;
}

// The same job as a federated job: every encoding public (class and sensitive values, a grid
// for each continuous QID), fnlwgt (near-unique, not a QID) left out of the release — so a
// horizontal job can assemble the integrated table by a secure sum of counts. The vertical form
// adds the id column and the `party:` of every attribute (contiguous blocks, as in party files).
std::string FederatedYaml(const DatagenOptions& options, bool vertical) {
  const char* kind = vertical ? "vertical" : "horizontal";
  std::string y;
  absl::StrAppend(&y, "# Synthetic Adult-like data written by `fedanon gen-data` (", options.rows,
                  " rows, seed ", options.seed, "), as a ", kind, " federated job.\n");
  absl::StrAppend(&y, "name: generated-adult-", kind, "\npartitioning: ", kind, "\nattributes:\n");
  if (vertical) absl::StrAppend(&y, "  - {name: id, role: id}\n");
  const std::vector<int> blocks = VerticalBlocks(vertical ? options.parties : 1);
  for (int c = 0; c < static_cast<int>(kColumns.size()); ++c) {
    const absl::string_view name = kColumns[c];
    if (name == "fnlwgt") continue;
    absl::StrAppend(&y, "  - {name: ", name);
    if (c == kIncomeColumn) {
      absl::StrAppend(&y, ", role: class, values: [\"<=50K\", \">50K\"]");
    } else if (name == "marital-status") {
      absl::StrAppend(&y, ", role: sensitive, values: [", absl::StrJoin(kMarital, ", "), "]");
    } else if (IsContinuous(name)) {
      const char* range = name == "capital-gain"    ? "[0, 100000]"
                          : name == "capital-loss"  ? "[0, 5000]"
                          : name == "education-num" ? "[0, 20]"
                                                    : "[0, 100]";
      absl::StrAppend(&y, ", role: qid, type: continuous, range: ", range, ", precision: 1");
    } else {
      absl::StrAppend(&y, ", role: qid, taxonomy: tax/", name, ".csv");
    }
    if (vertical && c != kIncomeColumn) {
      int party = 0;
      while (blocks[party + 1] <= c) ++party;
      absl::StrAppend(&y, ", party: party", party + 1);
    }
    absl::StrAppend(&y, "}\n");
  }
  absl::StrAppend(&y,
                  "privacy: {model: lkc, L: 4, K: 20, C: 0.2, sensitive_values: [Divorced, "
                  "Separated]}\nscore: infogain\nmissing: drop\n");
  return y;
}

// Vertical with overlap < 1: the records each party has on its own (ids nobody else has), so that
// the `rows` common records are `overlap` of each party's ids.
uint64_t ExtraRecords(const DatagenOptions& options) {
  if (!(options.overlap >= 0.01 && options.overlap < 1.0)) return 0;
  const double rows = static_cast<double>(options.rows);
  return static_cast<uint64_t>(std::llround(rows * (1.0 - options.overlap) / options.overlap));
}

// Options a generation can run with (rows, parties, a vertical split's size, an output dir).
absl::Status ValidateOptions(const DatagenOptions& options, bool vertical) {
  constexpr int kMaxParties = 256;
  if (options.rows == 0) return absl::InvalidArgumentError("gen-data: rows must be at least 1");
  if (options.rows > kMaxDatagenRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen-data: rows must be at most ", kMaxDatagenRows, ", got ", options.rows));
  }
  if (options.parties < 1 || options.parties > kMaxParties) {
    return absl::InvalidArgumentError(absl::StrCat("gen-data: parties must be between 1 and ",
                                                   kMaxParties, ", got ", options.parties));
  }
  if (vertical && options.parties > kAttributeCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen-data: a vertical split needs at most ", kAttributeCount,
                     " parties (one attribute each), got ", options.parties));
  }
  if (!(options.overlap >= 0.01 && options.overlap <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen-data: overlap must be between 0.01 and 1, got ", options.overlap));
  }
  if (options.overlap < 1.0 && !(vertical && options.parties > 1)) {
    return absl::InvalidArgumentError(
        "gen-data: an overlap below 1 needs --partition vertical and more than one party");
  }
  if (ExtraRecords(options) * static_cast<uint64_t>(options.parties) >
      kMaxDatagenRows - options.rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen-data: the parties' own records would exceed ", kMaxDatagenRows, " ids in all"));
  }
  if (options.out_dir.empty()) return absl::InvalidArgumentError("gen-data: no output directory");
  return absl::OkStatus();
}

// The output directory and its tax/ subdirectory.
absl::Status CreateDirectories(const std::filesystem::path& dir) {
  for (const std::filesystem::path& d : {dir, dir / "tax"}) {
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec || !std::filesystem::is_directory(d, ec)) {
      return base::ErrnoStatus(ec ? ec.value() : ENOTDIR, "cannot create directory", d.string());
    }
  }
  return absl::OkStatus();
}

// The taxonomies, job.yaml and the federated spec (horizontal.yaml or vertical.yaml).
absl::Status WriteSpecsAndTaxonomies(const std::filesystem::path& dir,
                                     const DatagenOptions& options, bool vertical) {
  for (const TaxonomyFile& t : kTaxonomyFiles) {
    RETURN_IF_ERROR(
        WriteFile(dir / "tax" / absl::StrCat(t.attribute, ".csv"), TaxonomyFor(t.attribute)));
  }
  RETURN_IF_ERROR(WriteFile(dir / "job.yaml", JobYaml(options, vertical)));
  if (!vertical) {
    RETURN_IF_ERROR(WriteFile(dir / "horizontal.yaml", FederatedYaml(options, false)));
  } else if (options.parties > 1) {
    RETURN_IF_ERROR(WriteFile(dir / "vertical.yaml", FederatedYaml(options, true)));
  }
  return absl::OkStatus();
}

// The header line of columns [first, last) followed by the income column.
void AppendHeader(std::string& out, int first, int last, bool with_id) {
  if (with_id) out.append("id,");
  for (int c = first; c < last; ++c) absl::StrAppend(&out, kColumns[c], ",");
  absl::StrAppend(&out, kColumns[kIncomeColumn], "\n");
}

// One record's columns [blocks[i], blocks[i + 1]) of a vertical party's file, with id and income.
void AppendVerticalRow(std::string& out, const Person& p, uint64_t id, int id_width, int first,
                       int last) {
  AppendId(out, id, id_width);
  out.push_back(',');
  for (int c = first; c < last; ++c) {
    AppendColumn(out, p, c);
    out.push_back(',');
  }
  AppendColumn(out, p, kIncomeColumn);
  out.push_back('\n');
}

// table.csv and, with more than one party, party1.csv..partyN.csv: horizontal splits deal rows
// round-robin, vertical splits give each party a block of columns of every row (with its id).
absl::Status WriteTables(const std::filesystem::path& dir, const DatagenOptions& options,
                         bool vertical, int parties) {
  OutputFile table;
  RETURN_IF_ERROR(table.Open(dir / "table.csv"));
  std::vector<OutputFile> party_files(parties);
  for (int i = 0; i < parties; ++i) {
    RETURN_IF_ERROR(party_files[i].Open(dir / absl::StrCat("party", i + 1, ".csv")));
  }
  const std::vector<int> blocks = VerticalBlocks(vertical ? std::max(parties, 1) : 1);
  // Vertical with overlap < 1: each party's own records, ids rows + 1 + i * extra + j, sampled
  // from a stream of their own so that table.csv (the common records) does not change.
  const uint64_t extra = vertical && parties > 0 ? ExtraRecords(options) : 0;
  int id_width = 6;
  for (uint64_t r = options.rows + extra * static_cast<uint64_t>(parties); r >= 1000000; r /= 10) {
    ++id_width;
  }

  AppendHeader(table.buffer(), 0, kAttributeCount, vertical);
  for (int i = 0; i < parties; ++i) {
    if (vertical) {
      AppendHeader(party_files[i].buffer(), blocks[i], blocks[i + 1], true);
    } else {
      AppendHeader(party_files[i].buffer(), 0, kAttributeCount, false);
    }
  }

  static const Model* const model = new Model();
  Rng rng(options.seed);
  std::vector<Rng> own_rng;
  own_rng.reserve(static_cast<size_t>(extra > 0 ? parties : 0));
  for (int i = 0; i < (extra > 0 ? parties : 0); ++i) {
    own_rng.emplace_back(options.seed ^ (0x6f776e2d72656373ULL + static_cast<uint64_t>(i)));
  }
  uint64_t extras_done = 0;  // per party (every party gets its j-th own record at the same place)
  for (uint64_t r = 0; r < options.rows; ++r) {
    const Person p = model->Sample(rng);
    std::string& out = table.buffer();
    const size_t row_start = out.size();
    if (vertical) {
      AppendId(out, r + 1, id_width);
      out.push_back(',');
    }
    for (int c = 0; c < static_cast<int>(kColumns.size()); ++c) {
      AppendColumn(out, p, c);
      out.push_back(c == kIncomeColumn ? '\n' : ',');
    }
    if (parties > 0 && !vertical) {
      OutputFile& party = party_files[r % parties];
      party.buffer().append(out, row_start, std::string::npos);
      RETURN_IF_ERROR(party.MaybeFlush());
    } else if (vertical) {
      for (int i = 0; i < parties; ++i) {
        AppendVerticalRow(party_files[i].buffer(), p, r + 1, id_width, blocks[i], blocks[i + 1]);
        RETURN_IF_ERROR(party_files[i].MaybeFlush());
      }
      // The own records spread evenly: after common record r, those with j * rows < (r + 1) *
      // extra. (Both products stay below 2^63: rows and extra are at most kMaxDatagenRows.)
      for (; extras_done < extra && extras_done * options.rows < (r + 1) * extra; ++extras_done) {
        for (int i = 0; i < parties; ++i) {
          const Person own = model->Sample(own_rng[i]);
          const uint64_t id = options.rows + 1 + static_cast<uint64_t>(i) * extra + extras_done;
          AppendVerticalRow(party_files[i].buffer(), own, id, id_width, blocks[i], blocks[i + 1]);
          RETURN_IF_ERROR(party_files[i].MaybeFlush());
        }
      }
    }
    RETURN_IF_ERROR(table.MaybeFlush());
  }
  RETURN_IF_ERROR(table.Close());
  for (OutputFile& f : party_files) RETURN_IF_ERROR(f.Close());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> GenerateDataset(const DatagenOptions& options) {
  const bool vertical = options.partition == DatagenOptions::Partition::kVertical;
  RETURN_IF_ERROR(ValidateOptions(options, vertical));
  const std::filesystem::path dir(options.out_dir);
  RETURN_IF_ERROR(CreateDirectories(dir));
  RETURN_IF_ERROR(WriteSpecsAndTaxonomies(dir, options, vertical));
  const int parties = options.parties > 1 ? options.parties : 0;
  RETURN_IF_ERROR(WriteTables(dir, options, vertical, parties));

  std::string summary =
      absl::StrCat("generated ", options.rows, " rows (seed ", options.seed, ") in ", dir.string(),
                   ": table.csv, job.yaml",
                   vertical ? (options.parties > 1 ? ", vertical.yaml" : "") : ", horizontal.yaml",
                   ", ", std::size(kTaxonomyFiles), " taxonomies in tax/");
  if (parties > 0) {
    absl::StrAppend(&summary, ", party1.csv..party", parties, ".csv (",
                    vertical ? "vertical" : "horizontal", ")");
    if (vertical && ExtraRecords(options) > 0) {
      absl::StrAppend(&summary, "; each party also has ", ExtraRecords(options),
                      " records of its own (overlap ", options.overlap, ")");
    }
  }
  return summary;
}

}  // namespace fedanon::datagen
