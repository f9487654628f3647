// The records the BPF programs (src/ebpf/programs/*.bpf.c) write into their ring buffers and maps, shared
// word for word by the programs and the agent's reader (src/ebpf/ebpf_programs.cc). Fixed-width fields
// only, every struct padded to a multiple of 8 bytes, so both compilers lay them out alike; the reader
// checks each record's size before it reads it.
//
// Thread-safety: plain data.
#pragma once

#ifdef __bpf__
// The programs include vmlinux.h (the kernel's types), which defines these.
#else
#include <linux/types.h>
#endif

#define GPUSCOPE_COMM_LEN 16
#define GPUSCOPE_NAME_LEN 64   // bytes kept of each path component below a watched directory
#define GPUSCOPE_MAX_NAMES 6   // path components kept below a watched directory (the deepest first)
#define GPUSCOPE_MAX_DEPTH 48  // ancestors walked from an opened file to find a watched directory
#define GPUSCOPE_MAX_WATCH_DIRS 64

// What each record is; the first field of every record.
enum gpuscope_record_kind {
  GPUSCOPE_RECORD_CUDA_ALLOC = 1,
  GPUSCOPE_RECORD_CUDA_FREE = 2,
  GPUSCOPE_RECORD_CONNECT = 3,
  GPUSCOPE_RECORD_FILE_OPEN = 4,
};

// Which CUDA entry point a CUDA record came from.
enum gpuscope_cuda_call {
  GPUSCOPE_CUDA_MEM_ALLOC = 1,          // cuMemAlloc_v2(CUdeviceptr*, size_t)
  GPUSCOPE_CUDA_MEM_ALLOC_ASYNC = 2,    // cuMemAllocAsync(CUdeviceptr*, size_t, CUstream)
  GPUSCOPE_CUDA_MEM_ALLOC_MANAGED = 3,  // cuMemAllocManaged(CUdeviceptr*, size_t, unsigned int)
  GPUSCOPE_CUDA_MEM_FREE = 4,           // cuMemFree_v2(CUdeviceptr)
  GPUSCOPE_CUDA_MEM_FREE_ASYNC = 5,     // cuMemFreeAsync(CUdeviceptr, CUstream)
};

// The process that made a call, as the kernel saw it at the hook.
struct gpuscope_task {
  __u32 tgid;  // the process id
  __u32 pid;   // the thread id
  __u32 uid;
  __u32 gid;
  __u64 cgroup_id;  // bpf_get_current_cgroup_id(): the unified (v2) hierarchy's cgroup
  // The parent process: a short-lived child (a curl, an scp) has often exited before its record is read,
  // while the job process that started it, in the same job, still runs.
  __u32 ppid;
  __u32 pad;
  char comm[GPUSCOPE_COMM_LEN];  // the thread's name (pt_main_thread for PyTorch 2.3-2.4's main thread)
};

// An allocation's return (the uretprobe) or a free (the uprobe).
struct gpuscope_cuda_record {
  __u32 kind;  // GPUSCOPE_RECORD_CUDA_ALLOC or GPUSCOPE_RECORD_CUDA_FREE
  __u32 call;  // gpuscope_cuda_call
  struct gpuscope_task task;
  __u64 device_ptr;  // the allocation's address (0 when it failed)
  __u64 bytes;       // the size asked for (allocations)
  __s32 result;      // the CUresult returned (allocations); 0 for frees
  __u32 pad;
};

// An outbound TCP connect: the socket entered SYN_SENT.
struct gpuscope_connect_record {
  __u32 kind;    // GPUSCOPE_RECORD_CONNECT
  __u16 family;  // AF_INET (2) or AF_INET6 (10)
  __u16 dport;   // host byte order
  struct gpuscope_task task;
  __u8 daddr[16];  // IPv4 in the first 4 bytes, network order
  __u8 saddr[16];
  __u16 sport;  // host byte order
  __u16 pad[3];
};

// An open that resolved to a file below a watched directory.
struct gpuscope_file_open_record {
  __u32 kind;  // GPUSCOPE_RECORD_FILE_OPEN
  __u32 dir;   // index of the watched directory (the order the agent wrote them)
  struct gpuscope_task task;
  __s32 fd;
  __u32 f_mode;     // the struct file's f_mode: FMODE_READ 0x1, FMODE_WRITE 0x2
  __u32 owner_uid;  // the file's owner
  __u32 depth;      // components between the watched directory and the file (1: directly in it)
  __u64 inode;
  // The path below the watched directory, the file's own name first; names[i] for i < min(depth,
  // GPUSCOPE_MAX_NAMES); a deeper path keeps its GPUSCOPE_MAX_NAMES deepest components.
  char names[GPUSCOPE_MAX_NAMES][GPUSCOPE_NAME_LEN];
};

// A watched directory, the key of the files program's watch map: the directory's inode and the kernel's
// device number of its file system (MKDEV: major << 20 | minor, not the st_dev encoding of stat(2)).
struct gpuscope_watch_key {
  __u64 inode;
  __u32 dev;
  __u32 pad;
};

// A descriptor of a file below a watched directory, the key of the tracked descriptors.
struct gpuscope_fd_key {
  __u32 tgid;
  __s32 fd;
};

// Reads and writes per (process, watched directory, operation), summed in the kernel.
struct gpuscope_io_key {
  __u32 tgid;
  __u32 dir;
  __u32 op;  // 0 read, 1 write
  __u32 pad;
};

struct gpuscope_io_value {
  __u64 bytes;
  __u64 nanoseconds;
  __u64 calls;
  __u64 cgroup_id;
};
