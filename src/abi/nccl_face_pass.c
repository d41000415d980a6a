/*
 * NCCL face: passing calls through to the NCCL (or RCCL) of a communicator
 * of one domain, for the functions HetCCL gives no meaning of its own
 * there (windows, one-sided put and signal, the device API). A
 * communicator of one NCCL domain IS one NCCL communicator, so NCCL's own
 * answer is the right one; HetCCL never guesses at it.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "abi/nccl_face.h"

ncclResult_t face_lib_lacks(const char *fn, const char *desc) {
  char msg[1400];
  if (!strncmp(desc, "no ", 3)) /* no library at all */
    snprintf(msg, sizeof msg, "HetCCL has no such function of its own, and there is %s to pass it to", desc);
  else
    snprintf(msg, sizeof msg, "the " HETCCL_FACE_TITLE " found, %s, does not have it (it is NCCL 2.30.7's)", desc);
  return face_refuse(fn, msg);
}

ncclResult_t face_passthru(const char *fn, ncclComm_t comm, const char *what, const char *across, void **entry,
                           void **lib_comm) {
  struct hetccl_face_domain d;
  *entry = NULL;
  *lib_comm = NULL;
  hetcclResult_t r = hetcclInternalFaceDomain((hetcclComm_t)(void *)comm, fn, fn, &d);
  if (r != hetcclSuccess) return face_result(r);
  if (d.ndomains > 1) return face_refuse(fn, across);
  if (!d.has_entries) {
    char msg[1400];
    snprintf(msg, sizeof msg,
             "this communicator's one domain is served by '%s', a collective library of HetCCL's own, not by "
             HETCCL_FACE_TITLE ", and HetCCL has no %s",
             d.lib, what);
    return face_refuse(fn, msg);
  }
  if (!d.entry) return face_lib_lacks(fn, d.lib);
  *entry = d.entry;
  *lib_comm = d.lib_comm;
  return ncclSuccess;
}

void *face_lib_symbol(const char *fn, char *desc, size_t desc_size) {
  return hetcclInternalVendorSymbol(HETCCL_FACE_IS_RCCL, fn, desc, desc_size);
}

/* Appended under a lock, read without one; a fifth library calling the
 * same entry point (none is known) is looked up on each call. */
static pthread_mutex_t g_forward_lock = PTHREAD_MUTEX_INITIALIZER;

void *face_forward_symbol(struct face_forward *cache, void *handle, const char *name) {
  int n = atomic_load_explicit(&cache->n, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (cache->slot[i].handle == handle) return cache->slot[i].fn;
  void *fn = face_nccl_symbol(handle, name);
  pthread_mutex_lock(&g_forward_lock);
  n = atomic_load_explicit(&cache->n, memory_order_relaxed);
  int known = 0;
  for (int i = 0; i < n && !known; i++) known = cache->slot[i].handle == handle;
  if (!known && n < FACE_FORWARD_SLOTS) {
    cache->slot[n].handle = handle;
    cache->slot[n].fn = fn;
    atomic_store_explicit(&cache->n, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_forward_lock);
  return fn;
}
