// The machine's own name, as gethostname(2) gives it: the default `Hostname` of the agent's series, the
// Kubernetes node name when no other is configured, the Slurm node `gpuscope check` drains.
//
// Thread-safety: free functions.
#pragma once

#include <string>

namespace gpuscope {

// The host name (possibly fully qualified); empty when the system does not say.
std::string HostName();

// HostName() up to its first dot: Slurm's NodeName for a host called node01.cluster.example.
std::string ShortHostName();

}  // namespace gpuscope
