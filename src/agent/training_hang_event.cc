#include "src/agent/training_hang_event.h"

#include <string>

namespace gpuscope {

PostedEvent TrainingHangEvent(const TrainingHang& hang, const std::string& hostname, int64_t now_ns) {
  const std::string comm = TrainingState::CommLabel(hang.comm);
  const std::string op(TrainingState::OpName(hang.op));
  const std::string stalled = std::to_string(static_cast<int64_t>(hang.stalled_seconds));
  const std::string who =
      "rank " + std::to_string(hang.rank) + (hang.job.empty() ? "" : " of job " + hang.job);
  const std::string where = "collective seq " + std::to_string(hang.seq) + " (" + op + ") on communicator " +
                            comm + " for " + stalled + " s";
  PostedEvent posted;
  posted.origin = "training";
  posted.time_unix_ns = now_ns;
  Event& event = posted.event;
  event.event_class = "training_hang";
  event.severity = EventSeverity::kError;
  event.summary = "Training " + who + " hung after " + where + "; other ranks reached seq " +
                  std::to_string(hang.furthest_seq);
  if (!hang.job.empty()) event.fields.emplace_back("job_id", hang.job);
  event.fields.emplace_back("rank", std::to_string(hang.rank));
  event.fields.emplace_back("Hostname", hostname);
  if (!hang.uuid.empty()) event.fields.emplace_back("UUID", hang.uuid);
  event.fields.emplace_back("comm", comm);
  event.fields.emplace_back("seq", std::to_string(hang.seq));
  event.fields.emplace_back("op", op);
  event.fields.emplace_back("furthest_seq", std::to_string(hang.furthest_seq));
  event.fields.emplace_back("stalled_seconds", stalled);
  posted.line = "training_hang: " + who + " on " + hostname + (hang.gpu.empty() ? "" : " GPU " + hang.gpu) +
                " has not passed " + where + " while other ranks reached seq " +
                std::to_string(hang.furthest_seq);
  return posted;
}

}  // namespace gpuscope
