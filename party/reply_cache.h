// One request, one answer: the reply a party gave to each request it answered, by the key the
// protocol names the request by (a chunk, a phase and chunk, a step), with the request's
// fingerprint (its digest or bytes). A repeated request — the leader lost the connection, or
// restarted — gets the same reply; another request under a key already answered is the
// protocol's to refuse (each names its own reason). Every protocol class keeps its answers here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

template <typename Key, typename Reply = fedanon::v1::PartyMessage>
class ReplyCache {
 public:
  struct Answer {
    std::string fingerprint;  // of the request that was answered
    Reply reply;
  };
  // The answer given under `key`, or nullptr when none was.
  const Answer* Find(const Key& key) const {
    auto it = answers_.find(key);
    return it == answers_.end() ? nullptr : &it->second;
  }
  Answer* Find(const Key& key) {
    auto it = answers_.find(key);
    return it == answers_.end() ? nullptr : &it->second;
  }
  // The reply given to this very request (same key, same fingerprint), or nullptr.
  const Reply* Same(const Key& key, std::string_view fingerprint) const {
    const Answer* a = Find(key);
    return a != nullptr && a->fingerprint == fingerprint ? &a->reply : nullptr;
  }
  void Put(const Key& key, std::string fingerprint, Reply reply) {
    answers_[key] = Answer{std::move(fingerprint), std::move(reply)};
  }
  // After a restart: the reply that left replaces the one derived again.
  void SetReply(const Key& key, Reply reply) { answers_[key].reply = std::move(reply); }
  void Clear() { answers_.clear(); }
  size_t size() const { return answers_.size(); }
  bool empty() const { return answers_.empty(); }

 private:
  std::map<Key, Answer> answers_;
};

// A protocol step answered at most once in a job (a union hop, the mask of the current collect,
// the last vertical step): one slot, no key.
template <typename Reply = fedanon::v1::PartyMessage>
class OneReply {
 public:
  bool has_value() const { return answer_.has_value(); }
  const std::string& fingerprint() const { return answer_->first; }
  const Reply& reply() const { return answer_->second; }
  // The reply given to this very request, or nullptr.
  const Reply* Same(std::string_view fingerprint) const {
    return answer_ && answer_->first == fingerprint ? &answer_->second : nullptr;
  }
  void Put(std::string fingerprint, Reply reply) {
    answer_ = std::pair{std::move(fingerprint), std::move(reply)};
  }
  void Reset() { answer_.reset(); }

 private:
  std::optional<std::pair<std::string, Reply>> answer_;
};

}  // namespace fedanon::party
