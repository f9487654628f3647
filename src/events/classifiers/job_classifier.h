// Classifiers for lines from training jobs' stdout/stderr (the "jobs" family): NCCL debug output
// (WARN/INFO, InfiniBand completion errors, communicator init), PyTorch ProcessGroupNCCL watchdog
// timeouts, CUDA runtime/driver errors and PyTorch CUDA out-of-memory errors. Each is a pure function
// from one line (no trailing newline needed) to an optional Event; ClassifyJobLine tries them all behind
// a cheap substring pre-check so ordinary training output costs one scan.
//
// Untrusted input: any bytes (invalid UTF-8, NUL, megabyte lines) are accepted; only the first
// jobs_text::kMaxParsedLine bytes are parsed, field values are capped and made valid UTF-8.
//
// Event classes and severities:
//   "nccl"           NCCL WARN -> warning, NCCL INFO -> debug (communicator init line -> info)
//   "ib_completion"  NCCL WARN "NET/IB : Got completion from peer ... status=N" -> error
//   "nccl_watchdog"  PyTorch watchdog collective timeout -> error
//   "cuda_oom"       PyTorch "CUDA out of memory" (all message generations) -> error
//   "cuda"           CUDA errors; illegal address/instruction, misaligned address, uncorrectable ECC
//                    -> critical, others -> error
//   "ib_completion"  also verbs completion errors from UCX, Open MPI (openib), the verbs providers and
//                    libfabric -> error (field `library`)
//
// Thread-safety: pure functions, safe to call concurrently.
#pragma once

#include <optional>
#include <string_view>

#include "src/events/event.h"

namespace gpuscope {

// Tries every classifier of the family. Returns the Event of the first that matches, nullopt when the
// line is not one of ours (the common case, decided by a single substring pre-check).
std::optional<Event> ClassifyJobLine(std::string_view line);

// NCCL debug lines, with or without the "host:pid:tid [dev]" header, the TRACE elapsed time, the WARN
// "file:line" location and the NCCL >= 2.26 "[date time] " timestamp. Fields (when present): host, pid,
// tid, cuda_dev, rank, nranks, bus_id, subsystem, cuda_error, message; for "ib_completion" also peer,
// status, status_name, opcode, len, vendor_err, local_gid, remote_gid, hca. nullopt when the line has no
// "NCCL WARN"/"NCCL INFO"/"NCCL TRACE" marker.
std::optional<Event> ClassifyNcclLine(std::string_view line);

// Verbs completion errors of the other communication layers (formats in rdma.cc): UCX's ib_mlx5_log
// lines ("... on mlx5_0:1/IB (synd 0x15 vend 0x81 ...)" and the older "FATAL: Error on ... QP ..."), Open
// MPI openib's "error polling LP CQ with status ... status number N ...", rdma-core providers' "got
// completion with error", libfabric's "fi_cq_readerr: ... prov_err: ...", and "status=N(<ibv_wc_status_str
// text>)". Class "ib_completion". Fields (when present): library (ucx, openmpi, verbs, libfabric, other),
// process_host, pid, rank, peer, hca, port, link_layer, qp, wqe, qp_idx, cq, provider, status,
// status_name (ibv_wc_status, from the number, the mlx5 syndrome or the words), syndrome, vendor_err,
// opcode, fi_errno, prov_errno, error, message. nullopt for anything else.
std::optional<Event> ClassifyRdmaCompletionLine(std::string_view line);
// The cheap pre-check ClassifyJobLine runs before ClassifyRdmaCompletionLine: false means it cannot match.
bool MayBeRdmaCompletionLine(std::string_view line);

// PyTorch ProcessGroupNCCL "Watchdog caught collective operation timeout" lines, with the glog
// "[E ProcessGroupNCCL.cpp:N]" and "[rankN]:[E1129 ...]" prefixes or none. Fields: rank, pg, op, seq,
// numel_in, numel_out, timeout_ms, ran_ms (those present). nullopt when the phrase is absent.
std::optional<Event> ClassifyTorchWatchdogLine(std::string_view line);

// PyTorch CUDA caching allocator OOM messages ("CUDA out of memory. Tried to allocate ..."), in the
// "(GPU 0; X total capacity; ...)" and "GPU 0 has a total capac(i)ty of X of which Y is free" forms.
// Fields: error (exception name), gpu, tried_bytes, total_bytes, free_bytes, allocated_bytes (bytes, as
// decimal strings; those present). nullopt when "CUDA out of memory" is absent.
std::optional<Event> ClassifyCudaOomLine(std::string_view line);

// CUDA runtime/driver errors: "CUDA error: <text>", "CUDA driver error: <text>", "cudaError<Name>" tokens.
// Fields: error (exception name when present), error_name (cudaError* name when known), message.
// nullopt when none of these markers is present.
std::optional<Event> ClassifyCudaErrorLine(std::string_view line);

}  // namespace gpuscope
