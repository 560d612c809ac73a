// Benchmark of private ID matching for vertical jobs (prints figures; not a test): two parties
// with N ids each (a `overlap` fraction in common), in one process, each phase using every core:
// both parties encrypt their own ids (hash-to-curve + one multiplication per id), re-encrypt the
// other's list (one multiplication per id, then a 16-byte digest), then align the digests. That is
// 4N EC scalar multiplications in all; bench/id_matching.sh compares the rate with `openssl speed`.
// Usage: id_matching_bench [ids=1000000] [overlap=0.9]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "party/id_matching.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

template <typename T>
T OrDie(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(v.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(v);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const double overlap = argc > 2 ? std::strtod(argv[2], nullptr) : 0.9;
  const size_t shared = static_cast<size_t>(overlap * static_cast<double>(n));
  std::vector<std::string> a_ids, b_ids;
  for (size_t i = 0; i < n; ++i) a_ids.push_back(absl::StrCat("patient-", i));
  for (size_t i = 0; i < n; ++i) {  // the first `shared` of A's ids, then ids of B's own, reversed
    b_ids.push_back(i < shared ? absl::StrCat("patient-", shared - 1 - i)
                               : absl::StrCat("other-", i));
  }
  auto a = OrDie(fedanon::party::IdMatcher::Create(a_ids), "create A");
  auto b = OrDie(fedanon::party::IdMatcher::Create(b_ids), "create B");

  const auto start = std::chrono::steady_clock::now();
  auto t = std::chrono::steady_clock::now();
  const auto a1 = OrDie(a->EncryptOwn(), "A encrypts");
  const auto b1 = OrDie(b->EncryptOwn(), "B encrypts");
  const double encrypt = Seconds(t);
  t = std::chrono::steady_clock::now();
  // The last hop: re-encrypt, then keep 16-byte digests (what goes back to the parties).
  const auto a2 =
      OrDie(fedanon::party::IdMatcher::SplitDigests(fedanon::party::IdMatcher::FinalDigests(
                OrDie(b->ReEncrypt(a1), "B re-encrypts A's list"))),
            "digests");
  const auto b2 =
      OrDie(fedanon::party::IdMatcher::SplitDigests(fedanon::party::IdMatcher::FinalDigests(
                OrDie(a->ReEncrypt(b1), "A re-encrypts B's list"))),
            "digests");
  const double reencrypt = Seconds(t);
  t = std::chrono::steady_clock::now();
  const auto al = OrDie(a->Align(0, {a2, b2}), "A aligns");
  const auto bl = OrDie(b->Align(1, {a2, b2}), "B aligns");
  const double align = Seconds(t);
  const double total = Seconds(start);
  if (al.common != shared || bl.common != shared) {
    std::fprintf(stderr, "wrong intersection: %llu / %llu, expected %zu\n",
                 static_cast<unsigned long long>(al.common),
                 static_cast<unsigned long long>(bl.common), shared);
    return 1;
  }
  const double mults = 4.0 * static_cast<double>(n);
  std::printf("ID matching, 2 parties x %zu ids (%zu common), all cores per phase\n", n, shared);
  std::printf("  encrypt own ids (hash-to-curve + mul)  %8.2f s  (%.1f us per id per party)\n",
              encrypt, 1e6 * encrypt / (2.0 * static_cast<double>(n)));
  std::printf("  re-encrypt the other's list (mul)      %8.2f s  (%.1f us per id per party)\n",
              reencrypt, 1e6 * reencrypt / (2.0 * static_cast<double>(n)));
  std::printf("  align                                  %8.2f s\n", align);
  std::printf("  total                                  %8.2f s\n", total);
  std::printf("ids_per_second %.0f\n", static_cast<double>(n) / total);
  std::printf("ec_multiplications_per_second %.0f\n", mults / total);
  return 0;
}
