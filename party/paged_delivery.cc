#include "party/paged_delivery.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/wire/payload_chunks.h"
#include "crypto/hash.h"

namespace fedanon::party {

absl::StatusOr<PagedDelivery::Added> PagedDelivery::Add(const Names& names, const std::string& from,
                                                        uint64_t round, const std::string& head,
                                                        uint32_t page, uint32_t pages,
                                                        uint64_t list_bytes,
                                                        const std::string& page_bytes,
                                                        const std::string& list_digest) {
  if (pages == 0 || page >= pages || pages > wire::MostPagesFor(list_bytes)) {
    return absl::PermissionDeniedError(absl::StrCat("page ", page, " of ", pages, " of the ",
                                                    names.list, " of '", from, "' (", list_bytes,
                                                    " bytes) is out of range"));
  }
  if (list_bytes > wire::kMaxChunkedPayloadBytes) {
    return absl::PermissionDeniedError(absl::StrCat("the ", names.list, " of '", from, "' declare ",
                                                    list_bytes, " bytes, over the bound of ",
                                                    wire::kMaxChunkedPayloadBytes));
  }
  if (!started_) {
    started_ = true;
    head_ = head;
    pages_declared_ = pages;
  } else if (head_ != head) {
    return absl::PermissionDeniedError(absl::StrCat("the description of the ", names.list, " of '",
                                                    from, "' (", names.description,
                                                    ") changed between pages of wave ", round));
  }
  if (auto known = pages_.find(page); known != pages_.end()) {
    if (known->second != page_bytes) {
      return absl::PermissionDeniedError(absl::StrCat("different content for page ", page,
                                                      " of the ", names.list, " of '", from,
                                                      "', already delivered in wave ", round));
    }
    return Added::kRepeated;  // the same page again: one request, one answer
  }
  if (bytes_ + page_bytes.size() > list_bytes) {
    return absl::PermissionDeniedError(absl::StrCat("the ", names.one, " pages of '", from,
                                                    "' exceed their declared size of ", list_bytes,
                                                    " bytes"));
  }
  bytes_ += page_bytes.size();
  pages_.emplace(page, page_bytes);
  if (pages_.size() != pages) return Added::kAdded;
  if (bytes_ != list_bytes) {
    return absl::PermissionDeniedError(absl::StrCat("the ", names.one, " pages of '", from,
                                                    "' hold ", bytes_, " bytes, not the declared ",
                                                    list_bytes));
  }
  if (crypto::Sha256(Whole()) != list_digest) {
    return absl::PermissionDeniedError(
        absl::StrCat("an altered ", names.one, " page: the ", names.list, " of '", from,
                     "' as delivered by the leader do not match their digest"));
  }
  return Added::kComplete;
}

std::string PagedDelivery::Whole() const {
  std::string whole;
  whole.reserve(bytes_);
  for (const auto& [i, bytes] : pages_) whole.append(bytes);
  return whole;
}

}  // namespace fedanon::party
