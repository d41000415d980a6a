/*
 * HetCCL device kernels: the one element-wise reduction the engine needs,
 *
 *   dst[i] = FIN( A(a[i]) op b[i] )      (b present)
 *   dst[i] = FIN( A(a[i]) )              (b == NULL: prepare / finish)
 *
 * where A multiplies by the premul scalar (rounded to the type) when asked
 * and FIN divides by the post-divisor (integer Avg) when asked, for all 12
 * NCCL data types and the combines sum, prod, max, min. The arithmetic is
 * exactly that of the host reduction (src/device/host/reduce_elements.h and
 * fp_convert.h): fp16, bf16 and fp8 compute in float and round to nearest
 * even with integer bit arithmetic (fp8 saturating, NaN canonical), integers
 * wrap in unsigned arithmetic, float max/min order -0 below +0 and let a
 * number win over a NaN. Every float operation is an explicit
 * round-to-nearest intrinsic, so no multiply-add is ever contracted into an
 * FMA (the host rounds the product first).
 *
 * C-like on purpose: no templates, one macro-stamped "kind" per storage
 * representation, and the vendor-specific bits behind HK_* macros (the
 * vendor layers below) so one file compiles three ways: nvcc (the CUDA
 * fatbin), clang -x hip --cuda-device-only without any header or device
 * library (the AMD code objects, cmake/kernels_hip.cmake), and plain host
 * C, where a test includes this file and checks the kernel bodies against
 * the host reductions bit for bit (tests/unit/test_kernel_body.c). Kernels
 * are extern "C" so the host side finds them by name: hetccl_reduce_<type>,
 * <type> as in the table in src/device/cuda/cuda_kernels.c.
 *
 * Work split: 16-byte vector loads and stores per thread (4 in flight per
 * step), in a grid-stride loop; elements before dst reaches 16-byte
 * alignment and after the last whole vector go one by one. When a, b and dst
 * are not equally misaligned, every element goes one by one.
 */
#define HK_THREADS 512 /* threads per block; the host launches this many */
#define HK_UNROLL 4    /* vectors in flight per thread per step */

typedef unsigned char hk_u8;
typedef signed char hk_i8;
typedef unsigned short hk_u16;
typedef unsigned int hk_u32;
typedef int hk_i32;
typedef unsigned long long hk_u64;
typedef long long hk_i64;

/*
 * Vendor layers: everything below them is written against these macros.
 *   HK_DEV / HK_DEV_SW   a device function (always inlined) / one that a
 *                        target with hardware conversions leaves unused
 *   HK_DEV_ONE           the out-of-line single-element function
 *   HK_KERNEL(name)      an exported kernel of HK_THREADS threads a block
 *   HK_TID / HK_NTHREADS this thread's index in the grid / threads in it
 *   HK_FADD..HK_DDIV     float arithmetic rounded to nearest, never fused
 *   HK_F2U..HK_U2D, HK_I2F  bit casts; int to float (round to nearest)
 *   hk_v4, HK_V4, HK_VLD, HK_VST  a 16-byte vector, built, loaded, stored
 *   HK_PRAGMA_UNROLL     unroll the loop that follows
 */
#if defined(__CUDACC__) /* nvcc (both passes) */
#define HK_DEV static __device__ __forceinline__
#define HK_DEV_SW static __device__ __forceinline__ __attribute__((unused))
#define HK_DEV_ONE static __device__ __noinline__
#define HK_KERNEL(name) extern "C" __global__ void __launch_bounds__(HK_THREADS) name
#define HK_TID() ((hk_u64)blockIdx.x * blockDim.x + threadIdx.x)
#define HK_NTHREADS() ((hk_u64)gridDim.x * blockDim.x)
#define HK_FADD(x, y) __fadd_rn((x), (y))
#define HK_FMUL(x, y) __fmul_rn((x), (y))
#define HK_FDIV(x, y) __fdiv_rn((x), (y))
#define HK_DADD(x, y) __dadd_rn((x), (y))
#define HK_DMUL(x, y) __dmul_rn((x), (y))
#define HK_DDIV(x, y) __ddiv_rn((x), (y))
#define HK_F2U(f) __float_as_uint(f)
#define HK_U2F(u) __uint_as_float(u)
#define HK_D2U(d) ((hk_u64)__double_as_longlong(d))
#define HK_U2D(u) __longlong_as_double((long long)(u))
#define HK_I2F(i) __int2float_rn(i)
typedef uint4 hk_v4;
#define HK_V4(x, y, z, w) make_uint4((x), (y), (z), (w))
#define HK_VLD(p, i) ((p)[i])
#define HK_VST(p, i, v) ((p)[i] = (v))
#define HK_PRAGMA_UNROLL _Pragma("unroll")
/* The window kernel's: block, a thread in its block, barrier, system-scope
 * fence, loads and stores of counters that another agent (a CPU, another
 * GPU) writes or reads, a pause in a spin, block-shared memory, and a
 * by-value argument used in place (no copy to local memory). */
#define HK_BLOCK() ((hk_u32)blockIdx.x)
#define HK_LTID() ((hk_u64)threadIdx.x)
#define HK_LNTHREADS() ((hk_u64)blockDim.x)
#define HK_SYNC() __syncthreads()
#define HK_FENCE_SYS() __threadfence_system()
#define HK_LD32(p) (*(volatile const hk_u32 *)(p))
#define HK_ST32(p, v) (*(volatile hk_u32 *)(p) = (v))
#define HK_LD64(p) (*(volatile const hk_u64 *)(p))
#define HK_ST64(p, v) (*(volatile hk_u64 *)(p) = (v))
#define HK_PAUSE(n) ((void)(n), __nanosleep(64))
#define HK_SHARED __shared__
#define HK_GRID_CONST const __grid_constant__

#elif defined(__HIP__) /* clang -x hip --cuda-device-only -nogpuinc -nogpulib: no headers */
/* Ordinary float operations round to nearest on AMD GPUs (denormals kept:
 * the build does not flush them); contraction into FMA is off here and on
 * the command line (-ffp-contract=off), and fp32 division is the correctly
 * rounded one (-fhip-fp32-correctly-rounded-divide-sqrt). */
#pragma clang fp contract(off)
#define HK_DEV static __attribute__((device)) inline __attribute__((always_inline))
#define HK_DEV_SW HK_DEV
/* Inlined too: no calls, so nothing that could need a call stack (the
 * private segment, which the test checks is empty). */
#define HK_DEV_ONE HK_DEV
#define HK_KERNEL(name) \
  extern "C" __attribute__((global)) void __attribute__((amdgpu_flat_work_group_size(1, HK_THREADS))) name
#define HK_TID() \
  ((hk_u64)__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define HK_NTHREADS() ((hk_u64)__builtin_amdgcn_grid_size_x()) /* work-items, from the dispatch packet */
#define HK_FADD(x, y) ((float)(x) + (float)(y))
#define HK_FMUL(x, y) ((float)(x) * (float)(y))
#define HK_FDIV(x, y) ((float)(x) / (float)(y))
#define HK_DADD(x, y) ((double)(x) + (double)(y))
#define HK_DMUL(x, y) ((double)(x) * (double)(y))
#define HK_DDIV(x, y) ((double)(x) / (double)(y))
#define HK_F2U(f) __builtin_bit_cast(hk_u32, (float)(f))
#define HK_U2F(u) __builtin_bit_cast(float, (hk_u32)(u))
#define HK_D2U(d) __builtin_bit_cast(hk_u64, (double)(d))
#define HK_U2D(u) __builtin_bit_cast(double, (hk_u64)(u))
#define HK_I2F(i) ((float)(int)(i))
typedef struct __attribute__((aligned(16))) hk_v4 {
  hk_u32 x, y, z, w;
} hk_v4;
HK_DEV hk_v4 HK_V4(hk_u32 x, hk_u32 y, hk_u32 z, hk_u32 w) {
  hk_v4 v = {x, y, z, w};
  return v;
}
#define HK_VLD(p, i) ((p)[i])
#define HK_VST(p, i, v) ((p)[i] = (v))
#define HK_PRAGMA_UNROLL _Pragma("unroll")
#define HK_BLOCK() ((hk_u32)__builtin_amdgcn_workgroup_id_x())
#define HK_LTID() ((hk_u64)__builtin_amdgcn_workitem_id_x())
#define HK_LNTHREADS() ((hk_u64)__builtin_amdgcn_workgroup_size_x())
#define HK_SYNC()                                           \
  do {                                                      \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");  \
    __builtin_amdgcn_s_barrier();                           \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");  \
  } while (0)
#define HK_FENCE_SYS() __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "")
#define HK_LD32(p) __hip_atomic_load((hk_u32 *)(p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM)
#define HK_ST32(p, v) __hip_atomic_store((hk_u32 *)(p), (hk_u32)(v), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM)
#define HK_LD64(p) __hip_atomic_load((hk_u64 *)(p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM)
#define HK_ST64(p, v) __hip_atomic_store((hk_u64 *)(p), (hk_u64)(v), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM)
#define HK_PAUSE(n) ((void)(n), __builtin_amdgcn_s_sleep(2))
#define HK_SHARED __attribute__((shared))
#define HK_GRID_CONST const

#else /* host C: the kernel bodies as plain functions (tests/unit/test_kernel_body.c) */
#include <string.h>
#define HK_DEV static inline
#define HK_DEV_SW static inline
#define HK_DEV_ONE static inline
/* The includer defines HK_KERNEL, HK_TID and HK_NTHREADS (one simulated
 * thread per call). C11 without GNU extensions does not contract (gcc);
 * clang is told so. */
#ifdef __clang__
#pragma clang fp contract(off)
#endif
#define HK_FADD(x, y) ((float)(x) + (float)(y))
#define HK_FMUL(x, y) ((float)(x) * (float)(y))
#define HK_FDIV(x, y) ((float)(x) / (float)(y))
#define HK_DADD(x, y) ((double)(x) + (double)(y))
#define HK_DMUL(x, y) ((double)(x) * (double)(y))
#define HK_DDIV(x, y) ((double)(x) / (double)(y))
static inline hk_u32 hk_host_f2u(float f) {
  hk_u32 u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float hk_host_u2f(hk_u32 u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline hk_u64 hk_host_d2u(double d) {
  hk_u64 u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static inline double hk_host_u2d(hk_u64 u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
#define HK_F2U(f) hk_host_f2u(f)
#define HK_U2F(u) hk_host_u2f(u)
#define HK_D2U(d) hk_host_d2u(d)
#define HK_U2D(u) hk_host_u2d(u)
#define HK_I2F(i) ((float)(int)(i))
typedef struct hk_v4 {
  hk_u32 x, y, z, w;
} hk_v4;
static inline hk_v4 HK_V4(hk_u32 x, hk_u32 y, hk_u32 z, hk_u32 w) {
  hk_v4 v = {x, y, z, w};
  return v;
}
/* Through memcpy: the host's arrays are not hk_v4 objects. */
static inline hk_v4 hk_host_vld(const void *p, hk_u64 i) {
  hk_v4 v;
  memcpy(&v, (const char *)p + 16 * i, 16);
  return v;
}
#define HK_VLD(p, i) hk_host_vld((p), (i))
#define HK_VST(p, i, v)                          \
  do {                                           \
    hk_v4 hk_vst_tmp = (v);                      \
    memcpy((char *)(p) + 16 * (i), &hk_vst_tmp, 16); \
  } while (0)
#define HK_PRAGMA_UNROLL
/* The window kernel as host C runs one thread per block (the stand-in HIP
 * runs each block on a thread of its own and defines HK_BLOCK and
 * HK_PAUSE; tests/abi/stand_in_hip.c). */
#ifndef HK_BLOCK
#define HK_BLOCK() 0u
#endif
#ifndef HK_PAUSE
#define HK_PAUSE(n) ((void)(n)++)
#endif
#define HK_LTID() 0ull
#define HK_LNTHREADS() 1ull
#define HK_SYNC() ((void)0)
#define HK_FENCE_SYS() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define HK_LD32(p) __atomic_load_n((hk_u32 *)(p), __ATOMIC_ACQUIRE)
#define HK_ST32(p, v) __atomic_store_n((hk_u32 *)(p), (hk_u32)(v), __ATOMIC_RELEASE)
#define HK_LD64(p) __atomic_load_n((hk_u64 *)(p), __ATOMIC_ACQUIRE)
#define HK_ST64(p, v) __atomic_store_n((hk_u64 *)(p), (hk_u64)(v), __ATOMIC_RELEASE)
#define HK_SHARED static _Thread_local
#define HK_GRID_CONST const
#endif

/* Shared with src/device/cuda/cuda_kernels.c. */
#define HK_SUM 0
#define HK_PROD 1
#define HK_MAX 2
#define HK_MIN 3
#define HK_PREMUL 1 /* scale a by the scalar */
#define HK_PREMUL_AT 2 /* scale a by the scalar stored at the address `scalar` holds (device residence) */
#define HK_FINISH 2 /* divide the result by the divisor */

/* The premul scalar's bits: `scalar` itself, or (HK_PREMUL_AT) the `bytes`
 * little-endian bytes at the address it holds, read as the kernel runs. */
HK_DEV hk_u64 hk_scalar_bits(hk_u64 scalar, int premul, int bytes) {
  if (premul != HK_PREMUL_AT) return scalar;
  const unsigned char *p = (const unsigned char *)scalar;
  hk_u64 raw = 0;
  for (int i = 0; i < bytes; i++) raw |= (hk_u64)p[i] << (8 * i);
  return raw;
}

/* ---------------------------------------------------------------------- */
/* Narrow float conversions (same method as the host's fp_convert.h).     */

/* Rounds a float magnitude (sign clear, not NaN) to a format with `mbits`
 * mantissa bits and exponent bias `bias`; values past the largest finite
 * come back as larger codes for the caller to clamp. Subnormals: adding a
 * power of two whose ulp is the format's subnormal step makes the FPU
 * round to that step. */
HK_DEV hk_u32 hk_round_magnitude(hk_u32 mag, unsigned mbits, unsigned bias) {
  const unsigned shift = 23 - mbits;
  const hk_u32 rebias = (hk_u32)(127 - bias) << 23;
  const hk_u32 min_normal = (hk_u32)(127 + 1 - bias) << 23;
  const hk_u32 magic = (hk_u32)(127 + 24 - bias - mbits) << 23;
  if (mag < min_normal) return HK_F2U(HK_FADD(HK_U2F(mag), HK_U2F(magic))) - magic;
  hk_u32 v = mag - rebias;
  return (v + (1u << (shift - 1)) - 1 + ((v >> shift) & 1)) >> shift;
}

HK_DEV_SW float hk_sw_half_to_float(hk_u16 h) {
  hk_u32 sign = (hk_u32)(h & 0x8000u) << 16;
  hk_u32 em = h & 0x7FFFu;
  hk_u32 exp = em & 0x7C00u;
  hk_u32 mag;
  if (exp == 0)
    mag = HK_F2U(HK_FMUL(HK_I2F((int)em), HK_U2F(0x33800000u))); /* em * 2^-24, exact */
  else if (exp == 0x7C00u)
    mag = (em << 13) + ((hk_u32)(255 - 31) << 23); /* inf, NaN */
  else
    mag = (em << 13) + ((hk_u32)(127 - 15) << 23);
  return HK_U2F(sign | mag);
}

HK_DEV_SW hk_u16 hk_sw_float_to_half(float f) {
  hk_u32 u = HK_F2U(f);
  hk_u32 sign = (u >> 16) & 0x8000u;
  hk_u32 mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return (hk_u16)(sign | 0x7E00u | ((mag >> 13) & 0x3FFu)); /* quiet, payload kept */
  hk_u32 code = hk_round_magnitude(mag, 10, 15);
  if (code > 0x7C00u) code = 0x7C00u; /* overflow: infinity */
  return (hk_u16)(sign | code);
}

HK_DEV float hk_bf16_to_float(hk_u16 h) { return HK_U2F((hk_u32)h << 16); }

HK_DEV hk_u16 hk_float_to_bf16(float f) {
  hk_u32 u = HK_F2U(f);
  hk_u32 sign = (u >> 16) & 0x8000u;
  hk_u32 mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return (hk_u16)(sign | 0x7FC0u | ((mag >> 16) & 0x7Fu));
  return (hk_u16)(sign | ((mag + 0x7FFFu + ((mag >> 16) & 1)) >> 16));
}

/* E4M3FN: bias 7, no infinity, S.1111.111 is NaN. */
HK_DEV_SW float hk_sw_e4m3_to_float(hk_u8 v) {
  hk_u32 sign = (hk_u32)(v & 0x80u) << 24;
  hk_u32 em = v & 0x7Fu;
  hk_u32 mag;
  if (em == 0x7Fu)
    mag = 0x7FC00000u;
  else if ((em & 0x78u) == 0)
    mag = HK_F2U(HK_FMUL(HK_I2F((int)em), HK_U2F(0x3B000000u))); /* em * 2^-9, exact */
  else
    mag = (em << 20) + ((hk_u32)(127 - 7) << 23);
  return HK_U2F(sign | mag);
}

/* Saturating: past +-448 (and infinities) gives +-448; NaN gives 0x7F. */
HK_DEV_SW hk_u8 hk_sw_float_to_e4m3(float f) {
  hk_u32 u = HK_F2U(f);
  hk_u32 sign = (u >> 24) & 0x80u;
  hk_u32 mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return 0x7Fu;
  hk_u32 code = hk_round_magnitude(mag, 3, 7);
  if (code > 0x7Eu) code = 0x7Eu;
  return (hk_u8)(sign | code);
}

/* E5M2 is binary16 without its low 8 mantissa bits. */
HK_DEV_SW float hk_sw_e5m2_to_float(hk_u8 v) { return hk_sw_half_to_float((hk_u16)((hk_u32)v << 8)); }

/* Saturating as NCCL's "satfinite": past +-57344 gives +-57344; NaN 0x7F. */
HK_DEV_SW hk_u8 hk_sw_float_to_e5m2(float f) {
  hk_u32 u = HK_F2U(f);
  hk_u32 sign = (u >> 24) & 0x80u;
  hk_u32 mag = u & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return 0x7Fu;
  hk_u32 code = hk_round_magnitude(mag, 2, 15);
  if (code > 0x7Bu) code = 0x7Bu;
  return (hk_u8)(sign | code);
}

/*
 * Where the hardware converts with exactly these semantics (round to
 * nearest even; fp8 "satfinite": infinities and overflow saturate to the
 * largest finite, NaN stays NaN), use it: one instruction instead of a
 * dozen keeps the fatbin small. Only NaN payload bits can differ from the
 * software path, and those are not part of the contract (GPU arithmetic
 * returns canonical NaNs anyway). fp16 conversions exist on every target
 * here; fp8 ones from sm_89.
 */
#if defined(__CUDA_ARCH__)
HK_DEV float hk_half_to_float(hk_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
HK_DEV hk_u16 hk_float_to_half(float f) {
  hk_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#else
HK_DEV float hk_half_to_float(hk_u16 h) { return hk_sw_half_to_float(h); }
HK_DEV hk_u16 hk_float_to_half(float f) { return hk_sw_float_to_half(f); }
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
/* The x2 forms convert a pair; the element rides in the low byte / half. */
#define HK_FP8_HW(NAME, FMT)                                                     \
  HK_DEV float hk_##NAME##_to_float(hk_u8 v) {                                   \
    hk_u32 h2;                                                                   \
    hk_u16 in = v;                                                               \
    asm("cvt.rn.f16x2." FMT "x2 %0, %1;" : "=r"(h2) : "h"(in));                  \
    return hk_half_to_float((hk_u16)(h2 & 0xFFFFu));                             \
  }                                                                              \
  HK_DEV hk_u8 hk_float_to_##NAME(float f) {                                     \
    hk_u16 out;                                                                  \
    asm("cvt.rn.satfinite." FMT "x2.f32 %0, %1, %2;" : "=h"(out) : "f"(0.0f), "f"(f)); \
    return (hk_u8)(out & 0xFFu);                                                 \
  }
HK_FP8_HW(e4m3, "e4m3")
HK_FP8_HW(e5m2, "e5m2")
#else
HK_DEV float hk_e4m3_to_float(hk_u8 v) { return hk_sw_e4m3_to_float(v); }
HK_DEV hk_u8 hk_float_to_e4m3(float f) { return hk_sw_float_to_e4m3(f); }
HK_DEV float hk_e5m2_to_float(hk_u8 v) { return hk_sw_e5m2_to_float(v); }
HK_DEV hk_u8 hk_float_to_e5m2(float f) { return hk_sw_float_to_e5m2(f); }
#endif

/* ---------------------------------------------------------------------- */
/* Float max/min: a number beats a NaN, -0 < +0, so the result does not   */
/* depend on operand order (compared as integers in IEEE order).          */

HK_DEV hk_i32 hk_order32(hk_u32 b) { return (hk_i32)(b ^ ((0u - (b >> 31)) >> 1)); }
HK_DEV int hk_isnan32(hk_u32 b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }
HK_DEV hk_i64 hk_order64(hk_u64 b) { return (hk_i64)(b ^ ((0ull - (b >> 63)) >> 1)); }
HK_DEV int hk_isnan64(hk_u64 b) { return (b & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }

HK_DEV float hk_fmaxf(float x, float y) {
  hk_u32 xb = HK_F2U(x), yb = HK_F2U(y);
  int xn = hk_isnan32(xb), yn = hk_isnan32(yb);
  int take_y = (hk_order32(yb) > hk_order32(xb) || xn) && (!yn || xn);
  return HK_U2F(take_y ? yb : xb);
}

HK_DEV float hk_fminf(float x, float y) {
  hk_u32 xb = HK_F2U(x), yb = HK_F2U(y);
  int xn = hk_isnan32(xb), yn = hk_isnan32(yb);
  int take_y = (hk_order32(yb) < hk_order32(xb) || xn) && (!yn || xn);
  return HK_U2F(take_y ? yb : xb);
}

HK_DEV double hk_fmax(double x, double y) {
  hk_u64 xb = HK_D2U(x), yb = HK_D2U(y);
  int xn = hk_isnan64(xb), yn = hk_isnan64(yb);
  int take_y = (hk_order64(yb) > hk_order64(xb) || xn) && (!yn || xn);
  return HK_U2D(take_y ? yb : xb);
}

HK_DEV double hk_fmin(double x, double y) {
  hk_u64 xb = HK_D2U(x), yb = HK_D2U(y);
  int xn = hk_isnan64(xb), yn = hk_isnan64(yb);
  int take_y = (hk_order64(yb) < hk_order64(xb) || xn) && (!yn || xn);
  return HK_U2D(take_y ? yb : xb);
}

/* ---------------------------------------------------------------------- */
/* Kinds. Each kind K provides:                                           */
/*   K_t, K_ct         storage and compute types; K_SIZE bytes of storage */
/*   K_bits/K_unbits   storage <-> raw bits (for vector packing)          */
/*   K_load/K_store    storage <-> compute (store rounds)                 */
/*   K_scalar(raw)     the premul scalar from its bits                    */
/*   K_scale, K_sum, K_prod, K_max, K_min, K_div  as on the host          */

typedef float f32_t;
typedef float f32_ct;
#define f32_SIZE 4
HK_DEV hk_u64 f32_bits(float x) { return HK_F2U(x); }
HK_DEV float f32_unbits(hk_u64 b) { return HK_U2F((hk_u32)b); }
HK_DEV float f32_load(float x) { return x; }
HK_DEV float f32_store(float x) { return x; }
HK_DEV float f32_scalar(hk_u64 raw) { return HK_U2F((hk_u32)raw); }
HK_DEV float f32_scale(float x, float s) { return HK_FMUL(x, s); }
HK_DEV float f32_sum(float x, float y) { return HK_FADD(x, y); }
HK_DEV float f32_prod(float x, float y) { return HK_FMUL(x, y); }
HK_DEV float f32_max(float x, float y) { return hk_fmaxf(x, y); }
HK_DEV float f32_min(float x, float y) { return hk_fminf(x, y); }
HK_DEV float f32_div(float x, int d) { return HK_FDIV(x, HK_I2F(d)); }

typedef double f64_t;
typedef double f64_ct;
#define f64_SIZE 8
HK_DEV hk_u64 f64_bits(double x) { return HK_D2U(x); }
HK_DEV double f64_unbits(hk_u64 b) { return HK_U2D(b); }
HK_DEV double f64_load(double x) { return x; }
HK_DEV double f64_store(double x) { return x; }
HK_DEV double f64_scalar(hk_u64 raw) { return HK_U2D(raw); }
HK_DEV double f64_scale(double x, double s) { return HK_DMUL(x, s); }
HK_DEV double f64_sum(double x, double y) { return HK_DADD(x, y); }
HK_DEV double f64_prod(double x, double y) { return HK_DMUL(x, y); }
HK_DEV double f64_max(double x, double y) { return hk_fmax(x, y); }
HK_DEV double f64_min(double x, double y) { return hk_fmin(x, y); }
HK_DEV double f64_div(double x, int d) { return HK_DDIV(x, (double)d); }

/* Narrow floats: load to float, one float op, round back on store; premul
 * rounds the scaled value to the type before it is combined. */
#define HK_NARROW_KIND(K, T, SIZE, TO_FLOAT, FROM_FLOAT)                                   \
  typedef T K##_t;                                                                       \
  typedef float K##_ct;                                                                  \
  HK_DEV hk_u64 K##_bits(T x) { return x; }                                              \
  HK_DEV T K##_unbits(hk_u64 b) { return (T)b; }                                         \
  HK_DEV float K##_load(T x) { return TO_FLOAT(x); }                                     \
  HK_DEV T K##_store(float x) { return FROM_FLOAT(x); }                                  \
  HK_DEV float K##_scalar(hk_u64 raw) { return TO_FLOAT((T)raw); }                       \
  HK_DEV float K##_scale(float x, float s) { return TO_FLOAT(FROM_FLOAT(HK_FMUL(x, s))); } \
  HK_DEV float K##_sum(float x, float y) { return HK_FADD(x, y); }                       \
  HK_DEV float K##_prod(float x, float y) { return HK_FMUL(x, y); }                      \
  HK_DEV float K##_max(float x, float y) { return hk_fmaxf(x, y); }                      \
  HK_DEV float K##_min(float x, float y) { return hk_fminf(x, y); }                      \
  HK_DEV float K##_div(float x, int d) { return HK_FDIV(x, HK_I2F(d)); }

HK_NARROW_KIND(f16, hk_u16, 2, hk_half_to_float, hk_float_to_half)
HK_NARROW_KIND(bf16, hk_u16, 2, hk_bf16_to_float, hk_float_to_bf16)
HK_NARROW_KIND(e4m3, hk_u8, 1, hk_e4m3_to_float, hk_float_to_e4m3)
HK_NARROW_KIND(e5m2, hk_u8, 1, hk_e5m2_to_float, hk_float_to_e5m2)
#define f16_SIZE 2
#define bf16_SIZE 2
#define e4m3_SIZE 1
#define e5m2_SIZE 1

/* Integers: sum, prod and premul wrap in the unsigned type of the width
 * (signed values through it: same bits, no signed overflow); max/min
 * compare in the type's own signedness; the post-division is C's, in the
 * wider of int and the type (so an int8 sum divides by 200 correctly). */
#define HK_INT_KIND(K, T, UT, SIZE)                                                     \
  typedef T K##_t;                                                                      \
  typedef T K##_ct;                                                                     \
  HK_DEV hk_u64 K##_bits(T x) { return (UT)x; }                                         \
  HK_DEV T K##_unbits(hk_u64 b) { return (T)(UT)b; }                                    \
  HK_DEV T K##_load(T x) { return x; }                                                  \
  HK_DEV T K##_store(T x) { return x; }                                                 \
  HK_DEV T K##_scalar(hk_u64 raw) { return (T)(UT)raw; }                                \
  HK_DEV T K##_scale(T x, T s) { return (T)(UT)((UT)x * (UT)s); }                       \
  HK_DEV T K##_sum(T x, T y) { return (T)(UT)((UT)x + (UT)y); }                         \
  HK_DEV T K##_prod(T x, T y) { return (T)(UT)((UT)x * (UT)y); }                        \
  HK_DEV T K##_max(T x, T y) { return y > x ? y : x; }                                  \
  HK_DEV T K##_min(T x, T y) { return y < x ? y : x; }                                  \
  HK_DEV T K##_div(T x, int d) { return (T)(x / d); }

HK_INT_KIND(i8, hk_i8, hk_u8, 1)
HK_INT_KIND(u8, hk_u8, hk_u8, 1)
HK_INT_KIND(i32, hk_i32, hk_u32, 4)
HK_INT_KIND(u32, hk_u32, hk_u32, 4)
HK_INT_KIND(i64, hk_i64, hk_u64, 8)
HK_INT_KIND(u64, hk_u64, hk_u64, 8)
#define i8_SIZE 1
#define u8_SIZE 1
#define i32_SIZE 4
#define u32_SIZE 4
#define i64_SIZE 8
#define u64_SIZE 8

/* ---------------------------------------------------------------------- */
/* Packing elements into the four 32-bit words of a 16-byte vector.       */

HK_DEV hk_u64 hk_get(const hk_u32 w[4], int j, int size) {
  switch (size) {
    case 1: return (w[j >> 2] >> ((j & 3) * 8)) & 0xFFu;
    case 2: return (w[j >> 1] >> ((j & 1) * 16)) & 0xFFFFu;
    case 4: return w[j];
    default: return (hk_u64)w[2 * j] | ((hk_u64)w[2 * j + 1] << 32);
  }
}

HK_DEV void hk_put(hk_u32 w[4], int j, int size, hk_u64 bits) {
  switch (size) {
    case 1: w[j >> 2] |= (hk_u32)(bits & 0xFFu) << ((j & 3) * 8); break;
    case 2: w[j >> 1] |= (hk_u32)(bits & 0xFFFFu) << ((j & 1) * 16); break;
    case 4: w[j] = (hk_u32)bits; break;
    default:
      w[2 * j] = (hk_u32)bits;
      w[2 * j + 1] = (hk_u32)(bits >> 32);
      break;
  }
}

/* ---------------------------------------------------------------------- */
/* The grid-stride walk over n elements: statement ONE for element i,     */
/* statement VEC for 16-byte vector v (pointers vd, va, vb), used where d, */
/* a and b (if any) are equally misaligned; elements before the first     */
/* aligned vector and after the last whole one go singly. Expects d, a,   */
/* b, has_b, n and the walking thread's index tid0 of nth0 in scope (the  */
/* grid's for the reduce kernels, a block's for the window kernel).       */

#define HK_WALK(K, ONE, VEC)                                                                    \
  const hk_u64 tid = tid0;                                                                      \
  const hk_u64 nthreads = nth0;                                                                 \
  const hk_u32 mis = (hk_u32)((hk_u64)d & 15u);                                                 \
  const int vec = ((hk_u64)a & 15u) == mis && (!has_b || ((hk_u64)b & 15u) == mis) &&           \
                  mis % K##_SIZE == 0;                                                          \
  hk_u64 head = n;                                                                              \
  if (vec) {                                                                                    \
    head = ((16u - mis) & 15u) / K##_SIZE;                                                      \
    if (head > n) head = n;                                                                     \
  }                                                                                             \
  for (hk_u64 i = tid; i < head; i += nthreads) ONE;                                            \
  if (vec) {                                                                                    \
    const hk_u64 per = 16 / K##_SIZE;                                                           \
    const hk_u64 nvec = (n - head) / per;                                                       \
    hk_v4 *vd = (hk_v4 *)(d + head);                                                            \
    const hk_v4 *va = (const hk_v4 *)(a + head);                                                \
    const hk_v4 *vb = (const hk_v4 *)(has_b ? b + head : a + head);                             \
    for (hk_u64 v = tid; v < nvec; v += nthreads) VEC;                                          \
    for (hk_u64 i = head + nvec * per + tid; i < n; i += nthreads) ONE;                         \
  }

/* Body of a function returning the vector of F(x, y) over the elements
 * x of va and y of vb. */
#define HK_VEC_APPLY(K, va, vb, F)                                                              \
  hk_u32 wa[4] = {va.x, va.y, va.z, va.w};                                                      \
  hk_u32 wb[4] = {vb.x, vb.y, vb.z, vb.w};                                                      \
  hk_u32 wo[4] = {0, 0, 0, 0};                                                                  \
  HK_PRAGMA_UNROLL for (int j = 0; j < 16 / K##_SIZE; j++) {                                   \
    K##_t x = K##_unbits(hk_get(wa, j, K##_SIZE));                                              \
    K##_t y = K##_unbits(hk_get(wb, j, K##_SIZE));                                              \
    (void)y;                                                                                    \
    hk_put(wo, j, K##_SIZE, K##_bits(F));                                                       \
  }                                                                                             \
  return HK_V4(wo[0], wo[1], wo[2], wo[3]);

/*
 * Per (kind, combine): the element (inlined into the vector path), one
 * out-of-line copy of it for the few single elements (keeps the fatbin
 * small), the vector, and the range.
 */
#define HK_REDUCE_FNS(K, OP)                                                                      \
  HK_DEV K##_t K##_elem_##OP(K##_t x, K##_t y, int has_b, int premul, K##_ct s) {                \
    K##_ct v = K##_load(x);                                                                       \
    if (premul) v = K##_scale(v, s);                                                              \
    return has_b ? K##_store(K##_##OP(v, K##_load(y))) : K##_store(v);                           \
  }                                                                                               \
  HK_DEV_ONE K##_t K##_one_##OP(K##_t x, K##_t y, int has_b, int premul,     \
                                                    K##_ct s) {                                   \
    return K##_elem_##OP(x, y, has_b, premul, s);                                                 \
  }                                                                                               \
  HK_DEV hk_v4 K##_vec_##OP(hk_v4 va, hk_v4 vb, int has_b, int premul, K##_ct s) {                \
    HK_VEC_APPLY(K, va, vb, K##_elem_##OP(x, y, has_b, premul, s))                                \
  }                                                                                               \
  HK_DEV void K##_range_##OP(K##_t *d, const K##_t *a, const K##_t *b, hk_u64 n, int premul,     \
                             K##_ct s, hk_u64 tid0, hk_u64 nth0) {                                \
    const int has_b = b != 0;                                                                     \
    HK_WALK(K, d[i] = K##_one_##OP(a[i], has_b ? b[i] : a[i], has_b, premul, s),                  \
            HK_VST(vd, v, K##_vec_##OP(HK_VLD(va, v), has_b ? HK_VLD(vb, v) : HK_VLD(va, v), has_b, premul, s)))\
  }

/* Post-division (integer Avg): d[i] = a[i] / divisor, rounded to the type. */
#define HK_FINISH_FNS(K)                                                                          \
  HK_DEV K##_t K##_fin(K##_t x, int divisor) { return K##_store(K##_div(K##_load(x), divisor)); } \
  HK_DEV_ONE K##_t K##_fin_one(K##_t x, int divisor) { return K##_fin(x, divisor); } \
  HK_DEV hk_v4 K##_fin_vec(hk_v4 va, int divisor) { HK_VEC_APPLY(K, va, va, K##_fin(x, divisor)) }

/*
 * The kernels of one data type:
 *   hetccl_reduce_<type>(dst, a, b, n, scalar, combine, premul)
 *     b NULL: no combine; scalar: the premul scalar's bits; combine:
 *     HK_SUM..HK_MIN; premul: scale a (already resolved against the op).
 *   hetccl_finish_<type>(dst, a, n, divisor): dst = a / divisor.
 */
#define HK_TYPE_KERNELS(NAME, K)                                                                   \
  HK_REDUCE_FNS(K, sum)                                                                            \
  HK_REDUCE_FNS(K, prod)                                                                           \
  HK_REDUCE_FNS(K, max)                                                                            \
  HK_REDUCE_FNS(K, min)                                                                            \
  HK_FINISH_FNS(K)                                                                                 \
  HK_KERNEL(hetccl_reduce_##NAME)(void *dst, const void *src_a, const void *src_b, hk_u64 n,        \
                                  hk_u64 scalar, int combine, int premul) {                        \
    K##_t *d = (K##_t *)dst;                                                                       \
    const K##_t *a = (const K##_t *)src_a;                                                         \
    const K##_t *b = (const K##_t *)src_b;                                                         \
    K##_ct s = K##_scalar(hk_scalar_bits(scalar, premul, (int)sizeof(K##_t)));                   \
    const hk_u64 tid0 = HK_TID(), nth0 = HK_NTHREADS();                                            \
    switch (combine) {                                                                             \
      case HK_SUM: K##_range_sum(d, a, b, n, premul, s, tid0, nth0); break;                                    \
      case HK_PROD: K##_range_prod(d, a, b, n, premul, s, tid0, nth0); break;                                  \
      case HK_MAX: K##_range_max(d, a, b, n, premul, s, tid0, nth0); break;                                    \
      default: K##_range_min(d, a, b, n, premul, s, tid0, nth0); break;                                        \
    }                                                                                              \
  }                                                                                                \
  HK_KERNEL(hetccl_finish_##NAME)(void *dst, const void *src_a, hk_u64 n, int divisor) {           \
    K##_t *d = (K##_t *)dst;                                                                       \
    const K##_t *a = (const K##_t *)src_a;                                                         \
    const K##_t *b = a;                                                                            \
    const int has_b = 0;                                                                           \
    const hk_u64 tid0 = HK_TID(), nth0 = HK_NTHREADS();                                            \
    HK_WALK(K, d[i] = K##_fin_one(a[i], divisor), HK_VST(vd, v, K##_fin_vec(has_b ? HK_VLD(vb, v) : HK_VLD(va, v), divisor)))             \
  }

HK_TYPE_KERNELS(int8, i8)
HK_TYPE_KERNELS(uint8, u8)
HK_TYPE_KERNELS(int32, i32)
HK_TYPE_KERNELS(uint32, u32)
HK_TYPE_KERNELS(int64, i64)
HK_TYPE_KERNELS(uint64, u64)
HK_TYPE_KERNELS(float16, f16)
HK_TYPE_KERNELS(float32, f32)
HK_TYPE_KERNELS(float64, f64)
HK_TYPE_KERNELS(bfloat16, bf16)
HK_TYPE_KERNELS(float8e4m3, e4m3)
HK_TYPE_KERNELS(float8e5m2, e5m2)

/* ---------------------------------------------------------------------- */
/* Window transfers (src/exec/window.c's kernel path): one launch moves   */
/* every chunk of a link phase's transfers through device windows and    */
/* writes the counters the peers wait on, as window.c's memop path        */
/* enqueues them (same chunks, places and counter values, so either end   */
/* may be a CPU or a GPU on the other path).                              */
/*                                                                        */
/* Tracks are lanes (one direction's ring of a window and its counters);  */
/* a track's blocks (block0 .. block0 + blocks - 1) walk its steps, the   */
/* chunks of its transfers in phase order. A step: wait (the track's wait */
/* counter, or its wait restart word, >= `wait`), move (send: `n` bytes   */
/* from buf to ring + at;                                                 */
/* receive: from ring + at to buf, or buf = a op ring when a is set, with */
/* the combine in flags bits 8..15), write (`write` to the track's write  */
/* counter, then `n` to its restart word for a restart's step, once      */
/* every block's                                                          */
/* part of the moves before it is out, behind a system-scope fence).      */
/* Each block moves its stripe of each move; the track's first block      */
/* writes the counters after the others report (prog: one word per block */
/* in device memory, gen << 20 | step + 1, so no reset between launches). */
/* Every spin also reads the abort word: once set (abort, lost peer)      */
/* every wait passes and nothing more is moved. Waits are >=, unsigned:   */
/* the values waited for lie in [1, 2^31] (window.c), where unsigned and  */
/* wrap-around comparisons agree, and a release's 2^31 ends every one. The layout is struct hetccl_wx_desc of  */
/* src/device/device.h, byte for byte.                                    */

#define HK_WX_TRACKS 8
#define HK_WX_STEPS 80
#define HK_WX_WAIT_GEQ 1u /* the counter */
#define HK_WX_WAIT_RST 2u /* the restart word */
#define HK_WX_MOVE 4u
#define HK_WX_WRITE 8u
#define HK_WX_WRITE_RST 16u /* after the counter: the restart word = n */

struct hk_wx_step {
  hk_u64 buf, a, at; /* device addresses of the chunk in the transfer's buffers; its offset in the ring */
  hk_u32 n, wait, write, flags;
};
struct hk_wx_track {
  hk_u64 ring, wait_ctr, write_ctr, wait_rst, write_rst; /* device addresses */
  hk_u32 first, nsteps, block0, blocks, send, pad;
};
struct hk_wx_desc {
  hk_u64 abort_word, prog, gen;
  hk_u32 ntracks, nblocks;
  struct hk_wx_track t[HK_WX_TRACKS];
  struct hk_wx_step s[HK_WX_STEPS];
};

/* Thread 0 of a block: 1 once *ctr >= want, 0 on abort. */
HK_DEV int hk_wx_wait(hk_u64 abort_word, hk_u64 ctr, hk_u32 want) {
  for (unsigned spins = 0;; spins++) {
    if (HK_LD32(ctr) >= want) return 1;
    if (HK_LD32(abort_word)) return 0;
    HK_PAUSE(spins);
  }
}

/* Thread 0 of a track's first block: 1 once the track's other blocks have
 * reported `tag`, 0 on abort. */
HK_DEV int hk_wx_wait_blocks(hk_u64 abort_word, hk_u64 prog, hk_u32 block0, hk_u32 blocks, hk_u64 tag) {
  for (hk_u32 b = 1; b < blocks; b++)
    for (unsigned spins = 0; HK_LD64(prog + 8 * (hk_u64)(block0 + b)) < tag; spins++) {
      if (HK_LD32(abort_word)) return 0;
      HK_PAUSE(spins);
    }
  return 1;
}

/* d[0, n) = a[0, n) by the block's threads, 16-byte vectors when d and a
 * are equally misaligned. On CUDA four of them are loaded before any is
 * stored (one side is host memory across PCIe, whose latency only loads in
 * flight hide); AMD's clang put those four in scratch, which the kernels
 * must not use (test_hip_kernels), so it walks one vector at a time there. */
HK_DEV void hk_wx_copy(hk_u8 *d, const hk_u8 *a, hk_u64 n, hk_u64 tid0, hk_u64 nth0) {
#if defined(__HIP__)
  const hk_u8 *b = a;
  const int has_b = 0;
  HK_WALK(u8, d[i] = a[i], HK_VST(vd, v, has_b ? HK_VLD(vb, v) : HK_VLD(va, v)))
#else
  const hk_u64 mis = (hk_u64)d & 15u;
  hk_u64 head = n;
  if (((hk_u64)a & 15u) == mis) {
    head = (16u - mis) & 15u;
    if (head > n) head = n;
  }
  for (hk_u64 i = tid0; i < head; i += nth0) d[i] = a[i];
  if (head == n) return;
  const hk_u64 nvec = (n - head) / 16;
  hk_v4 *vd = (hk_v4 *)(d + head);
  const hk_v4 *va = (const hk_v4 *)(a + head);
  hk_u64 v = tid0;
  for (; v + 3 * nth0 < nvec; v += 4 * nth0) {
    const hk_v4 x0 = HK_VLD(va, v), x1 = HK_VLD(va, v + nth0), x2 = HK_VLD(va, v + 2 * nth0),
                x3 = HK_VLD(va, v + 3 * nth0);
    HK_VST(vd, v, x0);
    HK_VST(vd, v + nth0, x1);
    HK_VST(vd, v + 2 * nth0, x2);
    HK_VST(vd, v + 3 * nth0, x3);
  }
  for (; v < nvec; v += nth0) HK_VST(vd, v, HK_VLD(va, v));
  for (hk_u64 i = head + nvec * 16 + tid0; i < n; i += nth0) d[i] = a[i];
#endif
}

/* One kernel per data type (the type of the phase's reducing receives;
 * any for a phase that only copies): hetccl_window_<type>(desc). */
#define HK_WX_KERNEL(NAME, K)                                                                             \
  HK_KERNEL(hetccl_window_##NAME)(HK_GRID_CONST struct hk_wx_desc D) {                                    \
    HK_SHARED int hk_go;                                                                                  \
    const hk_u32 blk = HK_BLOCK();                                                                        \
    const hk_u64 tid0 = HK_LTID(), nth0 = HK_LNTHREADS();                                                 \
    hk_u32 ti = 0;                                                                                        \
    while (ti < D.ntracks && !(blk >= D.t[ti].block0 && blk < D.t[ti].block0 + D.t[ti].blocks)) ti++;    \
    if (ti == D.ntracks) return;                                                                          \
    const struct hk_wx_track *T = &D.t[ti];                                                               \
    const hk_u32 sub = blk - T->block0;                                                                   \
    if (tid0 == 0) hk_go = 1;                                                                             \
    HK_SYNC();                                                                                            \
    for (hk_u32 k = 0; k < T->nsteps; k++) {                                                              \
      const struct hk_wx_step *S = &D.s[T->first + k];                                                    \
      if (S->flags & (HK_WX_WAIT_GEQ | HK_WX_WAIT_RST)) {                                                 \
        const hk_u64 word = (S->flags & HK_WX_WAIT_RST) ? T->wait_rst : T->wait_ctr;                      \
        if (tid0 == 0 && hk_go && !hk_wx_wait(D.abort_word, word, S->wait)) hk_go = 0;                    \
        HK_SYNC();                                                                                        \
        HK_FENCE_SYS(); /* what the counter announced, seen by every thread */                            \
      }                                                                                                   \
      if ((S->flags & HK_WX_MOVE) && hk_go) {                                                             \
        /* The block's stripe: whole 256-byte units, so every element type stays whole. */                \
        hk_u64 per = ((hk_u64)S->n + T->blocks - 1) / T->blocks;                                           \
        per = (per + 255) & ~(hk_u64)255;                                                                 \
        hk_u64 lo = per * sub, hi = lo + per < S->n ? lo + per : S->n;                                    \
        if (lo < hi) {                                                                                    \
          hk_u8 *ring = (hk_u8 *)T->ring + S->at + lo, *buf = (hk_u8 *)S->buf + lo;                       \
          if (T->send) {                                                                                  \
            hk_wx_copy(ring, buf, hi - lo, tid0, nth0);                                                   \
          } else if (!S->a) {                                                                             \
            hk_wx_copy(buf, ring, hi - lo, tid0, nth0);                                                   \
          } else {                                                                                        \
            const K##_t *a = (const K##_t *)((const hk_u8 *)S->a + lo);                                  \
            K##_t *d = (K##_t *)buf;                                                                      \
            const K##_t *b = (const K##_t *)ring;                                                         \
            const hk_u64 cnt = (hi - lo) / K##_SIZE;                                                      \
            const K##_ct s0 = K##_scalar(0);                                                              \
            switch (S->flags >> 8) {                                                                         \
              case HK_SUM: K##_range_sum(d, a, b, cnt, 0, s0, tid0, nth0); break;                         \
              case HK_PROD: K##_range_prod(d, a, b, cnt, 0, s0, tid0, nth0); break;                       \
              case HK_MAX: K##_range_max(d, a, b, cnt, 0, s0, tid0, nth0); break;                         \
              default: K##_range_min(d, a, b, cnt, 0, s0, tid0, nth0); break;                             \
            }                                                                                             \
          }                                                                                               \
        }                                                                                                 \
      }                                                                                                   \
      if (S->flags & (HK_WX_WRITE | HK_WX_WRITE_RST)) {                                                   \
        HK_FENCE_SYS(); /* this thread's part of the moves is out */                                      \
        HK_SYNC();                                                                                        \
        if (tid0 == 0) {                                                                                  \
          const hk_u64 tag = (D.gen << 20) | (hk_u64)(k + 1);                                             \
          if (sub != 0) {                                                                                 \
            HK_ST64(D.prog + 8 * (hk_u64)blk, tag);                                                       \
          } else if (hk_go && hk_wx_wait_blocks(D.abort_word, D.prog, T->block0, T->blocks, tag)) {       \
            HK_FENCE_SYS(); /* the other blocks' parts, which their reports announced */                  \
            if (S->flags & HK_WX_WRITE) HK_ST32(T->write_ctr, S->write);                                  \
            if (S->flags & HK_WX_WRITE_RST) {                                                             \
              HK_FENCE_SYS(); /* the counter's reset before the restart word that announces it */         \
              HK_ST32(T->write_rst, S->n);                                                                \
            }                                                                                             \
          } else {                                                                                        \
            hk_go = 0;                                                                                    \
          }                                                                                               \
        }                                                                                                 \
      }                                                                                                   \
    }                                                                                                     \
  }

HK_WX_KERNEL(int8, i8)
HK_WX_KERNEL(uint8, u8)
HK_WX_KERNEL(int32, i32)
HK_WX_KERNEL(uint32, u32)
HK_WX_KERNEL(int64, i64)
HK_WX_KERNEL(uint64, u64)
HK_WX_KERNEL(float16, f16)
HK_WX_KERNEL(float32, f32)
HK_WX_KERNEL(float64, f64)
HK_WX_KERNEL(bfloat16, bf16)
HK_WX_KERNEL(float8e4m3, e4m3)
HK_WX_KERNEL(float8e5m2, e5m2)
