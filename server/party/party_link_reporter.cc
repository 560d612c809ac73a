#include "server/party/party_link_reporter.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/printable.h"
#include "server/runtime/sd_notify.h"

namespace fedanon::party_daemon {
namespace {

int64_t NowUnix() { return absl::ToUnixSeconds(absl::Now()); }

}  // namespace

PartyLinkReporter::PartyLinkReporter(PartyLinkReporterOptions options)
    : options_(std::move(options)) {
  status_.pid = ::getpid();
  status_.name = options_.name;
  status_.leader = options_.leader;
  status_.since_unix = NowUnix();
  status_.detail = "local start-up";
}

PartyLinkReporter::~PartyLinkReporter() { Stop(); }

absl::Status PartyLinkReporter::Ready() {
  std::error_code ec;
  std::filesystem::create_directories(options_.output_dir, ec);
  absl::MutexLock lock(&mu_);
  if (started_) return absl::OkStatus();
  status_.link = PartyLinkState::kStarting;
  status_.detail = absl::StrCat("started; dialling the leader at ", options_.leader);
  status_.updated_unix = NowUnix();
  if (absl::Status st = WritePartyStatus(options_.output_dir, status_); !st.ok()) return st;
  NotifyLocked(absl::StrCat("READY=1\nSTATUS=", status_.detail));
  started_ = true;
  heartbeat_ = std::thread([this] { Heartbeat(); });
  return absl::OkStatus();
}

void PartyLinkReporter::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    if (started_) {
      status_.link = PartyLinkState::kStopped;
      status_.since_unix = NowUnix();
      status_.detail = "stopping";
      PublishLocked(/*notify=*/false);
      NotifyLocked("STOPPING=1\nSTATUS=stopping");
    }
  }
  if (heartbeat_.joinable()) heartbeat_.join();
}

void PartyLinkReporter::LinkUp(const std::string& leader) {
  absl::MutexLock lock(&mu_);
  status_.link = PartyLinkState::kUp;
  status_.since_unix = NowUnix();
  status_.detail = absl::StrCat("connected to leader '", leader, "' at ", options_.leader);
  PublishLocked(/*notify=*/true);
}

void PartyLinkReporter::LinkDown(const absl::Status& why, absl::Duration retry_in) {
  absl::MutexLock lock(&mu_);
  if (status_.link != PartyLinkState::kDown) status_.since_unix = NowUnix();
  status_.link = PartyLinkState::kDown;
  status_.detail =
      absl::StrCat("reconnecting to the leader at ", options_.leader, " in ",
                   absl::FormatDuration(absl::Trunc(retry_in, absl::Milliseconds(100))), ": ",
                   base::Printable(std::string(why.message()), 200));
  PublishLocked(/*notify=*/true);
}

void PartyLinkReporter::PublishLocked(bool notify) {
  if (!started_) return;
  status_.updated_unix = NowUnix();
  if (absl::Status st = WritePartyStatus(options_.output_dir, status_); !st.ok()) {
    if (!write_failing_) {
      spdlog::warn("cannot write the party status file: {}", std::string(st.message()));
    }
    write_failing_ = true;
  } else {
    write_failing_ = false;
  }
  if (notify) NotifyLocked(absl::StrCat("STATUS=", status_.detail));
}

void PartyLinkReporter::NotifyLocked(const std::string& state) {
  if (absl::Status st = server::SdNotify(state); !st.ok()) {
    if (!notify_failing_) spdlog::warn("cannot notify systemd: {}", std::string(st.message()));
    notify_failing_ = true;
  } else {
    notify_failing_ = false;
  }
}

void PartyLinkReporter::Heartbeat() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.heartbeat)) {
    PublishLocked(/*notify=*/false);
  }
}

}  // namespace fedanon::party_daemon
