// The training_hang event: a rank the training source found hung (TrainingState's wavefront), as the event
// path counts it and ships it to Loki and OTLP logs (class training_hang, severity error). Its fields name
// the job (job_id, attributed as hpc_job), the rank, the node (Hostname), the rank's GPU (UUID, attributed
// to the GPU's index), the communicator, the sequence number the rank is stuck after, the furthest one the
// other local ranks reached, and how long it has not advanced.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>

#include "src/collectors/training/training_state.h"
#include "src/events/sources/posted_source.h"

namespace gpuscope {

PostedEvent TrainingHangEvent(const TrainingHang& hang, const std::string& hostname, int64_t now_ns);

}  // namespace gpuscope
