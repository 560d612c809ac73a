#include "tests/support/deterministic_random.h"

// RAND_METHOD and RAND_set_rand_method are deprecated in OpenSSL 3.0 (still honoured).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

namespace fedanon::testing {
namespace {

struct Stream {
  uint64_t counter = 0;
  std::string buffered;  // bytes of the last block not handed out yet
};

std::mutex mu;
std::string run_seed;                    // guarded by mu
std::map<std::string, Stream> streams;   // guarded by mu
thread_local std::string current_party;  // "" on threads without a party

// The next `n` bytes of `party`'s stream: SHA-256(seed || 0 || party || 0 || counter) blocks.
void Draw(const std::string& party, unsigned char* out, size_t n) {
  std::lock_guard<std::mutex> lock(mu);
  Stream& s = streams[party];
  while (n > 0) {
    if (s.buffered.empty()) {
      std::string input = run_seed;
      input.push_back('\0');
      input += party;
      input.push_back('\0');
      for (int i = 0; i < 8; ++i) input.push_back(static_cast<char>(s.counter >> (8 * i)));
      ++s.counter;
      unsigned char block[SHA256_DIGEST_LENGTH];
      SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), block);
      s.buffered.assign(reinterpret_cast<const char*>(block), sizeof(block));
    }
    const size_t take = std::min(n, s.buffered.size());
    std::memcpy(out, s.buffered.data(), take);
    s.buffered.erase(0, take);
    out += take;
    n -= take;
  }
}

int Bytes(unsigned char* out, int n) {
  if (n < 0) return 0;
  if (current_party.empty()) return RAND_OpenSSL()->bytes(out, n);
  Draw(current_party, out, static_cast<size_t>(n));
  return 1;
}

int Seed(const void* buf, int num) { return RAND_OpenSSL()->seed(buf, num); }
int Add(const void* buf, int num, double entropy) { return RAND_OpenSSL()->add(buf, num, entropy); }
int Status() { return RAND_OpenSSL()->status(); }

const RAND_METHOD kMethod = {Seed, Bytes, nullptr, Add, Bytes, Status};

}  // namespace

void ResetDeterministicRandom(const std::string& seed) {
  static const bool installed = RAND_set_rand_method(&kMethod) == 1;
  (void)installed;
  std::lock_guard<std::mutex> lock(mu);
  run_seed = seed;
  streams.clear();
}

void SetRandomParty(const std::string& party) { current_party = party; }

}  // namespace fedanon::testing
