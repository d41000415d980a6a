/*
 * One runtime interface over every device kind: memory, copies, streams,
 * events, stream waits on host flags, kernel launch. One implementation per
 * kind (host in plain C; cuda over libcuda.so.1 and hip over libamdhip64.so,
 * both opened with dlopen), chosen per rank at run time.
 */
#ifndef HETCCL_DEVICE_H
#define HETCCL_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "device/reduce.h"

enum hetccl_device_kind { HETCCL_DEVICE_HOST = 0, HETCCL_DEVICE_CUDA = 1, HETCCL_DEVICE_HIP = 2, HETCCL_DEVICE_KINDS };

/* One stream wait (wait = 1, cond as stream_wait_value32) or write of a
 * 32-bit word, for stream_memops32. */
struct hetccl_memop32 {
  void *dev_addr;
  uint32_t value;
  int wait;
  int cond;
};
#define HETCCL_MEMOPS_MAX 4

/*
 * One launch of the window kernel (src/device/kernels/reduce.cu's
 * hetccl_window_<type>, whose struct hk_wx_desc this is byte for byte;
 * built by exec/window.c's kernel path): tracks are lanes of device
 * windows (one direction's ring and counters), each walked by `blocks`
 * blocks from block0; steps are a track's chunks and counter handshakes,
 * those of its transfers in phase order: wait (the track's wait counter,
 * or with HETCCL_WX_WAIT_RST its wait restart word, >= `wait`, unsigned),
 * move `n` bytes (send: buf to ring + at; receive: ring
 * + at to buf, or buf = a op ring when a is set, combine as hetccl_redop's
 * in flags bits 8..15 (HETCCL_WX_COMBINE_SHIFT), elements of the launch's
 * data type), write
 * (`write` to the track's write counter once the moves before it are out,
 * behind a system-scope fence; with HETCCL_WX_WRITE_RST then `n` to its
 * write restart word, a restart's step, which moves nothing). Every spin also reads abort_word (mapped
 * host memory): once it is non-zero every wait passes and nothing more is
 * moved. prog: HETCCL_WX_BLOCKS 64-bit words of device memory, zero before
 * the first launch; gen grows by one per launch.
 */
#define HETCCL_WX_TRACKS 8
#define HETCCL_WX_STEPS 80
#define HETCCL_WX_BLOCKS 32 /* blocks of a launch, at most: all of them co-resident on any GPU here */
enum { HETCCL_WX_WAIT_GEQ = 1, HETCCL_WX_WAIT_RST = 2, HETCCL_WX_MOVE = 4, HETCCL_WX_WRITE = 8, HETCCL_WX_WRITE_RST = 16 };
#define HETCCL_WX_COMBINE_SHIFT 8
struct hetccl_wx_step {
  uint64_t buf, a, at;
  uint32_t n, wait, write, flags;
};
struct hetccl_wx_track {
  uint64_t ring, wait_ctr, write_ctr, wait_rst, write_rst; /* device addresses */
  uint32_t first, nsteps, block0, blocks, send, pad;
};
struct hetccl_wx_desc {
  uint64_t abort_word, prog, gen;
  uint32_t ntracks, nblocks;
  struct hetccl_wx_track t[HETCCL_WX_TRACKS];
  struct hetccl_wx_step s[HETCCL_WX_STEPS];
};
/* The kernel's argument: with AMD's 256 bytes of hidden arguments after
 * it, under the 4 KiB every CUDA and HIP version takes. */
_Static_assert(sizeof(struct hetccl_wx_step) == 40 && sizeof(struct hetccl_wx_track) == 64 &&
                   sizeof(struct hetccl_wx_desc) == 32 + 8 * 64 + 80 * 40 && sizeof(struct hetccl_wx_desc) + 256 <= 4096,
               "struct hetccl_wx_desc must match reduce.cu's struct hk_wx_desc");

struct hetccl_device_ops {
  unsigned version; /* HETCCL_DEVICE_OPS_VERSION */
  int kind;
  const char *name;
  /* Whether this kind can run here (a runtime and a device were found). */
  int (*available)(void);
  /* Number of devices of this kind on the node. */
  int (*count)(void);
  /* The device the calling thread uses now (as NCCL: the current device), -1 for host. */
  int (*current)(void);
  hetcclResult_t (*mem_alloc)(int device, size_t bytes, void **ptr);
  hetcclResult_t (*mem_free)(int device, void *ptr);
  /* Synchronous copy between any two buffers of this kind and host memory. */
  hetcclResult_t (*copy)(void *dst, const void *src, size_t bytes);

  /*
   * Asynchronous device work. GPU kinds fill these; the host kind leaves
   * them NULL (its work completes on return), so callers test for NULL.
   *
   * Context rule (as CUDA's): stream, event and copy_async/reduce calls run
   * in the calling thread's current context, which must be the one of the
   * stream's device. Threads the library starts call set_device first.
   * Calls that take `device` enter that device's context themselves and
   * leave the caller's context as it was.
   */
  /* Makes `device`'s primary context current on the calling thread (cudaSetDevice). */
  hetcclResult_t (*set_device)(int device);
  /* Enter `device`'s primary context for a short section; ctx_pop restores the caller's. */
  hetcclResult_t (*ctx_push)(int device);
  hetcclResult_t (*ctx_pop)(void);

  /* Streams (non-blocking with respect to the legacy default stream). */
  hetcclResult_t (*stream_create)(int device, hetcclStream_t *stream);
  /* May be called with work pending (as cuStreamDestroy/hipStreamDestroy):
   * returns at once, the stream goes once its work is done. */
  hetcclResult_t (*stream_destroy)(hetcclStream_t stream);
  hetcclResult_t (*stream_synchronize)(hetcclStream_t stream);
  /* Work later enqueued on `stream` waits for `event`'s last record. */
  hetcclResult_t (*stream_wait_event)(hetcclStream_t stream, void *event);

  /* Events (no timing). query: hetcclSuccess when the recorded work is done,
   * hetcclInProgress while it is not, another code on a device error. */
  hetcclResult_t (*event_create)(int device, void **event);
  hetcclResult_t (*event_record)(void *event, hetcclStream_t stream);
  hetcclResult_t (*event_query)(void *event);
  /* May be called before the last record ran (as cuEventDestroy): the
   * event goes once it has. */
  hetcclResult_t (*event_destroy)(void *event);

  /* Copy of `bytes` on `stream`, any direction (host<->device, device<->device;
   * pinned host memory makes host copies truly asynchronous). */
  hetcclResult_t (*copy_async)(void *dst, const void *src, size_t bytes, hetcclStream_t stream);
  /* Sets `bytes` of device memory to zero on `stream`. */
  hetcclResult_t (*zero_async)(void *dst, size_t bytes, hetcclStream_t stream);

  /* Pinned, device-mapped host memory usable from every device: *host for
   * the CPU, *dev for device work (kernels, stream_wait/write_value32). */
  hetcclResult_t (*host_alloc)(int device, size_t bytes, void **host, void **dev);
  hetcclResult_t (*host_free)(void *host);
  /* Pins existing host memory (e.g. a shared-memory segment) and maps it for
   * devices; *dev is its device address. Undone by host_unregister(host). */
  hetcclResult_t (*host_register)(int device, void *host, size_t bytes, void **dev);
  hetcclResult_t (*host_unregister)(void *host);

  /* Stream waits on and writes of a 32-bit word in device-mapped host (or
   * device) memory, addressed by its device address. can_wait_value says
   * whether the device supports them. wait_value32 blocks later work on the
   * stream until the condition holds (HETCCL_WAIT_GEQ: (int32_t)(*addr -
   * value) >= 0 on cuda, but *addr >= value unsigned on hip, whose runtime
   * has no wrap-around comparison: callers keep the values they wait for
   * below 2^31 plus a lane, where both agree (exec/window.c restarts its
   * counters); HETCCL_WAIT_EQ: *addr == value).
   * write_value32 writes after all earlier work of the stream, with a
   * system-scope fence before the write. */
  int (*can_wait_value)(int device);
  hetcclResult_t (*stream_wait_value32)(hetcclStream_t stream, void *dev_addr, uint32_t value, int cond);
  hetcclResult_t (*stream_write_value32)(hetcclStream_t stream, void *dev_addr, uint32_t value);
  /* Optional: n (at most HETCCL_MEMOPS_MAX) waits and writes as above,
   * enqueued in order with one driver call. NULL: use hetccl_memops32(). */
  hetcclResult_t (*stream_memops32)(hetcclStream_t stream, const struct hetccl_memop32 *ops, int n);
  /* Optional: *capturing = 1 when `stream` is being captured into a graph
   * (CUDA graphs, HIP graphs), so work enqueued on it would not run now. */
  hetcclResult_t (*stream_capturing)(hetcclStream_t stream, int *capturing);

  /*
   * dst[i] = A(a[i]) op b[i] for i < count on `stream`, with the semantics of
   * hetccl_host_reduce: A scales by op->scalar when HETCCL_REDUCE_SCALE_A is
   * given and op->premul is set (by the scalar at op->scalar_at, device
   * memory, read when the reduction runs, when that is set: a PreMulSum of
   * device residence); HETCCL_REDUCE_FINISH then applies op->postdiv.
   * b == NULL: no combine, dst[i] = A(a[i]) (finished), so the host's
   * prepare and finish are reduce(d, a, NULL, .., SCALE_A) and
   * reduce(buf, buf, NULL, .., FINISH). b may be the device address of
   * mapped host memory. dst may equal a or b; buffers are aligned to their
   * element size.
   */
  hetcclResult_t (*reduce)(void *dst, const void *a, const void *b, size_t count, hetcclDataType_t dt,
                           const hetccl_redop *op, unsigned flags, hetcclStream_t stream);
  /* Loads the kernels into `device`'s context now. reduce() loads them at
   * first use otherwise, and loading a module may wait for the device to go
   * idle: a thread that launches while a stream waits on a flag only it will
   * write must have them loaded first. */
  hetcclResult_t (*load_kernels)(int device);

  /* dma-buf export of device memory for RDMA registration. The fd covers
   * the page-aligned range around [ptr, ptr + bytes); *offset is ptr's
   * offset in it. The caller closes the fd. can_dmabuf says whether the
   * device and driver support it. */
  int (*can_dmabuf)(int device);
  hetcclResult_t (*dmabuf_export)(void *ptr, size_t bytes, int *fd, size_t *offset);

  /* Optional: launches the window kernel on `stream` (one launch, desc->nblocks
   * blocks; the descriptor is copied at the call, so the caller may reuse
   * it at once), with the kernel of data type dt. NULL: the kind has none
   * (exec/window.c then enqueues waits, writes and copies). */
  hetcclResult_t (*window_xfer)(const struct hetccl_wx_desc *desc, hetcclDataType_t dt, hetcclStream_t stream);

  /* Optional: `device`'s PCI address as "dddd:bb:dd.f" (lower case) into
   * buf (at least 16 bytes), for the node's topology (src/topo: its nearest
   * NIC and NUMA node). NULL: the kind's ranks have none (host). */
  hetcclResult_t (*pci_bus_id)(int device, char *buf, size_t size);
};
#define HETCCL_DEVICE_OPS_VERSION 1

/* reduce() flags. */
#define HETCCL_REDUCE_SCALE_A 1u /* apply op->premul to a */
#define HETCCL_REDUCE_FINISH 2u  /* apply op->postdiv to the result */

/* stream_wait_value32() conditions. */
enum hetccl_wait_cond { HETCCL_WAIT_GEQ = 0, HETCCL_WAIT_EQ = 1 };

/* ops[0..n) on `stream` in order: one call per HETCCL_MEMOPS_MAX where the
 * kind batches them, else one call each. */
hetcclResult_t hetccl_memops32(const struct hetccl_device_ops *dev, hetcclStream_t stream,
                               const struct hetccl_memop32 *ops, int n);
/* The same, one stream_wait_value32 / stream_write_value32 call each. */
hetcclResult_t hetccl_memops32_each(const struct hetccl_device_ops *dev, hetcclStream_t stream,
                                    const struct hetccl_memop32 *ops, int n);

extern const struct hetccl_device_ops hetccl_device_host;
/* Over libcuda.so.1, opened at first use; available() is 0 where it is missing. */
extern const struct hetccl_device_ops hetccl_device_cuda;

struct hetccl_settings_table;

/*
 * What a device kind says of itself. The registry (device/registry.c) holds
 * the built-in kinds and those registered at run time; a kind's id is its
 * index there (the built-ins keep enum hetccl_device_kind's values).
 */
struct hetccl_device_desc {
  const char *name;      /* what HETCCL_DEVICE names it by */
  int priority;          /* auto choice: the highest usable wins; host is lowest */
  /* 1 when the kind can run ranks here; else 0 with the reason in `why`.
   * Auto choice takes only kinds whose probe says usable. */
  int (*probe)(char *why, size_t why_size);
  struct hetccl_settings_table *settings;  /* its own settings; NULL: none */
  const struct hetccl_device_ops *ops;     /* NULL: a known name not built here */
};

extern const struct hetccl_device_desc hetccl_device_desc_host;
extern const struct hetccl_device_desc hetccl_device_desc_cuda;

/* Adds a device kind (tests, plugins): before the first communicator, and
 * on every rank alike (ids are registry indices, exchanged at init). */
hetcclResult_t hetccl_device_register(const struct hetccl_device_desc *desc);
/* Kinds registered, and kind `id`'s descriptor (NULL outside 0..count-1). */
int hetccl_device_kind_count(void);
const struct hetccl_device_desc *hetccl_device_desc_get(int id);
/* The kind a rank of this process gets: HETCCL_DEVICE's when set, else the
 * highest-priority kind whose probe says usable. hetcclInvalidUsage when
 * the named kind is not available (`who` starts the message: "" at init). */
hetcclResult_t hetccl_device_choose(const char *who, int *kind);
/* The kind auto choice takes (HETCCL_DEVICE unset); always found (host). */
int hetccl_device_auto(void);

/* The GPU architectures of the CUDA kernels built into this library
 * ("sm_75 sm_80 ... compute_90"), or NULL when they were not built. */
const char *hetccl_kernels_cuda_archs(void);

/* The AMD architectures whose code objects of the same kernels are built into
 * this library ("gfx908 gfx90a ..."), or NULL when none were built. */
const char *hetccl_kernels_hip_archs(void);
/* The code object for the device architecture `arch` as the HIP runtime
 * names it ("gfx90a", or "gfx90a:sramecc+:xnack-": the part after ':' is
 * ignored), with its size in `bytes`; NULL when that architecture is not
 * built in. */
const void *hetccl_kernels_hip_image(const char *arch, size_t *bytes);

/* The ops of `kind`, or NULL when this build has none. */
const struct hetccl_device_ops *hetccl_device_get(int kind);
/* A kind's id by name ("host", "cuda", "hip", or a registered one); -1 when unknown. */
int hetccl_device_parse(const char *name);

#endif
