#include "party/chunk_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace fedanon::party {
namespace {

constexpr char kMagic[] = "FEDCHNK1";
constexpr size_t kMagicBytes = sizeof(kMagic) - 1;
constexpr size_t kFrameBytes = 4;  // u32le length of what follows
// The largest record a reader accepts (a chunk is below the message limit; the ref is small).
constexpr uint32_t kMaxRecordBytes = uint32_t{1} << 30;

std::string Frame(const std::string& bytes) {
  std::string out(kFrameBytes, '\0');
  const auto n = static_cast<uint32_t>(bytes.size());
  for (size_t k = 0; k < kFrameBytes; ++k) out[k] = static_cast<char>((n >> (8 * k)) & 0xff);
  return out + bytes;
}

absl::Status ReadAt(int fd, uint64_t offset, size_t n, std::string* out, const std::string& path) {
  out->resize(n);
  size_t at = 0;
  while (at < n) {
    const ssize_t got = ::pread(fd, out->data() + at, n - at, static_cast<off_t>(offset + at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return base::ErrnoStatus(errno, "cannot read", path);
    if (got == 0) return absl::OutOfRangeError(absl::StrCat("'", path, "' ends early"));
    at += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

// The u32le frame at `offset`; OutOfRange at the end of the file.
absl::StatusOr<uint32_t> FrameAt(int fd, uint64_t offset, const std::string& path) {
  std::string frame;
  RETURN_IF_ERROR(ReadAt(fd, offset, kFrameBytes, &frame, path));
  uint32_t n = 0;
  for (size_t k = 0; k < kFrameBytes; ++k) {
    n |= static_cast<uint32_t>(static_cast<unsigned char>(frame[k])) << (8 * k);
  }
  return n;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkFile>> ChunkFile::Create(const std::string& path,
                                                             const fedanon::v1::ChunkRef& ref,
                                                             bool sync_each) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                        base::kPrivateFileMode);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot create", path);
  std::unique_ptr<ChunkFile> file(new ChunkFile());
  file->path_ = path;
  file->fd_ = fd;
  file->sync_each_ = sync_each;
  file->ref_ = ref;
  if (::fchmod(fd, base::kPrivateFileMode) != 0) {
    return base::ErrnoStatus(errno, "cannot set the mode of", path);
  }
  const std::string header = std::string(kMagic, kMagicBytes) + Frame(ref.SerializeAsString());
  RETURN_IF_ERROR(base::WriteAll(fd, header, path));
  file->end_ = header.size();
  if (sync_each) RETURN_IF_ERROR(file->Sync());
  return file;
}

absl::StatusOr<std::unique_ptr<ChunkFile>> ChunkFile::Open(const std::string& path,
                                                           bool sync_each) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot open", path);
  std::unique_ptr<ChunkFile> file(new ChunkFile());
  file->path_ = path;
  file->fd_ = fd;
  file->sync_each_ = sync_each;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return base::ErrnoStatus(errno, "cannot stat", path);
  const auto size = static_cast<uint64_t>(st.st_size);
  std::string magic;
  absl::StatusOr<uint32_t> ref_bytes = FrameAt(fd, kMagicBytes, path);
  if (size < kMagicBytes + kFrameBytes || !ReadAt(fd, 0, kMagicBytes, &magic, path).ok() ||
      magic != std::string_view(kMagic, kMagicBytes) || !ref_bytes.ok() ||
      *ref_bytes > size - kMagicBytes - kFrameBytes) {
    return absl::DataLossError(absl::StrCat("'", path, "' is not a chunk file"));
  }
  std::string ref;
  RETURN_IF_ERROR(ReadAt(fd, kMagicBytes + kFrameBytes, *ref_bytes, &ref, path));
  if (!file->ref_.ParseFromString(ref)) {
    return absl::DataLossError(absl::StrCat("'", path, "': its stream does not parse"));
  }
  uint64_t at = kMagicBytes + kFrameBytes + *ref_bytes;
  // Every whole record; a record cut short by a crash ends the file.
  while (at + kFrameBytes <= size) {
    ASSIGN_OR_RETURN(const uint32_t n, FrameAt(fd, at, path));
    if (n > kMaxRecordBytes || n > size - at - kFrameBytes) break;
    file->records_.push_back({at + kFrameBytes, n});
    at += kFrameBytes + n;
  }
  if (at != size && ::ftruncate(fd, static_cast<off_t>(at)) != 0) {
    return base::ErrnoStatus(errno, "cannot cut the torn end of", path);
  }
  file->end_ = at;
  return file;
}

ChunkFile::~ChunkFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ChunkFile::Append(const fedanon::v1::SealedPayload& chunk) {
  const std::string record = Frame(chunk.SerializeAsString());
  if (::lseek(fd_, static_cast<off_t>(end_), SEEK_SET) < 0) {
    return base::ErrnoStatus(errno, "cannot seek in", path_);
  }
  RETURN_IF_ERROR(base::WriteAll(fd_, record, path_));
  records_.push_back({end_ + kFrameBytes, static_cast<uint32_t>(record.size() - kFrameBytes)});
  end_ += record.size();
  if (sync_each_) RETURN_IF_ERROR(Sync());
  return absl::OkStatus();
}

absl::StatusOr<fedanon::v1::SealedPayload> ChunkFile::Get(uint32_t index) const {
  if (index >= records_.size()) {
    return absl::OutOfRangeError(absl::StrCat("'", path_, "' holds no chunk ", index));
  }
  std::string bytes;
  RETURN_IF_ERROR(ReadAt(fd_, records_[index].offset, records_[index].bytes, &bytes, path_));
  fedanon::v1::SealedPayload chunk;
  if (!chunk.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("'", path_, "': chunk ", index, " does not parse"));
  }
  return chunk;
}

absl::Status ChunkFile::Sync() {
  return base::SyncFile(fd_, "cannot sync the chunk file", path_, /*data_only=*/true);
}

}  // namespace fedanon::party
