/*
 * Every op of the cuda device kind on a real GPU: devices and contexts,
 * memory and copies (sync and on streams), events, stream waits on and
 * writes of flags in host-mapped memory (ordering: work behind a wait does
 * not run before the host sets the flag; a write lands after the work
 * before it), registered shared memory, dma-buf export, and the reduce
 * kernels (cuda_device_reduce.c). Not a ctest test: run on a GPU machine.
 *
 *   test_cuda_device [seed]      prints "N passed, M failed"
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/device.h"
#include "gpu_check.h"

int g_pass, g_fail;

void test_reduce_kernels(const struct hetccl_device_ops *D, int device, hetcclStream_t stream, uint64_t seed);
void test_reduce_perf(const struct hetccl_device_ops *D, int device, hetcclStream_t stream);

static const struct hetccl_device_ops *D;

#define OK(call) ((call) == hetcclSuccess)

/* Waits until *p == want, up to `seconds`; returns whether it happened. */
static int wait_word(volatile uint32_t *p, uint32_t want, double seconds) {
  double end = now_s() + seconds;
  while (atomic_load_explicit((_Atomic uint32_t *)p, memory_order_acquire) != want)
    if (now_s() > end) return 0;
  return 1;
}

static void set_word(volatile uint32_t *p, uint32_t v) { atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_release); }

/* ---- devices and contexts ---- */

struct thread_probe {
  int first, after;
};

static void *probe_thread(void *arg) {
  struct thread_probe *t = arg;
  t->first = D->current(); /* no context yet: device 0, as cudaGetDevice */
  int last = D->count() - 1;
  t->after = OK(D->set_device(last)) ? D->current() : -2;
  return NULL;
}

static void test_devices(void) {
  int n = D->count();
  printf("cuda: %d device(s)\n", n);
  check(D->available() && n >= 1, "cuda available with at least one device");
  check(OK(D->set_device(0)) && D->current() == 0, "set_device(0) makes device 0 current");
  struct thread_probe t = {-3, -3};
  pthread_t th;
  check(pthread_create(&th, NULL, probe_thread, &t) == 0 && pthread_join(th, NULL) == 0, "probe thread");
  check(t.first == 0, "a fresh thread's current device is 0");
  check(t.after == n - 1, "set_device on another thread takes effect there");
  check(D->current() == 0, "and leaves this thread's device alone");
  if (n >= 2) {
    check(OK(D->ctx_push(1)) && D->current() == 1, "ctx_push(1) enters device 1");
    check(OK(D->ctx_pop()) && D->current() == 0, "ctx_pop restores device 0");
  }
}

/* ---- memory, copies, streams, events ---- */

static void fill(unsigned char *p, size_t n, uint64_t *rng) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)rnd_next(rng);
}

static void test_memory(uint64_t *rng) {
  const size_t bytes = (64u << 20) + 3;
  unsigned char *h1 = malloc(bytes), *h2 = malloc(bytes);
  void *d1 = NULL, *d2 = NULL, *pin = NULL, *pin_dev = NULL;
  hetcclStream_t s = NULL;
  int ok = h1 && h2 && OK(D->mem_alloc(0, bytes, &d1)) && OK(D->mem_alloc(0, bytes, &d2)) &&
           OK(D->host_alloc(0, bytes, &pin, &pin_dev)) && OK(D->stream_create(0, &s));
  if (!check(ok, "memory test setup")) return;
  check(pin_dev != NULL, "host_alloc gives a device address");
  fill(h1, bytes, rng);
  memset(h2, 0, bytes);
  ok = OK(D->copy(d1, h1, bytes)) && OK(D->copy(d2, d1, bytes)) && OK(D->copy(h2, d2, bytes));
  check(ok && memcmp(h1, h2, bytes) == 0, "sync copies host->device->device->host");

  /* The same on a stream, from and to pinned memory, plus an odd-sized
   * piece at odd offsets. */
  fill(pin, bytes, rng);
  memcpy(h1, pin, bytes);
  ok = OK(D->copy_async(d1, pin, bytes, s)) && OK(D->copy_async(d2, d1, bytes, s)) &&
       OK(D->copy_async((char *)d1 + 5, (char *)d2 + 11, 1001, s));
  memset(pin, 0, bytes);
  ok = ok && OK(D->copy_async(pin, d2, bytes, s)) && OK(D->stream_synchronize(s));
  check(ok && memcmp(h1, pin, bytes) == 0, "async copies pinned->device->device->pinned");
  ok = OK(D->copy(h2, (char *)d1 + 5, 1001));
  check(ok && memcmp(h2, h1 + 11, 1001) == 0, "async device->device copy at odd offsets");
  check(OK(D->copy_async(d1, d2, 0, s)), "zero-byte async copy");

  /* zero_async clears exactly its range (odd offset and length) on the stream. */
  ok = OK(D->copy(d1, h1, bytes)) && OK(D->zero_async((char *)d1 + 7, 4093, s)) && OK(D->stream_synchronize(s)) &&
       OK(D->copy(h2, d1, bytes));
  size_t nonzero = 0;
  for (size_t i = 7; i < 7 + 4093; i++) nonzero += h2[i] != 0;
  check(ok && nonzero == 0 && memcmp(h2, h1, 7) == 0 && memcmp(h2 + 7 + 4093, h1 + 7 + 4093, bytes - 7 - 4093) == 0,
        "zero_async clears [7, 4100) and nothing else");
  check(OK(D->zero_async(d1, 0, s)), "zero-byte zero_async");

  D->stream_destroy(s);
  D->mem_free(0, d1);
  D->mem_free(0, d2);
  D->host_free(pin);
  free(h1);
  free(h2);
}

/*
 * Ordering through host-mapped flags:
 *   stream: wait(flag >= 1); copy device->pinned; write(done = 1); record(ev)
 * Before the host sets the flag: nothing behind the wait ran (dst intact,
 * done 0, event not complete). After: done becomes 1 and the data is there.
 */
static void test_flags(uint64_t *rng) {
  const size_t bytes = 1 << 20;
  uint32_t *flags = NULL, *flags_dev = NULL;
  unsigned char *src = malloc(bytes), *dst = NULL, *dst_dev = NULL;
  void *dsrc = NULL, *ev = NULL, *ev2 = NULL;
  hetcclStream_t s = NULL, s2 = NULL;
  int ok = src && OK(D->host_alloc(0, 4096, (void **)&flags, (void **)&flags_dev)) &&
           OK(D->host_alloc(0, bytes, (void **)&dst, (void **)&dst_dev)) && OK(D->mem_alloc(0, bytes, &dsrc)) &&
           OK(D->stream_create(0, &s)) && OK(D->stream_create(0, &s2)) && OK(D->event_create(0, &ev)) &&
           OK(D->event_create(0, &ev2));
  if (!check(ok, "flag test setup")) return;
  int can = D->can_wait_value(0);
  printf("cuda: stream wait/write value supported: %d\n", can);
  if (!check(can, "device supports stream waits on host-mapped flags")) return;
  memset(flags, 0, 4096);
  fill(src, bytes, rng);
  memset(dst, 0xA5, bytes);
  check(OK(D->copy(dsrc, src, bytes)), "flag test source");

  volatile uint32_t *flag = flags, *done = flags + 1, *done2 = flags + 2;
  ok = OK(D->stream_wait_value32(s, flags_dev, 1, HETCCL_WAIT_GEQ)) && OK(D->copy_async(dst, dsrc, bytes, s)) &&
       OK(D->stream_write_value32(s, flags_dev + 1, 1)) && OK(D->event_record(ev, s));
  /* A second stream ordered after the first through the event. */
  ok = ok && OK(D->stream_wait_event(s2, ev)) && OK(D->stream_write_value32(s2, flags_dev + 2, 1)) &&
       OK(D->event_record(ev2, s2));
  check(ok, "enqueue wait, copy, write, record");
  usleep(200 * 1000);
  check(*done == 0 && *done2 == 0, "nothing behind an unsatisfied wait has run");
  check(D->event_query(ev) == hetcclInProgress, "event behind the wait is not complete");
  check(dst[0] == 0xA5 && dst[bytes - 1] == 0xA5, "copy behind the wait has not run");
  set_word(flag, 1);
  check(wait_word(done, 1, 10.0), "wait released by the host flag; write lands");
  check(memcmp(dst, src, bytes) == 0, "the copy before the write is visible when the write is");
  check(wait_word(done2, 1, 10.0), "stream waiting on the event proceeds");
  double end = now_s() + 10;
  hetcclResult_t q;
  while ((q = D->event_query(ev2)) == hetcclInProgress && now_s() < end) usleep(100);
  check(q == hetcclSuccess && D->event_query(ev) == hetcclSuccess, "events complete");

  /* GEQ compares with wrap-around: 0xFFFFFFF0 is "before" 5. */
  set_word(flag, 0xFFFFFFF0u);
  ok = OK(D->stream_wait_value32(s, flags_dev, 5, HETCCL_WAIT_GEQ)) && OK(D->stream_write_value32(s, flags_dev + 1, 2));
  usleep(100 * 1000);
  check(ok && *done == 1, "GEQ wait holds across wrap-around");
  set_word(flag, 6);
  check(wait_word(done, 2, 10.0), "GEQ wait released past the wrap");

  /* EQ on registered shared memory (as a shm segment between processes). */
  size_t shm_bytes = 1 << 16;
  uint32_t *shm = mmap(NULL, shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  uint32_t *shm_dev = NULL;
  ok = shm != MAP_FAILED && OK(D->host_register(0, shm, shm_bytes, (void **)&shm_dev));
  if (check(ok && shm_dev, "register shared memory as device-mapped")) {
    set_word(shm, 6);
    set_word(shm + 1, 0);
    ok = OK(D->stream_wait_value32(s, shm_dev, 7, HETCCL_WAIT_EQ)) && OK(D->stream_write_value32(s, shm_dev + 1, 9));
    usleep(100 * 1000);
    check(ok && shm[1] == 0, "EQ wait holds while the value differs");
    set_word(shm, 7);
    check(wait_word(shm + 1, 9, 10.0), "EQ wait released; write into registered memory lands");
    check(OK(D->stream_synchronize(s)), "stream drains");
    check(OK(D->host_unregister(shm)), "unregister shared memory");
  }
  if (shm != MAP_FAILED) munmap(shm, shm_bytes);
  check(D->stream_wait_value32(s, flags_dev, 1, 99) == hetcclInvalidArgument, "unknown wait condition rejected");

  /* Batched: write, wait, write in one call run in order: the first write
   * lands, the second only once the wait is satisfied. */
  check(D->stream_memops32 != NULL, "cuda batches stream memory operations");
  if (D->stream_memops32) {
    set_word(flag, 0);
    set_word(done, 0);
    set_word(done2, 0);
    struct hetccl_memop32 ops[3] = {{.dev_addr = flags_dev + 1, .value = 11},
                                    {.dev_addr = flags_dev, .value = 3, .wait = 1, .cond = HETCCL_WAIT_GEQ},
                                    {.dev_addr = flags_dev + 2, .value = 12}};
    check(OK(D->stream_memops32(s, ops, 3)), "enqueue write, wait, write");
    check(wait_word(done, 11, 10.0), "the write before the batched wait lands");
    usleep(100 * 1000);
    check(*done2 == 0, "the write behind the batched wait has not run");
    set_word(flag, 2);
    usleep(50 * 1000);
    check(*done2 == 0, "GEQ: 2 does not satisfy a batched wait for 3");
    set_word(flag, 3);
    check(wait_word(done2, 12, 10.0), "the batched wait is released and the last write lands");
    struct hetccl_memop32 bad = {.dev_addr = flags_dev, .value = 1, .wait = 1, .cond = 99};
    check(D->stream_memops32(s, &bad, 1) == hetcclInvalidArgument, "batched: unknown wait condition rejected");
    check(OK(D->stream_synchronize(s)), "stream drains after the batch");
  }

  D->event_destroy(ev);
  D->event_destroy(ev2);
  D->stream_destroy(s);
  D->stream_destroy(s2);
  D->mem_free(0, dsrc);
  D->host_free(dst);
  D->host_free(flags);
  free(src);
}

/* ---- dma-buf ---- */

static void test_dmabuf(void) {
  int can = D->can_dmabuf(0);
  printf("cuda: dma-buf supported: %d\n", can);
  if (!check(can, "device supports dma-buf export")) return;
  char *p = NULL;
  if (!check(OK(D->mem_alloc(0, 8 << 20, (void **)&p)), "dma-buf allocation")) return;
  int fd = -1;
  size_t off = 0;
  long page = sysconf(_SC_PAGESIZE);
  check(OK(D->dmabuf_export(p + 100, 12345, &fd, &off)), "dma-buf export of an unaligned range");
  check(fd >= 0 && off == ((uintptr_t)(p + 100) & (uintptr_t)(page - 1)), "fd returned with the in-page offset");
  struct stat st;
  check(fd >= 0 && fstat(fd, &st) == 0, "the fd is open");
  off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
  printf("cuda: dma-buf fd %d, offset %zu, size %lld\n", fd, off, (long long)size);
  check(size >= (off_t)(off + 12345) && size % page == 0, "dma-buf covers the page-rounded range");
  if (fd >= 0) close(fd);
  char host[64];
  check(D->dmabuf_export(host, sizeof host, &fd, &off) == hetcclInvalidArgument, "export of host memory rejected");
  D->mem_free(0, p);
}

/* ---- a second device ---- */

static void test_second_device(uint64_t seed) {
  if (D->count() < 2) {
    printf("cuda: one device, second-device checks skipped\n");
    return;
  }
  hetcclStream_t s = NULL;
  check(OK(D->set_device(1)) && OK(D->stream_create(1, &s)), "stream on device 1");
  test_reduce_perf(D, 1, s); /* loads the kernels in a second context */
  (void)seed;
  D->stream_destroy(s);
  check(OK(D->set_device(0)), "back to device 0");
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL) * 2654435761u + 1;
  uint64_t rng = seed | 1;
  printf("test_cuda_device: seed %llu, kernels built for: %s\n", (unsigned long long)seed,
         hetccl_kernels_cuda_archs() ? hetccl_kernels_cuda_archs() : "(none)");
  D = hetccl_device_get(HETCCL_DEVICE_CUDA);
  if (!check(D && D->available(), "cuda device kind available")) {
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return 1;
  }
  test_devices();
  test_memory(&rng);
  test_flags(&rng);
  test_dmabuf();
  hetcclStream_t s = NULL;
  if (check(OK(D->stream_create(0, &s)), "reduce stream")) {
    if (check(hetccl_kernels_cuda_archs() != NULL, "CUDA kernels built in")) {
      test_reduce_kernels(D, 0, s, rng);
      test_reduce_perf(D, 0, s);
    }
    D->stream_destroy(s);
  }
  test_second_device(rng);
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
