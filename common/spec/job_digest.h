// The canonical bytes of a job as one holder sees it — schema (attribute names, roles, types,
// domains, grids), privacy model, score, numeric split search (mode, cells, least bin size; the
// defaults spelled out), taxonomy file contents — hashed by parties and the
// leader (crypto::Sha256) to make sure every participant runs the same job. Party-local
// details (data paths) are excluded.
#pragma once

#include <map>
#include <string>

#include "fedanon/v1/job.pb.h"

namespace fedanon::spec {

std::string CanonicalJobBytes(const fedanon::v1::JobSpec& spec,
                              const std::map<std::string, std::string>& taxonomy_texts);

}  // namespace fedanon::spec
