// Benchmark of private ID matching for vertical jobs (prints figures; not a test): two parties
// with N ids each (a `overlap` fraction in common), in one process, each phase using every core:
// both parties encrypt their own ids (hash-to-curve + one multiplication per id), re-encrypt the
// other's list (one multiplication per id, then a 16-byte digest), then align the digests. That is
// 4N EC scalar multiplications in all; bench/id_matching.sh compares the rate with `openssl speed`.
// With --micro it instead times (thread CPU time) the single-thread steps of one id (hash-to-curve,
// Encrypt, ReEncrypt, OpenSSL point decompression, one EC_POINT_mul on a variable point with a
// constant-time scalar) in the same run and prints the ratio hash-to-curve / multiplication.
// Usage: id_matching_bench [ids=1000000] [overlap=0.9]
//        id_matching_bench --micro [ids=3000]
//        id_matching_bench --steps [ids=3000]   (the steps of one hash-to-curve / Encrypt)
//        id_matching_bench --align [ids=1000000] (the leader's intersection and one party's
//                                                 alignment alone: random 16-byte digests, two
//                                                 lists, 90% common; best of 3, thread CPU)
#define OPENSSL_SUPPRESS_DEPRECATED 1  // EC_POINT_{get,set}_Jprojective_coordinates_GFp
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "crypto/ec_commutative_cipher.h"
#if __has_include("crypto/p256_point.h")  // absent from older builds: lets "before" builds compare
#include "crypto/p256_point.h"            // internal: to time the decompression alone
#define FEDANON_HAVE_P256_POINT 1
#endif
#include "common/wire/id_digests.h"
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

// CPU seconds of the calling thread (not counting time the thread waits for a core: the machine
// is shared).
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// CPU seconds of the whole process (every thread).
double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Microseconds of thread CPU time per call of fn(i) for i in [0, n), best of 3 passes.
template <typename Fn>
double MicrosPerCall(size_t n, const Fn& fn) {
  double best = 1e300;
  for (int pass = 0; pass < 3; ++pass) {
    const double t = ThreadCpuSeconds();
    for (size_t i = 0; i < n; ++i) fn(i);
    best = std::min(best, 1e6 * (ThreadCpuSeconds() - t) / static_cast<double>(n));
  }
  return best;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s failed\n", what);
    std::exit(1);
  }
}

int Micro(size_t n) {
  namespace fc = fedanon::crypto;
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(absl::StrCat("patient-", i));
  auto cipher = OrDie(fc::EcCommutativeCipher::CreateWithNewKey(), "key");
  std::vector<std::string> enc(n);
  for (size_t i = 0; i < n; ++i) enc[i] = OrDie(cipher->Encrypt(ids[i]), "encrypt");

  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);  // named curve: nistz256
  EC_POINT* pt = EC_POINT_new(group);
  EC_POINT* r = EC_POINT_new(group);
  BN_CTX* ctx = BN_CTX_new();
  BIGNUM* k = BN_new();
  Check(group && pt && r && ctx && k && BN_rand_range(k, EC_GROUP_get0_order(group)) == 1,
        "OpenSSL setup");
  BN_set_flags(k, BN_FLG_CONSTTIME);
  std::vector<EC_POINT*> points(n);
  for (size_t i = 0; i < n; ++i) {
    points[i] = EC_POINT_new(group);
    Check(EC_POINT_oct2point(group, points[i], reinterpret_cast<const uint8_t*>(enc[i].data()),
                             enc[i].size(), ctx) == 1,
          "decode");
  }

  const double h2c = MicrosPerCall(
      n, [&](size_t i) { Check(fc::HashToCurve(ids[i], fc::kIdHashDst).ok(), "hash"); });
  const double encrypt =
      MicrosPerCall(n, [&](size_t i) { Check(cipher->Encrypt(ids[i]).ok(), "e"); });
  const double reencrypt =
      MicrosPerCall(n, [&](size_t i) { Check(cipher->ReEncrypt(enc[i]).ok(), "re"); });
  // The batch paths on one thread (blocks of 128 encoded with one inversion), per id.
  double encrypt_batch = 1e300, reencrypt_batch = 1e300;
  // The hop encodings: a list received uncompressed (65 bytes) and re-encrypted to uncompressed,
  // against the compressed (33 bytes) path above.
  const std::vector<std::string> enc_unc =
      OrDie(cipher->EncryptBatch(ids, 1, fc::PointEncoding::kUncompressed), "encrypt unc");
  double encrypt_batch_unc = 1e300, reencrypt_batch_unc = 1e300;
  for (int pass = 0; pass < 3; ++pass) {
    double t = ThreadCpuSeconds();
    Check(cipher->EncryptBatch(ids, 1, fc::PointEncoding::kUncompressed).ok(), "encrypt unc");
    encrypt_batch_unc =
        std::min(encrypt_batch_unc, 1e6 * (ThreadCpuSeconds() - t) / static_cast<double>(n));
    t = ThreadCpuSeconds();
    Check(cipher->ReEncryptBatch(enc_unc, 1, fc::PointEncoding::kUncompressed).ok(), "re unc");
    reencrypt_batch_unc =
        std::min(reencrypt_batch_unc, 1e6 * (ThreadCpuSeconds() - t) / static_cast<double>(n));
  }
  for (int pass = 0; pass < 3; ++pass) {
    double t = ThreadCpuSeconds();
    Check(cipher->EncryptBatch(ids, 1).ok(), "encrypt batch");
    encrypt_batch =
        std::min(encrypt_batch, 1e6 * (ThreadCpuSeconds() - t) / static_cast<double>(n));
    t = ThreadCpuSeconds();
    Check(cipher->ReEncryptBatch(enc, 1).ok(), "re-encrypt batch");
    reencrypt_batch =
        std::min(reencrypt_batch, 1e6 * (ThreadCpuSeconds() - t) / static_cast<double>(n));
  }
  const double decompress = MicrosPerCall(n, [&](size_t i) {
    Check(EC_POINT_oct2point(group, pt, reinterpret_cast<const uint8_t*>(enc[i].data()),
                             enc[i].size(), ctx) == 1,
          "oct2point");
  });
  std::vector<std::string> unc(n);
  for (size_t i = 0; i < n; ++i) {
    unc[i].resize(65);
    Check(EC_POINT_point2oct(group, points[i], POINT_CONVERSION_UNCOMPRESSED,
                             reinterpret_cast<uint8_t*>(unc[i].data()), 65, ctx) == 65,
          "point2oct");
  }
  const double decode_uncompressed = MicrosPerCall(n, [&](size_t i) {
    Check(EC_POINT_oct2point(group, pt, reinterpret_cast<const uint8_t*>(unc[i].data()),
                             unc[i].size(), ctx) == 1,
          "oct2point");
  });
#ifdef FEDANON_HAVE_P256_POINT
  const double own_decompress = MicrosPerCall(n, [&](size_t i) {
    fedanon::crypto::p256::Fe x, y;
    Check(fedanon::crypto::p256::DecompressPoint(reinterpret_cast<const uint8_t*>(enc[i].data()),
                                                 &x, &y),
          "decompress");
  });
#else
  const double own_decompress = 0;
#endif
  const double mul = MicrosPerCall(n, [&](size_t i) {
    Check(EC_POINT_mul(group, r, nullptr, points[i], k, ctx) == 1, "EC_POINT_mul");
  });
  // Paired: short blocks of hashes and of multiplications in turn, the median of their ratios, so
  // that the load of a shared machine drifting between the passes above cancels out.
  std::vector<double> ratios;
  const size_t block = std::max<size_t>(1, n / 20);
  for (size_t start = 0; start + block <= n; start += block) {
    double t = ThreadCpuSeconds();
    for (size_t i = start; i < start + block; ++i) {
      Check(fc::HashToCurve(ids[i], fc::kIdHashDst).ok(), "hash");
    }
    const double th = ThreadCpuSeconds() - t;
    t = ThreadCpuSeconds();
    for (size_t i = start; i < start + block; ++i) {
      Check(EC_POINT_mul(group, r, nullptr, points[i], k, ctx) == 1, "EC_POINT_mul");
    }
    ratios.push_back(th / (ThreadCpuSeconds() - t));
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("single thread, %zu ids, thread CPU time, best of 3 passes (us per call)\n", n);
  std::printf("  hash_to_curve (P256_XMD:SHA-256_SSWU_RO_)   %7.2f\n", h2c);
  std::printf("  Encrypt (hash + mul + compress)            %7.2f\n", encrypt);
  std::printf("  ReEncrypt (decode + mul + compress)        %7.2f\n", reencrypt);
  std::printf("  EncryptBatch, 1 thread, per id             %7.2f\n", encrypt_batch);
  std::printf("  ReEncryptBatch, 1 thread, per id           %7.2f\n", reencrypt_batch);
  std::printf("  EncryptBatch, uncompressed out             %7.2f\n", encrypt_batch_unc);
  std::printf("  ReEncryptBatch, uncompressed in and out    %7.2f\n", reencrypt_batch_unc);
  std::printf(
      "  hop encoding: uncompressed saves %.2f us of CPU per Encrypt + ReEncrypt for 32 more "
      "bytes per id\n",
      (encrypt_batch + reencrypt_batch) - (encrypt_batch_unc + reencrypt_batch_unc));
  std::printf("  OpenSSL decompression (EC_POINT_oct2point) %7.2f\n", decompress);
  std::printf("  OpenSSL decode of a 65-byte uncompressed   %7.2f\n", decode_uncompressed);
  if (own_decompress > 0) {
    std::printf("  p256_field decompression (ReEncrypt's)    %7.2f\n", own_decompress);
  }
  std::printf("  EC_POINT_mul, variable point               %7.2f\n", mul);
  std::printf("hash_to_curve_over_mul %.3f\n", h2c / mul);
  std::printf(
      "hash_to_curve_over_mul_paired %.3f (median of %zu blocks of %zu, min %.3f, max %.3f)\n",
      ratios[ratios.size() / 2], ratios.size(), block, ratios.front(), ratios.back());
  std::printf("encrypt_minus_mul_over_mul %.3f\n", (encrypt - mul) / mul);
  std::printf("batch_encrypt_minus_mul_over_mul %.3f  batch_reencrypt_minus_mul_over_mul %.3f\n",
              (encrypt_batch - mul) / mul, (reencrypt_batch - mul) / mul);
  for (EC_POINT* p : points) EC_POINT_free(p);
  EC_POINT_free(pt);
  EC_POINT_free(r);
  BN_free(k);
  BN_CTX_free(ctx);
  EC_GROUP_free(group);
  return 0;
}

#ifdef FEDANON_HAVE_P256_POINT
// --steps: thread-CPU cost of each step of one hash-to-curve and Encrypt, single thread, next to
// one EC_POINT_mul in the same run (where the hash's time goes).
int Steps(size_t n) {
  namespace fc = fedanon::crypto;
  namespace p2 = fedanon::crypto::p256;
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(absl::StrCat("patient-", i));
  std::vector<std::string> uniform(n);
  std::vector<p2::Fe> u0(n), u1(n), hx(n), hy(n);
  for (size_t i = 0; i < n; ++i) {
    uniform[i] = OrDie(fc::ExpandMessageXmdSha256(ids[i], fc::kIdHashDst, 96), "xmd");
    const auto* b = reinterpret_cast<const uint8_t*>(uniform[i].data());
    p2::FeFromWideBytes(&u0[i], b);
    p2::FeFromWideBytes(&u1[i], b + 48);
    Check(p2::MapTwoToCurve(u0[i], u1[i], &hx[i], &hy[i]), "map");
  }
  EC_GROUP* group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
  EC_POINT* pt = EC_POINT_new(group);
  EC_POINT* r = EC_POINT_new(group);
  BN_CTX* ctx = BN_CTX_new();
  BIGNUM* k = BN_new();
  Check(group && pt && r && ctx && k && BN_rand_range(k, EC_GROUP_get0_order(group)) == 1,
        "OpenSSL setup");
  BN_set_flags(k, BN_FLG_CONSTTIME);
  std::vector<std::string> unc(n);
  for (size_t i = 0; i < n; ++i) {
    unc[i].assign(65, '\4');
    p2::FeToBytes(reinterpret_cast<uint8_t*>(unc[i].data()) + 1, hx[i]);
    p2::FeToBytes(reinterpret_cast<uint8_t*>(unc[i].data()) + 33, hy[i]);
  }
  volatile uint64_t sink = 0;
  p2::Fe acc = u0[0];
  const double xmd = MicrosPerCall(n, [&](size_t i) {
    Check(fc::ExpandMessageXmdSha256(ids[i], fc::kIdHashDst, 96).ok(), "x");
  });
  const double wide = MicrosPerCall(n, [&](size_t i) {
    p2::Fe a, b;
    const auto* in = reinterpret_cast<const uint8_t*>(uniform[i].data());
    p2::FeFromWideBytes(&a, in);
    p2::FeFromWideBytes(&b, in + 48);
    sink = sink + a.v[0] + b.v[0];
  });
  const double sqr = MicrosPerCall(n,
                                   [&](size_t) {
                                     for (int j = 0; j < 100; ++j) p2::FeSqr(&acc, acc);
                                   }) /
                     100;
  const double mul = MicrosPerCall(n,
                                   [&](size_t i) {
                                     for (int j = 0; j < 100; ++j) p2::FeMul(&acc, acc, u1[i]);
                                   }) /
                     100;
  const double pow2 = MicrosPerCall(n, [&](size_t i) {
    p2::Fe in[2] = {u0[i], u1[i]}, out[2];
    p2::FePowC1x2(out, in);
    sink = sink + out[0].v[0];
  });
  const double map = MicrosPerCall(n, [&](size_t i) {
    p2::Fe x, y;
    Check(p2::MapTwoToCurve(u0[i], u1[i], &x, &y), "map");
  });
  const double on_curve =
      MicrosPerCall(n, [&](size_t i) { Check(p2::IsOnCurve(hx[i], hy[i]), "on curve"); });
  const double encode = MicrosPerCall(n, [&](size_t i) {
    uint8_t out[65];
    p2::FeToBytes(out + 1, hx[i]);
    p2::FeToBytes(out + 33, hy[i]);
    sink = sink + out[5];
  });
  const double load = MicrosPerCall(n, [&](size_t i) {
    Check(EC_POINT_oct2point(group, pt, reinterpret_cast<const uint8_t*>(unc[i].data()), 65, ctx) ==
              1,
          "oct2point");
  });
  const double ecmul = MicrosPerCall(
      n, [&](size_t) { Check(EC_POINT_mul(group, r, nullptr, pt, k, ctx) == 1, "mul"); });
  const double compress = MicrosPerCall(n, [&](size_t) {
    uint8_t out[33];
    Check(EC_POINT_point2oct(group, r, POINT_CONVERSION_COMPRESSED, out, 33, ctx) == 33, "o");
  });
  // A received point on the hop: 33-byte compressed (decompression: one exponentiation) against
  // 65-byte uncompressed (range checks and y^2 = x^3 - 3x + b on our field).
  std::vector<std::string> comp(n);
  for (size_t i = 0; i < n; ++i) {
    comp[i].assign(33, '\0');
    comp[i][0] = static_cast<char>(0x02 | p2::FeSgn0(hy[i]));
    p2::FeToBytes(reinterpret_cast<uint8_t*>(comp[i].data()) + 1, hx[i]);
  }
  const double decompress = MicrosPerCall(n, [&](size_t i) {
    p2::Fe x, y;
    Check(p2::DecompressPoint(reinterpret_cast<const uint8_t*>(comp[i].data()), &x, &y), "dec");
  });
  const double parse_uncompressed = MicrosPerCall(n, [&](size_t i) {
    p2::Fe x, y;
    const auto* u = reinterpret_cast<const uint8_t*>(unc[i].data());
    Check(u[0] == 4 && p2::FeFromBytes(&x, u + 1) && p2::FeFromBytes(&y, u + 33) &&
              p2::IsOnCurve(x, y),
          "parse");
  });
  BIGNUM* bx = BN_new();
  BIGNUM* by = BN_new();
  BIGNUM* bz = BN_new();
  const double get_jacobian = MicrosPerCall(n, [&](size_t) {
    Check(EC_POINT_get_Jprojective_coordinates_GFp(group, r, bx, by, bz, ctx) == 1, "getJ");
    uint8_t b[3][32];
    p2::Fe f[3];
    Check(BN_bn2binpad(bx, b[0], 32) == 32 && BN_bn2binpad(by, b[1], 32) == 32 &&
              BN_bn2binpad(bz, b[2], 32) == 32,
          "bn2bin");
    for (int c = 0; c < 3; ++c) Check(p2::FeFromBytes(&f[c], b[c]), "fe");
    sink = sink + f[0].v[0];
  });
  const double set_jacobian = MicrosPerCall(n, [&](size_t i) {
    const auto* u = reinterpret_cast<const uint8_t*>(unc[i].data());
    Check(BN_bin2bn(u + 1, 32, bx) != nullptr && BN_bin2bn(u + 33, 32, by) != nullptr &&
              EC_POINT_set_Jprojective_coordinates_GFp(group, pt, bx, by, BN_value_one(), ctx) == 1,
          "setJ");
  });
  BN_free(bx);
  BN_free(by);
  BN_free(bz);
  const double h2c = MicrosPerCall(
      n, [&](size_t i) { Check(fc::HashToCurve(ids[i], fc::kIdHashDst).ok(), "hash"); });
  sink = sink + acc.v[0];
  std::printf("single thread, %zu ids, thread CPU time, best of 3 passes (us per call)\n", n);
  std::printf("  expand_message_xmd (96 bytes, SHA-256)     %7.3f\n", xmd);
  std::printf("  hash_to_field reductions (2 x 48 bytes)    %7.3f\n", wide);
  std::printf("  FeSqr                                      %7.4f\n", sqr);
  std::printf("  FeMul                                      %7.4f\n", mul);
  std::printf("  FePowC1x2 (two (p-3)/4 chains, lanes)      %7.3f\n", pow2);
  std::printf("  MapTwoToCurve (2 maps + add, affine)       %7.3f\n", map);
  std::printf("  IsOnCurve                                  %7.3f\n", on_curve);
  std::printf("  affine -> 65 bytes (2 x FeToBytes)         %7.3f\n", encode);
  std::printf("  EC_POINT_oct2point, 65 bytes               %7.3f\n", load);
  std::printf("  EC_POINT_mul, variable point               %7.3f\n", ecmul);
  std::printf("  EC_POINT_point2oct, compressed             %7.3f\n", compress);
  std::printf("  received 33-byte point: DecompressPoint    %7.3f\n", decompress);
  std::printf("  received 65-byte point: parse + on-curve   %7.3f\n", parse_uncompressed);
  std::printf("  Jacobian X, Y, Z out of OpenSSL -> Fe       %7.3f\n", get_jacobian);
  std::printf("  affine bytes -> OpenSSL (set Jacobian, Z=1) %7.3f\n", set_jacobian);
  std::printf("  HashToCurve (whole, 65 bytes out)          %7.3f\n", h2c);
  std::printf("hash_to_curve_over_mul %.3f  squarings_per_mul %.0f\n", h2c / ecmul, ecmul / sqr);
  EC_POINT_free(pt);
  EC_POINT_free(r);
  BN_free(k);
  BN_CTX_free(ctx);
  EC_GROUP_free(group);
  return 0;
}
#endif

// The steps of ID matching after the crypto, single-threaded: the leader's intersection of two
// lists of n random 16-byte digests (90% common) and one party's alignment on it.
int AlignOnly(size_t n) {
  std::vector<std::string> ids;
  std::string a, b;
  for (size_t i = 0; i < n; ++i) ids.push_back(absl::StrCat("patient-", i));
  uint64_t x = 0x9e3779b97f4a7c15ULL;  // splitmix64: fixed, fast pseudo-random digests
  auto next = [&x] {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto digest = [&next] {
    std::string d(16, '\0');
    for (int w = 0; w < 2; ++w) {
      const uint64_t v = next();
      for (int k = 0; k < 8; ++k) d[8 * w + k] = static_cast<char>(v >> (8 * k));
    }
    return d;
  };
  std::vector<std::string> a_digests;
  for (size_t i = 0; i < n; ++i) a_digests.push_back(digest());
  for (const auto& d : a_digests) a += d;
  const size_t shared = n * 9 / 10;
  for (size_t i = 0; i < n; ++i) b += i < shared ? a_digests[(i * 7919) % n] : digest();
  auto m = OrDie(fedanon::party::IdMatcher::Create(ids), "create");
  double best_cpu = 1e30, best_wall = 1e30;
  uint64_t common = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double c = ThreadCpuSeconds();
    const auto t = std::chrono::steady_clock::now();
    const std::string both = OrDie(fedanon::wire::CommonDigests({a, b}), "intersect");
    const auto al = OrDie(m->AlignToCommon(a, both), "align");
    best_wall = std::min(best_wall, Seconds(t));
    best_cpu = std::min(best_cpu, ThreadCpuSeconds() - c);
    common = al.common;
  }
  std::printf(
      "Intersection and alignment of 2 x %zu digests (%llu common): %.3f s thread CPU, %.3f s "
      "wall (best of 3)\n",
      n, static_cast<unsigned long long>(common), best_cpu, best_wall);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef FEDANON_HAVE_P256_POINT
  if (argc > 1 && std::string(argv[1]) == "--steps") {
    return Steps(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 3000);
  }
#endif
  if (argc > 1 && std::string(argv[1]) == "--align") {
    return AlignOnly(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000);
  }
  if (argc > 1 && std::string(argv[1]) == "--micro") {
    return Micro(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 3000);
  }
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const double overlap = argc > 2 ? std::strtod(argv[2], nullptr) : 0.9;
  // "compressed": 33-byte points on the hop between the parties (default: uncompressed).
  const bool compressed = argc > 3 && std::string(argv[3]) == "compressed";
  const size_t shared = static_cast<size_t>(overlap * static_cast<double>(n));
  std::vector<std::string> a_ids, b_ids;
  for (size_t i = 0; i < n; ++i) a_ids.push_back(absl::StrCat("patient-", i));
  for (size_t i = 0; i < n; ++i) {  // the first `shared` of A's ids, then ids of B's own, reversed
    b_ids.push_back(i < shared ? absl::StrCat("patient-", shared - 1 - i)
                               : absl::StrCat("other-", i));
  }
  auto a = OrDie(fedanon::party::IdMatcher::Create(a_ids), "create A");
  auto b = OrDie(fedanon::party::IdMatcher::Create(b_ids), "create B");
  if (compressed) {
    a->set_hop_encoding(fedanon::crypto::PointEncoding::kCompressed);
    b->set_hop_encoding(fedanon::crypto::PointEncoding::kCompressed);
  }
  const double cpu_start = ProcessCpuSeconds();

  const auto start = std::chrono::steady_clock::now();
  auto t = std::chrono::steady_clock::now();
  const auto a1 = OrDie(a->EncryptOwnRange(0, n, /*blinded=*/false), "A encrypts");
  const auto b1 = OrDie(b->EncryptOwnRange(0, n, /*blinded=*/false), "B encrypts");
  const double encrypt = Seconds(t);
  t = std::chrono::steady_clock::now();
  // The last hop (two parties): re-encrypt, then keep 16-byte digests (what goes to the leader
  // and back to the list's owner).
  const std::string a2 = fedanon::party::IdMatcher::FinalDigests(
      OrDie(b->ReEncrypt(a1, /*last_hop=*/true), "B re-encrypts A's list"));
  const std::string b2 = fedanon::party::IdMatcher::FinalDigests(
      OrDie(a->ReEncrypt(b1, /*last_hop=*/true), "A re-encrypts B's list"));
  const double reencrypt = Seconds(t);
  t = std::chrono::steady_clock::now();
  // The leader intersects; each party aligns on the common digests.
  const std::string both = OrDie(fedanon::wire::CommonDigests({a2, b2}), "intersect");
  const auto al = OrDie(a->AlignToCommon(a2, both), "A aligns");
  const auto bl = OrDie(b->AlignToCommon(b2, both), "B aligns");
  const double align = Seconds(t);
  const double total = Seconds(start);
  const double cpu = ProcessCpuSeconds() - cpu_start;
  if (al.common != shared || bl.common != shared) {
    std::fprintf(stderr, "wrong intersection: %llu / %llu, expected %zu\n",
                 static_cast<unsigned long long>(al.common),
                 static_cast<unsigned long long>(bl.common), shared);
    return 1;
  }
  const double mults = 4.0 * static_cast<double>(n);
  std::printf("ID matching, 2 parties x %zu ids (%zu common), all cores per phase, %s hop\n", n,
              shared, compressed ? "compressed" : "uncompressed");
  std::printf("  encrypt own ids (hash-to-curve + mul)  %8.2f s  (%.1f us per id per party)\n",
              encrypt, 1e6 * encrypt / (2.0 * static_cast<double>(n)));
  std::printf("  re-encrypt the other's list (mul)      %8.2f s  (%.1f us per id per party)\n",
              reencrypt, 1e6 * reencrypt / (2.0 * static_cast<double>(n)));
  std::printf("  align                                  %8.2f s\n", align);
  std::printf("  total                                  %8.2f s\n", total);
  std::printf("  process CPU (user + system)            %8.2f s  (%.1f us per id)\n", cpu,
              1e6 * cpu / static_cast<double>(n));
  std::printf("ids_per_second %.0f\n", static_cast<double>(n) / total);
  std::printf("cpu_seconds %.3f\n", cpu);
  std::printf("ec_multiplications_per_second %.0f\n", mults / total);
  return 0;
}
