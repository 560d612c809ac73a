// Tests only: deterministic randomness for the parties of an in-process federation, so that two
// honest runs of a job show every party the same bytes (the mutating leader then compares what a
// party opens by content, never by size alone). While a thread has a party set
// (SetRandomParty), every OpenSSL RAND_bytes / RAND_priv_bytes draw on it — the first party's
// mask seeds, shuffles, ID-matching keys, release-order seeds, ECDSA nonces, sealed boxes'
// ephemeral keys and nonces — takes the next bytes of that party's SHA-256 counter stream
// (seeded by the party's name and the run's seed); a thread without a party (the leader, the
// admin, a party's worker threads) draws from OpenSSL's own DRBG. Installed process-wide through
// RAND_set_rand_method, the one hook OpenSSL 3.0 offers over its default DRBG (deprecated there,
// still honoured by RAND_bytes_ex and RAND_priv_bytes_ex). Never linked into a daemon.
#pragma once

#include <string>

namespace fedanon::testing {

// Installs the deterministic method (once per process) and restarts every party's stream from
// `seed`: the next run draws the same bytes in the same order as the last one.
void ResetDeterministicRandom(const std::string& seed);
// The party whose stream this thread draws from; "" for OpenSSL's own DRBG.
void SetRandomParty(const std::string& party);

}  // namespace fedanon::testing
