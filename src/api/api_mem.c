/*
 * Buffer registration and communication memory (NCCL's ncclCommRegister,
 * ncclMemAlloc). Registration is a hint: HetCCL's engine reads any host
 * buffer and NCCL (cuda domains) registers on its own, so a handle only
 * records the range, to be validated at deregistration. Allocations
 * remember the device kind that made them, so MemFree returns each to the
 * right runtime.
 */
#include <pthread.h>
#include <stdlib.h>

#include "api/check.h"
#include "core/comm.h"
#include "device/device.h"
#include "transport/transport.h"
#include "util/error.h"

struct registration {
  struct registration *next;
  hetcclComm_t comm;
  void *buff;
  size_t size;
};

struct allocation {
  struct allocation *next;
  void *ptr;
  size_t size;
  int kind;
  int device;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct registration *g_regs;
static struct allocation *g_allocs;

HETCCL_API hetcclResult_t hetcclCommRegister(const hetcclComm_t comm, void *buff, size_t size, void **handle) {
  const char *fn = "hetcclCommRegister";
  HETCCL_TRY(hetccl_check_comm(fn, comm));
  if (!handle) return hetccl_error(hetcclInvalidArgument, "%s: handle is NULL", fn);
  *handle = NULL;
  if (!buff && size > 0) return hetccl_error(hetcclInvalidArgument, "%s: buff is NULL with size %zu", fn, size);
  struct registration *r = malloc(sizeof *r);
  if (!r) return hetccl_error(hetcclSystemError, "%s: out of memory", fn);
  *r = (struct registration){.comm = comm, .buff = buff, .size = size};
  pthread_mutex_lock(&g_lock);
  r->next = g_regs;
  g_regs = r;
  pthread_mutex_unlock(&g_lock);
  *handle = r;
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclCommDeregister(const hetcclComm_t comm, void *handle) {
  const char *fn = "hetcclCommDeregister";
  HETCCL_TRY(hetccl_check_comm(fn, comm));
  if (!handle) return hetcclSuccess; /* as NCCL: nothing to deregister */
  struct registration *found = NULL;
  int other_comm = 0;
  pthread_mutex_lock(&g_lock);
  for (struct registration **p = &g_regs; *p; p = &(*p)->next) {
    if (*p != handle) continue;
    if ((*p)->comm != comm) {
      other_comm = 1;
      break;
    }
    found = *p;
    *p = found->next;
    break;
  }
  pthread_mutex_unlock(&g_lock);
  if (other_comm) return hetccl_error(hetcclInvalidArgument, "%s: handle %p was registered with another communicator", fn, handle);
  if (!found) return hetccl_error(hetcclInvalidArgument, "%s: handle %p is not a live registration", fn, handle);
  hetccl_transport_forget_range(found->buff, found->size);
  free(found);
  return hetcclSuccess;
}

/* The device kind communicators of this process get (as at init):
 * HETCCL_DEVICE's, else auto choice (device/registry.c). */
static hetcclResult_t alloc_kind(int *kind) {
  HETCCL_TRY(hetccl_settings_check());
  return hetccl_device_choose("hetcclMemAlloc", kind);
}

HETCCL_API hetcclResult_t hetcclMemAlloc(void **ptr, size_t size) {
  const char *fn = "hetcclMemAlloc";
  const struct hetccl_device_ops *ops = NULL;
  int kind = -1;
  if (!ptr) return hetccl_error(hetcclInvalidArgument, "%s: ptr is NULL", fn);
  *ptr = NULL;
  if (size == 0) return hetccl_error(hetcclInvalidArgument, "%s: size is 0", fn);
  HETCCL_TRY(alloc_kind(&kind));
  ops = hetccl_device_get(kind);
  struct allocation *a = malloc(sizeof *a);
  if (!a) return hetccl_error(hetcclSystemError, "%s: out of memory", fn);
  a->kind = kind;
  a->size = size;
  a->device = ops->current();
  hetcclResult_t rc = ops->mem_alloc(a->device, size, &a->ptr);
  if (rc != hetcclSuccess) {
    free(a);
    return rc;
  }
  pthread_mutex_lock(&g_lock);
  a->next = g_allocs;
  g_allocs = a;
  pthread_mutex_unlock(&g_lock);
  *ptr = a->ptr;
  return hetcclSuccess;
}

HETCCL_API hetcclResult_t hetcclMemFree(void *ptr) {
  if (!ptr) return hetcclSuccess;
  struct allocation *found = NULL;
  pthread_mutex_lock(&g_lock);
  for (struct allocation **p = &g_allocs; *p; p = &(*p)->next)
    if ((*p)->ptr == ptr) {
      found = *p;
      *p = found->next;
      break;
    }
  pthread_mutex_unlock(&g_lock);
  if (!found) return hetccl_error(hetcclInvalidArgument, "hetcclMemFree: %p was not allocated by hetcclMemAlloc", ptr);
  hetccl_transport_forget_range(ptr, found->size); /* no cached registration outlives the memory */
  hetcclResult_t rc = hetccl_device_get(found->kind)->mem_free(found->device, ptr);
  free(found);
  return rc;
}
