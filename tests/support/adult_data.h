// Tests only: UCI Adult (../shared/datasets/adult) as the horizontal federation tests use it:
// where it is, the job spec of its federated runs, and the taxonomy files that spec names.
#pragma once

#include <map>
#include <string>

namespace fedanon::testing {

// SharedDir() + "/datasets/adult" (adult_clean.csv, arx-hierarchies/, extra-hierarchies/).
std::string AdultDir();

// The mohammed2010 §6 setting with the domains a federation needs declared; fnlwgt (a near-unique
// weight, not a quasi-identifier anyone links on) is left out of the release, which also lets the
// integration run as a secure sum over the declared value domains. Taxonomies by file name:
// AdultTaxonomies().
extern const char kAdultHorizontalSpec[];

// The taxonomy files kAdultHorizontalSpec names ("workclass.csv", ..., "relationship.csv") ->
// their content, read from AdultDir() (empty texts when it is absent).
std::map<std::string, std::string> AdultTaxonomies();

}  // namespace fedanon::testing
