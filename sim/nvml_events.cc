// NVML entry points for event sets: XID (critical) events, as the simulator's event queue delivers them.
//
// Thread-safety: every entry point may be called from any thread.
#include "sim/nvml_entry.h"

using gpuscope::sim::Simulator;
using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::Current;
using gpuscope::sim::nvml::Handle;
using gpuscope::sim::nvml::kNoInstance;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

extern "C" {

SIM_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = reinterpret_cast<nvmlEventSet_t>(sim->CreateEventSet());
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                         unsigned long long* event_types) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call&) {
    if (event_types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *event_types = nvmlEventTypeXidCriticalError;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long event_types,
                                                 nvmlEventSet_t set) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    auto* state = reinterpret_cast<Simulator::EventSetState*>(set);
    if (!c.sim->IsEventSet(state)) return NVML_ERROR_INVALID_ARGUMENT;
    c.sim->RegisterEvents(state, c.gpu, event_types);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                            unsigned int timeout_ms) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  auto* state = reinterpret_cast<Simulator::EventSetState*>(set);
  if (data == nullptr || !sim->IsEventSet(state)) return NVML_ERROR_INVALID_ARGUMENT;
  sim->PumpKernelLog(sim->Now());
  gpuscope::sim::SimEvent event;
  switch (sim->WaitEvent(state, timeout_ms, &event)) {
    case Simulator::WaitResult::kEvent:
      data->device = Handle(event.gpu, -1);
      data->eventType = nvmlEventTypeXidCriticalError;
      data->eventData = event.xid;
      data->gpuInstanceId = kNoInstance;
      data->computeInstanceId = kNoInstance;
      sim->PumpKernelLog(sim->Now());
      return NVML_SUCCESS;
    case Simulator::WaitResult::kTimeout:
      return NVML_ERROR_TIMEOUT;
    case Simulator::WaitResult::kShutdown:
      break;
  }
  return NVML_ERROR_UNINITIALIZED;
}

SIM_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  auto sim = Current();
  if (!sim) return NVML_ERROR_UNINITIALIZED;
  auto* state = reinterpret_cast<Simulator::EventSetState*>(set);
  if (!sim->IsEventSet(state)) return NVML_ERROR_INVALID_ARGUMENT;
  sim->FreeEventSet(state);
  return NVML_SUCCESS;
}

}  // extern "C"
