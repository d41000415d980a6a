/*
 * TEST TOOL, never installed: a stand-in for the HIP runtime (libamdhip64),
 * so the hip device kind's ops run for real in CI without an AMD GPU.
 * Built twice (tests/abi/CMakeLists.txt): STAND_IN_ROCM_MAJOR=5 speaks
 * ROCm 5's ABI (runtime version 5.2, hipMemoryType Host 0 / Device 1,
 * pageable pointers an error, only the old properties layout), =6 speaks
 * ROCm 6's (version 6.3, Unregistered 0 / Host 1 / Device 2, and
 * hipGetDevicePropertiesR0600 beside the old layout).
 *
 * "Device" memory is host memory. Each stream is a thread running its queue
 * in order; stream waits spin on host memory; events count records; a module
 * is accepted only from an image starting with STAND_IN_HIP_IMAGE_MARKER,
 * and its kernels run the host reduction (src/device/reduce.h), except the
 * window kernels (hetccl_window_<type>), which run their host build
 * (src/device/kernels/reduce.cu as C), each block on a thread of its own
 * (their blocks spin on counters other blocks, streams and processes
 * write), the stream's thread waiting for all of them.
 * hipLaunchHostFunc queues a host function in stream order (the stand-in
 * RCCL runs its collectives so). A wait compares as HIP's does: the masked
 * value unsigned, Gte without wrap-around (src/device/hip/README.md).
 *
 * Environment: STAND_IN_HIP_DEVICES (default 2; 0: no GPU, see hipInit),
 * STAND_IN_HIP_ARCH (default "gfx942:sramecc+:xnack-"),
 * STAND_IN_HIP_CAPTURING=1 (every stream reports an active capture).
 * stand_in_hip_last_wait() tells a test the flags and mask of the last wait.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/reduce.h"

/* The kernels' host build, for the window kernels: one thread per block. */
static _Thread_local unsigned t_block;
static void kernel_pause(unsigned n);
#define HK_KERNEL(name) __attribute__((unused)) static void name
#define HK_TID() 0ull
#define HK_NTHREADS() 1ull
#define HK_BLOCK() t_block
#define HK_PAUSE(n) kernel_pause(n)
#include "device/kernels/reduce.cu"

/* tests/abi/CMakeLists.txt builds it with 5 and with 6; alone, ROCm 6. */
#ifndef STAND_IN_ROCM_MAJOR
#define STAND_IN_ROCM_MAJOR 6
#endif
#if STAND_IN_ROCM_MAJOR != 5 && STAND_IN_ROCM_MAJOR != 6
#error "build with -DSTAND_IN_ROCM_MAJOR=5 or 6"
#endif

#define EXPORT __attribute__((visibility("default")))
#define STAND_IN_HIP_IMAGE_MARKER "HETCCL-STAND-IN-HIP-CODE-OBJECT"

/* hipError_t values this stand-in returns. */
enum {
  E_OK = 0, E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_NO_DEVICE = 100, E_INVALID_DEVICE = 101,
  E_INVALID_IMAGE = 200, E_NOT_FOUND = 500, E_NOT_READY = 600, E_ALREADY_REGISTERED = 712, E_NOT_REGISTERED = 713,
};

#if STAND_IN_ROCM_MAJOR >= 6
#define RUNTIME_VERSION 60342134
enum { MEM_UNREGISTERED = 0, MEM_HOST = 1, MEM_DEVICE = 2 };
#define ARCH_OFFSET_NEW 1160 /* gcnArchName in hipDeviceProp_tR0600 */
#define PROPS_SIZE_NEW 1472
#else
#define RUNTIME_VERSION 50221153
enum { MEM_HOST = 0, MEM_DEVICE = 1 };
#endif
#define ARCH_OFFSET_OLD 396 /* gcnArchName in ROCm 5's hipDeviceProp_t */
#define PROPS_SIZE_OLD 792

/* ROCm 5 calls the first field memoryType, ROCm 6 type; same place. */
struct pointer_attribute {
#if STAND_IN_ROCM_MAJOR >= 6
  int type;
#else
  int memoryType;
#endif
  int device;
  void *devicePointer;
  void *hostPointer;
  int isManaged;
  unsigned allocationFlags;
};

/* ---- devices ---- */

static int device_count(void) {
  const char *s = getenv("STAND_IN_HIP_DEVICES");
  return s ? atoi(s) : 2;
}
static _Thread_local int t_device;

EXPORT const char *hipGetErrorName(int e) {
  switch (e) {
    case E_OK: return "hipSuccess";
    case E_INVALID_VALUE: return "hipErrorInvalidValue";
    case E_NO_DEVICE: return "hipErrorNoDevice";
    case E_INVALID_DEVICE: return "hipErrorInvalidDevice";
    case E_INVALID_IMAGE: return "hipErrorInvalidImage";
    case E_NOT_READY: return "hipErrorNotReady";
    case E_ALREADY_REGISTERED: return "hipErrorHostMemoryAlreadyRegistered";
    default: return "hipErrorUnknown";
  }
}
EXPORT const char *hipGetErrorString(int e) { return e == E_OK ? "no error" : "stand-in HIP error"; }
EXPORT int hipRuntimeGetVersion(int *v) {
  *v = RUNTIME_VERSION;
  return E_OK;
}
/* Without a GPU the ROCm 5 build fails hipInit as Debian's HIP 5.2 does
 * (101); the ROCm 6 build lets it succeed and fails hipGetDeviceCount
 * instead (100), so both of the kind's no-GPU paths run. */
EXPORT int hipInit(unsigned flags) {
  if (flags) return E_INVALID_VALUE;
  return device_count() > 0 || STAND_IN_ROCM_MAJOR >= 6 ? E_OK : E_INVALID_DEVICE;
}
EXPORT int hipGetDeviceCount(int *n) {
  *n = device_count();
  return *n > 0 ? E_OK : E_NO_DEVICE;
}
EXPORT int hipGetDevice(int *d) {
  *d = t_device;
  return E_OK;
}
EXPORT int hipSetDevice(int d) {
  if (d < 0 || d >= device_count()) return E_INVALID_DEVICE;
  t_device = d;
  return E_OK;
}

static int fill_properties(void *props, int device, size_t size, size_t arch_offset) {
  if (!props || device < 0 || device >= device_count()) return E_INVALID_DEVICE;
  const char *arch = getenv("STAND_IN_HIP_ARCH");
  memset(props, 0, size);
  strncpy((char *)props, "Stand-in AMD GPU", 255);
  strncpy((char *)props + arch_offset, arch ? arch : "gfx942:sramecc+:xnack-", 255);
  return E_OK;
}
EXPORT int hipGetDeviceProperties(void *props, int device) {
  return fill_properties(props, device, PROPS_SIZE_OLD, ARCH_OFFSET_OLD);
}
#if STAND_IN_ROCM_MAJOR >= 6
EXPORT int hipGetDevicePropertiesR0600(void *props, int device) {
  return fill_properties(props, device, PROPS_SIZE_NEW, ARCH_OFFSET_NEW);
}
#endif

/* ---- memory: every range handed out or registered, for pointer attributes ---- */

#define MAX_RANGES 256
static struct range {
  char *base;
  size_t bytes;
  int type; /* MEM_HOST or MEM_DEVICE */
  int device;
  int owned; /* allocated here (freed here) rather than registered */
} g_ranges[MAX_RANGES];
static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;

static struct range *find_range(const void *p) {
  for (int i = 0; i < MAX_RANGES; i++)
    if (g_ranges[i].base && (const char *)p >= g_ranges[i].base &&
        (const char *)p < g_ranges[i].base + g_ranges[i].bytes)
      return &g_ranges[i];
  return NULL;
}

static int add_range(void *base, size_t bytes, int type, int owned) {
  int rc = E_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mem_lock);
  if (find_range(base)) {
    rc = E_ALREADY_REGISTERED;
  } else {
    for (int i = 0; i < MAX_RANGES; i++)
      if (!g_ranges[i].base) {
        g_ranges[i] = (struct range){(char *)base, bytes, type, t_device, owned};
        rc = E_OK;
        break;
      }
  }
  pthread_mutex_unlock(&g_mem_lock);
  return rc;
}

/* Removes the range starting at p; returns whether it was there and owned. */
static int remove_range(void *p, int type, int *owned) {
  int rc = E_INVALID_VALUE;
  pthread_mutex_lock(&g_mem_lock);
  struct range *r = find_range(p);
  if (r && r->base == p && r->type == type) {
    *owned = r->owned;
    memset(r, 0, sizeof *r);
    rc = E_OK;
  }
  pthread_mutex_unlock(&g_mem_lock);
  return rc;
}

static int allocate(void **p, size_t bytes, int type) {
  *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!*p) return E_OUT_OF_MEMORY;
  /* As a runtime's: the memory is not zeroed (a test relying on it fails
   * alike with and without AddressSanitizer, whose malloc fills 0xbe). */
  memset(*p, 0xa5, (bytes + 255) / 256 * 256);
  int rc = add_range(*p, bytes, type, 1);
  if (rc != E_OK) free(*p);
  return rc;
}

static int release(void *p, int type) {
  int owned = 0;
  if (!p) return E_OK;
  int rc = remove_range(p, type, &owned);
  if (rc == E_OK && owned) free(p);
  return rc;
}

EXPORT int hipMalloc(void **p, size_t bytes) { return allocate(p, bytes, MEM_DEVICE); }
EXPORT int hipFree(void *p) { return release(p, MEM_DEVICE); }
EXPORT int hipHostMalloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  return allocate(p, bytes, MEM_HOST);
}
EXPORT int hipHostFree(void *p) { return release(p, MEM_HOST); }
EXPORT int hipHostRegister(void *p, size_t bytes, unsigned flags) {
  (void)flags;
  return p && bytes ? add_range(p, bytes, MEM_HOST, 0) : E_INVALID_VALUE;
}
EXPORT int hipHostUnregister(void *p) {
  int owned = 0;
  return remove_range(p, MEM_HOST, &owned) == E_OK ? E_OK : E_NOT_REGISTERED;
}
/* Mapped host memory has the same address for the "device". */
EXPORT int hipHostGetDevicePointer(void **dev, void *host, unsigned flags) {
  (void)flags;
  pthread_mutex_lock(&g_mem_lock);
  struct range *r = find_range(host);
  int ok = r && r->type == MEM_HOST;
  pthread_mutex_unlock(&g_mem_lock);
  if (!ok) return E_INVALID_VALUE;
  *dev = host;
  return E_OK;
}

EXPORT int hipPointerGetAttributes(struct pointer_attribute *a, const void *p) {
  memset(a, 0, sizeof *a);
  pthread_mutex_lock(&g_mem_lock);
  struct range *r = find_range(p);
  struct range copy = r ? *r : (struct range){0};
  pthread_mutex_unlock(&g_mem_lock);
  if (!r) {
#if STAND_IN_ROCM_MAJOR >= 6
    a->type = MEM_UNREGISTERED; /* ROCm 6 answers for pageable memory */
    a->device = -1;
    return E_OK;
#else
    return E_INVALID_VALUE; /* ROCm 5 refuses it */
#endif
  }
#if STAND_IN_ROCM_MAJOR >= 6
  a->type = copy.type;
#else
  a->memoryType = copy.type;
#endif
  a->device = copy.device;
  a->devicePointer = (void *)p;
  a->hostPointer = copy.type == MEM_HOST ? (void *)p : NULL;
  return E_OK;
}

/* ---- events ---- */

struct ihipEvent_t {
  uint64_t recorded; /* records made (atomics) */
  uint64_t done;     /* records reached by their stream */
};

EXPORT int hipEventCreateWithFlags(struct ihipEvent_t **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof **e);
  return *e ? E_OK : E_OUT_OF_MEMORY;
}
EXPORT int hipEventDestroy(struct ihipEvent_t *e) {
  free(e);
  return E_OK;
}
EXPORT int hipEventQuery(struct ihipEvent_t *e) {
  return __atomic_load_n(&e->done, __ATOMIC_ACQUIRE) >= __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE) ? E_OK
                                                                                                          : E_NOT_READY;
}

/* ---- kernels ---- */

struct kernel {
  int finish; /* 1: hetccl_finish_<type>, 2: hetccl_window_<type>, else hetccl_reduce_<type> */
  hetcclDataType_t dt;
};
typedef void (*window_fn)(const struct hk_wx_desc);
static const window_fn g_window_fns[hetcclNumTypes] = {
    hetccl_window_int8,    hetccl_window_uint8,   hetccl_window_int32,    hetccl_window_uint32,
    hetccl_window_int64,   hetccl_window_uint64,  hetccl_window_float16,  hetccl_window_float32,
    hetccl_window_float64, hetccl_window_bfloat16, hetccl_window_float8e4m3, hetccl_window_float8e5m2,
};
static const char *const g_type_names[hetcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
};
static struct kernel g_kernels[3][hetcclNumTypes];
static int g_module; /* the one module handle's target */

EXPORT int hipModuleLoadData(void **module, const void *image) {
  if (!image || memcmp(image, STAND_IN_HIP_IMAGE_MARKER, sizeof STAND_IN_HIP_IMAGE_MARKER - 1) != 0)
    return E_INVALID_IMAGE;
  *module = &g_module;
  return E_OK;
}
EXPORT int hipModuleGetFunction(struct kernel **fn, void *module, const char *name) {
  if (module != &g_module) return E_INVALID_VALUE;
  for (int f = 0; f < 3; f++)
    for (int t = 0; t < hetcclNumTypes; t++) {
      const char *prefix = f == 2 ? "hetccl_window_" : f ? "hetccl_finish_" : "hetccl_reduce_";
      size_t n = strlen(prefix);
      if (!strncmp(name, prefix, n) && !strcmp(name + n, g_type_names[t])) {
        g_kernels[f][t] = (struct kernel){f, (hetcclDataType_t)t};
        *fn = &g_kernels[f][t];
        return E_OK;
      }
    }
  return E_NOT_FOUND;
}

/* ---- streams: one thread each, running their queue in order ---- */

enum op_kind { OP_COPY, OP_SET, OP_WAIT, OP_WRITE, OP_RECORD, OP_WAIT_EVENT, OP_REDUCE, OP_FINISH, OP_HOST_FUNC, OP_WINDOW };
struct op {
  enum op_kind kind;
  void *dst;
  const void *src, *src2;
  size_t bytes;
  uint32_t value, mask;
  unsigned flags;
  struct ihipEvent_t *event;
  uint64_t seq;
  hetcclDataType_t dt;
  hetccl_redop redop;
  int premul;
  void (*host_fn)(void *);
  struct hk_wx_desc *desc; /* OP_WINDOW: the launch's copy of its argument; blocks in bytes */
  struct op *next;
};

struct ihipStream_t {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct op *head, *tail;
  int busy; /* ops queued or running */
  int stop;
};

/* Yields, then naps after a while: several ranks' stream threads spinning
 * on a 2-core CI machine must leave the cores to the threads they wait for. */
static void spin(unsigned *n) {
  if (++*n < 64) {
    sched_yield();
  } else {
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
}

static void kernel_pause(unsigned n) { spin(&n); }

struct block_run {
  const struct op *o;
  unsigned block;
};
static void *window_block(void *arg) {
  struct block_run *b = arg;
  t_block = b->block;
  g_window_fns[b->o->dt](*b->o->desc);
  return NULL;
}

/* A window kernel: every block at once (they wait on each other), the
 * stream going on once all have returned, as after a kernel. */
static void run_window(struct op *o) {
  unsigned n = (unsigned)o->bytes;
  pthread_t th[64];
  struct block_run br[64];
  for (unsigned b = 0; b < n; b++) {
    br[b] = (struct block_run){o, b};
    if (pthread_create(&th[b], NULL, window_block, &br[b]) != 0) abort(); /* a test tool: no way to report it */
  }
  for (unsigned b = 0; b < n; b++) pthread_join(th[b], NULL);
  free(o->desc);
}

static void run(struct op *o) {
  switch (o->kind) {
    case OP_COPY: memmove(o->dst, o->src, o->bytes); break;
    case OP_SET: memset(o->dst, (int)o->value, o->bytes); break;
    case OP_WAIT:
      for (unsigned n = 0;;) {
        uint32_t v = __atomic_load_n((uint32_t *)o->dst, __ATOMIC_ACQUIRE) & o->mask;
        if (o->flags == 0 ? v >= o->value : v == o->value) break;
        spin(&n);
      }
      break;
    case OP_WRITE: __atomic_store_n((uint32_t *)o->dst, o->value, __ATOMIC_SEQ_CST); break;
    case OP_RECORD: __atomic_store_n(&o->event->done, o->seq, __ATOMIC_RELEASE); break;
    case OP_WAIT_EVENT:
      for (unsigned n = 0; __atomic_load_n(&o->event->done, __ATOMIC_ACQUIRE) < o->seq;) spin(&n);
      break;
    case OP_REDUCE:
      if (o->src2)
        hetccl_host_reduce(o->dst, o->src, o->premul, o->src2, o->bytes, o->dt, &o->redop);
      else
        hetccl_host_prepare(o->dst, o->src, o->bytes, o->dt, &o->redop);
      break;
    case OP_HOST_FUNC: o->host_fn(o->dst); break;
    case OP_WINDOW: run_window(o); break;
    case OP_FINISH:
      if (o->dst != o->src) memmove(o->dst, o->src, o->bytes * hetccl_type_size(o->dt));
      hetccl_host_finish(o->dst, o->bytes, o->dt, &o->redop);
      break;
  }
}

static void *stream_main(void *arg) {
  struct ihipStream_t *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->cond, &s->lock);
    if (!s->head) break;
    struct op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    run(o);
    free(o);
    pthread_mutex_lock(&s->lock);
    s->busy--;
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* The null stream runs each op at once, on the caller's thread. */
static int enqueue(struct ihipStream_t *s, const struct op *o) {
  if (!s) {
    struct op now = *o;
    run(&now);
    return E_OK;
  }
  struct op *q = malloc(sizeof *q);
  if (!q) return E_OUT_OF_MEMORY;
  *q = *o;
  q->next = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->tail)
    s->tail->next = q;
  else
    s->head = q;
  s->tail = q;
  s->busy++;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  return E_OK;
}

EXPORT int hipStreamCreateWithFlags(struct ihipStream_t **out, unsigned flags) {
  (void)flags;
  struct ihipStream_t *s = calloc(1, sizeof *s);
  if (!s) return E_OUT_OF_MEMORY;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
    free(s);
    return E_OUT_OF_MEMORY;
  }
  *out = s;
  return E_OK;
}

EXPORT int hipStreamSynchronize(struct ihipStream_t *s) {
  if (!s) return E_OK;
  pthread_mutex_lock(&s->lock);
  while (s->busy) pthread_cond_wait(&s->cond, &s->lock);
  pthread_mutex_unlock(&s->lock);
  return E_OK;
}

/* As HIP: destroying a stream lets its queued work finish first. */
EXPORT int hipStreamDestroy(struct ihipStream_t *s) {
  if (!s) return E_INVALID_VALUE;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s);
  return E_OK;
}

EXPORT int hipStreamIsCapturing(struct ihipStream_t *s, int *status) {
  (void)s;
  const char *c = getenv("STAND_IN_HIP_CAPTURING");
  *status = c && c[0] == '1' ? 1 : 0;
  return E_OK;
}

EXPORT int hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, struct ihipStream_t *s) {
  if (kind != 4) return E_INVALID_VALUE; /* the kind uses hipMemcpyDefault only */
  return enqueue(s, &(struct op){.kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes});
}
EXPORT int hipMemsetAsync(void *dst, int value, size_t bytes, struct ihipStream_t *s) {
  return enqueue(s, &(struct op){.kind = OP_SET, .dst = dst, .value = (uint32_t)value, .bytes = bytes});
}

static unsigned g_last_wait_flags;
static uint32_t g_last_wait_mask;
/* For tests: the flags and mask of the last hipStreamWaitValue32. */
EXPORT void stand_in_hip_last_wait(unsigned *flags, uint32_t *mask) {
  *flags = __atomic_load_n(&g_last_wait_flags, __ATOMIC_ACQUIRE);
  *mask = __atomic_load_n(&g_last_wait_mask, __ATOMIC_ACQUIRE);
}

EXPORT int hipStreamWaitValue32(struct ihipStream_t *s, void *ptr, uint32_t value, unsigned flags, uint32_t mask) {
  if (!ptr || flags > 1) return E_INVALID_VALUE; /* Gte 0, Eq 1; And and Nor are not used */
  __atomic_store_n(&g_last_wait_flags, flags, __ATOMIC_RELEASE);
  __atomic_store_n(&g_last_wait_mask, mask, __ATOMIC_RELEASE);
  return enqueue(s, &(struct op){.kind = OP_WAIT, .dst = ptr, .value = value, .flags = flags, .mask = mask});
}
EXPORT int hipStreamWriteValue32(struct ihipStream_t *s, void *ptr, uint32_t value, unsigned flags) {
  if (!ptr || flags) return E_INVALID_VALUE;
  return enqueue(s, &(struct op){.kind = OP_WRITE, .dst = ptr, .value = value});
}

EXPORT int hipEventRecord(struct ihipEvent_t *e, struct ihipStream_t *s) {
  uint64_t seq = __atomic_add_fetch(&e->recorded, 1, __ATOMIC_ACQ_REL);
  return enqueue(s, &(struct op){.kind = OP_RECORD, .event = e, .seq = seq});
}
EXPORT int hipStreamWaitEvent(struct ihipStream_t *s, struct ihipEvent_t *e, unsigned flags) {
  if (flags) return E_INVALID_VALUE;
  uint64_t seq = __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE);
  return enqueue(s, &(struct op){.kind = OP_WAIT_EVENT, .event = e, .seq = seq});
}

/* HIP's hipLaunchHostFunc (ROCm 5.3+; the hip kind does not use it): the
 * stand-in RCCL (tests/abi/stand_in_ccl_shm.c) runs its collectives through
 * it, so they take their place in the stream's order as RCCL's kernels do. */
EXPORT int hipLaunchHostFunc(struct ihipStream_t *s, void (*fn)(void *), void *arg) {
  if (!fn) return E_INVALID_VALUE;
  return enqueue(s, &(struct op){.kind = OP_HOST_FUNC, .host_fn = fn, .dst = arg});
}

/* The argument lists of src/device/kernels' contract. */
EXPORT int hipModuleLaunchKernel(struct kernel *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, struct ihipStream_t *s, void **args, void **extra) {
  if (!k || !args || extra || !gx || gy != 1 || gz != 1 || bx != 512 || by != 1 || bz != 1 || shared)
    return E_INVALID_VALUE;
  struct op o = {.dt = k->dt};
  if (k->finish == 2) {
    if (gx > 64) return E_INVALID_VALUE;
    o.kind = OP_WINDOW;
    o.bytes = gx;
    o.desc = malloc(sizeof *o.desc);
    if (!o.desc) return E_OUT_OF_MEMORY;
    memcpy(o.desc, args[0], sizeof *o.desc);
    int rc = enqueue(s, &o);
    if (rc != E_OK) free(o.desc);
    return rc;
  }
  if (!k->finish) {
    o.kind = OP_REDUCE;
    o.dst = *(void **)args[0];
    o.src = *(const void **)args[1];
    o.src2 = *(const void **)args[2];
    o.bytes = (size_t)*(unsigned long long *)args[3]; /* an element count here */
    o.redop.scalar = *(unsigned long long *)args[4];
    o.redop.combine = *(int *)args[5];
    o.premul = *(int *)args[6];
    if (o.premul == 2) /* the kernels' HK_PREMUL_AT: args[4] holds the scalar's address, read as it runs */
      o.redop.scalar_at = (const void *)(uintptr_t)o.redop.scalar;
    o.premul = o.premul != 0;
    o.redop.premul = o.premul;
  } else {
    o.kind = OP_FINISH;
    o.dst = *(void **)args[0];
    o.src = *(const void **)args[1];
    o.bytes = (size_t)*(unsigned long long *)args[2];
    o.redop.postdiv = 1;
    o.redop.divisor = *(int *)args[3];
  }
  return enqueue(s, &o);
}
