#include "util/wait.h"

#include <sched.h>
#include <time.h>

void hetccl_backoff_pause(struct hetccl_backoff *b) {
  uint32_t n = b->polls++;
  if (n < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ __volatile__("" ::: "memory");
#endif
  } else if (n < 2048) {
    sched_yield();
  } else {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}
