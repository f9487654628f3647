// gpuscope-push-receiver: a Loki / OTLP logs receiver for tests (see push_receiver.h).
//   gpuscope-push-receiver --output FILE [--port N] [--mode ok|503|429|400|garbage|hang]
//                          [--retry-after SECONDS] [--tls-cert PEM --tls-key PEM]
// Prints "listening on 127.0.0.1:N" once it accepts connections; runs until SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tests/tools/push_receiver/push_receiver.h"

namespace {

int Usage(const char* error) {
  std::fprintf(
      stderr,
      "gpuscope-push-receiver: %s\nusage: gpuscope-push-receiver --output FILE [--port N] "
      "[--mode ok|503|429|400|garbage|hang] [--retry-after SECONDS] [--tls-cert PEM --tls-key PEM]\n",
      error);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using gpuscope::testing::PushReceiver;
  using gpuscope::testing::PushReceiverOptions;
  PushReceiverOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return Usage("help");
    if (i + 1 >= argc) return Usage("missing value after a flag");
    const std::string value = argv[++i];
    if (flag == "--port") {
      char* end = nullptr;
      const long port = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || port < 0 || port > 65535) return Usage("bad --port");
      options.port = static_cast<uint16_t>(port);
    } else if (flag == "--output") {
      options.output_path = value;
    } else if (flag == "--mode") {
      if (!gpuscope::testing::ParseReceiverMode(value, &options.mode)) return Usage("bad --mode");
    } else if (flag == "--retry-after") {
      options.retry_after_seconds = std::atoi(value.c_str());
    } else if (flag == "--tls-cert") {
      options.cert_file = value;
    } else if (flag == "--tls-key") {
      options.key_file = value;
    } else {
      return Usage("unknown flag");
    }
  }
  if (options.output_path.empty()) return Usage("--output is required");

  // Block the stop signals before any thread starts, so they are all taken by sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  PushReceiver receiver(options);
  const gpuscope::Status status = receiver.Start();
  if (!status.ok()) {
    std::fprintf(stderr, "gpuscope-push-receiver: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(receiver.port()));
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  receiver.Stop();
  return 0;
}
