// KubeletPodSource against an in-process gRPC server of the kubelet's PodResourcesLister service (the
// generated C++ service on a unix socket in a temp dir): what it publishes, when it asks for the
// allocatable devices, and each failure (socket missing, kubelet gone) counted, with the last view kept
// for keep_view_for and cleared after it. The real kubelet stand-in (grpc-go) is the integration test's.
#include "src/attribution/kubernetes/kubelet_pod_source.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "podresources/v1/api.grpc.pb.h"

// Under ThreadSanitizer (scripts/test.sh's clang build): Debian's gRPC and Abseil are not instrumented, so
// their own synchronisation is invisible to it and it reports their threads racing in the memmove and
// epoll interceptors they call (absl's deadlock graph, gRPC's event engine). Those reports are about code
// outside this project; the suppressions name gRPC's libraries and their dependencies (Debian 12's), one
// each, so a race in our code is still reported.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libabsl_bad_optional_access.so\n"
         "called_from_lib:libabsl_bad_variant_access.so\n"
         "called_from_lib:libabsl_base.so\n"
         "called_from_lib:libabsl_city.so\n"
         "called_from_lib:libabsl_civil_time.so\n"
         "called_from_lib:libabsl_cord.so\n"
         "called_from_lib:libabsl_cord_internal.so\n"
         "called_from_lib:libabsl_cordz_functions.so\n"
         "called_from_lib:libabsl_cordz_handle.so\n"
         "called_from_lib:libabsl_cordz_info.so\n"
         "called_from_lib:libabsl_debugging_internal.so\n"
         "called_from_lib:libabsl_demangle_internal.so\n"
         "called_from_lib:libabsl_exponential_biased.so\n"
         "called_from_lib:libabsl_graphcycles_internal.so\n"
         "called_from_lib:libabsl_hash.so\n"
         "called_from_lib:libabsl_hashtablez_sampler.so\n"
         "called_from_lib:libabsl_int128.so\n"
         "called_from_lib:libabsl_log_severity.so\n"
         "called_from_lib:libabsl_low_level_hash.so\n"
         "called_from_lib:libabsl_malloc_internal.so\n"
         "called_from_lib:libabsl_random_distributions.so\n"
         "called_from_lib:libabsl_random_internal_platform.so\n"
         "called_from_lib:libabsl_random_internal_pool_urbg.so\n"
         "called_from_lib:libabsl_random_internal_randen.so\n"
         "called_from_lib:libabsl_random_internal_randen_hwaes.so\n"
         "called_from_lib:libabsl_random_internal_randen_hwaes_impl.so\n"
         "called_from_lib:libabsl_random_internal_randen_slow.so\n"
         "called_from_lib:libabsl_random_internal_seed_material.so\n"
         "called_from_lib:libabsl_random_seed_gen_exception.so\n"
         "called_from_lib:libabsl_random_seed_sequences.so\n"
         "called_from_lib:libabsl_raw_hash_set.so\n"
         "called_from_lib:libabsl_raw_logging_internal.so\n"
         "called_from_lib:libabsl_spinlock_wait.so\n"
         "called_from_lib:libabsl_stacktrace.so\n"
         "called_from_lib:libabsl_status.so\n"
         "called_from_lib:libabsl_statusor.so\n"
         "called_from_lib:libabsl_str_format_internal.so\n"
         "called_from_lib:libabsl_strerror.so\n"
         "called_from_lib:libabsl_strings.so\n"
         "called_from_lib:libabsl_strings_internal.so\n"
         "called_from_lib:libabsl_symbolize.so\n"
         "called_from_lib:libabsl_synchronization.so\n"
         "called_from_lib:libabsl_throw_delegate.so\n"
         "called_from_lib:libabsl_time.so\n"
         "called_from_lib:libabsl_time_zone.so\n"
         "called_from_lib:libaddress_sorting.so\n"
         "called_from_lib:libcares.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgrpc.so\n"
         "called_from_lib:libprotobuf.so\n"
         "called_from_lib:libre2.so\n"
         "called_from_lib:libupb.so\n";
}

namespace gpuscope {
namespace {

class FakeKubelet final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    MutexLock lock(&mu_);
    ++entered_;
    // A hung kubelet: no answer until the client gives up (its deadline) or the test unblocks it.
    while (hang_ && !context->IsCancelled()) released_.WaitFor(&mu_, std::chrono::milliseconds(10));
    ++lists_;
    *response = list_;
    return grpc::Status::OK;
  }
  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    MutexLock lock(&mu_);
    ++allocatable_calls_;
    // A kubelet before 1.23 (its feature gate off): no such method, as grpc-go answers it.
    if (no_allocatable_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method");
    *response = allocatable_;
    return grpc::Status::OK;
  }
  void Hold(const std::string& ns, const std::string& pod, const std::string& id) {
    MutexLock lock(&mu_);
    v1::PodResources* p = list_.add_pod_resources();
    p->set_namespace_(ns);
    p->set_name(pod);
    v1::ContainerDevices* d = p->add_containers()->add_devices();
    d->set_resource_name("nvidia.com/gpu");
    d->add_device_ids(id);
    v1::ContainerDevices* a = allocatable_.add_devices();
    a->set_resource_name("nvidia.com/gpu");
    a->add_device_ids(id);
  }
  int allocatable_calls() {
    MutexLock lock(&mu_);
    return allocatable_calls_;
  }
  void WithoutAllocatable() {
    MutexLock lock(&mu_);
    no_allocatable_ = true;
  }
  int entered() {
    MutexLock lock(&mu_);
    return entered_;
  }
  void Hang(bool hang) {
    MutexLock lock(&mu_);
    hang_ = hang;
    released_.NotifyAll();
  }

 private:
  Mutex mu_;
  v1::ListPodResourcesResponse list_ GUARDED_BY(mu_);
  v1::AllocatableResourcesResponse allocatable_ GUARDED_BY(mu_);
  int lists_ GUARDED_BY(mu_) = 0;
  int allocatable_calls_ GUARDED_BY(mu_) = 0;
  bool hang_ GUARDED_BY(mu_) = false;
  bool no_allocatable_ GUARDED_BY(mu_) = false;
  int entered_ GUARDED_BY(mu_) = 0;  // List calls received, answered or not
  CondVar released_;
};

double Value(const std::vector<MetricFamily>& families, std::string_view name, const Labels& labels = {}) {
  for (const MetricFamily& f : families) {
    if (f.name != name) continue;
    for (const Sample& s : f.samples) {
      if (s.labels == labels) return s.value;
    }
  }
  return -1;
}

double Calls(const KubeletPodSource& source, const char* method, const char* result) {
  return Value(source.MetricFamilies(), "gpuscope_k8s_pod_resources_calls_total",
               {{"method", method}, {"result", result}});
}

class KubeletPodSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuscope-kubelet-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    socket_ = dir_ + "/kubelet.sock";
  }
  void TearDown() override {
    StopKubelet();
    std::filesystem::remove_all(dir_);
  }
  void StartKubelet() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(&kubelet_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void StopKubelet() {
    if (server_) server_->Shutdown();
    server_.reset();
  }
  KubeletPodSourceOptions Options(std::chrono::milliseconds keep_view_for = std::chrono::hours(1)) {
    KubeletPodSourceOptions options;
    options.socket_path = socket_;
    options.keep_view_for = keep_view_for;
    return options;
  }

  std::string dir_;
  std::string socket_;
  FakeKubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
  PodTable table_;
};

TEST_F(KubeletPodSourceTest, AMissingSocketIsCountedAndPublishesNothing) {
  KubeletPodSource source(Options(), &table_);
  EXPECT_FALSE(source.QueryOnce().ok());
  EXPECT_EQ(Calls(source, "List", "socket_missing"), 1);
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_k8s_pod_resources_up"), 0);
  EXPECT_FALSE(table_.Current()->devices_known);
}

TEST_F(KubeletPodSourceTest, ListIsPublishedAndAllocatableAskedOncePerConnection) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1::0");
  StartKubelet();
  KubeletPodSource source(Options(), &table_);
  ASSERT_TRUE(source.QueryOnce().ok());
  ASSERT_TRUE(source.QueryOnce().ok());
  auto view = table_.Current();
  ASSERT_EQ(view->allocations.size(), 1u);
  EXPECT_EQ(view->allocations[0].device_id, "GPU-1");
  EXPECT_TRUE(view->allocations[0].replica);
  ASSERT_EQ(view->allocatable.size(), 1u);
  EXPECT_EQ(Calls(source, "List", "ok"), 2);
  EXPECT_EQ(Calls(source, "GetAllocatableResources", "ok"), 1) << "once on the connection";
  EXPECT_EQ(kubelet_.allocatable_calls(), 1);
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_k8s_pod_resources_up"), 1);
}

TEST_F(KubeletPodSourceTest, TheLastViewStaysWhileTheKubeletRestartsAndAllocatableIsAskedAgain) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1");
  StartKubelet();
  KubeletPodSource source(Options(), &table_);
  ASSERT_TRUE(source.QueryOnce().ok());
  StopKubelet();
  EXPECT_FALSE(source.QueryOnce().ok());
  EXPECT_EQ(Calls(source, "List", "socket_missing") + Calls(source, "List", "unavailable"), 1);
  EXPECT_EQ(table_.Current()->allocations.size(), 1u) << "kept within keep_view_for";
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_k8s_pod_resources_up"), 0);
  StartKubelet();
  ASSERT_TRUE(source.QueryOnce().ok());
  EXPECT_EQ(kubelet_.allocatable_calls(), 2) << "a new connection asks for the allocatable devices again";
  EXPECT_EQ(Value(source.MetricFamilies(), "gpuscope_k8s_pod_resources_up"), 1);
}

TEST_F(KubeletPodSourceTest, AKubeletGoneLongerThanKeepViewForClearsThePods) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1");
  StartKubelet();
  KubeletPodSource source(Options(std::chrono::milliseconds(0)), &table_);
  ASSERT_TRUE(source.QueryOnce().ok());
  StopKubelet();
  EXPECT_FALSE(source.QueryOnce().ok());
  auto view = table_.Current();
  EXPECT_TRUE(view->allocations.empty()) << "a pod that ended meanwhile must not stay attributed";
  EXPECT_TRUE(view->pods.empty());
}

TEST_F(KubeletPodSourceTest, AStaleSocketWithNoServerIsUnavailable) {
  StartKubelet();
  StopKubelet();
  // A socket file nobody listens on, as a kubelet killed with -9 leaves it.
  if (!std::filesystem::exists(socket_)) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", socket_.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    close(fd);
  }
  KubeletPodSource source(Options(), &table_);
  EXPECT_FALSE(source.QueryOnce().ok());
  EXPECT_EQ(Calls(source, "List", "unavailable"), 1);
}

TEST_F(KubeletPodSourceTest, AllocatableIsAskedAgainOnceTheRefreshPeriodHasPassed) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1");
  StartKubelet();
  KubeletPodSourceOptions options = Options();
  options.allocatable_refresh = std::chrono::milliseconds(0);
  KubeletPodSource source(options, &table_);
  ASSERT_TRUE(source.QueryOnce().ok());
  ASSERT_TRUE(source.QueryOnce().ok());
  EXPECT_EQ(kubelet_.allocatable_calls(), 2) << "a device plugin may change the node's devices any time";
}

TEST_F(KubeletPodSourceTest, AKubeletWithoutGetAllocatableResourcesStillAttributesPods) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1");
  kubelet_.WithoutAllocatable();
  StartKubelet();
  KubeletPodSource source(Options(), &table_);
  ASSERT_TRUE(source.QueryOnce().ok());
  ASSERT_TRUE(source.QueryOnce().ok());
  EXPECT_EQ(table_.Current()->allocations.size(), 1u);
  EXPECT_TRUE(table_.Current()->allocatable.empty());
  EXPECT_EQ(Calls(source, "GetAllocatableResources", "unimplemented"), 1)
      << "not asked again every cycle, only after allocatable_refresh";
}

TEST_F(KubeletPodSourceTest, AHungKubeletIsADeadlineExceededAndTheViewStays) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1");
  StartKubelet();
  KubeletPodSourceOptions options = Options();
  options.call_deadline = std::chrono::milliseconds(200);
  KubeletPodSource source(options, &table_);
  ASSERT_TRUE(source.QueryOnce().ok());
  kubelet_.Hang(true);
  EXPECT_FALSE(source.QueryOnce().ok());
  kubelet_.Hang(false);
  EXPECT_EQ(Calls(source, "List", "deadline_exceeded"), 1);
  EXPECT_EQ(table_.Current()->allocations.size(), 1u);
  ASSERT_TRUE(source.QueryOnce().ok()) << "answering again";
}

TEST_F(KubeletPodSourceTest, StopCancelsACallInFlightWithoutCountingAFailure) {
  StartKubelet();
  kubelet_.Hang(true);
  KubeletPodSourceOptions options = Options();
  options.call_deadline = std::chrono::minutes(10);  // Stop() must not wait for it
  KubeletPodSource source(options, &table_);
  source.Start();
  for (int i = 0; i < 30000 && kubelet_.entered() == 0; ++i) usleep(1000);  // at most 30 s
  ASSERT_EQ(kubelet_.entered(), 1);
  source.Stop();
  kubelet_.Hang(false);
  for (const char* result : {"ok", "error", "deadline_exceeded", "unavailable"}) {
    EXPECT_EQ(Calls(source, "List", result), 0) << result;
  }
}

TEST_F(KubeletPodSourceTest, StartAndStopRunTheThread) {
  kubelet_.Hold("ml", "trainer-0", "GPU-1");
  StartKubelet();
  KubeletPodSourceOptions options = Options();
  options.interval = std::chrono::milliseconds(10);
  KubeletPodSource source(options, &table_);
  source.Start();
  for (int i = 0; i < 30000 && !table_.Current()->devices_known; ++i) usleep(1000);  // at most 30 s
  source.Stop();
  EXPECT_TRUE(table_.Current()->devices_known);
}

}  // namespace
}  // namespace gpuscope
