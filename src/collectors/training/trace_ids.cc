#include "src/collectors/training/trace_ids.h"

#include <openssl/evp.h>

#include <cstring>
#include <initializer_list>

namespace gpuscope {
namespace {

using Digest = std::array<uint8_t, 32>;

// SHA-256 of the tag and each part, every part preceded by its length.
Digest Hash(std::string_view tag, std::initializer_list<std::string_view> parts) {
  Digest digest{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int len = 0;
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, tag.data(), tag.size());
  for (std::string_view part : parts) {
    uint64_t size = part.size();
    EVP_DigestUpdate(ctx, &size, sizeof(size));
    EVP_DigestUpdate(ctx, part.data(), part.size());
  }
  EVP_DigestFinal_ex(ctx, digest.data(), &len);
  EVP_MD_CTX_free(ctx);
  return digest;
}

template <typename T>
std::string_view Bytes(const T& value) {
  return {reinterpret_cast<const char*>(&value), sizeof(value)};
}

template <size_t N>
std::array<uint8_t, N> Leading(const Digest& digest) {
  std::array<uint8_t, N> id{};
  std::memcpy(id.data(), digest.data(), N);
  if (id == std::array<uint8_t, N>{}) id[N - 1] = 1;  // all-zero ids are invalid in OTLP
  return id;
}

}  // namespace

TraceId TrainingStepTraceId(std::string_view job, uint64_t step) {
  return Leading<16>(Hash("gpuscope.training.step-trace", {job, Bytes(step)}));
}

SpanId TrainingStepSpanId(std::string_view job, uint64_t step, int32_t rank) {
  return Leading<8>(Hash("gpuscope.training.step-span", {job, Bytes(step), Bytes(rank)}));
}

SpanId TrainingCollectiveSpanId(std::string_view job, int32_t rank, uint64_t comm, uint64_t seq) {
  return Leading<8>(Hash("gpuscope.training.collective-span", {job, Bytes(rank), Bytes(comm), Bytes(seq)}));
}

std::string IdHex(const uint8_t* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace gpuscope
