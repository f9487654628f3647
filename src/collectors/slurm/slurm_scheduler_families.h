// The families the Slurm scheduler collector emits, in one table (name, type, unit, labels, source,
// help): SlurmSchedulerCollector::Describe() lists it and every family is created from it by name, so
// none can be emitted without being described.
//
// Thread-safety: the table is built once on first use and never changes; every function may be called
// from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {

struct SlurmFamilySpec {
  std::string_view name;
  MetricType type;
  std::string_view unit;
  std::vector<std::string> labels;
  std::string_view source;
  std::string_view help;
};

// Every family: the self-metrics, then those of squeue, sinfo, sdiag and sshare.
const std::vector<SlurmFamilySpec>& SlurmFamilySpecs();

// An empty family with the table's name, help, type and unit. Aborts when `name` is not in the table
// (a programming error).
MetricFamily NewSlurmFamily(std::string_view name);

void AddSample(MetricFamily& family, Labels labels, double value);

}  // namespace gpuscope
