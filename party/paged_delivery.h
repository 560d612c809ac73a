// A signed list another party sends through the leader page by page (a vertical local job's
// proposals and a judge's verdicts): each page is checked as it arrives — in range, the list's
// size bounded, the description every page repeats unchanged, no different content for a page
// delivered already, the pages not over the declared size — and, once every page is there, the
// whole list against its declared size and digest. The caller checks the sender first and the
// list's signature and content last.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace fedanon::party {

class PagedDelivery {
 public:
  // How the refusals name the list: "proposal" / "proposals", and the fields of its description.
  struct Names {
    const char* one;          // "proposal": "the proposal pages of ..."
    const char* list;         // "proposals": "the proposals of ..."
    const char* description;  // "pages, size, digest or signature"
  };
  // What one page did.
  enum class Added { kRepeated, kAdded, kComplete };
  // One page of `from`'s list in wave `round`. `head`: the list's description as the page carries
  // it, serialized without the page's own fields. kComplete: every page is there, the whole list
  // matches its size and `list_digest` (Whole() returns it). A refusal is PermissionDenied with
  // the reason alone.
  absl::StatusOr<Added> Add(const Names& names, const std::string& from, uint64_t round,
                            const std::string& head, uint32_t page, uint32_t pages,
                            uint64_t list_bytes, const std::string& page_bytes,
                            const std::string& list_digest);
  std::string Whole() const;
  size_t pages_received() const { return pages_.size(); }
  uint32_t pages_declared() const { return pages_declared_; }

 private:
  bool started_ = false;
  std::string head_;
  uint32_t pages_declared_ = 0;
  std::map<uint32_t, std::string> pages_;
  uint64_t bytes_ = 0;
};

}  // namespace fedanon::party
