// Deviating parties for tests of what the other roles refuse (testing-only: no daemon links it).
// Each mode is one deviation of party/party_deviation.h:
//  * horizontal: "inflate-released-counts" (a record that does not exist added to the released
//    counts), "move-released-count" (one of its released counts moved to the next group, the
//    total unchanged), "final-check-negative-offset" (1000 subtracted from the final check's first
//    word), "ignore-record-limit" (takes part with more records than the signed limit), and the
//    secure union's hop: "union-drop-row" (drops an earlier party's sealed row), "union-repeat-row"
//    (repeats one), "union-swap-row" (swaps one for a second copy of its own), "union-invent-row"
//    (replaces one of its own rows by made-up cells);
//  * vertical: "never-participate", "under-declare" (mohammed2011 §6), "repropose-vetoed",
//    "overstate-score", "release-record-tags" (the replica's proposals and released columns),
//    "release-other-order" (the ring's last party gets another release-order seed),
//    "report-larger-groups" (the release report states a larger smallest group and a confidence of
//    1e9), "other-children-for-others" (the parties after the judges get other members for the same
//    children), "inflate-comparison-key" (the vertical winner's secure comparison gets a key with
//    the largest score, the candidate revealed if it wins is its real one).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "party/party_deviation.h"

namespace fedanon::party_testing {

inline constexpr std::array<std::string_view, 17> kDeviations = {"never-participate",
                                                                 "under-declare",
                                                                 "inflate-released-counts",
                                                                 "ignore-record-limit",
                                                                 "union-drop-row",
                                                                 "union-repeat-row",
                                                                 "union-swap-row",
                                                                 "union-invent-row",
                                                                 "final-check-negative-offset",
                                                                 "move-released-count",
                                                                 "repropose-vetoed",
                                                                 "report-larger-groups",
                                                                 "overstate-score",
                                                                 "release-record-tags",
                                                                 "release-other-order",
                                                                 "other-children-for-others",
                                                                 "inflate-comparison-key"};

// The deviation named `mode` (one of kDeviations); null for "" (an honest party). Aborts on any
// other name: a test that names a mode that does not exist is wrong.
std::shared_ptr<const party::PartyDeviation> DeviatingParty(std::string_view mode);

}  // namespace fedanon::party_testing
