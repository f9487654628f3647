// Tuning of the C library's allocator: how many malloc arenas the process keeps, and handing freed pages
// back to the kernel. The one place that knows about glibc's malloc; elsewhere a no-op.
//
// Thread-safety: LimitMallocArenas from main() before threads start; ReleaseFreedMemory from any thread.
#pragma once

namespace gpuscope {

// Caps glibc's malloc at one arena, and maps large buffers on their own. glibc gives every thread that
// allocates its own arena and keeps what it freed; with one worker per GPU plus the HTTP threads that is
// most of the agent's resident memory (measured serving 8 simulated GPUs: 19.4 MiB with the default,
// 17.8 MiB with two arenas, 15.4 MiB with one). One arena is cheap only because steady-state collection
// hardly allocates (shared label sets, see Labels): when every sample still built its own label
// strings, 48 GPU workers spent 80% of the agent's CPU in malloc and this arena's lock
// (bench/results/agent_footprint.md). A no-op without glibc.
void LimitMallocArenas();

// Hands the pages malloc holds free back to the kernel, so that resident memory shows what the process
// holds rather than its high-water mark (about 0.1 ms for the agent's heap). A no-op without glibc.
void ReleaseFreedMemory();

}  // namespace gpuscope
