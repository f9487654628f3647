#include "sim/proc_processes.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace gpuscope::sim {
namespace {

constexpr auto kRescanEvery = std::chrono::milliseconds(250);
constexpr size_t kMaxEnvironBytes = 1 << 20;

// The value of `name` in a NUL-separated environment, or nullopt.
std::optional<std::string_view> Variable(std::string_view environ, std::string_view name) {
  size_t pos = 0;
  while (pos < environ.size()) {
    size_t end = environ.find('\0', pos);
    if (end == std::string_view::npos) end = environ.size();
    std::string_view entry = environ.substr(pos, end - pos);
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<unsigned>> ParseMarkedProcess(std::string_view environ, std::string_view marker,
                                                        unsigned gpu_count) {
  if (Variable(environ, marker) != std::string_view("1")) return std::nullopt;
  std::optional<std::string_view> list = Variable(environ, "GPUSCOPE_SIM_GPUS");
  if (!list) list = Variable(environ, "CUDA_VISIBLE_DEVICES");
  std::vector<unsigned> gpus;
  std::string_view rest = list.value_or("");
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty() || item.size() > 3 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    unsigned index = static_cast<unsigned>(std::stoul(std::string(item)));
    if (index < gpu_count) gpus.push_back(index);
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  return gpus;
}

ProcProcessScanner::ProcProcessScanner(std::string proc_root, std::string marker, unsigned gpu_count)
    : proc_root_(std::move(proc_root)),
      marker_(std::move(marker)),
      gpu_count_(gpu_count),
      by_gpu_(gpu_count) {}

std::vector<std::vector<unsigned>> ProcProcessScanner::ProcessesByGpu() {
  gpuscope::MutexLock lock(&mu_);
  const auto now = std::chrono::steady_clock::now();
  if (scanned_ && now - scanned_at_ < kRescanEvery) return by_gpu_;
  scanned_ = true;
  scanned_at_ = now;
  std::vector<std::vector<unsigned>> by_gpu(gpu_count_);
  if (DIR* dir = opendir(proc_root_.c_str())) {
    while (dirent* entry = readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name.empty() || name.size() > 9 ||
          !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        continue;
      }
      std::ifstream in(proc_root_ + "/" + std::string(name) + "/environ", std::ios::binary);
      if (!in) continue;  // gone, or not ours to read
      std::string environ;
      environ.resize(kMaxEnvironBytes);
      in.read(environ.data(), static_cast<std::streamsize>(environ.size()));
      environ.resize(static_cast<size_t>(in.gcount()));
      std::optional<std::vector<unsigned>> gpus = ParseMarkedProcess(environ, marker_, gpu_count_);
      if (!gpus) continue;
      const unsigned pid = static_cast<unsigned>(std::stoul(std::string(name)));
      for (unsigned gpu : *gpus) by_gpu[gpu].push_back(pid);
    }
    closedir(dir);
  }
  for (auto& pids : by_gpu) std::sort(pids.begin(), pids.end());
  by_gpu_ = std::move(by_gpu);
  return by_gpu_;
}

}  // namespace gpuscope::sim
