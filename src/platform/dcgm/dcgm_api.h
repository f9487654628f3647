// The DCGM entry points and types gpuscope uses, declared by the project itself so that building needs no
// DCGM headers or packages. Names, layouts and constants are NVIDIA's (DCGM 4's dcgm_agent.h,
// dcgm_structs.h and dcgm_fields.h); each struct below is ABI-relevant: change one only to follow DCGM
// itself. The test dcgm_api_check_test compiles every declaration here against NVIDIA's own headers (from
// the go-dcgm module pinned in scripts/versions.env): function types, struct sizes and field offsets,
// enumerators and constants must all agree.
//
// GPUSCOPE_DCGM_FUNCTIONS is the single list of entry points. The loader (dcgm_library.h) resolves each
// of them lazily with dlsym, and the stand-in library (sim/dcgm/) implements exactly this list, so a
// function that is used but not listed cannot exist.
//
// Thread-safety: declarations only.
#pragma once

#include <cstdint>

extern "C" {

typedef enum dcgmReturn_enum {
  DCGM_ST_OK = 0,
  DCGM_ST_BADPARAM = -1,
  DCGM_ST_GENERIC_ERROR = -3,
  DCGM_ST_MEMORY = -4,
  DCGM_ST_NOT_CONFIGURED = -5,
  DCGM_ST_NOT_SUPPORTED = -6,
  DCGM_ST_INIT_ERROR = -7,
  DCGM_ST_NVML_ERROR = -8,
  DCGM_ST_PENDING = -9,
  DCGM_ST_UNINITIALIZED = -10,
  DCGM_ST_TIMEOUT = -11,
  DCGM_ST_VER_MISMATCH = -12,
  DCGM_ST_UNKNOWN_FIELD = -13,
  DCGM_ST_NO_DATA = -14,
  DCGM_ST_STALE_DATA = -15,
  DCGM_ST_NOT_WATCHED = -16,
  DCGM_ST_NO_PERMISSION = -17,
  DCGM_ST_GPU_IS_LOST = -18,
  DCGM_ST_RESET_REQUIRED = -19,
  DCGM_ST_FUNCTION_NOT_FOUND = -20,
  DCGM_ST_CONNECTION_NOT_VALID = -21,
  DCGM_ST_GPU_NOT_SUPPORTED = -22,
  DCGM_ST_GROUP_INCOMPATIBLE = -23,
  DCGM_ST_MAX_LIMIT = -24,
  DCGM_ST_LIBRARY_NOT_FOUND = -25,
  DCGM_ST_DUPLICATE_KEY = -26,
  DCGM_ST_REQUIRES_ROOT = -29,
  DCGM_ST_INSUFFICIENT_SIZE = -31,
  DCGM_ST_FIELD_UNSUPPORTED_BY_API = -32,
  DCGM_ST_MODULE_NOT_LOADED = -33,
  DCGM_ST_IN_USE = -34,
  DCGM_ST_GROUP_IS_EMPTY = -35,
  DCGM_ST_PROFILING_NOT_SUPPORTED = -36,
  DCGM_ST_PROFILING_LIBRARY_ERROR = -37,
  DCGM_ST_PROFILING_MULTI_PASS = -38,
  DCGM_ST_INSUFFICIENT_DRIVER_VERSION = -44,
  DCGM_ST_INSTANCE_NOT_FOUND = -45,
  DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND = -46,
  DCGM_ST_PAUSED = -54,
  DCGM_ST_ALREADY_INITIALIZED = -55,
  DCGM_ST_NVML_NOT_LOADED = -56,
  DCGM_ST_NVML_DRIVER_TIMEOUT = -57,
} dcgmReturn_t;

typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;

#define MAKE_DCGM_VERSION(typeName, ver) (unsigned int)(sizeof(typeName) | ((unsigned long)(ver) << 24U))

#define DCGM_MAX_NUM_DEVICES 32
#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096
#define DCGM_HE_PORT_NUMBER 5555
#define DCGM_GROUP_MAX_ENTITIES_V2 1024
#define DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2 DCGM_GROUP_MAX_ENTITIES_V2
#define DCGM_MAX_TOTAL_INSTANCES_PER_GPU 14
#define DCGM_MAX_HIERARCHY_INFO DCGM_MAX_NUM_DEVICES* DCGM_MAX_TOTAL_INSTANCES_PER_GPU
#define DCGM_FV_FLAG_LIVE_DATA 0x00000001

// Blank values: a field without a value (not yet sampled, not supported, paused) is at or above these.
#define DCGM_INT32_BLANK 0x7ffffff0
#define DCGM_INT64_BLANK 0x7ffffffffffffff0
#define DCGM_FP64_BLANK 140737488355328.0

// Field value types (dcgmFieldValue_v2.fieldType).
#define DCGM_FT_BINARY 'b'
#define DCGM_FT_DOUBLE 'd'
#define DCGM_FT_INT64 'i'
#define DCGM_FT_STRING 's'
#define DCGM_FT_TIMESTAMP 't'

// The field ids gpuscope reads (dcgm_fields.h).
#define DCGM_FI_DEV_UUID 54
#define DCGM_FI_PROF_GR_ENGINE_ACTIVE 1001
#define DCGM_FI_PROF_SM_ACTIVE 1002
#define DCGM_FI_PROF_SM_OCCUPANCY 1003
#define DCGM_FI_PROF_PIPE_TENSOR_ACTIVE 1004
#define DCGM_FI_PROF_DRAM_ACTIVE 1005
#define DCGM_FI_PROF_PIPE_FP64_ACTIVE 1006
#define DCGM_FI_PROF_PIPE_FP32_ACTIVE 1007
#define DCGM_FI_PROF_PIPE_FP16_ACTIVE 1008
#define DCGM_FI_PROF_PCIE_TX_BYTES 1009
#define DCGM_FI_PROF_PCIE_RX_BYTES 1010
#define DCGM_FI_PROF_NVLINK_TX_BYTES 1011
#define DCGM_FI_PROF_NVLINK_RX_BYTES 1012

typedef enum dcgmOperationMode_enum {
  DCGM_OPERATION_MODE_AUTO = 1,
  DCGM_OPERATION_MODE_MANUAL = 2
} dcgmOperationMode_t;

typedef enum dcgmGroupType_enum {
  DCGM_GROUP_DEFAULT = 0,
  DCGM_GROUP_EMPTY = 1,
  DCGM_GROUP_DEFAULT_NVSWITCHES = 2,
  DCGM_GROUP_DEFAULT_INSTANCES = 3,
  DCGM_GROUP_DEFAULT_COMPUTE_INSTANCES = 4,
  DCGM_GROUP_DEFAULT_EVERYTHING = 5,
} dcgmGroupType_t;

typedef enum dcgm_field_entity_group_t {
  DCGM_FE_NONE = 0,
  DCGM_FE_GPU,
  DCGM_FE_VGPU,
  DCGM_FE_SWITCH,
  DCGM_FE_GPU_I,
  DCGM_FE_GPU_CI,
  DCGM_FE_LINK,
  DCGM_FE_CPU,
  DCGM_FE_CPU_CORE,
  DCGM_FE_CONNECTX,
  DCGM_FE_COUNT
} dcgm_field_entity_group_t;

typedef unsigned int dcgm_field_eid_t;

typedef struct {
  dcgm_field_entity_group_t entityGroupId;
  dcgm_field_eid_t entityId;
} dcgmGroupEntityPair_t;

// dcgmConnect_v2's options (v2: with a timeout and unix sockets).
typedef struct {
  unsigned int version;
  unsigned int persistAfterDisconnect;  // 0: the host engine drops this connection's watches when it ends
  unsigned int timeoutMs;
  unsigned int addressIsUnixSocket;
} dcgmConnectV2Params_v2;
typedef dcgmConnectV2Params_v2 dcgmConnectV2Params_t;
#define dcgmConnectV2Params_version2 MAKE_DCGM_VERSION(dcgmConnectV2Params_v2, 2)
#define dcgmConnectV2Params_version dcgmConnectV2Params_version2

// One entry of the MIG hierarchy: a GPU instance (DCGM_FE_GPU_I) or compute instance (DCGM_FE_GPU_CI).
typedef struct {
  char gpuUuid[128];
  unsigned int nvmlGpuIndex;
  unsigned int nvmlInstanceId;         // the GPU instance id NVML gives (GPU_I_ID)
  unsigned int nvmlComputeInstanceId;  // -1 for GPU instances
  unsigned int nvmlMigProfileId;
  unsigned int nvmlProfileSlices;
} dcgmMigEntityInfo_t;

typedef struct {
  dcgmGroupEntityPair_t entity;
  dcgmGroupEntityPair_t parent;
  dcgmMigEntityInfo_t info;
} dcgmMigHierarchyInfo_v2;

typedef struct {
  unsigned int version;
  unsigned int count;
  dcgmMigHierarchyInfo_v2 entityList[DCGM_MAX_HIERARCHY_INFO];
} dcgmMigHierarchy_v2;
#define dcgmMigHierarchy_version2 MAKE_DCGM_VERSION(dcgmMigHierarchy_v2, 2)

typedef struct {
  unsigned int version;
  dcgm_field_entity_group_t entityGroupId;
  dcgm_field_eid_t entityId;
  unsigned short fieldId;
  unsigned short fieldType;  // DCGM_FT_*
  int status;                // DCGM_ST_OK or the reason the value is missing
  unsigned int unused;
  int64_t ts;  // microseconds since 1970
  union {
    int64_t i64;
    double dbl;
    char str[DCGM_MAX_STR_LENGTH];
    char blob[DCGM_MAX_BLOB_LENGTH];
  } value;
} dcgmFieldValue_v2;
#define dcgmFieldValue_version2 MAKE_DCGM_VERSION(dcgmFieldValue_v2, 2)

typedef enum dcgmHealthSystems_enum {
  DCGM_HEALTH_WATCH_PCIE = 0x1,
  DCGM_HEALTH_WATCH_NVLINK = 0x2,
  DCGM_HEALTH_WATCH_PMU = 0x4,
  DCGM_HEALTH_WATCH_MCU = 0x8,
  DCGM_HEALTH_WATCH_MEM = 0x10,
  DCGM_HEALTH_WATCH_SM = 0x20,
  DCGM_HEALTH_WATCH_INFOROM = 0x40,
  DCGM_HEALTH_WATCH_THERMAL = 0x80,
  DCGM_HEALTH_WATCH_POWER = 0x100,
  DCGM_HEALTH_WATCH_DRIVER = 0x200,
  DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL = 0x400,
  DCGM_HEALTH_WATCH_NVSWITCH_FATAL = 0x800,
  DCGM_HEALTH_WATCH_ALL = 0xFFFFFFFF
} dcgmHealthSystems_t;

typedef enum dcgmHealthWatchResult_enum {
  DCGM_HEALTH_RESULT_PASS = 0,
  DCGM_HEALTH_RESULT_WARN = 10,
  DCGM_HEALTH_RESULT_FAIL = 20,
} dcgmHealthWatchResults_t;

typedef struct {
  char msg[1024];
  unsigned int code;  // a dcgmError_t (dcgm_errors.h)
} dcgmDiagErrorDetail_t;

typedef struct {
  dcgmHealthSystems_t system;
  dcgmHealthWatchResults_t health;
  dcgmDiagErrorDetail_t error;
  dcgmGroupEntityPair_t entityInfo;
} dcgmIncidentInfo_t;

// About 1 MiB: allocate it once, never on a stack.
typedef struct {
  unsigned int version;
  dcgmHealthWatchResults_t overallHealth;
  unsigned int incidentCount;
  dcgmIncidentInfo_t incidents[DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2];
} dcgmHealthResponse_v5;
typedef dcgmHealthResponse_v5 dcgmHealthResponse_t;
#define dcgmHealthResponse_version5 MAKE_DCGM_VERSION(dcgmHealthResponse_v5, 5)
#define dcgmHealthResponse_version dcgmHealthResponse_version5

dcgmReturn_t dcgmInit(void);
dcgmReturn_t dcgmShutdown(void);
dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t opMode, dcgmHandle_t* pDcgmHandle);
dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle);
dcgmReturn_t dcgmConnect_v2(const char* ipAddress, dcgmConnectV2Params_t* connectParams,
                            dcgmHandle_t* pDcgmHandle);
dcgmReturn_t dcgmDisconnect(dcgmHandle_t pDcgmHandle);
dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t pDcgmHandle,
                                        unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES], int* count);
dcgmReturn_t dcgmGetGpuInstanceHierarchy(dcgmHandle_t dcgmHandle, dcgmMigHierarchy_v2* hierarchy);
dcgmReturn_t dcgmGroupCreate(dcgmHandle_t pDcgmHandle, dcgmGroupType_t type, const char* groupName,
                             dcgmGpuGrp_t* pDcgmGrpId);
dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId);
dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                dcgm_field_entity_group_t entityGroupId, dcgm_field_eid_t entityId);
dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t dcgmHandle, int numFieldIds, const unsigned short* fieldIds,
                                  const char* fieldGroupName, dcgmFieldGrp_t* dcgmFieldGroupId);
dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t dcgmHandle, dcgmFieldGrp_t dcgmFieldGroupId);
dcgmReturn_t dcgmWatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId,
                             long long updateFreq, double maxKeepAge, int maxKeepSamples);
dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId);
dcgmReturn_t dcgmEntitiesGetLatestValues(dcgmHandle_t pDcgmHandle, dcgmGroupEntityPair_t entities[],
                                         unsigned int entityCount, unsigned short fields[],
                                         unsigned int fieldCount, unsigned int flags,
                                         dcgmFieldValue_v2 values[]);
dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t pDcgmHandle, int waitForUpdate);
dcgmReturn_t dcgmHealthSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthSystems_t systems);
dcgmReturn_t dcgmHealthCheck(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthResponse_t* results);
dcgmReturn_t dcgmProfPause(dcgmHandle_t pDcgmHandle);
dcgmReturn_t dcgmProfResume(dcgmHandle_t pDcgmHandle);
// DCGM's message for a return code (exported under this plain name); resolved apart from the list below.
const char* errorString(dcgmReturn_t result);

}  // extern "C"

// X(name, (parameters), (arguments)) for every entry point above that returns dcgmReturn_t, in one list.
#define GPUSCOPE_DCGM_FUNCTIONS(X)                                                                           \
  X(dcgmInit, (), ())                                                                                        \
  X(dcgmShutdown, (), ())                                                                                    \
  X(dcgmStartEmbedded, (dcgmOperationMode_t opMode, dcgmHandle_t * handle), (opMode, handle))                \
  X(dcgmStopEmbedded, (dcgmHandle_t handle), (handle))                                                       \
  X(dcgmConnect_v2, (const char* address, dcgmConnectV2Params_t* params, dcgmHandle_t* handle),              \
    (address, params, handle))                                                                               \
  X(dcgmDisconnect, (dcgmHandle_t handle), (handle))                                                         \
  X(dcgmGetAllSupportedDevices, (dcgmHandle_t handle, unsigned int* gpu_ids, int* count),                    \
    (handle, gpu_ids, count))                                                                                \
  X(dcgmGetGpuInstanceHierarchy, (dcgmHandle_t handle, dcgmMigHierarchy_v2 * hierarchy),                     \
    (handle, hierarchy))                                                                                     \
  X(dcgmGroupCreate, (dcgmHandle_t handle, dcgmGroupType_t type, const char* name, dcgmGpuGrp_t* group),     \
    (handle, type, name, group))                                                                             \
  X(dcgmGroupDestroy, (dcgmHandle_t handle, dcgmGpuGrp_t group), (handle, group))                            \
  X(dcgmGroupAddEntity,                                                                                      \
    (dcgmHandle_t handle, dcgmGpuGrp_t group, dcgm_field_entity_group_t entity_group,                        \
     dcgm_field_eid_t entity),                                                                               \
    (handle, group, entity_group, entity))                                                                   \
  X(dcgmFieldGroupCreate,                                                                                    \
    (dcgmHandle_t handle, int count, const unsigned short* fields, const char* name, dcgmFieldGrp_t* group), \
    (handle, count, fields, name, group))                                                                    \
  X(dcgmFieldGroupDestroy, (dcgmHandle_t handle, dcgmFieldGrp_t group), (handle, group))                     \
  X(dcgmWatchFields,                                                                                         \
    (dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fields, long long update_us, double keep_age_s, \
     int keep_samples),                                                                                      \
    (handle, group, fields, update_us, keep_age_s, keep_samples))                                            \
  X(dcgmUnwatchFields, (dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fields),                     \
    (handle, group, fields))                                                                                 \
  X(dcgmEntitiesGetLatestValues,                                                                             \
    (dcgmHandle_t handle, dcgmGroupEntityPair_t * entities, unsigned int entity_count,                       \
     unsigned short* fields, unsigned int field_count, unsigned int flags, dcgmFieldValue_v2* values),       \
    (handle, entities, entity_count, fields, field_count, flags, values))                                    \
  X(dcgmUpdateAllFields, (dcgmHandle_t handle, int wait), (handle, wait))                                    \
  X(dcgmHealthSet, (dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmHealthSystems_t systems),                   \
    (handle, group, systems))                                                                                \
  X(dcgmHealthCheck, (dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmHealthResponse_t * results),              \
    (handle, group, results))                                                                                \
  X(dcgmProfPause, (dcgmHandle_t handle), (handle))                                                          \
  X(dcgmProfResume, (dcgmHandle_t handle), (handle))
