// templates/tma.cuh: Hopper's asynchronous copies for the warp-specialised kernels (sm_90a): the tensor maps
// that the runtime encodes (runtime/cuda/tma.c) and passes as a second, __grid_constant__ kernel parameter,
// tile loads by the TMA unit (cp.async.bulk.tensor) that complete on a shared-memory mbarrier with a byte
// count, bulk reductions of shared memory into global memory (cp.reduce.async.bulk), named barriers, the
// mbarrier operations a producer and its consumers synchronise with, and the register
// reallocation between a producer warpgroup and the consumer warpgroups (setmaxnreg). Written from the PTX
// ISA (sections "Parallel Synchronization and Communication Instructions: mbarrier", "cp.async.bulk.tensor",
// "cp.reduce.async.bulk" and "setmaxnreg").
#pragma once

// One CUtensorMap (128 bytes, 64-byte aligned: the driver's opaque encoding); a kernel gets four, by value.
struct alignas(64) ddp_tmap {
  unsigned long long w[16];
};
struct ddp_tmaps {
  ddp_tmap m[4];
};
static_assert(sizeof(ddp_tmaps) == 512, "ddp_tmaps must mirror runtime/cuda/tma.h");

namespace tma {
// mbarrier in shared memory (its 32-bit shared address): `count` arrivals complete a phase, together with
// the transaction bytes announced by expect_tx. Phases alternate parity 0, 1, 0, ...
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes initialised barriers visible to the other threads and to the TMA unit (before the block barrier).
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also announces `bytes` of TMA transactions for the current phase.
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Spins until the phase of the given parity has completed (try_wait suspends the thread for a while).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "MBAR_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra MBAR_WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Box (c0, c1, c2, c3) of a four-dimensional tensor map into shared memory at dst, completing on bar.
// Elements outside the tensor arrive as zeros and still count towards the box's bytes.
__device__ __forceinline__ void load_4d(unsigned dst, const ddp_tmap *map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
// Bulk reduction of shared memory into global memory (no tensor map): `bytes` (a multiple of 16, both
// addresses 16-byte aligned) of f32 at src added element-wise into dst by the TMA unit, in a bulk group that
// bulk_commit closes. The order of concurrent additions to one address is not fixed. The shared source must
// have been written before fence.proxy.async (the generic writes made visible to the async proxy).
__device__ __forceinline__ void bulk_reduce_add_f32(float *dst, unsigned src, unsigned bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's bulk groups are still reading their shared source (read) or still
// pending at all.
template <int N> __device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory"); }
// A named barrier (ids 1..15; 0 is __syncthreads) over `count` threads, a multiple of 32: sync waits for
// the count, arrive adds to it and goes on (a producer handing data to threads that sync).
__device__ __forceinline__ void named_sync(int id, int count) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory"); }
__device__ __forceinline__ void named_arrive(int id, int count) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory"); }
// Register reallocation for the whole warpgroup: the producer gives registers back, the consumers take them.
template <int N> __device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N> __device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
}  // namespace tma
