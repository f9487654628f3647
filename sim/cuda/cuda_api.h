// The part of the CUDA driver API (cuda.h) that the stand-in libcuda.so.1 implements: NVIDIA's names,
// types, values and signatures, declared here so the library, the workload driver and the tests are
// compiled against one declaration (no CUDA toolkit on the build machines). The enum values are cuda.h's.
//
// Thread-safety: see cuda_entry.cc; every function may be called from any thread.
#pragma once

#include <stddef.h>  // size_t (a C header: this one is C-compatible)

#ifdef __cplusplus
extern "C" {
#endif

// In C++ the enum gets int as its fixed underlying type: a caller may pass any int (cuGetErrorName(12345)),
// and without a fixed type a value outside the enumerators' range is undefined behaviour in C++. The ABI
// is cuda.h's either way (an int).
#ifdef __cplusplus
#define GPUSCOPE_CUDA_ENUM_BASE : int
#else
#define GPUSCOPE_CUDA_ENUM_BASE
#endif

typedef enum cudaError_enum GPUSCOPE_CUDA_ENUM_BASE {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
} CUresult;

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;  // CUdeviceptr_v2 in cuda.h: the _v2 entry points take this one
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;

// cuMemAllocManaged's flags (CUmemAttach_flags).
enum { CU_MEM_ATTACH_GLOBAL = 0x1, CU_MEM_ATTACH_HOST = 0x2 };

CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int* driverVersion);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetName(char* name, int len, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext* pctx);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuMemGetInfo_v2(size_t* free, size_t* total);
CUresult cuGetErrorName(CUresult error, const char** pStr);
CUresult cuGetErrorString(CUresult error, const char** pStr);
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags);

#ifdef __cplusplus
}  // extern "C"
#endif
