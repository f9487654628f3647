#include "src/platform/http_client.h"

#include <unistd.h>

// Calls go through function pointers (CurlLibrary), which libcurl's type-checking macros would rewrite.
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>

#include "src/core/version.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

// How long one curl_multi_poll() may sleep when libcurl has no timer of its own pending; Interrupt()
// and the transfer's own timeout end it earlier.
constexpr int kMaxPollMillis = 1000;

char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string Lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), ToLower);
  return out;
}

// RFC 9110 token characters (header names).
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || text::IsDigit(c)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar); }

// Headers libcurl writes itself from the request; a caller's copy would contradict them.
bool IsClientManagedHeader(std::string_view lower_name) {
  for (std::string_view managed : {"content-length", "transfer-encoding", "host", "connection", "expect"}) {
    if (lower_name == managed) return true;
  }
  return false;
}

// libcurl, loaded on first use with dlopen() rather than linked: Debian's libcurl brings about 25
// libraries (GnuTLS, Kerberos, LDAP, SSH, RTMP, ...) that cost an agent about 4 MiB of RSS, which an
// agent without push sinks need not pay. Every libcurl function the client calls is listed here once.
// clang-format off
#define GPUSCOPE_CURL_FUNCTIONS(X) \
  X(curl_global_init) \
  X(curl_easy_init) \
  X(curl_easy_cleanup) \
  X(curl_easy_setopt) \
  X(curl_easy_getinfo) \
  X(curl_easy_strerror) \
  X(curl_multi_init) \
  X(curl_multi_cleanup) \
  X(curl_multi_add_handle) \
  X(curl_multi_remove_handle) \
  X(curl_multi_perform) \
  X(curl_multi_poll) \
  X(curl_multi_wakeup) \
  X(curl_multi_info_read) \
  X(curl_multi_strerror) \
  X(curl_slist_append) \
  X(curl_slist_free_all) \
  X(curl_url) \
  X(curl_url_set) \
  X(curl_url_get) \
  X(curl_url_cleanup) \
  X(curl_url_strerror) \
  X(curl_free)
// clang-format on

// The soname the -dev package links against (libcurl4-openssl-dev: the OpenSSL flavour, package libcurl4).
constexpr const char* kLibcurl = "libcurl.so.4";

struct CurlLibrary {
#define GPUSCOPE_CURL_POINTER(name) decltype(&::name) name = nullptr;  // NOLINT(bugprone-macro-parentheses)
  GPUSCOPE_CURL_FUNCTIONS(GPUSCOPE_CURL_POINTER)
#undef GPUSCOPE_CURL_POINTER
  std::string error;  // why it could not be loaded; empty when loaded
};

// Loads libcurl and runs curl_global_init once per process (not to be raced with handle creation);
// never unloads nor cleans up: senders are created and destroyed during the whole life of the agent.
const CurlLibrary& LoadLibcurl() {
  static CurlLibrary library;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      library.error = std::string("cannot load ") + kLibcurl + " (package libcurl4): " + dlerror();
      return;
    }
#define GPUSCOPE_CURL_RESOLVE(name)                                                                \
  library.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                        \
  if (library.name == nullptr) {                                                                   \
    library.error = std::string(kLibcurl) + " has no " #name " (libcurl 7.80 or later is needed)"; \
    return;                                                                                        \
  }
    GPUSCOPE_CURL_FUNCTIONS(GPUSCOPE_CURL_RESOLVE)
#undef GPUSCOPE_CURL_RESOLVE
    if (library.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) library.error = "curl_global_init failed";
  });
  return library;
}

// The loaded library; only after LoadLibcurl() succeeded (HttpClient::Create checks).
const CurlLibrary& Lib() { return LoadLibcurl(); }

// The URL's problem, or "" when it is one a push sink can send to.
std::string CheckUrl(std::string_view url) {
  CURLU* handle = Lib().curl_url();
  if (handle == nullptr) return "out of memory";
  std::unique_ptr<CURLU, decltype(Lib().curl_url_cleanup)> guard(handle, Lib().curl_url_cleanup);
  const std::string text(url);
  if (text.find('\0') != std::string::npos) return "URL contains NUL";
  const CURLUcode rc = Lib().curl_url_set(handle, CURLUPART_URL, text.c_str(), 0);
  if (rc != CURLUE_OK) return Lib().curl_url_strerror(rc);
  auto part = [&](CURLUPart which) {
    char* value = nullptr;
    std::string out;
    if (Lib().curl_url_get(handle, which, &value, 0) == CURLUE_OK && value != nullptr) out = value;
    Lib().curl_free(value);
    return out;
  };
  const std::string scheme = part(CURLUPART_SCHEME);
  if (scheme != "http" && scheme != "https") return "scheme is not http or https";
  if (part(CURLUPART_HOST).empty()) return "no host";
  if (part(CURLUPART_PORT) == "0") return "port 0";
  if (!part(CURLUPART_USER).empty() || !part(CURLUPART_PASSWORD).empty()) {
    return "user:password in the URL is not supported (it would end up in logs)";
  }
  return "";
}

// The CA file's problem, or "" when it is a readable PEM file with at least one certificate. libcurl
// reads it only at the first TLS connection; checking here turns a typo into a start-up error.
std::string CheckCaFile(const std::string& path) {
  const std::optional<std::string> contents = ReadWholeFile(path);
  if (!contents) return "cannot read CA file " + path;
  if (contents->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return "CA file " + path + " has no PEM certificate";
  }
  return "";
}

struct SlistDeleter {
  void operator()(curl_slist* list) const { Lib().curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// Appends one "Name: value" line; false when libcurl is out of memory.
bool Append(Slist& list, const std::string& line) {
  curl_slist* appended = Lib().curl_slist_append(list.get(), line.c_str());
  if (appended == nullptr) return false;
  (void)list.release();  // curl_slist_append linked the old list into `appended`
  list.reset(appended);
  return true;
}

}  // namespace

struct HttpClient::Transfer {
  const HttpClientOptions* options;
  HttpClientResponse* response;
  size_t head_bytes = 0;
  bool head_complete = false;  // the empty line that ends the (last) response head was seen
  std::string head_error;      // set when the head broke a limit: the transfer is aborted
};

std::string_view HttpClientResponse::Header(std::string_view name) const {
  const std::string lower = Lowered(name);
  for (const auto& [key, value] : headers) {
    if (key == lower) return value;
  }
  return {};
}

HttpClient::HttpClient(HttpClientOptions options) : options_(std::move(options)) {}

HttpClient::~HttpClient() {
  if (multi_ != nullptr && easy_ != nullptr) Lib().curl_multi_remove_handle(multi_, easy_);
  if (easy_ != nullptr) Lib().curl_easy_cleanup(easy_);
  if (multi_ != nullptr) Lib().curl_multi_cleanup(multi_);
}

Status HttpClient::Create(std::string_view url, HttpClientOptions options,
                          std::unique_ptr<HttpClient>* client) {
  if (const CurlLibrary& library = LoadLibcurl(); !library.error.empty()) {
    return Status::Internal(library.error);
  }
  if (const std::string problem = CheckUrl(url); !problem.empty()) {
    return Status::InvalidArgument("bad URL \"" + std::string(url) + "\": " + problem);
  }
  if (!options.ca_file.empty()) {
    if (const std::string problem = CheckCaFile(options.ca_file); !problem.empty()) {
      return Status::InvalidArgument(problem);
    }
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status::InvalidArgument("a client certificate needs both a certificate file and a key file");
  }
  for (const std::string* file : {&options.cert_file, &options.key_file}) {
    if (!file->empty() && access(file->c_str(), R_OK) != 0) {
      return Status::InvalidArgument("cannot read " + *file);
    }
  }
  std::unique_ptr<HttpClient> result(new HttpClient(std::move(options)));
  result->easy_ = Lib().curl_easy_init();
  result->multi_ = Lib().curl_multi_init();
  if (result->easy_ == nullptr || result->multi_ == nullptr) return Status::Internal("libcurl setup failed");

  CURL* easy = result->easy_;
  const std::string url_text(url);
  result->url_ = url_text;
  result->tls_ = url_text.size() >= 6 && Lowered(url_text.substr(0, 6)) == "https:";
  const std::string user_agent = "gpuscope-agent/" + std::string(Version());
  const long timeout_ms = static_cast<long>(std::max<int64_t>(1, result->options_.timeout.count()));
  bool ok = Lib().curl_easy_setopt(easy, CURLOPT_URL, url_text.c_str()) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_USERAGENT, user_agent.c_str()) == CURLE_OK;
  // HTTP/2 by ALPN when TLS is used, HTTP/1.1 on plain http (libcurl's default, said out loud).
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS)) ==
                 CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms) == CURLE_OK;
  // No signals: the agent is multi-threaded (SIGPIPE is ignored process-wide by main).
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
  // A request given up while its host name is still resolving (Interrupt, timeout) leaves libcurl's
  // resolver thread to finish on its own instead of joining it, which would block Stop() for as long as
  // getaddrinfo() hangs on an unreachable DNS server. The thread frees its own data when it returns.
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_QUICK_EXIT, 1L) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2)) ==
                 CURLE_OK;
  if (!result->options_.ca_file.empty()) {
    ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_CAINFO, result->options_.ca_file.c_str()) == CURLE_OK;
  }
  if (!result->options_.username.empty()) {
    ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC)) == CURLE_OK;
    ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_USERNAME, result->options_.username.c_str()) == CURLE_OK;
    ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_PASSWORD, result->options_.password.c_str()) == CURLE_OK;
  }
  if (!result->options_.cert_file.empty()) {
    ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_SSLCERT, result->options_.cert_file.c_str()) == CURLE_OK;
    ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_SSLKEY, result->options_.key_file.c_str()) == CURLE_OK;
  }
  // No redirects: a push endpoint that moved is a configuration error, retried and counted like 5xx.
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &HttpClient::OnHeader) == CURLE_OK;
  ok = ok && Lib().curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &HttpClient::OnBody) == CURLE_OK;
  if (!ok) return Status::Internal("libcurl rejected an option (too old a libcurl?)");
  *client = std::move(result);
  return Status::Ok();
}

void HttpClient::Interrupt() {
  interrupted_.store(true);
  Lib().curl_multi_wakeup(multi_);
}

size_t HttpClient::OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  HttpClientResponse& response = *transfer->response;
  if (line.substr(0, 5) == "HTTP/") {
    // A status line starts a response: an interim 1xx one before the final one, or a proxy's answer
    // to CONNECT before the server's. Only the last counts.
    response.headers.clear();
    transfer->head_bytes = 0;
    transfer->head_complete = false;
  }
  if (line == "\r\n" || line == "\n") transfer->head_complete = true;
  transfer->head_bytes += n;
  if (transfer->head_bytes > transfer->options->max_response_head_bytes) {
    transfer->head_error =
        "response head over " + std::to_string(transfer->options->max_response_head_bytes) + " bytes";
    return 0;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || line.substr(0, 5) == "HTTP/") return n;
  if (response.headers.size() >= transfer->options->max_response_headers) {
    transfer->head_error =
        "more than " + std::to_string(transfer->options->max_response_headers) + " response headers";
    return 0;
  }
  response.headers.emplace_back(Lowered(text::Trim(line.substr(0, colon))),
                                std::string(text::Trim(line.substr(colon + 1))));
  return n;
}

size_t HttpClient::OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t n = size * count;
  HttpClientResponse& response = *transfer->response;
  const size_t room = transfer->options->max_response_body_bytes - response.body.size();
  if (n > room) {
    // Cut off: keep what fits and abort the transfer (libcurl closes the connection).
    response.body.append(data, room);
    response.body_truncated = true;
    return 0;
  }
  response.body.append(data, n);
  return n;
}

namespace {

// The request's header lines for libcurl, after checking each (see Post()).
Status BuildHeaderList(const std::vector<std::pair<std::string, std::string>>& headers, Slist* list) {
  bool has_content_type = false;
  bool listed = true;
  for (const auto& [name, value] : headers) {
    const std::string lower = Lowered(name);
    if (!IsToken(name)) return Status::InvalidArgument("bad header name \"" + name + "\"");
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Status::InvalidArgument("header " + name + " has CR, LF or NUL in its value");
    }
    if (IsClientManagedHeader(lower))
      return Status::InvalidArgument("header " + name + " is set by the client");
    has_content_type = has_content_type || lower == "content-type";
    // "Name;" is libcurl's spelling of a header with an empty value ("Name:" would remove it).
    std::string line = name;
    line += value.empty() ? ";" : ": ";
    line += value;
    listed = listed && Append(*list, line);
  }
  // libcurl's default content type for a POST (a form) is not what was sent. Its "Expect: 100-continue"
  // on bodies over 1 MiB stays: a receiver refuses an oversized batch (413) before the body is sent,
  // rather than resetting the connection under it, which would read as a failure to retry forever.
  if (!has_content_type) listed = listed && Append(*list, "Content-Type:");
  if (!listed) return Status::Internal("out of memory building request headers");
  return Status::Ok();
}

// "HTTP/1.1" for CURLINFO_HTTP_VERSION's value; "" when unknown.
std::string ProtocolName(long version) {
  switch (version) {
    case CURL_HTTP_VERSION_1_0:
      return "HTTP/1.0";
    case CURL_HTTP_VERSION_1_1:
      return "HTTP/1.1";
    case CURL_HTTP_VERSION_2_0:
      return "HTTP/2";
    case CURL_HTTP_VERSION_3:
      return "HTTP/3";
    default:
      return "";
  }
}

}  // namespace

int HttpClient::Perform(char* error_buffer, bool* interrupted) {
  *interrupted = false;
  if (Lib().curl_multi_add_handle(multi_, easy_) != CURLM_OK) {
    snprintf(error_buffer, CURL_ERROR_SIZE, "curl_multi_add_handle failed");
    return CURLE_FAILED_INIT;
  }
  CURLcode result = CURLE_FAILED_INIT;
  while (true) {
    int running = 0;
    CURLMcode multi_result = Lib().curl_multi_perform(multi_, &running);
    bool done = false;
    int left = 0;
    while (CURLMsg* message = Lib().curl_multi_info_read(multi_, &left)) {
      if (message->msg == CURLMSG_DONE && message->easy_handle == easy_) {
        result = message->data.result;
        done = true;
      }
    }
    if (done) break;
    if (interrupted_.load()) {
      *interrupted = true;
      break;
    }
    // Sleeps until a socket is ready, libcurl's next timeout, or curl_multi_wakeup() from Interrupt().
    if (multi_result == CURLM_OK)
      multi_result = Lib().curl_multi_poll(multi_, nullptr, 0, kMaxPollMillis, nullptr);
    if (multi_result != CURLM_OK) {
      snprintf(error_buffer, CURL_ERROR_SIZE, "%s", Lib().curl_multi_strerror(multi_result));
      break;
    }
  }
  long new_connections = 0;
  Lib().curl_easy_getinfo(easy_, CURLINFO_NUM_CONNECTS, &new_connections);
  connections_opened_.fetch_add(static_cast<uint64_t>(std::max(0L, new_connections)),
                                std::memory_order_relaxed);
  // Removing the handle mid-transfer (interrupted) closes its connection; after a complete transfer
  // the connection stays in the multi handle's cache for the next request.
  Lib().curl_multi_remove_handle(multi_, easy_);
  return static_cast<int>(result);
}

Status HttpClient::Post(std::string_view body,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        HttpClientResponse* response) {
  return Send(true, url_, body, headers, response);
}

Status HttpClient::Get(std::string_view target,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       HttpClientResponse* response) {
  *response = HttpClientResponse();
  if (target.empty() || target.front() != '/' ||
      target.find_first_of(std::string_view(" \r\n\0", 4)) != std::string_view::npos) {
    return Status::InvalidArgument("bad request target \"" + std::string(target) + "\"");
  }
  // The URL's own path is a prefix (an API server behind a path-routing proxy); "scheme://host" has none.
  std::string url = url_;
  const size_t authority = url.find("://");
  const size_t path = url.find('/', authority == std::string::npos ? 0 : authority + 3);
  if (path != std::string::npos && url.back() == '/') url.pop_back();
  url += target;
  return Send(false, url, {}, headers, response);
}

Status HttpClient::Send(bool post, const std::string& url, std::string_view body,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        HttpClientResponse* response) {
  *response = HttpClientResponse();
  if (interrupted_.load()) return Status::Unavailable("interrupted");
  Slist list;
  Status listed = BuildHeaderList(headers, &list);
  if (!listed.ok()) return listed;

  Transfer transfer{&options_, response, 0, false, {}};
  char error_buffer[CURL_ERROR_SIZE] = {};
  if (Lib().curl_easy_setopt(easy_, CURLOPT_URL, url.c_str()) != CURLE_OK) {
    return Status::InvalidArgument("libcurl refused the URL \"" + url + "\"");
  }
  if (post) {
    // Never a null pointer: with POSTFIELDS null, libcurl would read the body from its read callback.
    Lib().curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
    Lib().curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else {
    Lib().curl_easy_setopt(easy_, CURLOPT_HTTPGET, 1L);  // also drops what a POST set
  }
  Lib().curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, list.get());
  Lib().curl_easy_setopt(easy_, CURLOPT_HEADERDATA, &transfer);
  Lib().curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &transfer);
  Lib().curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error_buffer);
  bool interrupted = false;
  const auto result = static_cast<CURLcode>(Perform(error_buffer, &interrupted));
  long status = 0;
  Lib().curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
  long version = 0;
  Lib().curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
  // Nothing of this request may outlive it in the handle.
  Lib().curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, nullptr);
  Lib().curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, nullptr);
  Lib().curl_easy_setopt(easy_, CURLOPT_HEADERDATA, nullptr);
  Lib().curl_easy_setopt(easy_, CURLOPT_WRITEDATA, nullptr);

  if (interrupted) return Status::Unavailable("interrupted");
  const bool cut_off = result == CURLE_WRITE_ERROR && response->body_truncated;
  if (result != CURLE_OK && !cut_off) {
    std::string message = Lib().curl_easy_strerror(result);
    if (!transfer.head_error.empty()) {
      message = transfer.head_error;
    } else if (error_buffer[0] != '\0') {
      message += ": ";
      message += error_buffer;
    }
    if (result == CURLE_OPERATION_TIMEDOUT) return Status::DeadlineExceeded(message);
    return Status::Unavailable(message);
  }
  // libcurl is lenient where a push client must not be: a head cut off by the server closing the
  // connection, or a status line claiming HTTP/2 on a connection that never negotiated it (plain
  // http:// is always HTTP/1.x here), would otherwise read as a delivered batch.
  if (!transfer.head_complete) return Status::Unavailable("response head cut off");
  if (!tls_ && version != CURL_HTTP_VERSION_1_0 && version != CURL_HTTP_VERSION_1_1) {
    return Status::Unavailable("answer to plain http is not HTTP/1.x");
  }
  response->status = static_cast<int>(status);
  response->protocol = ProtocolName(version);
  return Status::Ok();
}

}  // namespace gpuscope
