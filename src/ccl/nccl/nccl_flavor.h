/*
 * One NCCL-like vendor implementation, several instances. NCCL and
 * libraries that copy its API (RCCL) differ only in what a flavor
 * describes: where the library is found (a lib_search descriptor), which
 * device kind it pairs with, and its ABI quirks (entry points spelled
 * differently, present only in one, or optional; how its version code
 * reads). Each flavor owns its loaded state, so two instances never share
 * a handle or a table of entry points.
 *
 * An instance is a flavor (with its state) and a vendor ops table whose
 * init() passes that flavor on: see nccl_instance.c for NCCL's.
 */
#ifndef HETCCL_CCL_NCCL_FLAVOR_H
#define HETCCL_CCL_NCCL_FLAVOR_H

#include <pthread.h>
#include <stdatomic.h>

#include "ccl/ccl.h"
#include "ccl/lib_search.h"
#include "ccl/nccl/nccl_api.h"
#include "device/device.h"

/* A quirk of one entry point: `entry` is the field of struct hetccl_nccl
 * ("AlltoAll"); `symbol` the name the library exports it under (NULL: not
 * looked up at all); `required` whether a library without it is refused. */
struct hetccl_nccl_symbol {
  const char *entry;
  const char *symbol;
  int required;
};

/* What an instance found, once per process (filled by the loader). */
struct hetccl_nccl_state {
  pthread_mutex_t lock;
  atomic_int loaded;            /* the search ran (found or not) */
  int found;
  struct hetccl_nccl api;       /* the entry points; api.flavor names the flavor */
  struct hetccl_lib_found lib;  /* the search's result (why, when not found) */
};
#define HETCCL_NCCL_STATE_INITIALIZER {.lock = PTHREAD_MUTEX_INITIALIZER}

struct hetccl_nccl_flavor {
  const char *title;                      /* in messages: "NCCL" */
  const struct hetccl_lib_search *lib;    /* how its library is found */
  const char *device_kind;                /* the device kind it serves: "cuda" */
  const struct hetccl_device_ops *device; /* that kind's device ops (contexts, HetCCL's kernels) */
  int min_version;                        /* oldest version code taken, e.g. 21100 */
  /* The parts of a version code; NULL: NCCL's rule (hetccl_nccl_version_parts). */
  void (*version_parts)(int code, int *major, int *minor, int *patch);
  /* Entry points that differ from NCCL 2.28 (nccl<Entry>, required as in
   * nccl_loader.c's table); NULL-terminated by entry, or NULL. */
  const struct hetccl_nccl_symbol *quirks;
  struct hetccl_nccl_state *state;        /* this instance's, HETCCL_NCCL_STATE_INITIALIZER */
};

/* NCCL's version codes: x*10000+y*100+z from 2.9 on, x*1000+y*100+z before. */
void hetccl_nccl_version_parts(int code, int *major, int *minor, int *patch);

/*
 * Finds and loads the flavor's library once per process (thread-safe; see
 * lib_search.h for the order). Fails with hetcclSystemError and a message
 * naming what was tried.
 */
hetcclResult_t hetccl_nccl_flavor_load(const struct hetccl_nccl_flavor *f, const struct hetccl_nccl **out);
/* For hetccl-info: the version code (0 when absent), the file (NULL when
 * absent), why it is absent ("" when found). Load on first call; record no error. */
int hetccl_nccl_flavor_version(const struct hetccl_nccl_flavor *f);
const char *hetccl_nccl_flavor_path(const struct hetccl_nccl_flavor *f);
const char *hetccl_nccl_flavor_error(const struct hetccl_nccl_flavor *f);

/* The vendor operations (src/ccl/ccl.h) of any flavor: an instance's init
 * calls hetccl_nccl_flavor_init with its flavor; run and destroy are shared. */
hetcclResult_t hetccl_nccl_flavor_init(const struct hetccl_nccl_flavor *f, const struct hetccl_vendor_init *args,
                                       hetccl_vcomm **out);
hetcclResult_t hetccl_nccl_flavor_run(hetccl_vcomm *vc, const struct hetccl_op *ops, int nops);
void hetccl_nccl_flavor_destroy(hetccl_vcomm *vc);
hetcclResult_t hetccl_nccl_flavor_redop_create(hetccl_vcomm *vc, const hetccl_redop *r, hetcclDataType_t dt,
                                               int *vendor_op);
void hetccl_nccl_flavor_redop_destroy(hetccl_vcomm *vc, int vendor_op);
/* The vendor op `entry` (ccl.h) of any flavor. */
void *hetccl_nccl_flavor_entry(hetccl_vcomm *vc, const char *name, void **lib_comm, char *desc, size_t desc_size);
/* The flavor's library's exported function `name`, loading the library on
 * first use; NULL when there is no library or it lacks `name`. `desc` gets
 * "NCCL 2.28.9 (/path)" or "no NCCL library (why)". */
void *hetccl_nccl_flavor_symbol(const struct hetccl_nccl_flavor *f, const char *name, char *desc, size_t desc_size);

#endif
