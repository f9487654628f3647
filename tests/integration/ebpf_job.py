"""The job process of tests/integration/ebpf_test.py: it puts itself into the Slurm job's cgroup, names
its main thread pt_main_thread (as PyTorch 2.3-2.4 do), then does what the test asks on stdin, one
command a line, answering one line each on stdout:
  load LIB             dlopen the (stand-in) libcuda.so.1 and cuInit(0)  -> "ok"
  alloc BYTES          cuMemAlloc_v2                                     -> "ok PTR" or "err CURESULT"
  free PTR             cuMemFree_v2                                      -> "ok" or "err CURESULT"
  write PATH BYTES     open(PATH, O_WRONLY|O_CREAT) relative to the cwd, one write  -> "ok"
  dupwrite PATH BYTES  the same through a duplicate: open, dup2 to 100, close, write on 100 (a shell's
                       "> file")                                                      -> "ok"
  readat DIR NAME      open(DIR) then openat(that fd, NAME) and read it whole        -> "ok BYTES"
  open PATH            open(PATH) for reading and close it, nothing read              -> "ok"
  connect HOST PORT    a TCP connect (IPv4 or IPv6 by the address)                     -> "ok"
  childconnect HOST PORT   the same (IPv4) from a child process that exits at once   -> "ok"
  exit
Usage: ebpf_job.py CGROUP_PROCS_FILE WORKDIR"""

import ctypes
import os
import socket
import sys


def main():
    procs, workdir = sys.argv[1:3]
    with open(procs, "w") as f:  # into the job's cgroup before anything the agent should see
        f.write(str(os.getpid()))
    os.chdir(workdir)
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NAME = 15
    libc.prctl(PR_SET_NAME, b"pt_main_thread", 0, 0, 0)
    cuda = None
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command, args = words[0], words[1:]
        if command == "exit":
            break
        if command == "load":
            cuda = ctypes.CDLL(args[0])
            cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
            cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
            rc = cuda.cuInit(0)
            print("ok" if rc == 0 else f"err {rc}", flush=True)
        elif command == "alloc":
            pointer = ctypes.c_uint64(0)
            rc = cuda.cuMemAlloc_v2(ctypes.byref(pointer), int(args[0]))
            print(f"ok {pointer.value}" if rc == 0 else f"err {rc}", flush=True)
        elif command == "free":
            rc = cuda.cuMemFree_v2(int(args[0]))
            print("ok" if rc == 0 else f"err {rc}", flush=True)
        elif command == "write":
            fd = os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, b"\0" * int(args[1]))
            os.close(fd)
            print("ok", flush=True)
        elif command == "dupwrite":
            fd = os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 100)
            os.close(fd)
            os.write(100, b"\0" * int(args[1]))
            os.close(100)
            print("ok", flush=True)
        elif command == "readat":
            directory = os.open(args[0], os.O_RDONLY | os.O_DIRECTORY)
            fd = os.open(args[1], os.O_RDONLY, dir_fd=directory)
            total = 0
            while True:
                chunk = os.read(fd, 4 << 20)
                if not chunk:
                    break
                total += len(chunk)
            os.close(fd)
            os.close(directory)
            print(f"ok {total}", flush=True)
        elif command == "open":
            os.close(os.open(args[0], os.O_RDONLY))
            print("ok", flush=True)
        elif command == "childconnect":
            child = os.fork()
            if child == 0:
                try:
                    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                        s.connect((args[0], int(args[1])))
                finally:
                    os._exit(0)
            os.waitpid(child, 0)
            print("ok", flush=True)
        elif command == "connect":
            family = socket.AF_INET6 if ":" in args[0] else socket.AF_INET
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.connect((args[0], int(args[1])))
            print("ok", flush=True)
        else:
            print(f"unknown {command}", flush=True)


if __name__ == "__main__":
    main()
