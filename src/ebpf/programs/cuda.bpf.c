// CUDA device memory per process: uprobes on libcuda's allocation and free entry points. The loader
// attaches these programs to each libcuda.so it finds (by file, so every process mapping it is covered,
// including those started later): cuda_alloc_enter and cuda_alloc_exit (a uretprobe) on cuMemAlloc_v2,
// cuMemAllocAsync and cuMemAllocManaged, whose first two arguments are alike (CUdeviceptr* dptr, size_t
// bytesize); cuda_free on cuMemFree_v2 and cuMemFreeAsync (CUdeviceptr dptr first). Which entry point
// fired is told by the attach cookie (gpuscope_cuda_call).
#include "common.bpf.h"

struct pending_alloc {
  __u64 dptr_address;  // where the caller wants the device pointer written
  __u64 bytes;
  __u32 call;
  __u32 pad;
};

// Allocations between entry and return, by thread.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct pending_alloc);
} pending SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(cuda_alloc_enter, void* dptr, __u64 bytesize) {
  __u64 id = bpf_get_current_pid_tgid();
  struct pending_alloc p = {};
  p.dptr_address = (__u64)dptr;
  p.bytes = bytesize;
  p.call = (__u32)bpf_get_attach_cookie(ctx);
  bpf_map_update_elem(&pending, &id, &p, BPF_ANY);
  return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(cuda_alloc_exit, int result) {
  __u64 id = bpf_get_current_pid_tgid();
  struct pending_alloc* p = bpf_map_lookup_elem(&pending, &id);
  if (!p) return 0;
  struct gpuscope_cuda_record* r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
  if (!r) {
    count_lost();
    bpf_map_delete_elem(&pending, &id);
    return 0;
  }
  r->kind = GPUSCOPE_RECORD_CUDA_ALLOC;
  r->call = p->call;
  fill_task(&r->task);
  r->bytes = p->bytes;
  r->result = result;
  r->pad = 0;
  r->device_ptr = 0;
  if (result == 0) bpf_probe_read_user(&r->device_ptr, sizeof(r->device_ptr), (void*)p->dptr_address);
  bpf_map_delete_elem(&pending, &id);
  bpf_ringbuf_submit(r, 0);
  return 0;
}

SEC("uprobe")
int BPF_KPROBE(cuda_free, __u64 dptr) {
  struct gpuscope_cuda_record* r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
  if (!r) {
    count_lost();
    return 0;
  }
  r->kind = GPUSCOPE_RECORD_CUDA_FREE;
  r->call = (__u32)bpf_get_attach_cookie(ctx);
  fill_task(&r->task);
  r->device_ptr = dptr;
  r->bytes = 0;
  r->result = 0;
  r->pad = 0;
  bpf_ringbuf_submit(r, 0);
  return 0;
}
