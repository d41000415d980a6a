/*
 * Finding a vendor library (NCCL, RCCL) that HetCCL opens with dlopen, by
 * one rule for every library; a descriptor says what differs.
 *
 * Order:
 *  1. The override variable when set: that file only.
 *  2. The soname through the dynamic linker (in a PyTorch process, the copy
 *     PyTorch already loaded). Taken when it is the vendor's library.
 *  3. Otherwise (the soname is HetCCL's own face, as under LD_PRELOAD of
 *     the face, or is missing or refused), the soname in each directory of
 *     LD_LIBRARY_PATH, then every path /etc/ld.so.cache gives for it, then
 *     in the descriptor's directories and the usual system library
 *     directories, then in a Python site-packages (the descriptor's
 *     site_dir next to Python libraries already loaded in the process,
 *     under $VIRTUAL_ENV, $CONDA_PREFIX, each $PYTHONPATH entry, ~/.local).
 *
 * Candidates of step 3 are opened by their full path, so the dynamic
 * linker cannot answer with the face again. A candidate is refused when it
 * is the same file as the face (device and inode) or as one already tried,
 * when it exports hetcclGetVersion (it is HetCCL), or when the caller's
 * `accept` says it is not the library wanted; each refusal is recorded.
 */
#ifndef HETCCL_VENDOR_LIB_SEARCH_H
#define HETCCL_VENDOR_LIB_SEARCH_H

#include <stddef.h>

struct hetccl_lib_search {
  const char *name;          /* for messages: "NCCL" */
  const char *soname;        /* "libnccl.so.2" */
  const char *override_var;  /* "HETCCL_NCCL_LIBRARY" */
  const char *const *dirs;   /* searched before the system directories; glob patterns; NULL-terminated */
  const char *site_dir;      /* the soname's folder under site-packages ("nvidia/nccl/lib"); NULL: none */
};

extern const struct hetccl_lib_search hetccl_lib_nccl;
extern const struct hetccl_lib_search hetccl_lib_rccl;

/* 1 to take the library opened as `handle` from `path`; 0 with the reason
 * (it then is closed and the search goes on). */
typedef int (*hetccl_lib_accept_fn)(void *handle, const char *path, void *arg, char *why, size_t why_size);

struct hetccl_lib_found {
  void *handle;      /* the library taken; NULL when none */
  char path[1024];   /* its file */
  char face[1024];   /* HetCCL's face when the soname resolves to it, else "" */
  char why[4096];    /* when none was taken: each candidate refused and why, "; "-separated */
};

/*
 * Runs the search of `lib`, opening candidates with `dlopen_flags`.
 * Returns 1 with found->handle and ->path, or 0 with found->why. Sets
 * found->face either way. Thread-safe when `accept` is.
 */
int hetccl_lib_search(const struct hetccl_lib_search *lib, int dlopen_flags, hetccl_lib_accept_fn accept, void *arg,
                      struct hetccl_lib_found *found);

/* Whether the dynamic linker resolves lib's soname to HetCCL itself (a
 * library exporting hetcclGetVersion); when so, its file in `path`. */
int hetccl_lib_soname_is_hetccl(const struct hetccl_lib_search *lib, char *path, size_t path_size);

#endif
