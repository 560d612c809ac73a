// A RiskSummary as the lines `fedanon risk` and `fedanon evaluate` print: the attacker models,
// sample and population uniqueness, and the QID combinations that separate records most.
#pragma once

#include <string>

#include "fedanon/v1/job.pb.h"

namespace fedanon::risk {

// `max_combinations`: combination lines printed (the most distinguishing of each size first).
std::string RiskSummaryToText(const fedanon::v1::RiskSummary& summary,
                              size_t max_combinations = 12);

}  // namespace fedanon::risk
