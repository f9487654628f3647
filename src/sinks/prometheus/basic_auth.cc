#include "src/sinks/prometheus/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "src/sinks/prometheus/http_request.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxCachedCredentials = 1024;

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool DecodeBase64(std::string_view in, std::string& out) {
  out.clear();
  if (in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else if (pad > 0 || (v[k] = Base64Value(c)) < 0) {
        return false;
      }
    }
    uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFF));
  }
  return true;
}

bool VerifyCryptHash(std::string_view password, const std::string& hash) {
  if (password.find('\0') != std::string_view::npos) return false;
  auto data = std::make_unique<crypt_data>();  // large (tens of KiB): keep it off the stack
  std::memset(data.get(), 0, sizeof(crypt_data));
  std::string phrase(password);
  const char* result = crypt_rn(phrase.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (result == nullptr || result[0] == '*') return false;  // libxcrypt failure tokens start with '*'
  size_t len = std::strlen(result);
  bool equal = len == hash.size() && CRYPTO_memcmp(result, hash.data(), len) == 0;
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return equal;
}

BasicAuthenticator::BasicAuthenticator(std::map<std::string, std::string> users) : users_(std::move(users)) {
  if (RAND_bytes(cache_secret_.data(), static_cast<int>(cache_secret_.size())) != 1) {
    cache_secret_.fill(0);  // still correct: the cache key is then an unkeyed digest
  }
  // A bcrypt hash of a random phrase at the cost of the configured hashes, checked for unknown users.
  if (users_.empty()) return;
  unsigned long cost = std::strtoul(users_.begin()->second.substr(4, 2).c_str(), nullptr, 10);
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", cost, nullptr, 0, setting, sizeof(setting)) == nullptr) return;
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  std::string phrase(reinterpret_cast<const char*>(cache_secret_.data()), 16);
  for (char& c : phrase) c = static_cast<char>('a' + (static_cast<unsigned char>(c) % 26));
  const char* result = crypt_rn(phrase.c_str(), setting, data.get(), sizeof(crypt_data));
  if (result != nullptr && result[0] != '*') dummy_hash_ = result;
}

BasicAuthenticator::Digest BasicAuthenticator::CacheKey(std::string_view user, std::string_view password,
                                                        std::string_view hash) const {
  Digest digest{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int len = 0;
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, cache_secret_.data(), cache_secret_.size());
  for (std::string_view part : {user, password, hash}) {
    uint64_t size = part.size();
    EVP_DigestUpdate(ctx, &size, sizeof(size));  // length-prefixed: no ambiguity between parts
    EVP_DigestUpdate(ctx, part.data(), part.size());
  }
  EVP_DigestFinal_ex(ctx, digest.data(), &len);
  EVP_MD_CTX_free(ctx);
  return digest;
}

bool BasicAuthenticator::Check(std::string_view authorization) {
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() < kScheme.size() || !EqualsIgnoreCase(authorization.substr(0, 6), kScheme))
    return false;
  std::string decoded;
  if (!DecodeBase64(authorization.substr(kScheme.size()), decoded)) return false;
  size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  std::string_view user = std::string_view(decoded).substr(0, colon);
  std::string_view password = std::string_view(decoded).substr(colon + 1);

  auto it = users_.find(std::string(user));
  if (it == users_.end()) {
    VerifyCryptHash(password, dummy_hash_);
    return false;
  }
  Digest key = CacheKey(user, password, it->second);
  {
    MutexLock lock(&mu_);
    if (verified_.contains(key)) {
      ++cache_hits_;
      return true;
    }
  }
  if (!VerifyCryptHash(password, it->second)) return false;
  MutexLock lock(&mu_);
  if (verified_.size() >= kMaxCachedCredentials) verified_.clear();
  verified_.insert(key);
  return true;
}

size_t BasicAuthenticator::cache_hits() const {
  MutexLock lock(&mu_);
  return cache_hits_;
}

}  // namespace gpuscope
