/*
 * The hip device kind without an AMD GPU (CI):
 *   - every op runs for real over the stand-in HIP runtime
 *     (tests/abi/stand_in_hip.c) through the real dlopen path
 *     (HETCCL_HIP_LIBRARY), once per ABI the stand-in imitates (ROCm 5 and
 *     ROCm 6: runtime version, pointer attributes, device properties);
 *   - the kernel image is chosen by the device's gcnArchName, and a missing
 *     one is a clear error naming the architectures built in;
 *   - no library, a library that is not HIP, and a runtime with no GPU are
 *     clear probe failures, never crashes;
 *   - where Debian's libamdhip64.so.5 is installed, the kind resolves every
 *     entry point it needs from it and its probe says there is no GPU.
 * Each scenario runs in a forked child (the runtime is loaded once per
 * process), bounded by an alarm; the child reports its counts over a pipe.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"
#include "device/hip/hip_internal.h"
#include "util/error.h"

#include "unit_child.h"

#ifndef HETCCL_TEST_STAND_IN_HIP5
#define HETCCL_TEST_STAND_IN_HIP5 ""
#define HETCCL_TEST_STAND_IN_HIP6 ""
#endif


/* ---- kernel images of a test's own, for the selection logic and the stand-in ---- */

static const char g_marker_image[] = "HETCCL-STAND-IN-HIP-CODE-OBJECT";
static const char *test_archs(void) { return "gfx90a gfx942"; }
static const void *test_image(const char *arch, size_t *bytes) {
  if (strcmp(arch, "gfx90a") != 0 && strcmp(arch, "gfx942") != 0) {
    *bytes = 0;
    return NULL;
  }
  *bytes = sizeof g_marker_image;
  return g_marker_image;
}
static const struct hetccl_hip_images g_test_images = {.archs = test_archs, .image = test_image};

static void image_selection(void) {
  const void *img = NULL;
  size_t bytes = 0;
  check(hetccl_hip_select_image(&g_test_images, "gfx942:sramecc+:xnack-", &img, &bytes) == hetcclSuccess &&
            img == g_marker_image && bytes == sizeof g_marker_image,
        "image chosen by the arch name, features after ':' ignored");
  check(hetccl_hip_select_image(&g_test_images, "gfx90a", &img, &bytes) == hetcclSuccess && img == g_marker_image,
        "image of a bare arch name");
  expect_fail(hetccl_hip_select_image(&g_test_images, "gfx1100", &img, &bytes), hetcclInvalidUsage, "gfx90a gfx942",
              "an arch not built in: the error lists the built-in ones");
  check(contains(hetccl_last_error(), "gfx1100") && img == NULL, "the error names the device's arch");
  /* Prefix matches are not matches. */
  check(hetccl_hip_select_image(&g_test_images, "gfx94", &img, &bytes) == hetcclInvalidUsage, "gfx94 is not gfx942");
  /* The built-in images: none in this build unless an AMD compiler made them. */
  const char *built = hetccl_kernels_hip_archs();
  hetcclResult_t rc = hetccl_hip_select_image(NULL, "gfx942:sramecc+:xnack-", &img, &bytes);
  if (!built) {
    expect_fail(rc, hetcclInvalidUsage, "no AMD architecture", "built-in images with none built");
  } else {
    printf("  HIP kernels built for: %s\n", built);
    check(rc == hetcclSuccess || contains(hetccl_last_error(), built), "built-in selection answers with the list");
  }
}

static void memory_kinds(void) {
  check(hetccl_hip_memory_kind(50221153, 0) == HETCCL_HIP_MEM_HOST, "ROCm 5: memory type 0 is host");
  check(hetccl_hip_memory_kind(50221153, 1) == HETCCL_HIP_MEM_DEVICE, "ROCm 5: memory type 1 is device");
  check(hetccl_hip_memory_kind(60342134, 0) == HETCCL_HIP_MEM_UNKNOWN, "ROCm 6: memory type 0 is unregistered");
  check(hetccl_hip_memory_kind(60342134, 1) == HETCCL_HIP_MEM_HOST, "ROCm 6: memory type 1 is host");
  check(hetccl_hip_memory_kind(60342134, 2) == HETCCL_HIP_MEM_DEVICE, "ROCm 6: memory type 2 is device");
  check(hetccl_hip_memory_kind(70000000, 3) == HETCCL_HIP_MEM_MANAGED, "ROCm 7 numbers as 6: 3 is managed");
  check(hetccl_hip_arch_offset(50221153) == 396 && hetccl_hip_arch_offset(60000000) == 1160,
        "gcnArchName offsets: 396 (ROCm 5 layout), 1160 (R0600)");
}

static void ops_table(void) {
  const struct hetccl_device_ops *h = hetccl_device_get(HETCCL_DEVICE_HIP);
  const struct hetccl_device_desc *d = hetccl_device_desc_get(HETCCL_DEVICE_HIP);
  check(h == &hetccl_device_hip && d == &hetccl_device_desc_hip, "registry holds the hip kind");
  check(
      d && !strcmp(d->name, "hip") && d->settings && d->priority > hetccl_device_desc_get(HETCCL_DEVICE_HOST)->priority,
      "hip descriptor: name, settings, priority above host");
  check(h && h->kind == HETCCL_DEVICE_HIP && h->set_device && h->ctx_push && h->ctx_pop && h->stream_create &&
            h->stream_destroy && h->stream_synchronize && h->stream_wait_event && h->event_create && h->event_record &&
            h->event_query && h->event_destroy && h->copy_async && h->zero_async && h->host_alloc && h->host_free &&
            h->host_register && h->host_unregister && h->can_wait_value && h->stream_wait_value32 &&
            h->stream_write_value32 && h->stream_capturing && h->reduce && h->load_kernels && h->can_dmabuf,
        "hip kind fills every op the GPU executor uses");
}

/* ---- the stand-in runtime ---- */

static void last_wait(const char *lib, unsigned *flags, uint32_t *mask) {
  *flags = 99;
  *mask = 0;
  void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  void (*fn)(unsigned *, uint32_t *) = NULL;
  if (h) *(void **)&fn = dlsym(h, "stand_in_hip_last_wait");
  if (fn) fn(flags, mask);
}

static void stand_in_memory(const struct hetccl_device_ops *ops) {
  const struct hetccl_hip *hip = NULL;
  check(hetccl_hip_get(&hip) == hetcclSuccess && hip, "runtime table loads");
  if (!hip) return;
  enum hetccl_hip_memory kind;
  int device;
  void *d0 = NULL, *d1 = NULL;
  check(ops->mem_alloc(0, 4096, &d0) == hetcclSuccess && d0, "mem_alloc on device 0");
  check(ops->mem_alloc(1, 4096, &d1) == hetcclSuccess && d1, "mem_alloc on device 1");
  check(ops->current() == 0, "mem_alloc on device 1 leaves the caller's device current");
  hetccl_hip_pointer_info(hip, d1, &kind, &device);
  check(kind == HETCCL_HIP_MEM_DEVICE && device == 1, "pointer attributes: device memory of device 1");
  int local[4] = {1, 2, 3, 4}, back[4] = {0};
  hetccl_hip_pointer_info(hip, local, &kind, &device);
  check(kind == HETCCL_HIP_MEM_UNKNOWN && device == -1, "pointer attributes: pageable memory is nobody's");
  check(ops->copy(d0, local, sizeof local) == hetcclSuccess && ops->copy(back, d0, sizeof back) == hetcclSuccess &&
            !memcmp(local, back, sizeof local),
        "synchronous copies host -> device -> host");
  void *h = NULL, *hd = NULL;
  check(ops->host_alloc(0, 256, &h, &hd) == hetcclSuccess && h && hd, "host_alloc gives host and device addresses");
  hetccl_hip_pointer_info(hip, h, &kind, &device);
  check(kind == HETCCL_HIP_MEM_HOST, "pointer attributes: pinned host memory");
  check(ops->host_free(h) == hetcclSuccess, "host_free");
  static char page[4096] __attribute__((aligned(4096)));
  void *pd = NULL;
  check(ops->host_register(0, page, sizeof page, &pd) == hetcclSuccess && pd, "host_register maps a page");
  expect_fail(ops->host_register(0, page, sizeof page, &pd), hetcclUnhandledCudaError, "hipHostRegister",
              "registering twice");
  check(ops->host_unregister(page) == hetcclSuccess, "host_unregister");
  expect_fail(ops->set_device(7), hetcclInvalidArgument, "does not exist", "set_device of a missing device");
  check(ops->ctx_push(1) == hetcclSuccess && ops->current() == 1 && ops->ctx_pop() == hetcclSuccess &&
            ops->current() == 0,
        "ctx_push / ctx_pop switch and restore the device");
  check(ops->mem_free(0, d0) == hetcclSuccess && ops->mem_free(1, d1) == hetcclSuccess, "mem_free");
}

static void stand_in_streams(const struct hetccl_device_ops *ops, const char *lib) {
  hetcclStream_t s = NULL, s2 = NULL;
  void *ev = NULL, *flag_host = NULL, *flag = NULL, *dev = NULL;
  check(ops->stream_create(0, &s) == hetcclSuccess && s, "stream_create");
  check(ops->stream_create(0, &s2) == hetcclSuccess && s2, "second stream");
  check(ops->event_create(0, &ev) == hetcclSuccess && ev, "event_create");
  check(ops->host_alloc(0, 64, &flag_host, &flag) == hetcclSuccess, "flag in mapped host memory");
  check(ops->mem_alloc(0, 1024, &dev) == hetcclSuccess, "device buffer");
  if (!s || !s2 || !ev || !flag || !dev) return;
  volatile uint32_t *f = flag_host;
  f[0] = f[1] = 0; /* mapped memory starts as garbage */
  check(ops->can_wait_value(0) == 1 && ops->can_wait_value(9) == 0, "can_wait_value for devices that exist");

  /* A wait blocks the stream until the host stores the flag. */
  static uint8_t src[1024], dst[1024];
  for (int i = 0; i < 1024; i++) src[i] = (uint8_t)(i * 7 + 1);
  memset(dst, 0, sizeof dst);
  check(ops->stream_wait_value32(s, flag, 5, HETCCL_WAIT_GEQ) == hetcclSuccess, "stream_wait_value32 GEQ");
  unsigned flags;
  uint32_t mask;
  last_wait(lib, &flags, &mask);
  check(flags == 0 && mask == 0xFFFFFFFFu, "GEQ is hipStreamWaitValueGte (0) with the whole-word mask");
  check(ops->copy_async(dev, src, sizeof src, s) == hetcclSuccess, "copy_async host -> device");
  check(ops->zero_async(dev, 16, s) == hetcclSuccess, "zero_async");
  check(ops->copy_async(dst, dev, sizeof dst, s) == hetcclSuccess, "copy_async device -> host");
  check(ops->event_record(ev, s) == hetcclSuccess, "event_record");
  /* The other stream waits for that event, then writes the flag to 9. */
  check(ops->stream_wait_event(s2, ev) == hetcclSuccess, "stream_wait_event");
  check(ops->stream_write_value32(s2, flag, 9) == hetcclSuccess, "stream_write_value32");
  usleep(20000);
  check(ops->event_query(ev) == hetcclInProgress, "event pending while the stream waits on the flag");
  check(dst[100] == 0 && *f == 0, "nothing ran past the wait");
  *f = 4;
  usleep(20000);
  check(ops->event_query(ev) == hetcclInProgress, "4 does not satisfy GEQ 5");
  *f = 5;
  check(ops->stream_synchronize(s) == hetcclSuccess && ops->event_query(ev) == hetcclSuccess,
        "the flag releases the stream; the event completes");
  check(ops->stream_synchronize(s2) == hetcclSuccess && *f == 9, "the second stream wrote after the event");
  int same = 1;
  for (int i = 0; i < 1024; i++) same &= dst[i] == (i < 16 ? 0 : src[i]);
  check(same, "copies and the memset ran in order");

  /* EQ, and a batch through hetccl_memops32 (no batch entry: one call each). */
  struct hetccl_memop32 mops[2] = {{.dev_addr = flag, .value = 11, .wait = 1, .cond = HETCCL_WAIT_EQ},
                                   {.dev_addr = (char *)flag + 4, .value = 77, .wait = 0}};
  check(hetccl_memops32(ops, s, mops, 2) == hetcclSuccess, "hetccl_memops32 wait EQ + write");
  last_wait(lib, &flags, &mask);
  check(flags == 1 && mask == 0xFFFFFFFFu, "EQ is hipStreamWaitValueEq (1)");
  *f = 12;
  usleep(20000);
  check(f[1] == 0, "12 does not satisfy EQ 11");
  *f = 11;
  check(ops->stream_synchronize(s) == hetcclSuccess && f[1] == 77, "EQ met: the write follows");
  expect_fail(ops->stream_wait_value32(s, flag, 1, 7), hetcclInvalidArgument, "condition", "unknown wait condition");

  int capturing = -1;
  check(ops->stream_capturing(s, &capturing) == hetcclSuccess && capturing == 0, "stream not capturing");
  setenv("STAND_IN_HIP_CAPTURING", "1", 1);
  check(ops->stream_capturing(s, &capturing) == hetcclSuccess && capturing == 1, "capture reported");
  unsetenv("STAND_IN_HIP_CAPTURING");

  /* reduce: the built-in images first (none today), then the test's marker image. */
  hetccl_redop sum = {.combine = HETCCL_COMBINE_SUM};
  float *a = dev, b[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
  float in[8] = {10, 20, 30, 40, 50, 60, 70, 80};
  check(ops->copy(a, in, sizeof in) == hetcclSuccess, "reduce input on the device");
  if (!hetccl_kernels_hip_archs())
    expect_fail(ops->reduce(a, a, b, 8, hetcclFloat32, &sum, 0, s), hetcclInvalidUsage, "gfx942",
                "reduce with no AMD kernels built names the device's arch");
  hetccl_hip_set_images(&g_test_images);
  check(ops->load_kernels(0) == hetcclSuccess, "load_kernels picks the gfx942 image");
  check(ops->reduce(a, a, b, 8, hetcclFloat32, &sum, 0, s) == hetcclSuccess, "reduce float32 sum launched");
  check(ops->copy_async(out, a, sizeof out, s) == hetcclSuccess && ops->stream_synchronize(s) == hetcclSuccess &&
            out[0] == 11 && out[7] == 88,
        "the launched kernel summed on the stream");
  int32_t iv[4] = {10, 21, -9, 7}, ib[4] = {2, 3, 3, 1}, iout[4];
  hetccl_redop avg = {.combine = HETCCL_COMBINE_SUM, .postdiv = 1, .divisor = 2};
  check(ops->copy(a, iv, sizeof iv) == hetcclSuccess &&
            ops->reduce(a, a, ib, 4, hetcclInt32, &avg, HETCCL_REDUCE_FINISH, s) == hetcclSuccess &&
            ops->copy_async(iout, a, sizeof iout, s) == hetcclSuccess && ops->stream_synchronize(s) == hetcclSuccess &&
            iout[0] == 6 && iout[1] == 12 && iout[2] == -3 && iout[3] == 4,
        "integer Avg: reduce then the finish kernel");
  hetccl_hip_set_images(NULL);

  check(ops->event_destroy(ev) == hetcclSuccess && ops->stream_destroy(s) == hetcclSuccess &&
            ops->stream_destroy(s2) == hetcclSuccess && ops->mem_free(0, dev) == hetcclSuccess &&
            ops->host_free(flag_host) == hetcclSuccess,
        "teardown");
}

static void stand_in(const char *lib) {
  const struct hetccl_device_ops *ops = hetccl_device_get(HETCCL_DEVICE_HIP);
  const struct hetccl_device_desc *d = hetccl_device_desc_get(HETCCL_DEVICE_HIP);
  char why[512] = "";
  check(ops->available() == 1 && d->probe(why, sizeof why) == 1, "stand-in runtime: hip available");
  check(ops->count() == 2 && ops->current() == 0, "two devices, device 0 current");
  check(hetccl_device_auto() == HETCCL_DEVICE_HIP, "auto choice prefers the usable hip kind over host");
  check(!strcmp(hetccl_hip_library_opened(), lib), "the library HETCCL_HIP_LIBRARY names was opened");
  const struct hetccl_hip *hip = NULL;
  char arch[256] = "";
  if (hetccl_hip_get(&hip) == hetcclSuccess) {
    check(hetccl_hip_arch_name(hip, 0, arch, sizeof arch) == hetcclSuccess && !strcmp(arch, "gfx942:sramecc+:xnack-"),
          "gcnArchName read from the layout of the runtime's version");
    printf("  runtime version %d, device 0 is %s\n", hip->runtime_version, arch);
  }
  stand_in_memory(ops);
  stand_in_streams(ops, lib);
}

/* A stand-in whose gcnArchName is not where the version says: refused. */
static void stand_in_odd_arch(const char *lib) {
  (void)lib;
  const struct hetccl_hip *hip = NULL;
  char arch[256];
  check(hetccl_hip_get(&hip) == hetcclSuccess, "runtime loads");
  if (!hip) return;
  expect_fail(hetccl_hip_arch_name(hip, 0, arch, sizeof arch), hetcclSystemError, "unknown hipDeviceProp_t layout",
              "a name that is not gfx...");
}

/* ---- probe failures ---- */

static void no_library(const char *lib) {
  const struct hetccl_device_ops *ops = &hetccl_device_hip;
  char why[512] = "";
  check(ops->available() == 0 && ops->count() == 0 && ops->current() == -1, "no runtime: unavailable, no devices");
  check(hetccl_device_desc_hip.probe(why, sizeof why) == 0 && contains(why, lib) && contains(why, "not found"),
        "probe says the library was not found, by name");
  check(ops->can_wait_value(0) == 0, "no stream waits without a runtime");
  void *p = NULL;
  hetcclStream_t s = NULL;
  expect_fail(ops->mem_alloc(0, 64, &p), hetcclSystemError, lib, "mem_alloc");
  expect_fail(ops->stream_create(0, &s), hetcclSystemError, lib, "stream_create");
  expect_fail(ops->host_alloc(0, 64, &p, &p), hetcclSystemError, lib, "host_alloc");
  expect_fail(ops->stream_wait_value32(NULL, &p, 1, HETCCL_WAIT_GEQ), hetcclSystemError, lib, "stream_wait_value32");
  expect_fail(ops->load_kernels(0), hetcclSystemError, lib, "load_kernels");
  int k = -1;
  setenv("HETCCL_DEVICE", "hip", 1);
  expect_fail(hetccl_device_choose("", &k), hetcclInvalidUsage, "not available", "HETCCL_DEVICE=hip");
  check(hetccl_device_auto() != HETCCL_DEVICE_HIP, "auto choice skips hip");
}

static void not_hip(const char *lib) {
  (void)lib;
  check(hetccl_device_hip.available() == 0, "a library that is not HIP: unavailable");
  check(contains(hetccl_hip_load_error(), "lacks hip"), "the error says which entry point is missing");
}

static void no_device(const char *lib) {
  (void)lib;
  char why[512] = "";
  check(hetccl_device_hip.available() == 0, "runtime without a GPU: unavailable");
  check(hetccl_device_desc_hip.probe(why, sizeof why) == 0 && contains(why, "no AMD GPU"),
        "probe says there is no AMD GPU");
  /* The ROCm 5 stand-in fails hipInit, the ROCm 6 one hipGetDeviceCount. */
  check(contains(why, "hipInit") || contains(why, "hipGetDeviceCount: hipErrorNoDevice, 100"),
        "the message names the call that found no GPU");
  printf("  %s\n", why);
  void *p = NULL;
  expect_fail(hetccl_device_hip.mem_alloc(0, 64, &p), hetcclSystemError, "no AMD GPU", "mem_alloc without a GPU");
}

/* Debian's HIP 5.2 runtime: every entry point resolves, and no GPU is said plainly. */
static void debian_runtime(const char *lib) {
  char why[512] = "";
  if (!hetccl_hip_library_opened()) {
    printf("  libamdhip64.so.5 not installed: the real-runtime check is skipped\n");
    return;
  }
  const char *err = hetccl_hip_load_error();
  check(!contains(err, "lacks"), "every required entry point resolves");
  if (contains(err, "lacks")) printf("  %s\n", err);
  void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  const char *optional[] = {"hipStreamWaitValue32", "hipStreamWriteValue32", "hipStreamIsCapturing",
                            "hipGetDeviceProperties"};
  for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
    char what[128];
    snprintf(what, sizeof what, "%s resolves in HIP 5.2", optional[i]);
    check(h && dlsym(h, optional[i]) != NULL, what);
  }
  if (hetccl_device_hip.available()) {
    printf("  an AMD GPU is present: no-GPU checks skipped\n");
    return;
  }
  check(hetccl_device_desc_hip.probe(why, sizeof why) == 0 && contains(why, "no AMD GPU"),
        "the probe with no GPU says so");
  printf("  %s\n", why);
}

/* The stand-in HIP over the CUDA driver (for NVIDIA machines) without a
 * driver: every entry point the kind needs resolves from it, it speaks
 * ROCm 6's ABI, and with no libcuda it reports no GPU plainly. */
static void over_cuda_no_driver(const char *lib) {
  char why[512] = "";
  check(hetccl_hip_library_opened() != NULL, "the stand-in HIP over CUDA opens");
  const char *err = hetccl_hip_load_error();
  check(!contains(err, "lacks"), "every entry point the hip kind needs resolves from it");
  if (err[0]) printf("  %s\n", err);
  void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  const char *optional[] = {"hipStreamWaitValue32", "hipStreamWriteValue32", "hipStreamIsCapturing",
                            "hipGetDevicePropertiesR0600"};
  for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
    char what[128];
    snprintf(what, sizeof what, "%s resolves in the stand-in over CUDA", optional[i]);
    check(h && dlsym(h, optional[i]) != NULL, what);
  }
  int (*version)(int *) = h ? (int (*)(int *))dlsym(h, "hipRuntimeGetVersion") : NULL;
  int v = 0;
  check(version && version(&v) == 0 && v >= HETCCL_HIP_ROCM6_VERSION, "it speaks ROCm 6's ABI");
  check(hetccl_device_hip.available() == 0, "no CUDA driver: unavailable");
  check(hetccl_device_desc_hip.probe(why, sizeof why) == 0 && contains(why, "no AMD GPU"),
        "the probe says there is no GPU");
  printf("  %s\n", why);
  void *p = NULL;
  expect_fail(hetccl_device_hip.mem_alloc(0, 64, &p), hetcclSystemError, "no AMD GPU", "mem_alloc without a driver");
}

/* HETCCL_HIP_LIBRARY unset: the default names, in order. */
static void default_search(const char *unused) {
  (void)unused;
  unsetenv("HETCCL_HIP_LIBRARY");
  const char *opened = hetccl_hip_library_opened();
  if (opened) {
    int known = 0;
    for (int i = 0; hetccl_hip_library_names[i]; i++) known |= !strcmp(opened, hetccl_hip_library_names[i]);
    check(known, "the default search opens one of the default names");
    printf("  default search opened %s: %s\n", opened, hetccl_hip_load_error()[0] ? hetccl_hip_load_error() : "usable");
  } else {
    check(contains(hetccl_hip_load_error(), "tried libamdhip64.so, libamdhip64.so.7, .so.6, .so.5"),
          "nothing found: the message lists the names tried");
  }
  const char *const *names = hetccl_hip_library_names;
  check(!strcmp(names[0], "libamdhip64.so") && !strcmp(names[3], "libamdhip64.so.5") && names[4] == NULL,
        "default names: libamdhip64.so, then the sonames of ROCm 7, 6, 5");
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  ops_table();
  image_selection();
  memory_kinds();
  const char *v5 = HETCCL_TEST_STAND_IN_HIP5, *v6 = HETCCL_TEST_STAND_IN_HIP6;
  if (v5[0] && access(v5, R_OK) == 0) {
    in_child_env("HETCCL_HIP_LIBRARY", v5, NULL, NULL, stand_in, "hip: stand-in runtime, ROCm 5 ABI");
    in_child_env("HETCCL_HIP_LIBRARY", v6, NULL, NULL, stand_in, "hip: stand-in runtime, ROCm 6 ABI");
    in_child_env("HETCCL_HIP_LIBRARY", v5, "STAND_IN_HIP_ARCH", "sm_90", stand_in_odd_arch,
             "hip: arch name not gfx (ROCm 5 ABI)");
    in_child_env("HETCCL_HIP_LIBRARY", v6, "STAND_IN_HIP_ARCH", "", stand_in_odd_arch, "hip: arch name empty (ROCm 6 ABI)");
    in_child_env("HETCCL_HIP_LIBRARY", v5, "STAND_IN_HIP_DEVICES", "0", no_device, "hip: runtime without a GPU (ROCm 5)");
    in_child_env("HETCCL_HIP_LIBRARY", v6, "STAND_IN_HIP_DEVICES", "0", no_device, "hip: runtime without a GPU (ROCm 6)");
  } else {
    check(0, "the stand-in HIP runtime was built beside this test");
  }
  in_child_env("HETCCL_HIP_LIBRARY", HETCCL_TEST_STAND_IN_HIP_CUDA, "HETCCL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1",
               over_cuda_no_driver, "hip: stand-in over the CUDA driver, no driver");
  in_child_env("HETCCL_HIP_LIBRARY", "/nonexistent/libamdhip64.so", NULL, NULL, no_library, "hip: runtime library missing");
  in_child_env("HETCCL_HIP_LIBRARY", "libm.so.6", NULL, NULL, not_hip, "hip: library is not HIP");
  in_child_env(NULL, NULL, NULL, NULL, default_search, "hip: default library search");
  /* In a child: the parent never loads a real runtime before it forks. */
  in_child_env("HETCCL_HIP_LIBRARY", "libamdhip64.so.5", NULL, NULL, debian_runtime, "hip: Debian's libamdhip64.so.5");
  return tally_report();
}
