#include "src/sinks/prometheus/basic_auth.h"

#include <crypt.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace gpuscope {
namespace {

// Produced by `htpasswd -nbBC 10 prometheus s3cr3t-pass` (Apache htpasswd, $2y$ variant).
constexpr char kHtpasswdHash[] = "$2y$10$X7FQ0x0F4J5MWEwbpu/1c.QXY.hxcvGMYDONA0jzRUoQJYMUmJkxy";

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

std::string Basic(std::string_view user_colon_password) { return "Basic " + Base64(user_colon_password); }

// A fresh bcrypt hash at the lowest cost, made with libcrypt like an operator's tool would.
std::string MakeBcrypt(const char* password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof(setting)), nullptr);
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* hash = crypt_rn(password, setting, data.get(), sizeof(crypt_data));
  EXPECT_NE(hash, nullptr);
  return hash ? hash : "";
}

TEST(PrometheusBasicAuth, DecodesBase64AndRejectsMalformedInput) {
  std::string out;
  EXPECT_TRUE(DecodeBase64("dXNlcjpwYXNz", out));
  EXPECT_EQ(out, "user:pass");
  EXPECT_TRUE(DecodeBase64("YQ==", out));
  EXPECT_EQ(out, "a");
  EXPECT_FALSE(DecodeBase64("YQ=", out));
  EXPECT_FALSE(DecodeBase64("Y=Q=", out));
  EXPECT_FALSE(DecodeBase64("!!!!", out));
}

TEST(PrometheusBasicAuth, AcceptsTheHtpasswdHashOnlyWithTheRightPassword) {
  EXPECT_TRUE(VerifyCryptHash("s3cr3t-pass", kHtpasswdHash));
  EXPECT_FALSE(VerifyCryptHash("s3cr3t-pasS", kHtpasswdHash));
  EXPECT_FALSE(VerifyCryptHash("s3cr3t-pass", "not a hash"));
  BasicAuthenticator auth(std::map<std::string, std::string>{{"prometheus", kHtpasswdHash}});
  EXPECT_TRUE(auth.Check(Basic("prometheus:s3cr3t-pass")));
  EXPECT_FALSE(auth.Check(Basic("prometheus:wrong")));
  EXPECT_FALSE(auth.Check(Basic("nobody:s3cr3t-pass")));
}

TEST(PrometheusBasicAuth, RejectsMissingOrMalformedHeaders) {
  BasicAuthenticator auth(std::map<std::string, std::string>{{"u", MakeBcrypt("p")}});
  EXPECT_FALSE(auth.Check(""));
  EXPECT_FALSE(auth.Check("Bearer abc"));
  EXPECT_FALSE(auth.Check("Basic !!!"));
  EXPECT_FALSE(auth.Check(Basic("no-colon")));
  EXPECT_TRUE(auth.Check("basic " + Base64("u:p")));  // scheme is case-insensitive
}

TEST(PrometheusBasicAuth, CachesSuccessfulVerificationsButNotFailures) {
  BasicAuthenticator auth(
      std::map<std::string, std::string>{{"alice", MakeBcrypt("pa:ss")}});  // passwords may contain ':'
  EXPECT_TRUE(auth.Check(Basic("alice:pa:ss")));
  EXPECT_EQ(auth.cache_hits(), 0u);
  EXPECT_TRUE(auth.Check(Basic("alice:pa:ss")));
  EXPECT_TRUE(auth.Check(Basic("alice:pa:ss")));
  EXPECT_EQ(auth.cache_hits(), 2u);
  EXPECT_FALSE(auth.Check(Basic("alice:pa:sS")));
  EXPECT_FALSE(auth.Check(Basic("alice:pa:sS")));
  EXPECT_EQ(auth.cache_hits(), 2u);
}

}  // namespace
}  // namespace gpuscope
