// Tests of the agent's configuration: YAML file, flags overriding it, strict errors.
#include "src/agent/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/agent/registry.h"

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

AgentConfig Defaults() {
  AgentConfig config;
  BuiltinCollectors().FillDefaults(&config);
  return config;
}

TEST(AgentConfig, DefaultsMatchDcgmExporter) {
  AgentConfig config = Defaults();
  EXPECT_EQ(config.listen_address, ":9400");
  EXPECT_EQ(config.telemetry_path, "/metrics");
  EXPECT_EQ(config.nvml_library, "libnvidia-ml.so.1");
  EXPECT_TRUE(config.collectors.at("gpu").enabled);
  EXPECT_EQ(config.collectors.at("gpu").interval, std::chrono::seconds(1));
  EXPECT_TRUE(ValidateConfig(config).ok());
}

TEST(AgentConfig, YamlSetsEverySection) {
  AgentConfig config = Defaults();
  Status status = ApplyConfigYaml(R"(
web: {listen_address: "127.0.0.1:9500", telemetry_path: /m, config_file: /etc/web.yml, max_connections: 8}
paths: {procfs: /host/proc, sysfs: /host/sys}
nvml: {library: /opt/libnvidia-ml.so.1, call_deadline: 500ms}
gpu: {dcgm_compat: "4.9", hostname: node7}
log: {level: debug, format: json}
collectors:
  gpu: {interval: 2s}
  process: {enabled: false}
)",
                                  &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.listen_address, "127.0.0.1:9500");
  EXPECT_EQ(config.telemetry_path, "/m");
  EXPECT_EQ(config.web_config_file, "/etc/web.yml");
  EXPECT_EQ(config.max_connections, 8);
  EXPECT_EQ(config.procfs, "/host/proc");
  EXPECT_EQ(config.sysfs, "/host/sys");
  EXPECT_EQ(config.nvml_library, "/opt/libnvidia-ml.so.1");
  EXPECT_EQ(config.nvml_call_deadline, std::chrono::milliseconds(500));
  EXPECT_EQ(config.dcgm_compat, "4.9");
  EXPECT_EQ(config.hostname, "node7");
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_EQ(config.log_format, "json");
  EXPECT_EQ(config.collectors.at("gpu").interval, std::chrono::seconds(2));
  EXPECT_FALSE(config.collectors.at("process").enabled);
  EXPECT_TRUE(ValidateConfig(config).ok());
}

TEST(AgentConfig, UnknownKeysAndBadValuesAreErrorsNamingTheKey) {
  AgentConfig config = Defaults();
  EXPECT_THAT(ApplyConfigYaml("web: {listen_adress: x}", &config).message(), HasSubstr("listen_adress"));
  EXPECT_THAT(ApplyConfigYaml("collectors: {gpuu: {}}", &config).message(), HasSubstr("gpuu"));
  EXPECT_THAT(ApplyConfigYaml("collectors: {gpu: {interval: fast}}", &config).message(),
              HasSubstr("collectors.gpu.interval"));
  EXPECT_THAT(ApplyConfigYaml("web: [1, 2]", &config).message(), HasSubstr("web"));
  EXPECT_THAT(ApplyConfigYaml("web: {max_connections: many}", &config).message(), HasSubstr("integer"));
  EXPECT_THAT(ApplyConfigYaml("{unclosed", &config).message(), HasSubstr("not valid YAML"));
  EXPECT_TRUE(ApplyConfigYaml("", &config).ok()) << "an empty file configures nothing";
}

TEST(AgentConfig, FlagsInBothSpellingsAndCollectorSwitches) {
  AgentConfig config = Defaults();
  Status status = ApplyFlags(
      {"--web.listen-address", "127.0.0.1:0", "--nvml.library=/tmp/lib.so", "--no-collector.process",
       "--collector.gpu.interval=250ms", "--gpu.dcgm-compat", "4.9", "--once"},
      &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.listen_address, "127.0.0.1:0");
  EXPECT_EQ(config.nvml_library, "/tmp/lib.so");
  EXPECT_FALSE(config.collectors.at("process").enabled);
  EXPECT_EQ(config.collectors.at("gpu").interval, std::chrono::milliseconds(250));
  EXPECT_EQ(config.dcgm_compat, "4.9");
  EXPECT_TRUE(config.once);
  ASSERT_TRUE(ApplyFlags({"--collector.process"}, &config).ok());
  EXPECT_TRUE(config.collectors.at("process").enabled);
}

TEST(AgentConfig, AttributionFlagsAndYaml) {
  AgentConfig config = Defaults();
  EXPECT_TRUE(config.hpc_job_label);
  EXPECT_TRUE(config.attribution_proc);
  EXPECT_FALSE(config.attribution_slurm);
  Status status =
      ApplyFlags({"--hpc-job-mapping-dir", "/run/gpuscope/jobs", "--attribution.device-map-file=/d",
                  "--attribution.hpc-job-label=false", "--attribution.proc=false", "--attribution.slurm",
                  "--attribution.slurm.scontrol=/opt/slurm/bin/scontrol", "--attribution.slurm.interval=10s",
                  "--attribution.mapping-format=jobstats"},
                 &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.hpc_job_mapping_dir, "/run/gpuscope/jobs");
  EXPECT_EQ(config.device_map_file, "/d");
  EXPECT_FALSE(config.hpc_job_label);
  EXPECT_FALSE(config.attribution_proc);
  EXPECT_TRUE(config.attribution_slurm);
  EXPECT_EQ(config.scontrol, "/opt/slurm/bin/scontrol");
  EXPECT_EQ(config.slurm_interval, std::chrono::seconds(10));
  EXPECT_EQ(config.mapping_format, "jobstats");
  EXPECT_TRUE(ValidateConfig(config).ok());

  AgentConfig yaml = Defaults();
  status = ApplyConfigYaml(R"(
attribution:
  hpc_job_mapping_dir: /m
  hpc_job_label: false
  device_map_file: /dm
  slurm: {enabled: true, interval: 1m, timeout: 2s, scontrol: /s}
)",
                           &yaml);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(yaml.hpc_job_mapping_dir, "/m");
  EXPECT_EQ(yaml.device_map_file, "/dm");
  EXPECT_FALSE(yaml.hpc_job_label);
  EXPECT_TRUE(yaml.attribution_slurm);
  EXPECT_EQ(yaml.slurm_interval, std::chrono::minutes(1));
  EXPECT_EQ(yaml.slurm_timeout, std::chrono::seconds(2));
  EXPECT_THAT(ApplyConfigYaml("attribution: {slurm: {enable: true}}", &yaml).message(), HasSubstr("enable"));
  yaml.mapping_format = "csv";
  EXPECT_THAT(ValidateConfig(yaml).message(), HasSubstr("mapping_format"));
}

TEST(AgentConfig, EveryListedFlagHasAHandler) {
  // Each flag of --help must be accepted (a value where it takes one).
  std::string help = FlagsHelp(Defaults());
  for (std::string_view flag : {"--config=/x",
                                "--web.listen-address=:1",
                                "--web.telemetry-path=/m",
                                "--web.config.file=/w",
                                "--web.max-connections=3",
                                "--path.procfs=/p",
                                "--path.sysfs=/s",
                                "--nvml.library=/n",
                                "--nvml.call-deadline=1s",
                                "--gpu.dcgm-compat=4.9",
                                "--gpu.hostname=h",
                                "--hpc-job-mapping-dir=/j",
                                "--attribution.mapping-format=amd",
                                "--attribution.hpc-job-label",
                                "--attribution.proc",
                                "--attribution.device-map-file=/d",
                                "--attribution.slurm",
                                "--attribution.slurm.scontrol=/s",
                                "--attribution.slurm.interval=1s",
                                "--attribution.slurm.timeout=1s",
                                "--events.kmsg-path=/dev/kmsg",
                                "--events.file=/var/log/*.out",
                                "--events.journal",
                                "--events.journal.directory=/var/log/journal",
                                "--events.journal.match=_TRANSPORT=kernel",
                                "--events.state-dir=/s",
                                "--events.ship-severity=warning",
                                "--events.max-line-bytes=4096",
                                "--events.poll-interval=1s",
                                "--sink.loki.url=http://l:3100/loki/api/v1/push",
                                "--sink.loki.format=json",
                                "--sink.loki.tenant=t",
                                "--sink.otlp.url=http://o:4318/v1/logs",
                                "--sink.otlp.header=X-Api-Key=k",
                                "--sink.otlp.basic-auth.username=u",
                                "--sink.otlp.basic-auth.password-file=/p",
                                "--sink.otlp.bearer-token-file=/t",
                                "--sink.otlp.tls.cert-file=/c",
                                "--sink.otlp.tls.key-file=/k",
                                "--sink.tls.ca-file=/ca.pem",
                                "--sink.queue.directory=/q",
                                "--sink.queue.max-mib=64",
                                "--log.level=warn",
                                "--log.format=json",
                                "--once",
                                "--print-metrics-docs",
                                "--print-config-docs",
                                "--version",
                                "--help"}) {
    AgentConfig config = Defaults();
    std::string name(
        flag.substr(2, flag.find('=') == std::string_view::npos ? flag.npos : flag.find('=') - 2));
    EXPECT_THAT(help, HasSubstr("--" + name)) << name;
    EXPECT_TRUE(ApplyFlags({std::string(flag)}, &config).ok()) << flag;
  }
}

TEST(AgentConfig, EventSourcesAndSinksFromFlagsAlone) {
  // A one-off run needs no config file: repeatable --events.file, the journal, both sinks.
  AgentConfig config = Defaults();
  Status status =
      LoadConfig({"--events.file", "/logs/slurm-*.out", "--events.file=/var/log/slurm/slurmd.log",
                  "--events.kmsg-path", "/dev/kmsg", "--events.journal", "--events.journal.match",
                  "_TRANSPORT=kernel", "--sink.loki.url", "http://127.0.0.1:3100/loki/api/v1/push",
                  "--sink.otlp.url=https://collector:4318/v1/logs", "--events.state-dir=/tmp/s"},
                 &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.events_files,
            (std::vector<std::string>{"/logs/slurm-*.out", "/var/log/slurm/slurmd.log"}));
  EXPECT_EQ(config.events_kmsg_path, "/dev/kmsg");
  EXPECT_TRUE(config.events_journal);
  EXPECT_EQ(config.events_journal_matches, (std::vector<std::string>{"_TRANSPORT=kernel"}));
  EXPECT_EQ(config.loki_url, "http://127.0.0.1:3100/loki/api/v1/push");
  EXPECT_EQ(config.otlp_url, "https://collector:4318/v1/logs");
  EXPECT_EQ(config.events_state_dir, "/tmp/s");
}

TEST(AgentConfig, EventSourcesAndSinksFromYaml) {
  AgentConfig config = Defaults();
  Status status = ApplyConfigYaml(R"(
events:
  kmsg_path: /dev/kmsg
  files: [/logs/slurm-*.out, /var/log/slurm/slurmd.log]
  journal: {enabled: true, directory: /var/log/journal, matches: [_TRANSPORT=kernel, _SYSTEMD_UNIT=slurmd.service]}
  state_dir: /var/lib/gpuscope
  ship_severity: warning
  max_line_bytes: 8192
  poll_interval: 500ms
sinks:
  loki: {url: "http://loki:3100/loki/api/v1/push", format: json, tenant: team-a}
  otlp: {url: "http://otel:4318/v1/logs"}
  queue: {directory: /var/lib/gpuscope/q, max_mib: 32}
  tls_ca_file: /etc/ssl/ca.pem
)",
                                  &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.events_files.size(), 2u);
  EXPECT_EQ(config.events_journal_directory, "/var/log/journal");
  EXPECT_EQ(config.events_journal_matches.size(), 2u);
  EXPECT_EQ(config.events_ship_severity, "warning");
  EXPECT_EQ(config.events_max_line_bytes, 8192);
  EXPECT_EQ(config.events_poll_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(config.loki_format, "json");
  EXPECT_EQ(config.loki_tenant, "team-a");
  EXPECT_EQ(config.queue_dir, "/var/lib/gpuscope/q");
  EXPECT_EQ(config.queue_max_mib, 32);
  EXPECT_EQ(config.sink_tls_ca_file, "/etc/ssl/ca.pem");
  EXPECT_TRUE(ValidateConfig(config).ok());
  // The file's list, then each --events.file adds one.
  ASSERT_TRUE(ApplyFlags({"--events.file=/extra/*.log"}, &config).ok());
  EXPECT_EQ(config.events_files.size(), 3u);
}

TEST(AgentConfig, EbpfSwitchesItsCollectorOnAndItsSettingsAreChecked) {
  AgentConfig config = Defaults();
  EXPECT_FALSE(config.collectors.at("ebpf").enabled);
  ASSERT_TRUE(
      LoadConfig({"--ebpf", "--ebpf.watch-dir", "/checkpoints", "--ebpf.watch-dir=/datasets", "--ebpf.allow",
                  "10.0.0.0/8", "--ebpf.allow=[fd00::/8]:443", "--ebpf.programs=connect,files"},
                 &config)
          .ok());
  EXPECT_TRUE(config.collectors.at("ebpf").enabled);
  EXPECT_EQ(config.ebpf_watch_dirs, (std::vector<std::string>{"/checkpoints", "/datasets"}));
  EXPECT_EQ(config.ebpf_allow, (std::vector<std::string>{"10.0.0.0/8", "[fd00::/8]:443"}));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--ebpf.allow=10.0.0.0/33"}, &config).message(), HasSubstr("prefix length"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--ebpf.programs=cuda,,files"}, &config).message(), HasSubstr("ebpf.programs"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--ebpf.programs="}, &config).message(), HasSubstr("ebpf.programs"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--ebpf.watch-dir=checkpoints"}, &config).message(), HasSubstr("start with /"));
}

TEST(AgentConfig, DcgmIsAutoByDefaultAndItsSettingsAreChecked) {
  AgentConfig config = Defaults();
  EXPECT_EQ(config.dcgm, "auto");
  EXPECT_EQ(config.dcgm_address, "localhost:5555");
  ASSERT_TRUE(LoadConfig({"--dcgm=on", "--dcgm.mode=hostengine", "--dcgm.address=unix:/run/nv-hostengine",
                          "--dcgm.health=memory,nvlink"},
                         &config)
                  .ok());
  EXPECT_EQ(config.dcgm_health, "memory,nvlink");
  config = Defaults();
  EXPECT_TRUE(LoadConfig({"--dcgm.health="}, &config).ok()) << "no health watches";
  for (const auto& [bad, key] :
       {std::pair{"--dcgm=yes", "(--dcgm)"}, std::pair{"--dcgm.mode=remote", "--dcgm.mode"},
        std::pair{"--dcgm.health=memory,ecc", "--dcgm.health"}}) {
    config = Defaults();
    EXPECT_THAT(LoadConfig({bad}, &config).message(), HasSubstr(key)) << bad;
  }
}

TEST(AgentConfig, BadEventAndSinkSettingsAreErrorsNamingTheKey) {
  AgentConfig config = Defaults();
  EXPECT_THAT(ApplyConfigYaml("events: {kmsg: /dev/kmsg}", &config).message(), HasSubstr("kmsg"));
  EXPECT_THAT(ApplyConfigYaml("events: {files: {a: b}}", &config).message(), HasSubstr("events.files"));
  EXPECT_THAT(ApplyConfigYaml("sinks: {loki: {uri: x}}", &config).message(), HasSubstr("uri"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.loki.url=loki:3100"}, &config).message(), HasSubstr("http://"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.loki.format=xml"}, &config).message(), HasSubstr("sinks.loki.format"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--events.ship-severity=loud"}, &config).message(), HasSubstr("ship_severity"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--events.max-line-bytes=10"}, &config).message(), HasSubstr("max_line_bytes"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.queue.max-mib=lots"}, &config).message(), HasSubstr("expected an integer"));
}

TEST(AgentConfig, RemoteWriteEndpointsEachCarryTheirOwnSettingsBesideTheFlagUrls) {
  AgentConfig config = Defaults();
  Status status = ApplyConfigYaml(R"(
sinks:
  tls_ca_file: /etc/ssl/site-ca.pem
  remote_write:
    protocol: auto
    urls: [http://prometheus:9090/api/v1/write]
    tenant: shared
    endpoints:
      - url: http://mimir:8080/api/v1/push
        tenant: team-a
        headers: [X-Team=a]
      - url: https://prometheus-prod.example.net/api/prom/push
        protocol: "1.0"
        basic_auth: {username: "12345", password_file: /etc/gpuscope/cloud-password}
        tls: {ca_file: /etc/ssl/cloud-ca.pem, cert_file: /etc/c.pem, key_file: /etc/k.pem}
      - url: http://vm:8428/api/v1/write
        bearer_token_file: /etc/gpuscope/vm-token
)",
                                  &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_TRUE(ApplyFlags({"--sink.remote-write.url=http://second:9090/api/v1/write"}, &config).ok());
  ASSERT_TRUE(ValidateConfig(config).ok());
  EXPECT_EQ(config.remote_write_urls.size(), 2u);  // the shared settings apply to these two
  EXPECT_EQ(config.remote_write_tenant, "shared");
  ASSERT_EQ(config.remote_write_endpoints.size(), 3u);
  const RemoteWriteEndpointConfig& mimir = config.remote_write_endpoints[0];
  EXPECT_EQ(mimir.url, "http://mimir:8080/api/v1/push");
  EXPECT_EQ(mimir.tenant, "team-a");
  EXPECT_EQ(mimir.protocol, "");  // the shared protocol, worked out when the sink is made
  EXPECT_EQ(mimir.headers, (std::vector<std::string>{"X-Team=a"}));
  const RemoteWriteEndpointConfig& cloud = config.remote_write_endpoints[1];
  EXPECT_EQ(cloud.protocol, "1.0");
  EXPECT_EQ(cloud.basic_auth_username, "12345");
  EXPECT_EQ(cloud.basic_auth_password_file, "/etc/gpuscope/cloud-password");
  EXPECT_EQ(cloud.tls_ca_file, "/etc/ssl/cloud-ca.pem");
  EXPECT_EQ(cloud.tls_cert_file, "/etc/c.pem");
  EXPECT_EQ(cloud.tls_key_file, "/etc/k.pem");
  EXPECT_EQ(config.remote_write_endpoints[2].bearer_token_file, "/etc/gpuscope/vm-token");
}

TEST(AgentConfig, BadRemoteWriteEndpointsAreErrorsNamingTheEndpointAndKey) {
  auto error = [](const std::string& yaml) {
    AgentConfig config = Defaults();
    Status status = ApplyConfigYaml(yaml, &config);
    if (status.ok()) status = ValidateConfig(config);
    return status.message();
  };
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', tenat: x}]}}"),
              HasSubstr("sinks.remote_write.endpoints[0]: unknown key \"tenat\""));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w'}, {tenant: x}]}}"),
              HasSubstr("sinks.remote_write.endpoints[1]: url is required"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', basic_auth: {user: u}}]}}"),
              HasSubstr("sinks.remote_write.endpoints[0].basic_auth: unknown key \"user\""));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: {url: 'http://a/w'}}}"),
              HasSubstr("must be a list of endpoints"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'a:9090/w'}]}}"),
              HasSubstr("endpoints[0] (a:9090/w): url must start with http://"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', protocol: '3.0'}]}}"),
              HasSubstr("protocol must be one of 1.0, 2.0, auto"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', basic_auth: {username: u}}]}}"),
              HasSubstr("basic_auth.username needs basic_auth.password_file"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', tls: {key_file: /k}}]}}"),
              HasSubstr("tls.key_file needs tls.cert_file"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', bearer_token_file: /t, "
                    "basic_auth: {username: u, password_file: /p}}]}}"),
              HasSubstr("exclusive"));
  EXPECT_THAT(error("sinks: {remote_write: {endpoints: [{url: 'http://a/w', headers: [Content-Type=x]}]}}"),
              HasSubstr("must not name a header the sink sets itself"));
}

TEST(AgentConfig, OtlpHeadersAndCredentialsFromFlags) {
  AgentConfig config = Defaults();
  Status status =
      LoadConfig({"--sink.otlp.url=http://o:4318/v1/logs", "--sink.otlp.header=X-Api-Key=k1",
                  "--sink.otlp.header", "X-Scope-OrgID=team-a", "--sink.otlp.bearer-token-file=/t",
                  "--sink.otlp.tls.cert-file=/c", "--sink.otlp.tls.key-file=/k"},
                 &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.otlp_headers, (std::vector<std::string>{"X-Api-Key=k1", "X-Scope-OrgID=team-a"}));
  EXPECT_EQ(config.otlp_bearer_token_file, "/t");
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.otlp.header=no equals sign"}, &config).message(), HasSubstr("Name=value"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.otlp.header=Bad Name=x"}, &config).message(), HasSubstr("header name"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.otlp.basic-auth.username=u"}, &config).message(),
              HasSubstr("sinks.otlp.basic_auth.username needs sinks.otlp.basic_auth.password_file"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--sink.remote-write.tls.cert-file=/c"}, &config).message(),
              HasSubstr("sinks.remote_write.tls.cert_file needs sinks.remote_write.tls.key_file"));
}

TEST(AgentConfig, BadFlagsAreErrors) {
  AgentConfig config = Defaults();
  EXPECT_THAT(ApplyFlags({"--web.listen"}, &config).message(), HasSubstr("unknown flag"));
  EXPECT_THAT(ApplyFlags({"--collector.nope"}, &config).message(), HasSubstr("unknown collector"));
  EXPECT_THAT(ApplyFlags({"--nvml.library"}, &config).message(), HasSubstr("needs a value"));
  EXPECT_THAT(ApplyFlags({"--nvml.call-deadline=soon"}, &config).message(), HasSubstr("not a duration"));
  EXPECT_THAT(ApplyFlags({"stray"}, &config).message(), HasSubstr("unexpected argument"));
  EXPECT_THAT(ApplyFlags({"--once=maybe"}, &config).message(), HasSubstr("true or false"));
}

TEST(AgentConfig, FlagsOverrideTheConfigFile) {
  std::string path = ::testing::TempDir() + "/gpuscope_config_test.yaml";
  {
    std::ofstream out(path);
    out << "web: {listen_address: \"127.0.0.1:9500\"}\ngpu: {hostname: from-file}\n";
  }
  AgentConfig config = Defaults();
  Status status = LoadConfig({"--config", path, "--web.listen-address=127.0.0.1:9600"}, &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.listen_address, "127.0.0.1:9600");
  EXPECT_EQ(config.hostname, "from-file");
  std::remove(path.c_str());
}

TEST(AgentConfig, MissingConfigFileAndInvalidValuesAreReported) {
  AgentConfig config = Defaults();
  EXPECT_THAT(LoadConfig({"--config=/nonexistent/x.yaml"}, &config).message(), HasSubstr("cannot read"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--gpu.dcgm-compat=5"}, &config).message(), HasSubstr("dcgm_compat"));
  config = Defaults();
  EXPECT_THAT(LoadConfig({"--web.listen-address=9400"}, &config).message(), HasSubstr("host:port"));
}

// A fresh directory under the test's temporary directory.
std::string FreshDirectory(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

TEST(AgentConfig, ConfigDirFilesApplyAfterTheFileInNameOrderAndFlagsStillWin) {
  const std::string dir = FreshDirectory("gpuscope_config_dir_test");
  WriteFile(dir + "/../gpuscope_config_dir_main.yml",
            "gpu: {hostname: from-main}\nweb: {max_connections: 10}\nevents: {files: [/a.log, /b.log]}\n");
  WriteFile(dir + "/20-sinks.yml",
            "sinks: {loki: {url: \"http://loki:3100/loki/api/v1/push\"}}\n"
            "web: {max_connections: 20}\n");
  WriteFile(dir + "/10-node.yaml", "gpu: {hostname: from-dir}\nweb: {max_connections: 15}\n");
  WriteFile(dir + "/30-events.yml", "events: {files: [/c.log]}\n");
  // Not configuration: an editor's dot file, another suffix, a directory.
  WriteFile(dir + "/.40-swap.yml", "web: {max_connections: 99}\n");
  WriteFile(dir + "/50-notes.txt", "web: {max_connections: 98}\n");
  std::filesystem::create_directories(dir + "/60-dir.yml");

  AgentConfig config = Defaults();
  Status status = LoadConfig({"--config", dir + "/../gpuscope_config_dir_main.yml", "--config.dir", dir,
                              "--web.listen-address=127.0.0.1:9700"},
                             &config);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(config.hostname, "from-dir");  // 10-node.yaml over the main file
  EXPECT_EQ(config.max_connections, 20);   // 20-sinks.yml after 10-node.yaml
  EXPECT_EQ(config.loki_url, "http://loki:3100/loki/api/v1/push");
  EXPECT_THAT(config.events_files, ::testing::ElementsAre("/c.log"));  // a list is replaced whole
  EXPECT_EQ(config.listen_address, "127.0.0.1:9700");                  // flags over every file
}

TEST(AgentConfig, ConfigDirProblemsNameTheDirectoryOrTheFile) {
  AgentConfig config = Defaults();
  EXPECT_THAT(LoadConfig({"--config.dir=/nonexistent/agent.d"}, &config).message(),
              HasSubstr("cannot read config directory /nonexistent/agent.d"));
  const std::string dir = FreshDirectory("gpuscope_config_dir_bad");
  WriteFile(dir + "/10-typo.yml", "web: {max_conections: 3}\n");
  config = Defaults();
  const std::string message = LoadConfig({"--config.dir", dir}, &config).message();
  EXPECT_THAT(message, HasSubstr("10-typo.yml"));
  EXPECT_THAT(message, HasSubstr("max_conections"));
}

// The commented file with every key and section turned on: a "#" right before a name (not "# ", a
// comment) deleted, so the file sets each key to the default it shows.
std::string Uncommented(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == '#' && first + 1 < line.size() &&
        line[first + 1] != ' ' && line[first + 1] != '"') {
      line.erase(first, 1);
    }
    out += line + "\n";
  }
  return out;
}

TEST(AgentConfig, CommentedConfigFileIsValidAndSetsOnlyWhatDiffersFromTheDefaults) {
  const AgentConfig defaults = Defaults();
  AgentConfig config = defaults;
  ASSERT_TRUE(ApplyFlags({"--hpc-job-mapping-dir=/run/gpuscope/jobs", "--events.journal",
                          "--events.journal.match=_TRANSPORT=kernel", "--no-collector.host"},
                         &config)
                  .ok());
  const std::string file = CommentedConfigFile(defaults, config);

  // Every key is there, under its help text.
  EXPECT_THAT(file, HasSubstr("\n#web:\n"));
  EXPECT_THAT(file, HasSubstr("\n  #listen_address: \":9400\"\n"));
  EXPECT_THAT(file, HasSubstr("--web.listen-address."));
  EXPECT_THAT(file, HasSubstr("attribution:\n"));
  EXPECT_THAT(file, HasSubstr("  hpc_job_mapping_dir: \"/run/gpuscope/jobs\"\n"));
  EXPECT_THAT(file, HasSubstr("    matches: [\"_TRANSPORT=kernel\"]\n"));
  EXPECT_THAT(file, HasSubstr("  host: {enabled: false, interval: 15s}\n"));

  // Loaded as it is, it gives `config`; with every commented key uncommented, still `config` (the commented
  // values are the defaults, written as the parser takes them).
  for (const std::string& text : {file, Uncommented(file)}) {
    AgentConfig loaded = defaults;
    Status status = ApplyConfigYaml(text, &loaded);
    ASSERT_TRUE(status.ok()) << status.ToString() << "\n" << text;
    EXPECT_EQ(CommentedConfigFile(defaults, loaded), file);
  }

  // Nothing set: every key is commented out and the file still loads (an empty document).
  const std::string untouched = CommentedConfigFile(defaults, defaults);
  AgentConfig loaded = defaults;
  EXPECT_TRUE(ApplyConfigYaml(untouched, &loaded).ok());
  EXPECT_EQ(CommentedConfigFile(defaults, loaded), untouched);
}

TEST(AgentConfig, HelpListsFlagsAndCollectors) {
  std::string help = FlagsHelp(Defaults());
  EXPECT_THAT(help, HasSubstr("--web.listen-address"));
  EXPECT_THAT(help, HasSubstr("--nvml.library"));
  EXPECT_THAT(help, HasSubstr("gpu (enabled, every 1s)"));
}

TEST(CollectorRegistry, RejectsDuplicateNames) {
  CollectorRegistry registry;
  ASSERT_TRUE(registry.Register({"x", "", true, std::chrono::seconds(1), nullptr}).ok());
  EXPECT_FALSE(registry.Register({"x", "", true, std::chrono::seconds(1), nullptr}).ok());
}

}  // namespace
}  // namespace gpuscope
