// Provisioning of a federation ("startup kits"): the logic behind
// `fedanonctl provision federation.yaml [--out DIR]` and `fedanon federation up`.
//
// Input (federation.yaml):
//   federation: hospitals                   # name of the federation (and of its CA)
//   leader: {name: leader, address: leader.example.org:7443, hosts: [leader.example.org,
//   127.0.0.1]} parties: [hospital-a, hospital-b, hospital-c] admins: [alice] validity_days: 365 #
//   optional, default 365
//
// Output (out_dir, created with mode 0700; refused if it exists and is not empty):
//   README.txt          what to copy where
//   ca/ca.crt, ca/ca.key   the federation CA (ca.key 0600: keep it offline, it is needed only to
//                          issue certificates)
//   <name>/             one bundle per participant (leader, parties, admins; names are unique
//                       across roles): ca.crt, tls.crt, tls.key (0600), seal.crt, seal.key (0600),
//                       for a party also sign.crt, sign.key (0600: its statement-signing pair),
//                       and leader.yaml | party.yaml | admin.yaml (paths relative to the bundle).
// The kit is built in a temporary sibling directory and renamed into place, so a failure leaves
// nothing behind. Private keys are never logged nor returned.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::app {

struct FederationSpec {
  std::string federation;
  struct Leader {
    std::string name;
    std::string address;             // host:port the parties and admins dial ([v6]:port allowed)
    std::vector<std::string> hosts;  // extra DNS names / IPs for the leader's TLS certificate
    // Not read from YAML: the interface leader.yaml listens on (ProvisionLocal: 127.0.0.1).
    std::string listen_host = "0.0.0.0";
  } leader;
  std::vector<std::string> parties;
  std::vector<std::string> admins;
  int validity_days = 365;
};

// Parses federation.yaml. Errors name the file and, where known, line:column.
absl::StatusOr<FederationSpec> LoadFederationSpec(const std::string& federation_yaml_path);
absl::StatusOr<FederationSpec> ParseFederationSpec(const std::string& yaml_text,
                                                   const std::string& source_name);
// Names valid and unique across roles (case-insensitively; "ca" is reserved), address host:port,
// hosts valid, 1 <= validity_days <= 3650, at least one party and one admin.
absl::Status ValidateFederationSpec(const FederationSpec& spec);

// Writes the kit for `spec` into `out_dir`; returns a short human summary.
// `fedanonctl revoke --ca DIR CERT...`: revokes certificates issued by the federation CA in DIR
// (ca.crt, ca.key). Each certificate is kept in DIR/revoked/ and DIR/crl.pem is rewritten
// (atomically) from all of them, valid for `validity_days`; copy crl.pem to the leader (leader.yaml
// `crl:`). Returns a short summary. A certificate of another CA is refused before anything changes.
absl::StatusOr<std::string> RevokeCertificates(const std::string& ca_dir,
                                               const std::vector<std::string>& cert_paths,
                                               int validity_days);

absl::StatusOr<std::string> ProvisionFederation(const FederationSpec& spec,
                                                const std::string& out_dir);

// `fedanonctl provision federation.yaml --out DIR`.
absl::StatusOr<std::string> Provision(const std::string& federation_yaml_path,
                                      const std::string& out_dir);

// A throwaway local federation "local" on 127.0.0.1: leader "leader" listening on
// 127.0.0.1:<leader_port>, the given parties, admin "admin"; certificates valid 30 days.
absl::Status ProvisionLocal(const std::string& out_dir, const std::vector<std::string>& parties,
                            int leader_port);

}  // namespace fedanon::app
