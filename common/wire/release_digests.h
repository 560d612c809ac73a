// What ties a vertical job's release to what its replicas agreed. Every
// replica knows every common record's final group (the instructions partition the records alike at
// every party), so before anything is released each one reports, and the leader compares:
//
//  * the partition digest: every common record's group (its QID labels), in the canonical order;
//    an owner that gave a judge other children than everyone else leaves that judge with another
//    partition;
//  * the groups digest: each group's labels with its size, in sorted order, which is what the
//    recipient can recompute from the joined table, whose rows come in the secret release order;
//  * the release-order seed's digest: the ring's first party must give every party the same seed.
//
// The recipient then checks the joined table against the agreed cut and groups
// (CheckJoinedRelease): an owner that releases raw values, per-record tags or labels of other
// records is refused before the table is written.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/wire/released_union.h"
#include "crypto/hash.h"
#include "fedanon/v1/job.pb.h"
#include "google/protobuf/repeated_ptr_field.h"

namespace fedanon::wire {

// Appends one QID label to a group key (4-byte length, then the bytes): a record's key is its
// labels of every QID attribute, in the job's QID order (the report's cut order).
void AppendGroupLabel(std::string_view label, std::string* key);

// Records per group key; Digest() is SHA-256 over a domain string and every (key, count), keys
// in ascending byte order.
class ReleaseGroupTally {
 public:
  void Add(const std::string& key, uint64_t records = 1) { counts_[key] += records; }
  size_t groups() const { return counts_.size(); }
  std::string Digest() const;

 private:
  std::map<std::string, uint64_t> counts_;
};

// SHA-256 over a domain string and every record's group key in the canonical order.
class ReleasePartitionHasher {
 public:
  ReleasePartitionHasher();
  void Add(std::string_view key);
  std::string Finish();

 private:
  crypto::Sha256Stream stream_;
  std::string length_;
};

// The digest of a release-order seed under a job (32 bytes).
std::string OrderSeedDigest(std::string_view job_id, std::string_view seed);

// The recipient's check of a joined vertical release (the parts as JoinReleasedColumnsTo reads
// them): every cut attribute is a column of exactly one part, every cell of it is a value of the
// agreed cut, and the rows' groups have `groups_digest`. InvalidArgument naming the attribute and
// row for a cell outside the cut (not the value: the error reaches the leader), DataLoss when the
// groups differ from the agreed ones.
absl::Status CheckJoinedRelease(
    const std::vector<VerticalColumnsView>& parts,
    const google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut>& cut,
    std::string_view groups_digest);

}  // namespace fedanon::wire
