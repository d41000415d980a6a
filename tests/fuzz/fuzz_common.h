/* Shared by the fuzz targets: quiet logs (refusals are expected by the
 * million), and a byte reader over the fuzzer's input. */
#ifndef HETCCL_FUZZ_COMMON_H
#define HETCCL_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static inline void fuzz_quiet(void) { setenv("HETCCL_DEBUG", "NONE", 1); }

struct fuzz_in {
  const uint8_t *p;
  size_t left;
};
static inline uint8_t fuzz_byte(struct fuzz_in *in) {
  if (!in->left) return 0;
  in->left--;
  return *in->p++;
}
/* Up to n bytes into out (zero-filled past the input's end); returns how many were real. */
static inline size_t fuzz_take(struct fuzz_in *in, void *out, size_t n) {
  size_t k = n < in->left ? n : in->left;
  memcpy(out, in->p, k);
  memset((uint8_t *)out + k, 0, n - k);
  in->p += k;
  in->left -= k;
  return k;
}

#endif
