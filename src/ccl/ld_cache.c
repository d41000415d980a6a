/*
 * /etc/ld.so.cache, read as glibc's ldconfig writes it (layouts in
 * ld_cache.h). Fields are read with memcpy: the data may be any buffer, and
 * the new table of the compat layout is only as aligned as the file says.
 */
#include "ccl/ld_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define OLD_HEADER 16u /* magic (11 bytes), padding, uint32 nlibs */
#define OLD_ENTRY 12u  /* int32 flags, uint32 key, uint32 value */
#define NEW_HEADER 48u /* magic+version (20), nlibs, len_strings, flags byte, ..., extension offset, unused */
#define NEW_ENTRY 24u  /* flags, key, value, osversion, uint64 hwcap */
#define NEW_ALIGN 8u   /* the new table's alignment after the old one (its uint64 field) */
#define MAX_CACHE_BYTES (64u << 20)

/* Entry flags: the low byte is the library type, the next the ABI. */
#define FLAG_TYPE_MASK 0x00ff
#define FLAG_ELF 0x0001
#define FLAG_ELF_LIBC6 0x0003

/* The flags the running dynamic linker accepts (glibc's _DL_CACHE_DEFAULT_ID
 * of each target). Elsewhere any plain ELF entry is offered and dlopen
 * refuses one of the wrong ABI with its own message. */
#if defined(__x86_64__) && defined(__LP64__)
#define HOST_FLAGS 0x0303
#elif defined(__x86_64__)
#define HOST_FLAGS 0x0803
#elif defined(__aarch64__) && defined(__LP64__)
#define HOST_FLAGS 0x0a03
#else
#define HOST_FLAGS (-1)
#endif

/* The new header's byte-order field (its low two bits). */
#define ENDIAN_UNSET 0
#define ENDIAN_LITTLE 2
#define ENDIAN_BIG 3
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_ENDIAN ENDIAN_BIG
#else
#define HOST_ENDIAN ENDIAN_LITTLE
#endif

static uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static int flags_fit(int32_t flags) {
  if (HOST_FLAGS != -1) return flags == HOST_FLAGS;
  int type = flags & FLAG_TYPE_MASK;
  return type == FLAG_ELF || type == FLAG_ELF_LIBC6;
}

/* The NUL-terminated string at `off` of the `size` bytes at `base`, or NULL
 * when it starts or ends outside them. */
static const char *string_at(const unsigned char *base, size_t size, uint32_t off) {
  if (off >= size || !memchr(base + off, 0, size - off)) return NULL;
  return (const char *)base + off;
}

/* One table of `n` entries of `entry_size` bytes at `entries`; key and value
 * are offsets into the `strings_size` bytes at `strings`. -1 when the table
 * does not fit in the data (`end`). */
static int scan(const unsigned char *entries, uint32_t n, size_t entry_size, int has_hwcap, const unsigned char *end,
                const unsigned char *strings, size_t strings_size, const char *soname, hetccl_ld_cache_fn fn,
                void *arg) {
  if ((size_t)(end - entries) / entry_size < n) return -1;
  int found = 0;
  for (uint32_t i = 0; i < n; i++) {
    const unsigned char *e = entries + (size_t)i * entry_size;
    int32_t flags = (int32_t)rd32(e);
    const char *key = string_at(strings, strings_size, rd32(e + 4));
    const char *value = string_at(strings, strings_size, rd32(e + 8));
    if (!key || !value || strcmp(key, soname) != 0 || !flags_fit(flags) || !value[0]) continue;
    /* A hwcap entry is a build for particular CPU features (glibc-hwcaps
     * subdirectories); the dynamic linker picks among them by CPU, so only
     * the baseline entry is offered. */
    if (has_hwcap && rd64(e + 16) != 0) continue;
    found++;
    if (fn) fn(value, arg);
  }
  return found;
}

static int scan_new(const unsigned char *cache, size_t size, const char *soname, hetccl_ld_cache_fn fn, void *arg) {
  if (size < NEW_HEADER || memcmp(cache, NEW_MAGIC, strlen(NEW_MAGIC)) != 0) return -1;
  int endian = cache[28] & 3;
  if (endian != ENDIAN_UNSET && endian != HOST_ENDIAN) return -1;
  /* String offsets count from the start of the new header. */
  return scan(cache + NEW_HEADER, rd32(cache + 20), NEW_ENTRY, 1, cache + size, cache, size, soname, fn, arg);
}

int hetccl_ld_cache_lookup(const void *data, size_t size, const char *soname, hetccl_ld_cache_fn fn, void *arg) {
  const unsigned char *cache = data;
  if (!cache || !soname) return -1;
  if (size >= strlen(NEW_MAGIC) && memcmp(cache, NEW_MAGIC, strlen(NEW_MAGIC)) == 0)
    return scan_new(cache, size, soname, fn, arg);
  if (size < OLD_HEADER || memcmp(cache, OLD_MAGIC, strlen(OLD_MAGIC)) != 0) return -1;
  uint32_t nlibs = rd32(cache + 12);
  if ((size - OLD_HEADER) / OLD_ENTRY < nlibs) return -1;
  size_t old_end = OLD_HEADER + (size_t)nlibs * OLD_ENTRY;
  /* The compat layout: the new table follows, aligned; it is the one
   * today's dynamic linker reads, so it is preferred. */
  size_t new_at = (old_end + NEW_ALIGN - 1) & ~(size_t)(NEW_ALIGN - 1);
  if (new_at < size) {
    int n = scan_new(cache + new_at, size - new_at, soname, fn, arg);
    if (n >= 0) return n;
  }
  /* Old table alone: strings count from the end of its entries. */
  return scan(cache + OLD_HEADER, nlibs, OLD_ENTRY, 0, cache + size, cache + old_end, size - old_end, soname, fn,
              arg);
}

int hetccl_ld_cache_lookup_file(const char *file, const char *soname, hetccl_ld_cache_fn fn, void *arg) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  unsigned char *data = NULL;
  int found = -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > MAX_CACHE_BYTES)
    goto done;
  size_t size = (size_t)st.st_size, got = 0;
  data = malloc(size);
  if (!data) goto done;
  while (got < size) {
    ssize_t r = read(fd, data + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  /* A cache rewritten while being read is taken as far as it was read:
   * every offset is checked against `got`. */
  found = hetccl_ld_cache_lookup(data, got, soname, fn, arg);
done:
  free(data);
  close(fd);
  return found;
}
