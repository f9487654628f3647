// Opens, reads and writes of files below the watched directories (checkpoints, datasets), on the BTF-typed
// raw tracepoints sys_enter and sys_exit (tp_btf: no tracefs, no kprobe), filtered by syscall number.
//
// An open is judged by what it opened, not by the path string: at the return of open, openat, openat2 and
// creat the program takes the new descriptor's struct file and walks its dentry up through the parents,
// crossing mount points, until it meets a watched directory (the agent fills `watched` with each
// directory's device and inode) or the root. A relative path, "..", a directory descriptor, a symbolic
// link or a bind mount all end at the same dentry, so none of them escapes the filter. A match sends a
// record with the path below the directory, and the descriptor is tracked until it is closed: the
// reads and writes on it (read, write, pread64, pwrite64, readv, writev) are timed and their bytes summed
// per (process, directory, operation) in `io`, which the agent reads.
#include "common.bpf.h"

#if defined(__TARGET_ARCH_arm64)
#define NR_READ 63
#define NR_WRITE 64
#define NR_READV 65
#define NR_WRITEV 66
#define NR_PREAD64 67
#define NR_PWRITE64 68
#define NR_CLOSE 57
#define NR_OPENAT 56
#define NR_OPEN -1
#define NR_CREAT -1
#define NR_OPENAT2 437
#define NR_DUP 23
#define NR_DUP2 -1
#define NR_DUP3 24
#define NR_FCNTL 25
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
#else
#define NR_READ 0
#define NR_WRITE 1
#define NR_OPEN 2
#define NR_CLOSE 3
#define NR_PREAD64 17
#define NR_PWRITE64 18
#define NR_READV 19
#define NR_WRITEV 20
#define NR_CREAT 85
#define NR_OPENAT 257
#define NR_OPENAT2 437
#define NR_DUP 32
#define NR_DUP2 33
#define NR_DUP3 292
#define NR_FCNTL 72
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#endif

#define S_IFMT_BITS 0170000
#define S_IFDIR_BITS 0040000

#define OP_READ 0
#define OP_WRITE 1
#define OP_DUP 2  // a dup of a tracked descriptor (or a dup2/dup3 onto any), between entry and return
#define NO_DIR 0xffffffff  // dup2/dup3 of an untracked descriptor: the new one is no longer tracked
#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, GPUSCOPE_MAX_WATCH_DIRS);
  __type(key, struct gpuscope_watch_key);
  __type(value, __u32);  // the directory's index
} watched SEC(".maps");

// The file systems (kernel device numbers) that hold a watched directory: an open whose chain of mounts
// touches none of them cannot be below one, and skips the walk (most opens on a node: libraries, /proc,
// /sys, /dev, when the checkpoints live on a file system of their own).
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, GPUSCOPE_MAX_WATCH_DIRS);
  __type(key, __u32);
  __type(value, __u32);
} watched_devs SEC(".maps");

// Descriptors of files below a watched directory -> the directory's index. LRU: a process that exits
// without closing leaves entries that age out.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct gpuscope_fd_key);
  __type(value, __u32);
} tracked SEC(".maps");

struct inflight_io {
  __u64 start_ns;
  __u32 dir;
  __u32 op;
};

// Reads and writes on tracked descriptors between entry and return, by thread.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct inflight_io);
} inflight SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct gpuscope_io_key);
  __type(value, struct gpuscope_io_value);
} io SEC(".maps");

// The struct file of descriptor `fd` of the current process, or null.
static __always_inline struct file* current_file(long fd) {
  struct task_struct* task = bpf_get_current_task_btf();
  struct fdtable* fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file** fds = BPF_CORE_READ(fdt, fd);
  struct file* f = 0;
  bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
  return f;
}

// The walk from an opened file up to a watched directory, one bpf_loop step per ancestor (the verifier
// checks the step once instead of every unrolled iteration).
struct walk {
  struct dentry* d;
  struct mount* mnt;
  __u32 dev;  // the current mount's file system (every dentry of a mount has its super block)
  struct dentry* below[GPUSCOPE_MAX_NAMES];  // the deepest components, the file's own first
  __u32 depth;                               // components walked below the current dentry
  __u32 dir;                                 // the watched directory's index, when found
  __u32 found;
};

static long walk_step(__u32 i, void* context) {
  struct walk* w = context;
  struct dentry* d = w->d;
  // The opened file itself (depth 0) never matches: opening a watched directory is no access below it.
  if (w->depth > 0) {
    struct gpuscope_watch_key key = {};
    key.inode = BPF_CORE_READ(d, d_inode, i_ino);
    key.dev = w->dev;
    __u32* dir = bpf_map_lookup_elem(&watched, &key);
    if (dir) {
      w->dir = *dir;
      w->found = 1;
      return 1;
    }
  }
  // Kernel pointers are copied out of `w` before BPF_CORE_READ: a relocation must name kernel types only.
  struct mount* mnt = w->mnt;
  struct dentry* root = BPF_CORE_READ(mnt, mnt.mnt_root);
  if (d == root) {  // the top of this mount: go on from where it is mounted
    struct mount* parent = BPF_CORE_READ(mnt, mnt_parent);
    if (parent == mnt) return 1;  // the root of the namespace
    w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
    w->mnt = parent;
    w->dev = BPF_CORE_READ(parent, mnt.mnt_sb, s_dev);
    return 0;  // the mount point stands for the same directory: no depth
  }
  struct dentry* up = BPF_CORE_READ(d, d_parent);
  if (up == d) return 1;
  __u32 depth = w->depth;
  if (depth < GPUSCOPE_MAX_NAMES) w->below[depth] = d;
  w->d = up;
  w->depth = depth + 1;
  return 0;
}

#define GPUSCOPE_MAX_MOUNTS 16

// Whether a mount of the chain from `mnt` up to the namespace's root is on a watched file system (true
// too when the chain is deeper than looked at).
static __always_inline bool on_watched_device(struct mount* mnt) {
  for (int i = 0; i < GPUSCOPE_MAX_MOUNTS; i++) {
    __u32 dev = BPF_CORE_READ(mnt, mnt.mnt_sb, s_dev);
    if (bpf_map_lookup_elem(&watched_devs, &dev)) return true;
    struct mount* parent = BPF_CORE_READ(mnt, mnt_parent);
    if (parent == mnt) return false;
    mnt = parent;
  }
  return true;
}

static __always_inline void opened(long fd) {
  struct file* f = current_file(fd);
  if (!f) return;
  // Files only: a directory opened below a watched one (a listing, openat's directory descriptor) is not
  // an access to a checkpoint or a dataset file.
  if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT_BITS) == S_IFDIR_BITS) return;
  struct walk w = {};
  w.d = BPF_CORE_READ(f, f_path.dentry);
  struct mount* mnt = container_of(BPF_CORE_READ(f, f_path.mnt), struct mount, mnt);
  if (!on_watched_device(mnt)) return;
  w.mnt = mnt;
  w.dev = BPF_CORE_READ(mnt, mnt.mnt_sb, s_dev);
  bpf_loop(GPUSCOPE_MAX_DEPTH, walk_step, &w, 0);
  if (!w.found) return;
  __u32 index = w.dir;
  __u32 depth = w.depth;

  struct gpuscope_fd_key fd_key = {};
  fd_key.tgid = bpf_get_current_pid_tgid() >> 32;
  fd_key.fd = (__s32)fd;
  bpf_map_update_elem(&tracked, &fd_key, &index, BPF_ANY);

  struct gpuscope_file_open_record* r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
  if (!r) {
    count_lost();
    return;
  }
  r->kind = GPUSCOPE_RECORD_FILE_OPEN;
  r->dir = index;
  fill_task(&r->task);
  r->fd = (__s32)fd;
  r->f_mode = BPF_CORE_READ(f, f_mode);
  r->owner_uid = BPF_CORE_READ(f, f_inode, i_uid.val);
  r->inode = BPF_CORE_READ(f, f_inode, i_ino);
  r->depth = depth;
  for (int i = 0; i < GPUSCOPE_MAX_NAMES; i++) {
    r->names[i][0] = 0;
    struct dentry* component = i < depth ? w.below[i] : 0;
    if (component) {
      const unsigned char* name = BPF_CORE_READ(component, d_name.name);
      bpf_probe_read_kernel_str(r->names[i], GPUSCOPE_NAME_LEN, name);
    }
  }
  bpf_ringbuf_submit(r, 0);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(files_sys_enter, struct pt_regs* regs, long id) {
  __u32 op;
  if (id == NR_READ || id == NR_PREAD64 || id == NR_READV) {
    op = OP_READ;
  } else if (id == NR_WRITE || id == NR_PWRITE64 || id == NR_WRITEV) {
    op = OP_WRITE;
  } else if (id == NR_CLOSE) {
    struct gpuscope_fd_key key = {};
    key.tgid = bpf_get_current_pid_tgid() >> 32;
    key.fd = (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs);
    bpf_map_delete_elem(&tracked, &key);
    return 0;
  } else if (id == NR_DUP || id == NR_DUP2 || id == NR_DUP3 || id == NR_FCNTL) {
    // A duplicate of a tracked descriptor is tracked too (a shell's "> file" is open, dup2, close); a
    // dup2/dup3 onto a tracked descriptor closes it.
    if (id == NR_FCNTL) {
      long cmd = PT_REGS_PARM2_CORE_SYSCALL(regs);
      if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return 0;
    }
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    struct gpuscope_fd_key key = {};
    key.tgid = pid_tgid >> 32;
    key.fd = (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs);
    __u32* dir = bpf_map_lookup_elem(&tracked, &key);
    if (!dir && id != NR_DUP2 && id != NR_DUP3) return 0;
    struct inflight_io call = {};
    call.dir = dir ? *dir : NO_DIR;
    call.op = OP_DUP;
    bpf_map_update_elem(&inflight, &pid_tgid, &call, BPF_ANY);
    return 0;
  } else {
    return 0;
  }
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  struct gpuscope_fd_key key = {};
  key.tgid = pid_tgid >> 32;
  key.fd = (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs);
  __u32* dir = bpf_map_lookup_elem(&tracked, &key);
  if (!dir) return 0;
  struct inflight_io call = {};
  call.start_ns = bpf_ktime_get_ns();
  call.dir = *dir;
  call.op = op;
  bpf_map_update_elem(&inflight, &pid_tgid, &call, BPF_ANY);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(files_sys_exit, struct pt_regs* regs, long ret) {
  long id = SYSCALL_NR(regs);
  if (id == NR_OPENAT || id == NR_OPEN || id == NR_OPENAT2 || id == NR_CREAT) {
    if (ret >= 0) opened(ret);
    return 0;
  }
  const bool dup = id == NR_DUP || id == NR_DUP2 || id == NR_DUP3 || id == NR_FCNTL;
  if (!dup && id != NR_READ && id != NR_PREAD64 && id != NR_READV && id != NR_WRITE && id != NR_PWRITE64 &&
      id != NR_WRITEV)
    return 0;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  struct inflight_io* call = bpf_map_lookup_elem(&inflight, &pid_tgid);
  if (!call) return 0;
  if (call->op == OP_DUP) {
    __u32 dir = call->dir;
    bpf_map_delete_elem(&inflight, &pid_tgid);
    if (!dup || ret < 0) return 0;
    struct gpuscope_fd_key key = {};
    key.tgid = pid_tgid >> 32;
    key.fd = (__s32)ret;
    if (dir == NO_DIR) {
      bpf_map_delete_elem(&tracked, &key);
    } else {
      bpf_map_update_elem(&tracked, &key, &dir, BPF_ANY);
    }
    return 0;
  }
  if (dup) return 0;
  __u64 elapsed = bpf_ktime_get_ns() - call->start_ns;
  struct gpuscope_io_key key = {};
  key.tgid = pid_tgid >> 32;
  key.dir = call->dir;
  key.op = call->op;
  bpf_map_delete_elem(&inflight, &pid_tgid);
  struct gpuscope_io_value* sum = bpf_map_lookup_elem(&io, &key);
  if (!sum) {
    struct gpuscope_io_value zero = {};
    zero.cgroup_id = bpf_get_current_cgroup_id();
    bpf_map_update_elem(&io, &key, &zero, BPF_NOEXIST);
    sum = bpf_map_lookup_elem(&io, &key);
    if (!sum) return 0;
  }
  if (ret > 0) __sync_fetch_and_add(&sum->bytes, ret);
  __sync_fetch_and_add(&sum->nanoseconds, elapsed);
  __sync_fetch_and_add(&sum->calls, 1);
  return 0;
}
