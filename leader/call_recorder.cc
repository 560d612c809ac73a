#include "leader/call_recorder.h"

#include <utility>

namespace fedanon::leader {

CallRecorder::CallRecorder(JobStore* store, std::string job_id)
    : store_(store), job_id_(std::move(job_id)) {}

absl::Status CallRecorder::RecordRequest(uint64_t index, const std::string& digest) const {
  // No masks: the ring's first party draws a secure sum's mask and keeps it durably itself.
  return store_->RecordCallRequest(job_id_, index, digest, "");
}

absl::Status CallRecorder::RecordReply(uint64_t index, const std::string& reply) const {
  return store_->RecordCallReply(job_id_, index, reply);
}

absl::Status CallRecorder::RecordCompleteCall(uint64_t index, const std::string& key,
                                              const std::string& reply) const {
  return store_->RecordCompleteCall(job_id_, index, key, reply);
}

absl::StatusOr<std::vector<RecordedCall>> CallRecorder::Load() const {
  return store_->Calls(job_id_);
}

std::function<absl::Status(uint64_t, const std::string&)> CallRecorder::RequestRecorder() const {
  return [recorder = *this](uint64_t index, const std::string& digest) {
    return recorder.RecordRequest(index, digest);
  };
}

std::function<absl::Status(uint64_t, const std::string&)> CallRecorder::ReplyRecorder() const {
  return [recorder = *this](uint64_t index, const std::string& reply) {
    return recorder.RecordReply(index, reply);
  };
}

std::function<absl::Status(uint64_t, const std::string&, const std::string&)>
CallRecorder::CompleteCallRecorder() const {
  return [recorder = *this](uint64_t index, const std::string& key, const std::string& reply) {
    return recorder.RecordCompleteCall(index, key, reply);
  };
}

}  // namespace fedanon::leader
