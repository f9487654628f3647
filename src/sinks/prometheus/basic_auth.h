// BasicAuthenticator: checks HTTP Basic credentials against the web config's bcrypt hashes. bcrypt is
// slow on purpose, so successful (user, password) checks are remembered under a keyed SHA-256 digest
// and a repeated scrape with the same credentials costs one hash, not one bcrypt.
//
// Thread-safety: Check() is safe to call concurrently.
#pragma once

#include <array>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "src/core/mutex.h"

namespace gpuscope {

class BasicAuthenticator {
 public:
  // `users`: user name -> bcrypt hash ($2y$/$2b$/$2a$).
  explicit BasicAuthenticator(std::map<std::string, std::string> users);

  // True when `authorization` (the Authorization header value) carries Basic credentials that match a
  // configured user. False when missing, malformed, unknown user or wrong password. An unknown user
  // still pays one bcrypt so that timing does not reveal which users exist.
  bool Check(std::string_view authorization);

  // Successful verifications served from the cache since construction; for tests and self-metrics.
  size_t cache_hits() const;

 private:
  using Digest = std::array<unsigned char, 32>;
  Digest CacheKey(std::string_view user, std::string_view password, std::string_view hash) const;

  std::map<std::string, std::string> users_;
  std::string dummy_hash_;  // verified against when the user is unknown
  std::array<unsigned char, 32> cache_secret_;
  mutable Mutex mu_;
  std::set<Digest> verified_ GUARDED_BY(mu_);
  size_t cache_hits_ GUARDED_BY(mu_) = 0;
};

// Verifies `password` against a crypt(3) hash with libcrypt, comparing in constant time. False on any
// failure (unsupported or malformed hash).
bool VerifyCryptHash(std::string_view password, const std::string& hash);

// Decodes standard base64 (with padding). False on malformed input.
bool DecodeBase64(std::string_view in, std::string& out);

}  // namespace gpuscope
