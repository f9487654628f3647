// libFuzzer target for the parsers of the Kubernetes API server's answers (pod, pod list, owner, error
// status): never crashes, and every accepted pod has a name and a namespace.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "src/attribution/kubernetes/kube_objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gpuscope::KubePod pod;
  if (gpuscope::ParseKubePod(text, &pod).ok() && (pod.meta.name.empty() || pod.meta.namespace_name.empty())) {
    std::abort();
  }
  std::vector<gpuscope::KubePod> pods;
  if (gpuscope::ParseKubePodList(text, &pods).ok()) {
    for (const gpuscope::KubePod& item : pods) {
      if (item.meta.name.empty() || item.meta.namespace_name.empty()) std::abort();
    }
  }
  gpuscope::KubeObjectMeta meta;
  (void)gpuscope::ParseKubeObjectMeta(text, "ReplicaSet", &meta);
  (void)gpuscope::ParseKubeStatus(text);
  return 0;
}
