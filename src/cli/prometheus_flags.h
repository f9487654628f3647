// The flags every subcommand that reads Prometheus takes (--prometheus.url, basic auth, bearer token,
// CA file, timeout) and the client they describe. `gpuscope check` reads the local agent and does not
// take them.
//
// Thread-safety: free functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/cli/command_line.h"
#include "src/cli/prometheus_client.h"
#include "src/core/status.h"

namespace gpuscope {

// `own` followed by the Prometheus flags.
std::vector<FlagSpec> WithPrometheusFlags(std::vector<FlagSpec> own);

// A client for the server the flags name. InvalidArgument (the message names the flag) for a bad
// timeout, an unreadable secret file, conflicting auth flags, a bad URL or CA file.
Status MakePrometheusClient(const CommandLine& line, std::unique_ptr<PrometheusClient>* client);

// Reads a secret file (a password, a token) less its trailing newlines. InvalidArgument naming --flag
// when it cannot be read.
Status ReadSecretFile(const std::string& flag, const std::string& path, std::string* secret);

// Parses a number of seconds > 0 ("30", "0.5"); false for anything else.
bool ParsePositiveSeconds(const std::string& text, double* seconds);

// Now, as Unix seconds.
double UnixNow();

}  // namespace gpuscope
