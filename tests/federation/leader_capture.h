// What the leader decodes, captured from outside the leader (tests only): PartyChannel wrappers
// between the leader and the parties. RecordingChannel records every secure-sum request, the
// masked total the last party seals for the leader and the first party's mask (with its answer to
// the last chunk since protocol 2.1, with its last step of a bin check since 5.0, or on
// SumUnmask), and subtracts one from the other — exactly
// the vectors the leader decodes.
// VerticalRecordingChannel keeps every vertical step and the party's reply in plaintext fields
// (ID-intersection sizes, proposals, verdicts, released reports, assembled row counts). Used by
// the numeric-split and view-log tests to check what the leader learns and what it logs.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/base/status_macros.h"
#include "common/wire/federation_wire.h"
#include "common/wire/job_authorization.h"
#include "common/wire/party_channel.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "crypto/secure_sum_masks.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::testing {

// One secure sum as the leader decodes it: the round stamped on it, the request (with the public
// updates that rode along) and the unmasked total.
struct DecodedSum {
  uint32_t round = 0;
  fedanon::v1::StatsRequest request;
  std::vector<fedanon::v1::StateUpdate> updates;
  std::vector<uint64_t> total;
};

// Forwards to the parties and keeps, per secure sum, what the leader learns from it.
class RecordingChannel : public wire::PartyChannel {
 public:
  explicit RecordingChannel(wire::PartyChannel* inner) : inner_(inner) {}

  // The leader's sealing keys and the CA: the ring's last hop is sealed for the leader by the
  // last party (sender-authenticated), so the recorder opens it as the leader does.
  void set_leader_keys(std::unique_ptr<crypto::SealKeyPair> keys, std::string ca_pem) {
    leader_keys_ = std::move(keys);
    ca_pem_ = std::move(ca_pem);
  }
  void set_party_certificates(std::map<std::string, std::string> certs) {
    party_certs_ = std::move(certs);
  }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override {
    if (request.has_prepare() && request.prepare().has_authorization()) {
      auto run = wire::RunIdOf(request.prepare().authorization());
      std::lock_guard<std::mutex> lock(mu_);
      if (run.ok()) run_ids_[request.job_id()] = *run;
    }
    if (request.has_sum_step()) Before(request.round(), request.sum_step());
    auto reply = inner_->Call(party, request, timeout);
    if (reply.ok() && request.has_sum_step() && reply->has_sum_step() &&
        reply->sum_step().has_sealed() && reply->sum_step().sealed().receiver() == "leader") {
      const fedanon::v1::SealedPayload& sealed = reply->sum_step().sealed();
      auto masked = OpenForLeader(request, sealed);
      EXPECT_TRUE(masked.ok()) << masked.status();
      if (masked.ok()) After(request.sum_step(), *masked);
    }
    if (reply.ok() && request.has_sum_step() && reply->has_sum_step() &&
        reply->sum_step().has_mask_seed()) {
      auto seed = OpenForLeader(request, reply->sum_step().mask_seed());
      EXPECT_TRUE(seed.ok()) << seed.status();
      if (seed.ok()) Unmask(request.sum_step().collect(), *seed);
    }
    if (reply.ok() && request.has_sum_unmask() && reply->has_sum_mask()) {
      auto seed = OpenForLeader(request, reply->sum_mask().seed());
      EXPECT_TRUE(seed.ok()) << seed.status();
      if (seed.ok()) Unmask(request.sum_unmask().collect(), *seed);
    }
    if (reply.ok() && request.has_sum_bin_check() && reply->has_sum_bin_checked() &&
        reply->sum_bin_checked().has_mask_seed()) {
      // With the first party's last step of a bin check that held (protocol 5.0).
      auto seed = OpenForLeader(request, reply->sum_bin_checked().mask_seed());
      EXPECT_TRUE(seed.ok()) << seed.status();
      if (seed.ok()) Unmask(request.sum_bin_check().collect(), *seed);
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

  // Every secure sum with the first party's mask removed (a sum whose mask never came stays
  // masked).
  std::vector<DecodedSum> Sums() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<DecodedSum> out;
    for (const auto& [collect, sum] : sums_) {
      out.push_back(sum);
      const auto seed = seeds_.find(collect);
      if (seed == seeds_.end()) continue;
      auto mask = crypto::MaskWordsFromSeed(seed->second, 0, sum.total.size());
      EXPECT_TRUE(mask.ok()) << mask.status();
      if (!mask.ok()) continue;
      for (size_t i = 0; i < sum.total.size(); ++i) out.back().total[i] -= (*mask)[i];  // 2^64
    }
    return out;
  }

 private:
  void Before(uint32_t round, const fedanon::v1::SumStep& step) {
    std::lock_guard<std::mutex> lock(mu_);
    DecodedSum& sum = sums_[step.collect()];
    if (step.chunk() == 0 && step.has_request()) {
      sum.round = round;
      sum.request = step.request();
      sum.updates.assign(step.updates().begin(), step.updates().end());
    }
    sum.total.resize(step.total_words(), 0);
  }
  // The masked total of a chunk, as the ring's last party sealed it for the leader.
  void After(const fedanon::v1::SumStep& step, const std::string& masked) {
    std::lock_guard<std::mutex> lock(mu_);
    auto words = wire::DecodeWords(masked);
    if (!words.ok()) return;
    DecodedSum& sum = sums_[step.collect()];
    for (size_t i = 0; i < words->size(); ++i) sum.total[step.chunk_offset() + i] = (*words)[i];
  }
  // The first party's mask of the collect, removed from the whole vector by Sums() (it may come
  // before the ring's last hop).
  void Unmask(uint64_t collect, const std::string& seed) {
    std::lock_guard<std::mutex> lock(mu_);
    seeds_[collect] = seed;
  }

  absl::StatusOr<std::string> OpenForLeader(const fedanon::v1::LeaderMessage& request,
                                            const fedanon::v1::SealedPayload& sealed) const {
    if (!leader_keys_) return absl::FailedPreconditionError("no leader keys");
    const auto cert = party_certs_.find(sealed.sender());
    if (cert == party_certs_.end()) return absl::NotFoundError("unknown sender");
    ASSIGN_OR_RETURN(
        auto sender_key,
        crypto::VerifiedSealKey(cert->second, ca_pem_, {crypto::Role::kParty, sealed.sender()}));
    std::string run_id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = run_ids_.find(request.job_id()); it != run_ids_.end()) run_id = it->second;
    }
    const crypto::SealContext context{request.job_id(), run_id,   request.round(),
                                      sealed.sender(),  "leader", sealed.purpose()};
    return crypto::OpenFrom(*leader_keys_, *sender_key, context, sealed.ciphertext());
  }

  std::unique_ptr<crypto::SealKeyPair> leader_keys_;
  std::string ca_pem_;
  std::map<std::string, std::string> party_certs_;
  wire::PartyChannel* inner_;
  mutable std::mutex mu_;
  std::map<uint64_t, DecodedSum> sums_;         // masked totals
  std::map<uint64_t, std::string> seeds_;       // the first party's mask seed, per collect
  std::map<std::string, std::string> run_ids_;  // job id -> the run its Prepare carried
};

// One vertical exchange as the leader sees it.
struct VerticalExchange {
  std::string party;
  uint32_t round = 0;
  fedanon::v1::VerticalStep step;
  fedanon::v1::VerticalStepResult reply;
};

// Forwards to the parties and keeps every vertical step with its reply (the leader calls parties
// in parallel, so under a lock, in completion order).
class VerticalRecordingChannel : public wire::PartyChannel {
 public:
  explicit VerticalRecordingChannel(wire::PartyChannel* inner) : inner_(inner) {}

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override {
    auto reply = inner_->Call(party, request, timeout);
    if (reply.ok() && request.has_vertical() && reply->has_vertical()) {
      std::lock_guard<std::mutex> lock(mu_);
      exchanges_.push_back({party, request.round(), request.vertical(), reply->vertical()});
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

  std::vector<VerticalExchange> Exchanges() const {
    std::lock_guard<std::mutex> lock(mu_);
    return exchanges_;
  }

 private:
  wire::PartyChannel* inner_;
  mutable std::mutex mu_;
  std::vector<VerticalExchange> exchanges_;
};

}  // namespace fedanon::testing
