#include "party/table_fingerprint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "crypto/hash.h"

namespace fedanon::party {

absl::StatusOr<std::string> TableFingerprint(const table::Dataset& data) {
  if (data.source_text != nullptr) return crypto::ToHex(crypto::Sha256(*data.source_text));
  const int fd = open(data.source_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read the table again: ", std::strerror(errno)));
  }
  crypto::Sha256Stream stream;
  std::vector<char> buffer(size_t{1} << 20);
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read the table again: ", std::strerror(err)));
    }
    stream.Update(std::string_view(buffer.data(), static_cast<size_t>(n)));
  }
  close(fd);
  return crypto::ToHex(stream.Finish());
}

}  // namespace fedanon::party
