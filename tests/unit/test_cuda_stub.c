/*
 * The cuda device kind and the NCCL vendor where there is no GPU (CI), or
 * with their libraries made unreachable on purpose:
 *   - a missing or wrong CUDA driver library gives clean errors from every
 *     op (no crash, the right codes, a message naming the library), and the
 *     kind reports itself unavailable;
 *   - the embedded kernels fatbin, when built, is well formed and holds
 *     every architecture hetccl_kernels_cuda_archs() lists;
 *   - over the stand-in CUDA driver (a test tool) every entry point resolves
 *     both ways, a GEQ stream wait wraps around as CUDA's, and a driver
 *     without a device is a clean probe failure;
 *   - the NCCL vendor reports a missing library as "not found", rejects a
 *     library that is not NCCL or is HetCCL itself, and init fails cleanly.
 * Each scenario runs in a forked child (the libraries are loaded once per
 * process), bounded by an alarm; the child reports its counts over a pipe.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/cuda/cuda_internal.h"
#include "device/device.h"
#include "util/error.h"
#include "ccl/nccl/nccl_vendor.h"

#include "unit_child.h"


/* ---- CUDA driver unreachable ---- */

static void cuda_unreachable(const char *lib) {
  const struct hetccl_device_ops *ops = hetccl_device_get(HETCCL_DEVICE_CUDA);
  check(ops == &hetccl_device_cuda, "registry returns the cuda ops");
  if (!ops) return;
  check(ops->kind == HETCCL_DEVICE_CUDA && !strcmp(ops->name, "cuda"), "cuda ops kind and name");
  check(ops->available() == 0, "cuda unavailable without a driver");
  check(ops->count() == 0, "no cuda devices without a driver");
  check(ops->current() == -1, "no current cuda device without a driver");
  check(contains(hetccl_cu_load_error(), lib), "load error names the library");
  check(ops->can_wait_value(0) == 0, "no stream waits without a driver");
  check(ops->can_dmabuf(0) == 0, "no dma-buf without a driver");

  void *p = NULL, *q = NULL;
  hetcclStream_t s = NULL;
  int fd = -1;
  size_t off = 0;
  expect_fail(ops->mem_alloc(0, 4096, &p), hetcclSystemError, lib, "mem_alloc");
  check(p == NULL, "mem_alloc leaves the pointer alone");
  expect_fail(ops->copy(&fd, &off, sizeof fd), hetcclSystemError, lib, "copy");
  expect_fail(ops->set_device(0), hetcclSystemError, lib, "set_device");
  expect_fail(ops->ctx_push(0), hetcclSystemError, lib, "ctx_push");
  expect_fail(ops->stream_create(0, &s), hetcclSystemError, lib, "stream_create");
  expect_fail(ops->event_create(0, &q), hetcclSystemError, lib, "event_create");
  expect_fail(ops->copy_async(&fd, &off, sizeof fd, NULL), hetcclSystemError, lib, "copy_async");
  expect_fail(ops->host_alloc(0, 4096, &p, &q), hetcclSystemError, lib, "host_alloc");
  static char page[4096];
  expect_fail(ops->host_register(0, page, sizeof page, &q), hetcclSystemError, lib, "host_register");
  expect_fail(ops->stream_wait_value32(NULL, page, 1, HETCCL_WAIT_GEQ), hetcclSystemError, lib, "stream_wait_value32");
  expect_fail(ops->stream_write_value32(NULL, page, 1), hetcclSystemError, lib, "stream_write_value32");
  expect_fail(ops->dmabuf_export(page, sizeof page, &fd, &off), hetcclSystemError, lib, "dmabuf_export");

  /* reduce: argument checks come first, then kernels, then the driver. */
  hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
  float a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1};
  check(ops->reduce(a, a, b, 0, hetcclFloat32, &sum, 0, NULL) == hetcclSuccess, "reduce of 0 elements is a no-op");
  expect_fail(ops->reduce(a, a, b, 4, (hetcclDataType_t)42, &sum, 0, NULL), hetcclInternalError, "invalid type",
              "reduce with a bad type");
  if (hetccl_kernels_cuda_archs())
    expect_fail(ops->reduce(a, a, b, 4, hetcclFloat32, &sum, 0, NULL), hetcclSystemError, lib, "reduce");
  else
    expect_fail(ops->reduce(a, a, b, 4, hetcclFloat32, &sum, 0, NULL), hetcclInvalidUsage, "without CUDA kernels",
                "reduce without kernels");
}

/* A library that exists but is not the CUDA driver. */
static void cuda_wrong_library(const char *lib) {
  const struct hetccl_device_ops *ops = &hetccl_device_cuda;
  check(ops->available() == 0, "cuda unavailable with a wrong driver library");
  check(contains(hetccl_cu_load_error(), "lacks cu"), "load error says the library lacks the driver API");
  void *p = NULL;
  expect_fail(ops->mem_alloc(0, 64, &p), hetcclSystemError, lib, "mem_alloc with a wrong library");
}

/* ---- the stand-in CUDA driver (a test tool, tests/abi/stand_in_cuda.c) ---- */

#ifndef HETCCL_TEST_STAND_IN_CUDA
#define HETCCL_TEST_STAND_IN_CUDA ""
#endif

/* Without devices its cuInit fails: a clean probe failure naming cuInit. */
static void stand_in_no_device(const char *lib) {
  (void)lib;
  const struct hetccl_device_ops *ops = &hetccl_device_cuda;
  check(ops->available() == 0 && ops->count() == 0, "cuda unavailable when cuInit finds no device");
  check(contains(hetccl_cu_load_error(), "cuInit"), "load error names cuInit");
  void *p = NULL;
  expect_fail(ops->mem_alloc(0, 64, &p), hetcclUnhandledCudaError, "cuInit", "mem_alloc without a device");
}

/* Every entry point resolves (through cuGetProcAddress_v2, or with dlsym
 * when the stand-in refuses it), and a stream wait on a mapped flag
 * compares as CUDA's GEQ, with wrap-around: 5 is at or past 0xfffffff0,
 * not yet at 6. */
static void stand_in_driver(const char *lib) {
  (void)lib;
  const struct hetccl_device_ops *ops = &hetccl_device_cuda;
  check(ops->available() == 1 && ops->count() == 2, "the stand-in driver loads with 2 devices");
  check(ops->can_wait_value(0) == 1 && ops->can_dmabuf(0) == 0, "stream waits, no dma-buf");
  hetcclStream_t s = NULL;
  void *host = NULL, *dev = NULL, *ev = NULL;
  int ready = ops->set_device(1) == hetcclSuccess && ops->stream_create(1, &s) == hetcclSuccess &&
              ops->event_create(1, &ev) == hetcclSuccess && ops->host_alloc(1, 64, &host, &dev) == hetcclSuccess;
  check(ready, "device 1: stream, event, mapped host memory");
  if (!ready) return;
  volatile uint32_t *flag = host;
  *flag = 5;
  check(ops->stream_wait_value32(s, dev, 0xfffffff0u, HETCCL_WAIT_GEQ) == hetcclSuccess &&
            ops->event_record(ev, s) == hetcclSuccess && ops->stream_synchronize(s) == hetcclSuccess,
        "a GEQ wait for 0xfffffff0 passes at 5 (wrap-around)");
  check(ops->stream_wait_value32(s, dev, 6, HETCCL_WAIT_GEQ) == hetcclSuccess &&
            ops->stream_write_value32(s, (char *)dev + 4, 1) == hetcclSuccess &&
            ops->event_record(ev, s) == hetcclSuccess,
        "a GEQ wait for 6, then a write, queued");
  usleep(20000);
  check(ops->event_query(ev) == hetcclInProgress && flag[1] != 1, "the wait for 6 holds the stream at 5");
  *flag = 6;
  check(ops->stream_synchronize(s) == hetcclSuccess && ops->event_query(ev) == hetcclSuccess && flag[1] == 1,
        "at 6 the wait passes and the write lands");
  check(ops->host_free(host) == hetcclSuccess && ops->event_destroy(ev) == hetcclSuccess &&
            ops->stream_destroy(s) == hetcclSuccess,
        "teardown");
}

/* ---- the host kind leaves the asynchronous ops empty ---- */

static void host_ops_table(void) {
  const struct hetccl_device_ops *h = hetccl_device_get(HETCCL_DEVICE_HOST);
  const struct hetccl_device_ops *c = hetccl_device_get(HETCCL_DEVICE_CUDA);
  check(h && !h->stream_create && !h->reduce && !h->host_register && !h->dmabuf_export,
        "host kind leaves the asynchronous ops NULL");
  check(c && c->set_device && c->ctx_push && c->ctx_pop && c->stream_create && c->stream_destroy &&
            c->stream_synchronize && c->stream_wait_event && c->event_create && c->event_record && c->event_query &&
            c->event_destroy && c->copy_async && c->host_alloc && c->host_free && c->host_register &&
            c->host_unregister && c->can_wait_value && c->stream_wait_value32 && c->stream_write_value32 &&
            c->reduce && c->can_dmabuf && c->dmabuf_export,
        "cuda kind fills every op");
}

/* ---- the embedded fatbin ---- */

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/*
 * Layout as nvcc writes it: a 16-byte header (magic 0xBA55ED50, version 1,
 * header size, payload size), then entries, each a header (kind at 0: 1 PTX,
 * 2 ELF; its own size at 4; payload size at 8; architecture at 28) and its
 * payload.
 */
static void kernels_blob(void) {
  size_t bytes = 0;
  const unsigned char *img = hetccl_cuda_kernels_image(&bytes);
  const char *archs = hetccl_kernels_cuda_archs();
  if (!archs) {
    check(img == NULL && bytes == 0, "no fatbin when the kernels are not built");
    printf("  CUDA kernels not built in this build: blob checks skipped\n");
    return;
  }
  printf("  CUDA kernels built for: %s (%zu bytes)\n", archs, bytes);
  check(img != NULL && bytes > 16, "fatbin present");
  if (!img || bytes <= 16) return;
  check(((uintptr_t)img & 7) == 0, "fatbin 8-byte aligned");
  check(rd32(img) == 0xBA55ED50u, "fatbin magic");
  check(rd16(img + 4) == 1, "fatbin version 1");
  uint32_t hsize = rd16(img + 6);
  uint64_t fat = rd64(img + 8);
  check(hsize == 16 && hsize + fat == bytes, "fatbin header size + payload size = blob size");
  if (hsize + fat != bytes) return;

  /* Walk the entries; record (kind, arch) pairs. */
  int elf_arch[64], ptx_arch[64], nelf = 0, nptx = 0, walk_ok = 1;
  size_t pos = hsize;
  while (pos < bytes) {
    if (pos + 32 > bytes) {
      walk_ok = 0;
      break;
    }
    uint16_t kind = rd16(img + pos);
    uint32_t ehsize = rd32(img + pos + 4);
    uint64_t psize = rd64(img + pos + 8);
    uint32_t arch = rd32(img + pos + 28);
    if (ehsize < 32 || pos + ehsize + psize > bytes) {
      walk_ok = 0;
      break;
    }
    if (kind == 2 && nelf < 64) elf_arch[nelf++] = (int)arch;
    if (kind == 1 && nptx < 64) ptx_arch[nptx++] = (int)arch;
    pos += ehsize + psize;
  }
  check(walk_ok && pos == bytes, "fatbin entries tile the payload exactly");

  /* Every listed architecture has its entry. */
  char list[512];
  snprintf(list, sizeof list, "%s", archs);
  int listed = 0;
  for (char *save = NULL, *tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    int n = 0, found = 0;
    char what[96];
    listed++;
    if (sscanf(tok, "sm_%d", &n) == 1) {
      for (int i = 0; i < nelf; i++) found |= elf_arch[i] == n;
      snprintf(what, sizeof what, "fatbin has SASS for %s", tok);
    } else if (sscanf(tok, "compute_%d", &n) == 1) {
      for (int i = 0; i < nptx; i++) found |= ptx_arch[i] == n;
      snprintf(what, sizeof what, "fatbin has PTX for %s", tok);
    } else {
      snprintf(what, sizeof what, "architecture name %s well formed", tok);
    }
    check(found, what);
  }
  check(listed > 0 && listed == nelf + nptx, "fatbin holds exactly the listed architectures");
}

/* ---- NCCL vendor ---- */

static void nccl_missing(const char *lib) {
  check(hetccl_vendor_nccl_version() == 0, "NCCL version 0 when the library is missing");
  check(hetccl_vendor_nccl_path() == NULL, "no NCCL path when missing");
  check(contains(hetccl_vendor_nccl_error(), lib), "NCCL error names the missing library");
  struct hetccl_vendor_init args = {.rank = 0, .nranks = 1, .device = 0};
  hetccl_vcomm *vc = NULL;
  hetcclResult_t rc = hetccl_vendor_nccl.init(&args, &vc);
  check(rc == hetcclSystemError, "NCCL vendor init fails with SystemError when missing");
  check(contains(hetccl_last_error(), "NCCL library not found"), "init error says NCCL was not found");
  check(vc == NULL, "failed init returns no communicator");
  check(!strcmp(hetccl_vendor_nccl.name, "nccl") && hetccl_vendor_nccl.run && hetccl_vendor_nccl.destroy,
        "NCCL vendor table filled");
}

static void nccl_not_nccl(const char *lib) {
  (void)lib;
  check(hetccl_vendor_nccl_version() == 0, "a library without NCCL's API is rejected");
  check(contains(hetccl_vendor_nccl_error(), "lacks ncclGetVersion"), "rejection says what is missing");
}

static void nccl_is_hetccl(const char *lib) {
  (void)lib;
  check(hetccl_vendor_nccl_version() == 0, "libhetccl itself is never taken as NCCL");
  check(contains(hetccl_vendor_nccl_error(), "is HetCCL itself"), "rejection says it is HetCCL");
}

static void nccl_default_search(const char *unused) {
  (void)unused;
  int v = hetccl_vendor_nccl_version();
  if (v) {
    printf("  NCCL found: version %d at %s\n", v, hetccl_vendor_nccl_path());
    check(v >= 21100 && hetccl_vendor_nccl_path() != NULL, "found NCCL reports a version and a path");
    check(!strcmp(hetccl_vendor_nccl_error(), ""), "no error when found");
  } else {
    printf("  NCCL not found here: %s\n", hetccl_vendor_nccl_error());
    check(hetccl_vendor_nccl_error()[0] != 0, "absence comes with a reason");
  }
}

/* libhetccl.so beside this test's bin/ folder, if it was built. */
static int find_libhetccl(char *out, size_t size) {
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return 0;
  *slash = 0;
  snprintf(out, size, "%s/../lib/libhetccl.so", exe);
  return access(out, R_OK) == 0;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  host_ops_table();
  kernels_blob();
  in_child_env("HETCCL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", NULL, NULL, cuda_unreachable, "cuda: driver library missing");
  in_child_env("HETCCL_CUDA_LIBRARY", "libm.so.6", NULL, NULL, cuda_wrong_library, "cuda: library is not the driver");
  if (HETCCL_TEST_STAND_IN_CUDA[0]) {
    in_child_env("HETCCL_CUDA_LIBRARY", HETCCL_TEST_STAND_IN_CUDA, "STAND_IN_CUDA_DEVICES", "0", stand_in_no_device,
                 "cuda: stand-in driver without a device");
    in_child_env("HETCCL_CUDA_LIBRARY", HETCCL_TEST_STAND_IN_CUDA, NULL, NULL, stand_in_driver,
                 "cuda: stand-in driver, cuGetProcAddress_v2");
    in_child_env("HETCCL_CUDA_LIBRARY", HETCCL_TEST_STAND_IN_CUDA, "STAND_IN_CUDA_NO_GET_PROC", "1", stand_in_driver,
                 "cuda: stand-in driver, dlsym");
  }
  in_child_env("HETCCL_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", NULL, NULL, nccl_missing, "nccl: library missing");
  in_child_env("HETCCL_NCCL_LIBRARY", "libm.so.6", NULL, NULL, nccl_not_nccl, "nccl: library is not NCCL");
  char self[1100];
  if (find_libhetccl(self, sizeof self))
    in_child_env("HETCCL_NCCL_LIBRARY", self, NULL, NULL, nccl_is_hetccl, "nccl: library is libhetccl");
  else
    printf("  libhetccl.so not built beside this test: self-rejection check skipped\n");
  in_child_env(NULL, NULL, NULL, NULL, nccl_default_search, "nccl: default search");
  return tally_report();
}
