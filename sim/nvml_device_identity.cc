// NVML entry points for a device's identity (name, UUID, serial, PCI, minor number, index) and its MIG
// mode, MIG device handles and instance ids.
//
// Thread-safety: every entry point may be called from any thread.
#include "sim/nvml_entry.h"

using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::CopyString;
using gpuscope::sim::nvml::Handle;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

extern "C" {

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    std::string value = c.config().model->name;
    if (c.mig >= 0) value += " MIG " + c.config().mig[c.mig].profile->name;
    return CopyString(value, name, length);
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    return CopyString(c.mig >= 0 ? c.sim->MigUuid(c.gpu, c.mig) : c.sim->Uuid(c.gpu), uuid, length);
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return OnDevice(device, Scope::kGpuOnly,
                  [&](Call& c) { return CopyString(c.sim->Serial(c.gpu), serial, length); });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = nvmlPciInfo_t{};
    const unsigned bus = c.sim->PciBus(c.gpu);
    std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", bus);
    std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", bus);
    pci->domain = 0;
    pci->bus = bus;
    pci->device = 0;
    pci->pciDeviceId = c.config().model->pci_device_id;
    pci->pciSubSystemId = c.config().model->pci_subsystem_id;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = c.sim->Minor(c.gpu);
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = c.gpu;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current_mode,
                                             unsigned int* pending_mode) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (current_mode == nullptr || pending_mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *current_mode = c.config().mig.empty() ? NVML_DEVICE_MIG_DISABLE : NVML_DEVICE_MIG_ENABLE;
    *pending_mode = *current_mode;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = c.config().mig.empty() ? 0 : 7;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t* mig_device) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (mig_device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= c.config().mig.size()) return NVML_ERROR_NOT_FOUND;
    *mig_device = Handle(c.gpu, static_cast<int>(index));
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    if (id == nullptr || c.mig < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *id = c.config().mig[c.mig].gpu_instance_id;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return OnDevice(device, Scope::kMigToo, [&](Call& c) {
    if (id == nullptr || c.mig < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *id = c.config().mig[c.mig].compute_instance_id;
    return NVML_SUCCESS;
  });
}

}  // extern "C"
