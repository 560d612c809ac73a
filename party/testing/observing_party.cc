#include "party/testing/observing_party.h"

#include <utility>

namespace fedanon::party_testing {
namespace {

class CallbackObserver final : public party::PartyObserver {
 public:
  CallbackObserver(OpenedCallback opened, CanonicalIdsCallback canonical_ids)
      : opened_(std::move(opened)), canonical_ids_(std::move(canonical_ids)) {}

  void Opened(const std::string& sender, const std::string& purpose,
              const std::string& plaintext) const override {
    if (opened_) opened_(sender, purpose, plaintext);
  }
  void CanonicalIds(const std::vector<std::string>& ids) const override {
    if (canonical_ids_) canonical_ids_(ids);
  }

 private:
  OpenedCallback opened_;
  CanonicalIdsCallback canonical_ids_;
};

}  // namespace

std::shared_ptr<const party::PartyObserver> ObservingParty(OpenedCallback opened,
                                                           CanonicalIdsCallback canonical_ids) {
  return std::make_shared<CallbackObserver>(std::move(opened), std::move(canonical_ids));
}

}  // namespace fedanon::party_testing
