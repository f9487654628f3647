// gpuscope-agent: per-node GPU observability agent. Wiring only; see src/agent/agent.h.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "src/agent/agent.h"
#include "src/agent/config.h"
#include "src/agent/registry.h"
#include "src/core/version.h"
#include "src/platform/memory.h"
#include "src/platform/process_limits.h"

int main(int argc, char** argv) {
  // One malloc arena: per-thread arenas are most of the agent's resident memory (see memory.h).
  gpuscope::LimitMallocArenas();
  // One descriptor per scrape connection (--web.max-connections) and per source and sink.
  gpuscope::RaiseOpenFileLimit();
  // Block the termination signals before any thread exists: the agent takes them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  gpuscope::AgentConfig config;
  gpuscope::BuiltinCollectors().FillDefaults(&config);
  const gpuscope::AgentConfig defaults = config;
  std::vector<std::string> args(argv + 1, argv + argc);
  gpuscope::Status status = gpuscope::LoadConfig(args, &config);
  if (config.show_help) {
    std::fputs(gpuscope::FlagsHelp(defaults).c_str(), stdout);
    return 0;
  }
  if (config.print_config_docs) {
    std::fputs(gpuscope::ConfigDocs(defaults).c_str(), stdout);
    return 0;
  }
  if (config.print_config_file && status.ok()) {
    std::fputs(gpuscope::CommentedConfigFile(defaults, config).c_str(), stdout);
    return 0;
  }
  if (config.show_version) {
    std::printf("gpuscope-agent %s (revision %s, %s)\n", std::string(gpuscope::Version()).c_str(),
                std::string(gpuscope::Revision()).c_str(), std::string(gpuscope::Compiler()).c_str());
    return 0;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "gpuscope-agent: %s\n", status.message().c_str());
    return 2;
  }
  return gpuscope::RunAgent(config);
}
