// Tuning of the C library's allocator: how many malloc arenas the process keeps, and handing freed pages
// back to the kernel. The one place that knows about glibc's malloc; elsewhere a no-op.
//
// Thread-safety: LimitMallocArenas from main() before threads start; ReleaseFreedMemory from any thread.
#pragma once

namespace gpuscope {

// Caps glibc's malloc at one arena. glibc gives every thread that allocates its own arena and keeps what
// it freed; with one worker per GPU plus the HTTP threads that is most of the agent's resident memory
// (measured serving 8 simulated GPUs: 19.4 MiB with the default, 17.8 MiB with two arenas, 15.4 MiB with
// one). The agent allocates little per cycle (about 1 ms of work per second across all threads), so one
// arena costs no measurable contention. A no-op without glibc.
void LimitMallocArenas();

// Hands the pages malloc holds free back to the kernel, so that resident memory shows what the process
// holds rather than its high-water mark (about 0.1 ms for the agent's heap). A no-op without glibc.
void ReleaseFreedMemory();

}  // namespace gpuscope
