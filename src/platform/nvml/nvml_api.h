// The NVML entry points and types gpuscope uses, declared by the project itself so that building needs
// no CUDA headers. Names, layouts and constants are NVIDIA's (nvml.h, API version 13); each struct below
// is ABI-relevant: change one only to follow NVML itself. The test nvml_api_check_test compiles every
// declaration here against NVIDIA's own nvml.h (from the go-nvml module pinned in scripts/versions.env):
// function types, struct sizes and field offsets, enumerators and constants must all agree.
//
// GPUSCOPE_NVML_FUNCTIONS is the single list of entry points. The loader (nvml_library.h) resolves each
// of them lazily with dlsym, and the simulator (sim/) implements exactly this list, so a function that
// is used but not listed cannot exist.
//
// Thread-safety: declarations only.
#pragma once

#include <cstdint>

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS 36
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1
#define NVML_VALUE_NOT_AVAILABLE (-1)

typedef enum nvmlEnableState_enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3
} nvmlClockType_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

typedef enum nvmlMemoryErrorType_enum {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,   // single-bit
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1  // double-bit
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
  NVML_VOLATILE_ECC = 0,  // reset when the driver loads
  NVML_AGGREGATE_ECC = 1  // lifetime of the device
} nvmlEccCounterType_t;

typedef enum nvmlPageRetirementCause_enum {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
} nvmlPageRetirementCause_t;

typedef enum nvmlPcieUtilCounter_enum {
  NVML_PCIE_UTIL_TX_BYTES = 0,  // KB/s
  NVML_PCIE_UTIL_RX_BYTES = 1
} nvmlPcieUtilCounter_t;

typedef enum nvmlNvLinkErrorCounter_enum {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
  NVML_NVLINK_ERROR_DL_ECC_DATA = 4
} nvmlNvLinkErrorCounter_t;

typedef enum nvmlPerfPolicyType_enum {
  NVML_PERF_POLICY_POWER = 0,
  NVML_PERF_POLICY_THERMAL = 1,
  NVML_PERF_POLICY_SYNC_BOOST = 2,
  NVML_PERF_POLICY_BOARD_LIMIT = 3,
  NVML_PERF_POLICY_LOW_UTILIZATION = 4,
  NVML_PERF_POLICY_RELIABILITY = 5,
  NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10,
  NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11
} nvmlPerfPolicyType_t;

typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

// Field ids for nvmlDeviceGetFieldValues. scopeId selects the NVLink link where a field is per link.
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138  // KiB, cumulative, per link (scopeId)
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // value is valid only when NVML_SUCCESS
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "%08X:%02X:%02X.0"
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent
} nvmlUtilization_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;  // set to nvmlMemory_v2
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
// NVML_STRUCT_VERSION(Memory, 2): the struct size with the version in the top byte.
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2 << 24U)))

typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned int gpuInstanceId;        // 0xFFFFFFFF when MIG is off
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlViolationTime_st {
  unsigned long long referenceTime;  // microseconds
  unsigned long long violationTime;  // nanoseconds
} nvmlViolationTime_t;

// Clock event (throttle) reasons, nvmlDeviceGetCurrentClocksEventReasons. NVML 13 spells the hardware
// reasons only with the older "Throttle" name.
#define nvmlClocksEventReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x0000000000000002ULL
#define nvmlClocksEventReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksThrottleReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksEventReasonSyncBoost 0x0000000000000010ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown 0x0000000000000080ULL
#define nvmlClocksEventReasonDisplayClockSetting 0x0000000000000100ULL

// Events.
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError (999: unknown)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

// GPU Performance Monitoring (Hopper and newer).
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1
#define NVML_GPM_METRIC_MAX 477  // an enumerator of nvmlGpmMetricId_t in nvml.h
typedef enum nvmlGpmMetricId_enum {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_INTEGER_UTIL = 4,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
  NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
  NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,  // MiB/s
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,  // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61
} nvmlGpmMetricId_t;

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;  // percent (0-100) for *_UTIL, MiB/s for *_PER_SEC
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

}  // extern "C"

// X(name, return type, parameter list, argument names). Every NVML function gpuscope calls.
// Those marked optional in the loader may be absent on old drivers; the caller then treats the field
// as not supported. nvmlErrorString is listed apart because it returns a string.
#define GPUSCOPE_NVML_FUNCTIONS(X)                                                                           \
  X(nvmlInit_v2, (), ())                                                                                     \
  X(nvmlShutdown, (), ())                                                                                    \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned int length), (version, length))                     \
  X(nvmlSystemGetNVMLVersion, (char* version, unsigned int length), (version, length))                       \
  X(nvmlDeviceGetCount_v2, (unsigned int* count), (count))                                                   \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device), (index, device))              \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length), (device, name, length))       \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length), (device, uuid, length))       \
  X(nvmlDeviceGetSerial, (nvmlDevice_t device, char* serial, unsigned int length), (device, serial, length)) \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci), (device, pci))                      \
  X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int* minor), (device, minor))                   \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index), (device, index))                         \
  X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz),                  \
    (device, type, mhz))                                                                                     \
  X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz),               \
    (device, type, mhz))                                                                                     \
  X(nvmlDeviceGetTemperature, (nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int* temp),    \
    (device, sensor, temp))                                                                                  \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int* milliwatts), (device, milliwatts))          \
  X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int* milliwatts), (device, milliwatts))  \
  X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long* millijoules),             \
    (device, millijoules))                                                                                   \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization),                   \
    (device, utilization))                                                                                   \
  X(nvmlDeviceGetEncoderUtilization,                                                                         \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* sampling_period_us),                      \
    (device, utilization, sampling_period_us))                                                               \
  X(nvmlDeviceGetDecoderUtilization,                                                                         \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* sampling_period_us),                      \
    (device, utilization, sampling_period_us))                                                               \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory), (device, memory))           \
  X(nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int* value), (device, value))             \
  X(nvmlDeviceGetPcieThroughput, (nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int* kbps),   \
    (device, counter, kbps))                                                                                 \
  X(nvmlDeviceGetCurrPcieLinkGeneration, (nvmlDevice_t device, unsigned int* gen), (device, gen))            \
  X(nvmlDeviceGetMaxPcieLinkGeneration, (nvmlDevice_t device, unsigned int* gen), (device, gen))             \
  X(nvmlDeviceGetCurrPcieLinkWidth, (nvmlDevice_t device, unsigned int* width), (device, width))             \
  X(nvmlDeviceGetMaxPcieLinkWidth, (nvmlDevice_t device, unsigned int* width), (device, width))              \
  X(nvmlDeviceGetTotalEccErrors,                                                                             \
    (nvmlDevice_t device, nvmlMemoryErrorType_t error_type, nvmlEccCounterType_t counter_type,               \
     unsigned long long* count),                                                                             \
    (device, error_type, counter_type, count))                                                               \
  X(nvmlDeviceGetRetiredPages,                                                                               \
    (nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int* page_count,                         \
     unsigned long long* addresses),                                                                         \
    (device, cause, page_count, addresses))                                                                  \
  X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t device, nvmlEnableState_t * is_pending),           \
    (device, is_pending))                                                                                    \
  X(nvmlDeviceGetRemappedRows,                                                                               \
    (nvmlDevice_t device, unsigned int* corr_rows, unsigned int* unc_rows, unsigned int* is_pending,         \
     unsigned int* failure_occurred),                                                                        \
    (device, corr_rows, unc_rows, is_pending, failure_occurred))                                             \
  X(nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* is_active),        \
    (device, link, is_active))                                                                               \
  X(nvmlDeviceGetNvLinkErrorCounter,                                                                         \
    (nvmlDevice_t device, unsigned int link, nvmlNvLinkErrorCounter_t counter, unsigned long long* value),   \
    (device, link, counter, value))                                                                          \
  X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int count, nvmlFieldValue_t* values),                    \
    (device, count, values))                                                                                 \
  X(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long* reasons),              \
    (device, reasons))                                                                                       \
  X(nvmlDeviceGetCurrentClocksThrottleReasons, (nvmlDevice_t device, unsigned long long* reasons),           \
    (device, reasons))                                                                                       \
  X(nvmlDeviceGetViolationStatus,                                                                            \
    (nvmlDevice_t device, nvmlPerfPolicyType_t policy, nvmlViolationTime_t * time), (device, policy, time))  \
  X(nvmlDeviceGetComputeRunningProcesses_v3,                                                                 \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos), (device, count, infos))            \
  X(nvmlDeviceGetGraphicsRunningProcesses_v3,                                                                \
    (nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos), (device, count, infos))            \
  X(nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int* current_mode, unsigned int* pending_mode),     \
    (device, current_mode, pending_mode))                                                                    \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int* count), (device, count))             \
  X(nvmlDeviceGetMigDeviceHandleByIndex,                                                                     \
    (nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig_device), (device, index, mig_device))        \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int* id), (device, id))                       \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int* id), (device, id))                   \
  X(nvmlEventSetCreate, (nvmlEventSet_t * set), (set))                                                       \
  X(nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long* event_types),                \
    (device, event_types))                                                                                   \
  X(nvmlDeviceRegisterEvents, (nvmlDevice_t device, unsigned long long event_types, nvmlEventSet_t set),     \
    (device, event_types, set))                                                                              \
  X(nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeout_ms),              \
    (set, data, timeout_ms))                                                                                 \
  X(nvmlEventSetFree, (nvmlEventSet_t set), (set))                                                           \
  X(nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t * support), (device, support))         \
  X(nvmlGpmSampleAlloc, (nvmlGpmSample_t * sample), (sample))                                                \
  X(nvmlGpmSampleFree, (nvmlGpmSample_t sample), (sample))                                                   \
  X(nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t sample), (device, sample))                       \
  X(nvmlGpmMigSampleGet, (nvmlDevice_t device, unsigned int gpu_instance_id, nvmlGpmSample_t sample),        \
    (device, gpu_instance_id, sample))                                                                       \
  X(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metrics_get), (metrics_get))

extern "C" {
// Declarations with C linkage, so that the simulator's definitions are checked against this list.
#define GPUSCOPE_NVML_DECLARE(name, params, args) nvmlReturn_t name params;
GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_DECLARE)
#undef GPUSCOPE_NVML_DECLARE
const char* nvmlErrorString(nvmlReturn_t result);
}
