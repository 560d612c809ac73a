#include "common/wire/protocol_version.h"

#include "absl/strings/str_cat.h"

namespace fedanon::wire {
namespace {

ProtocolVersion FromProto(bool present, const fedanon::v1::ProtocolVersion& v) {
  if (!present) return ProtocolVersion{1, 0};  // a build older than the exchange of versions
  return ProtocolVersion{v.major(), v.minor()};
}

}  // namespace

std::string ProtocolVersionText(const ProtocolVersion& v) {
  return absl::StrCat(v.major, ".", v.minor);
}

ProtocolVersion ProtocolVersionOf(const fedanon::v1::PartyHello& hello) {
  return FromProto(hello.has_protocol_version(), hello.protocol_version());
}

ProtocolVersion ProtocolVersionOf(const fedanon::v1::HelloAck& ack) {
  return FromProto(ack.has_protocol_version(), ack.protocol_version());
}

fedanon::v1::ProtocolVersion ToProto(const ProtocolVersion& v) {
  fedanon::v1::ProtocolVersion out;
  out.set_major(v.major);
  out.set_minor(v.minor);
  return out;
}

absl::Status CheckPartyProtocol(const std::string& party, const ProtocolVersion& party_version,
                                const ProtocolVersion& leader) {
  const uint32_t oldest = leader.minor == 0 ? 0 : leader.minor - 1;
  if (party_version.major == leader.major && party_version.minor >= oldest &&
      party_version.minor <= leader.minor) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("party '", party, "' speaks protocol ", ProtocolVersionText(party_version),
                   "; this leader supports ", ProtocolVersionText({leader.major, oldest}), "-",
                   ProtocolVersionText(leader)));
}

absl::Status CheckLeaderProtocol(const ProtocolVersion& leader, const ProtocolVersion& party) {
  const uint32_t oldest = party.minor == 0 ? 0 : party.minor - 1;
  if (leader.major == party.major && leader.minor >= oldest) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the leader speaks protocol ", ProtocolVersionText(leader),
                   "; this party speaks ", ProtocolVersionText(party)));
}

}  // namespace fedanon::wire
