// What every gpuscope BPF program shares: the ring buffer its records go to, the counter of records lost
// to a full ring, and the task header of every record.
#pragma once

// The kernel's types first: the libbpf headers below use them.
#include "vmlinux.h"
// (a comment between keeps the formatter from sorting vmlinux.h after them)
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "records.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// Records for the agent; its size is set by the loader before load (bpf_map__set_max_entries).
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 * 1024 * 1024);
} records SEC(".maps");

// [0]: records the ring had no room for.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost(void) {
  __u32 zero = 0;
  __u64* n = bpf_map_lookup_elem(&lost, &zero);
  if (n) __sync_fetch_and_add(n, 1);
}

static __always_inline void fill_task(struct gpuscope_task* t) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u64 uid_gid = bpf_get_current_uid_gid();
  t->tgid = pid_tgid >> 32;
  t->pid = (__u32)pid_tgid;
  t->uid = (__u32)uid_gid;
  t->gid = uid_gid >> 32;
  t->cgroup_id = bpf_get_current_cgroup_id();
  struct task_struct* task = bpf_get_current_task_btf();
  t->ppid = BPF_CORE_READ(task, real_parent, tgid);
  t->pad = 0;
  bpf_get_current_comm(t->comm, sizeof(t->comm));
}
