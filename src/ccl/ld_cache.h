/*
 * Reading the dynamic linker's cache (/etc/ld.so.cache, what `ldconfig -p`
 * prints) without running ldconfig: the library search needs the paths the
 * cache maps a soname to, after the soname itself led to HetCCL's face.
 *
 * Formats: glibc's "glibc-ld.so.cache1.1" (the default since glibc 2.32),
 * alone or after the old "ld.so-1.7.0" table (the compat layout); the old
 * table alone is read too. Every count, offset and string is checked
 * against the data's size: garbage gives -1 or no entries, never a read
 * outside the data.
 */
#ifndef HETCCL_VENDOR_LD_CACHE_H
#define HETCCL_VENDOR_LD_CACHE_H

#include <stddef.h>

#define HETCCL_LD_CACHE_FILE "/etc/ld.so.cache"

/* Called with each path the cache gives for the soname, in cache order. */
typedef void (*hetccl_ld_cache_fn)(const char *path, void *arg);

/*
 * Calls `fn` for every entry of the cache in `data` (`size` bytes) whose
 * name is `soname` and that this process could load (same ELF class and
 * ABI flags as the running libc, no glibc-hwcaps subdirectory). Returns
 * the number of such entries, or -1 when `data` is not a cache it can read.
 */
int hetccl_ld_cache_lookup(const void *data, size_t size, const char *soname, hetccl_ld_cache_fn fn, void *arg);

/* The same over a cache file (HETCCL_LD_CACHE_FILE); -1 when it cannot be read. */
int hetccl_ld_cache_lookup_file(const char *file, const char *soname, hetccl_ld_cache_fn fn, void *arg);

#endif
