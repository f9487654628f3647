// Integration: PodMetadataSource against the stand-in API server gpuscope-kubeapi
// (tests/tools/kubeapi/main.go: the upstream k8s.io/api types and metav1.Status errors, built by
// scripts/build-peers.sh), over real HTTP and HTTPS through the agent's libcurl client. The PodTable is
// filled with UpdateDevices() as the kubelet source fills it. Proves, from the peer's request log: one
// list per cycle filtered by this node, owners resolved (ReplicaSet -> Deployment, Job -> CronJob,
// StatefulSet, bare pods) and cached, no request on a scrape and no repeated lookup; allow-listed labels
// only; the per-pod fallback when the list is forbidden; 401 until the rotated token is read; 429's
// Retry-After honoured; the rate limit; the server down (counted, cached metadata kept) and back;
// answers cut in half (an error, the cache kept); TLS
// with the CA file; the thread and its prompt Stop().
//
// Usage: kubernetes_api_test (GPUSCOPE_KUBEAPI_BIN names the peer binary at build time).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "src/attribution/kubernetes/pod_metadata_source.h"

namespace gpuscope {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::Pair;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteAtomically(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

// Polls `done` every 20 ms for up to 30 s (a bound for a hung peer, not a timing assertion).
template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return done();
}

// One gpuscope-kubeapi process in a directory of its own; Start() again after Kill() binds the same port.
class KubeApiPeer {
 public:
  explicit KubeApiPeer(bool tls = false) : tls_(tls) {
    char pattern[] = "/tmp/gpuscope-kubeapi-test-XXXXXX";
    dir_ = mkdtemp(pattern);
    if (tls_) {
      // A CA and a server certificate for 127.0.0.1 signed by it.
      const std::string d = dir_;
      const std::string script =
          "cd " + d +
          " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=gpuscope test CA' -keyout ca.key "
          "-out ca.pem 2>/dev/null && openssl req -newkey rsa:2048 -nodes -subj '/CN=kubeapi' -keyout "
          "server.key "
          "-out server.csr 2>/dev/null && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && openssl x509 "
          "-req "
          "-in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext -out server.pem "
          "2>/dev/null";
      if (std::system(script.c_str()) != 0) ADD_FAILURE() << "openssl failed";
    }
  }
  ~KubeApiPeer() {
    Kill();
    std::filesystem::remove_all(dir_);
  }

  void SetScenario(const std::string& json) {
    const size_t served = Count("serving scenario sha256=");
    WriteAtomically(dir_ + "/scenario.json", json);
    if (pid_ > 0) {
      EXPECT_TRUE(Eventually([&] { return Count("serving scenario sha256=") > served; })) << Log();
    }
  }

  void Start() {
    const size_t listening = Count("listening on ");
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open((dir_ + "/kubeapi.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<std::string> args = {GPUSCOPE_KUBEAPI_BIN, "--listen", "127.0.0.1:" + std::to_string(port_),
                                       "--scenario", dir_ + "/scenario.json"};
      if (tls_) args.insert(args.end(), {"--cert", dir_ + "/server.pem", "--key", dir_ + "/server.key"});
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    ASSERT_TRUE(Eventually([&] { return Count("listening on ") > listening; })) << Log();
    const std::string log = Log();
    const std::regex address("listening on https?://([0-9.:]+)");
    std::string last;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), address); it != std::sregex_iterator();
         ++it) {
      last = (*it)[1];
    }
    url_ = std::string(tls_ ? "https://" : "http://") + last;
    port_ = std::stoi(last.substr(last.rfind(':') + 1));
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Every request answered so far, as (target, status).
  std::vector<std::pair<std::string, int>> Requests() const {
    std::vector<std::pair<std::string, int>> out;
    const std::string log = Log();
    const std::regex line("request GET (\\S+) status=(\\d+)");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
      out.emplace_back((*it)[1], std::stoi((*it)[2]));
    }
    return out;
  }

  std::string Log() const { return ReadAll(dir_ + "/kubeapi.log"); }
  size_t Count(const std::string& needle) const {
    const std::string log = Log();
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  }
  const std::string& url() const { return url_; }
  const std::string& dir() const { return dir_; }

 private:
  bool tls_;
  std::string dir_;
  std::string url_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// This node (gpu-node-1) runs pods of each kind of owner; another node's pod must never be listed here.
std::string Pod(const std::string& ns, const std::string& name, const std::string& node,
                const std::string& owner_kind, const std::string& owner_name,
                const std::string& labels = "{}") {
  std::string owners = owner_kind.empty() ? "[]"
                                          : R"([{"apiVersion":"v1","kind":")" + owner_kind + R"(","name":")" +
                                                owner_name + R"(","uid":"o","controller":true}])";
  return R"({"metadata":{"namespace":")" + ns + R"(","name":")" + name + R"(","uid":"uid-)" + name +
         R"(","labels":)" + labels + R"(,"ownerReferences":)" + owners + R"(},"spec":{"nodeName":")" + node +
         R"(","containers":[{"name":"c","image":"x"}]}})";
}

std::string Scenario(const std::string& extra = "", const std::string& extra_pods = "") {
  return R"({)" + extra + R"("pods":[)" +
         Pod("ml", "trainer-6f7d8-abcde", "gpu-node-1", "ReplicaSet", "trainer-6f7d8",
             R"({"team":"search","app.kubernetes.io/name":"trainer","secret":"do-not-copy"})") +
         "," +
         Pod("ml", "trainer-6f7d8-fghij", "gpu-node-1", "ReplicaSet", "trainer-6f7d8",
             R"({"team":"search"})") +
         "," + Pod("ml", "nightly-29412000-x1", "gpu-node-1", "Job", "nightly-29412000") + "," +
         Pod("ml", "once-q2", "gpu-node-1", "Job", "once") + "," +
         Pod("db", "pg-0", "gpu-node-1", "StatefulSet", "pg", R"({"team":"data"})") + "," +
         Pod("default", "debug", "gpu-node-1", "", "") + "," +
         Pod("ml", "elsewhere-0", "gpu-node-2", "StatefulSet", "elsewhere") + extra_pods + R"(],
  "replicasets":[{"metadata":{"namespace":"ml","name":"trainer-6f7d8","ownerReferences":[
    {"apiVersion":"apps/v1","kind":"Deployment","name":"trainer","uid":"d","controller":true}]}}],
  "jobs":[{"metadata":{"namespace":"ml","name":"nightly-29412000","ownerReferences":[
    {"apiVersion":"batch/v1","kind":"CronJob","name":"nightly","uid":"c","controller":true}]}},
    {"metadata":{"namespace":"ml","name":"once"}}]})";
}

// The kubelet's view: each pod holding one GPU.
void HoldDevices(PodTable& table, const std::vector<PodRef>& pods) {
  PodDevicesUpdate update;
  int i = 0;
  for (const PodRef& pod : pods) {
    update.allocations.push_back(
        {"GPU-" + std::to_string(i++), "nvidia.com/gpu", false, pod.namespace_name, pod.pod, "c"});
    update.pods.push_back(pod);
  }
  table.UpdateDevices(update);
}

const std::vector<PodRef> kHolders = {{"ml", "trainer-6f7d8-abcde"},
                                      {"ml", "nightly-29412000-x1"},
                                      {"ml", "once-q2"},
                                      {"db", "pg-0"},
                                      {"default", "debug"}};

PodMetadataSourceOptions Options(const KubeApiPeer& peer) {
  PodMetadataSourceOptions options;
  options.api_server = peer.url();
  options.node_name = "gpu-node-1";
  options.pod_labels = {"team", "app.kubernetes.io/name"};
  options.min_list_interval = milliseconds(0);
  options.max_requests_per_second = 100;
  options.backoff_initial = milliseconds(100);
  options.backoff_max = milliseconds(400);
  return options;
}

double Sample(const PodMetadataSource& source, const std::string& family,
              const std::map<std::string, std::string>& labels = {}) {
  for (const MetricFamily& f : source.MetricFamilies()) {
    if (f.name != family) continue;
    for (const auto& s : f.samples) {
      bool match = true;
      for (const auto& [name, value] : labels) {
        bool found = false;
        for (const auto& [n, v] : s.labels) found = found || (n == name && v == value);
        match = match && found;
      }
      if (match) return s.value;
    }
  }
  return -1;
}

std::pair<std::string, std::string> OwnerOf(const PodTable& table, const PodRef& pod) {
  const PodMetadata* m = table.Current()->Metadata(pod);
  return m ? std::make_pair(m->owner_kind, m->owner_name)
           : std::make_pair(std::string("?"), std::string("?"));
}

TEST(KubernetesApi, ResolvesOwnersWithOneListPerCycleAndCachesEverything) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario());
  peer.Start();
  PodTable table;
  HoldDevices(table, kHolders);
  PodMetadataSource source(Options(peer), &table);
  ASSERT_TRUE(source.QueryOnce().ok()) << peer.Log();

  EXPECT_EQ(OwnerOf(table, {"ml", "trainer-6f7d8-abcde"}),
            std::make_pair(std::string("Deployment"), std::string("trainer")));
  EXPECT_EQ(OwnerOf(table, {"ml", "nightly-29412000-x1"}),
            std::make_pair(std::string("CronJob"), std::string("nightly")));
  EXPECT_EQ(OwnerOf(table, {"ml", "once-q2"}), std::make_pair(std::string("Job"), std::string("once")));
  EXPECT_EQ(OwnerOf(table, {"db", "pg-0"}), std::make_pair(std::string("StatefulSet"), std::string("pg")));
  EXPECT_EQ(OwnerOf(table, {"default", "debug"}), std::make_pair(std::string(""), std::string("")));
  const PodMetadata* trainer = table.Current()->Metadata({"ml", "trainer-6f7d8-abcde"});
  ASSERT_NE(trainer, nullptr);
  EXPECT_EQ(trainer->uid, "uid-trainer-6f7d8-abcde");
  // Allow-listed labels only ("secret" stays out), under their pod names.
  EXPECT_THAT(trainer->labels,
              ElementsAre(Pair("app.kubernetes.io/name", "trainer"), Pair("team", "search")));

  // One list filtered by this node, one lookup per owner that has a parent to find; nothing else.
  EXPECT_THAT(peer.Requests(),
              ElementsAre(Pair("/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1", 200),
                          Pair("/apis/batch/v1/namespaces/ml/jobs/nightly-29412000", 200),
                          Pair("/apis/batch/v1/namespaces/ml/jobs/once", 200),
                          Pair("/apis/apps/v1/namespaces/ml/replicasets/trainer-6f7d8", 200)))
      << peer.Log();
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 1);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "ok"}}), 1);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "job"}, {"result", "ok"}}), 2);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_pods_cached"), 5);  // the kubelet's pods, not elsewhere-0

  // Scrapes and further cycles ask nothing: everything is cached.
  for (int i = 0; i < 5; ++i) {
    (void)source.MetricFamilies();
    ASSERT_TRUE(source.QueryOnce().ok());
  }
  EXPECT_EQ(peer.Requests().size(), 4u) << peer.Log();

  // A new pod of the same ReplicaSet: one list, no second ReplicaSet lookup.
  std::vector<PodRef> holders = kHolders;
  holders.push_back({"ml", "trainer-6f7d8-fghij"});
  HoldDevices(table, holders);
  ASSERT_TRUE(source.QueryOnce().ok());
  EXPECT_EQ(OwnerOf(table, {"ml", "trainer-6f7d8-fghij"}),
            std::make_pair(std::string("Deployment"), std::string("trainer")));
  ASSERT_EQ(peer.Requests().size(), 5u) << peer.Log();
  EXPECT_EQ(peer.Requests().back().first, "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1");

  // A pod the kubelet no longer reports loses its metadata and its cache entry in the next cycle.
  HoldDevices(table, {{"db", "pg-0"}});
  ASSERT_TRUE(source.QueryOnce().ok());
  EXPECT_EQ(table.Current()->Metadata({"ml", "once-q2"}), nullptr);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_pods_cached"), 1);
  EXPECT_EQ(peer.Requests().size(), 5u);
}

TEST(KubernetesApi, ForbiddenListFallsBackToOneGetPerPodAndUnknownPodsAreNotAskedAgain) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario(R"("forbid":["pods/list"],)"));
  peer.Start();
  PodTable table;
  HoldDevices(table, {{"db", "pg-0"}, {"ml", "gone-0"}});
  PodMetadataSource source(Options(peer), &table);
  ASSERT_TRUE(source.QueryOnce().ok()) << peer.Log();
  EXPECT_EQ(OwnerOf(table, {"db", "pg-0"}), std::make_pair(std::string("StatefulSet"), std::string("pg")));
  EXPECT_THAT(peer.Requests(), ElementsAre(Pair("/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1", 403),
                                           Pair("/api/v1/namespaces/db/pods/pg-0", 200),
                                           Pair("/api/v1/namespaces/ml/pods/gone-0", 404)));
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 1);  // forbidden and not found are answers
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "forbidden"}}),
            1);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "not_found"}}),
            1);
  // The list is not tried again before the refresh, nor the unknown pod asked again.
  ASSERT_TRUE(source.QueryOnce().ok());
  EXPECT_EQ(peer.Requests().size(), 3u) << peer.Log();
}

TEST(KubernetesApi, UnauthorizedUntilTheRotatedTokenIsRead) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario(R"("tokens":["token-2"],)"));
  peer.Start();
  const std::string token_file = peer.dir() + "/token";
  WriteAtomically(token_file, "token-1\n");
  PodTable table;
  HoldDevices(table, {{"db", "pg-0"}});
  PodMetadataSourceOptions options = Options(peer);
  options.token_file = token_file;
  PodMetadataSource source(options, &table);
  EXPECT_FALSE(source.QueryOnce().ok());
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 0);
  EXPECT_EQ(
      Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "unauthorized"}}),
      1);
  EXPECT_EQ(table.Current()->Metadata({"db", "pg-0"}), nullptr);
  // The kubelet rotates the projected token: the next cycle after the backoff reads it and is let in.
  WriteAtomically(token_file, "token-2\n");
  ASSERT_TRUE(Eventually([&] {
    (void)source.QueryOnce();
    return table.Current()->Metadata({"db", "pg-0"}) != nullptr;
  })) << peer.Log();
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 1);
  EXPECT_EQ(peer.Requests().back().second, 200);
}

TEST(KubernetesApi, ThrottledRequestsWaitForRetryAfter) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario(R"("throttle_retry_after_seconds":1,)"));
  peer.Start();
  PodTable table;
  HoldDevices(table, {{"db", "pg-0"}});
  PodMetadataSource source(Options(peer), &table);  // its own backoff would be 100 ms
  const auto throttled_at = std::chrono::steady_clock::now();
  EXPECT_FALSE(source.QueryOnce().ok());
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "throttled"}}),
            1);
  peer.SetScenario(Scenario());
  ASSERT_TRUE(Eventually([&] {
    (void)source.QueryOnce();
    return table.Current()->Metadata({"db", "pg-0"}) != nullptr;
  })) << peer.Log();
  // The request after the 429 came no sooner than its Retry-After, and there were only these two.
  EXPECT_GE(std::chrono::steady_clock::now() - throttled_at, std::chrono::seconds(1));
  EXPECT_THAT(peer.Requests(),
              ElementsAre(Pair("/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1", 429),
                          Pair("/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1", 200)));
}

TEST(KubernetesApi, AtMostTheConfiguredRequestsPerSecond) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario(R"("forbid":["pods/list"],)"));
  peer.Start();
  PodTable table;
  std::vector<PodRef> many;
  for (int i = 0; i < 20; ++i) many.push_back({"ml", "unknown-" + std::to_string(i)});
  HoldDevices(table, many);
  PodMetadataSourceOptions options = Options(peer);
  options.max_requests_per_second = 2;
  PodMetadataSource source(options, &table);
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) (void)source.QueryOnce();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  // A bucket of 2 plus 2 a second of refill: an upper bound whatever the machine's speed.
  EXPECT_LE(static_cast<double>(peer.Requests().size()), 2 + 2 * seconds + 1e-9) << peer.Log();
  EXPECT_GE(peer.Requests().size(), 2u);
}

TEST(KubernetesApi, ServerDownKeepsTheCacheCountsAndRecovers) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario());
  peer.Start();
  PodTable table;
  HoldDevices(table, {{"db", "pg-0"}});
  PodMetadataSource source(Options(peer), &table);
  ASSERT_TRUE(source.QueryOnce().ok());
  peer.Kill();
  // A new pod while the server is down: the request fails, counted; what was known stays published.
  HoldDevices(table, {{"db", "pg-0"}, {"default", "debug"}});
  EXPECT_FALSE(source.QueryOnce().ok());
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 0);
  EXPECT_EQ(
      Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "unreachable"}}), 1);
  EXPECT_EQ(OwnerOf(table, {"db", "pg-0"}), std::make_pair(std::string("StatefulSet"), std::string("pg")));
  EXPECT_EQ(table.Current()->Metadata({"default", "debug"}), nullptr);
  // Back on the same port: after the backoff the new pod gets its metadata.
  peer.Start();
  ASSERT_TRUE(Eventually([&] {
    (void)source.QueryOnce();
    return table.Current()->Metadata({"default", "debug"}) != nullptr;
  })) << peer.Log();
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 1);
}

TEST(KubernetesApi, MalformedAnswersAreCountedAsErrorsAndKeepTheCache) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario());
  peer.Start();
  PodTable table;
  HoldDevices(table, {{"db", "pg-0"}});
  PodMetadataSource source(Options(peer), &table);
  ASSERT_TRUE(source.QueryOnce().ok());
  // Every answer cut in half: the list for a new pod fails to parse; nothing known is lost.
  peer.SetScenario(Scenario(R"("malformed_bodies":true,)"));
  HoldDevices(table, {{"db", "pg-0"}, {"default", "debug"}});
  const Status failed = source.QueryOnce();
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), ::testing::HasSubstr("malformed answer: pod list: not JSON"));
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 0);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "error"}}), 1);
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_requests_total", {{"resource", "pod"}, {"result", "ok"}}), 1);
  EXPECT_EQ(OwnerOf(table, {"db", "pg-0"}), std::make_pair(std::string("StatefulSet"), std::string("pg")));
  EXPECT_EQ(table.Current()->Metadata({"default", "debug"}), nullptr);
  peer.SetScenario(Scenario());
  ASSERT_TRUE(Eventually([&] {
    (void)source.QueryOnce();
    return table.Current()->Metadata({"default", "debug"}) != nullptr;
  })) << peer.Log();
  EXPECT_EQ(Sample(source, "gpuscope_k8s_api_up"), 1);
}

TEST(KubernetesApi, HttpsWithTheClusterCaAndNotWithoutIt) {
  KubeApiPeer peer(/*tls=*/true);
  peer.SetScenario(Scenario());
  peer.Start();
  PodTable table;
  HoldDevices(table, {{"db", "pg-0"}});
  PodMetadataSourceOptions options = Options(peer);
  {
    PodMetadataSource untrusting(options, &table);  // the system trust store does not know our CA
    EXPECT_FALSE(untrusting.QueryOnce().ok());
    EXPECT_EQ(Sample(untrusting, "gpuscope_k8s_api_requests_total",
                     {{"resource", "pod"}, {"result", "unreachable"}}),
              1);
  }
  options.ca_file = peer.dir() + "/ca.pem";
  PodMetadataSource source(options, &table);
  ASSERT_TRUE(source.QueryOnce().ok()) << peer.Log();
  EXPECT_EQ(OwnerOf(table, {"db", "pg-0"}), std::make_pair(std::string("StatefulSet"), std::string("pg")));
}

TEST(KubernetesApi, TheThreadFillsTheTableAndStopsPromptly) {
  KubeApiPeer peer;
  peer.SetScenario(Scenario());
  peer.Start();
  PodTable table;
  HoldDevices(table, kHolders);
  PodMetadataSourceOptions options = Options(peer);
  options.poll_interval = milliseconds(50);
  PodMetadataSource source(options, &table);
  source.Start();
  EXPECT_TRUE(Eventually([&] { return table.Current()->metadata.size() == kHolders.size(); })) << peer.Log();
  source.Stop();
  const size_t requests = peer.Requests().size();
  EXPECT_EQ(requests, 4u);  // the thread's cycles after the first asked nothing
}

}  // namespace
}  // namespace gpuscope
