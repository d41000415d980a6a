/*
 * Vendor libraries: what serves the ranks of one domain together. NCCL and
 * RCCL (through dlopen) and HetCCL's built-in engine (host ranks, or a kind
 * with no library) sit behind this one table, so plans never know which
 * library they drive.
 *
 * run() executes one group's worth of operations of one communicator, as one
 * vendor group: collectives in the order given, and all point-to-point
 * operations of the batch progressed together (a grouped send/recv exchange
 * must not deadlock). On host ranks run() returns when everything completed.
 */
#ifndef HETCCL_CCL_CCL_H
#define HETCCL_CCL_CCL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hetccl.h"
#include "core/op.h"
#include "transport/transport.h"

typedef struct hetccl_vcomm hetccl_vcomm;

/* What a vendor library is given to build a communicator over one domain. */
struct hetccl_vendor_init {
  int rank;                /* rank within the domain */
  int nranks;              /* ranks in the domain */
  int device;              /* device ordinal (-1: host) */
  /* Built-in engine: the communicator's links by global rank (NULL: not
   * made yet), each domain rank's global rank, and how to make missing
   * ones (both ends of a pair ask in the same step of the same call). */
  hetccl_link *const *links;
  const int *members;      /* [nranks]; NULL: domain rank r is links[r] */
  hetccl_link_connect_fn connect;
  void *connect_ctx;
  int64_t timeout_ms;
  size_t chunk_bytes;
  size_t small_bytes;
  /* Built-in engine: domains of at most this many ranks send small messages
   * to every rank directly; larger ones use O(log n)-peer algorithms (0: 8). */
  int direct_max_ranks;
  /* Vendor libraries with their own unique id: domain rank 0 makes it, all
   * ranks of the domain receive it through this (a broadcast within the domain). */
  hetcclResult_t (*bcast)(void *ctx, void *buf, size_t bytes);
  void *bcast_ctx;
  const void *settings;    /* this communicator's values of the library's settings table (NULL: none) */
  /* The communicator's asynchronous error: libraries that wait on HetCCL's
   * links hand it to their waits (transport/link_driver.h), so an abort or a
   * failure elsewhere ends them. NULL: none. */
  atomic_int *comm_error;
};

struct hetccl_vendor_ops {
  unsigned version; /* HETCCL_VENDOR_OPS_VERSION */
  const char *name;
  hetcclResult_t (*init)(const struct hetccl_vendor_init *args, hetccl_vcomm **out);
  hetcclResult_t (*run)(hetccl_vcomm *vc, const struct hetccl_op *ops, int nops);
  void (*destroy)(hetccl_vcomm *vc);
  /* Optional (NULL: none). A PreMulSum operator made in the library when
   * the application makes one on a one-domain communicator, destroyed with
   * the application's: pass-through then makes the calls the application
   * made. *vendor_op is the library's operator plus one, or 0 when the
   * library makes none for it (calls then make one each, as before). */
  hetcclResult_t (*redop_create)(hetccl_vcomm *vc, const hetccl_redop *r, hetcclDataType_t dt, int *vendor_op);
  void (*redop_destroy)(hetccl_vcomm *vc, int vendor_op);
  /* Optional (NULL: a library with no entry points of its own, the
   * built-in engine). The library's own exported function `name` (NULL
   * when it lacks it) and its communicator of this domain in *lib_comm;
   * `desc` gets the library and its version ("NCCL 2.28.9 (/path)"). For
   * calls HetCCL passes through unchanged (suspend, the faces' one-domain
   * pass-through); the caller brackets the call with
   * hetccl_vendor_entry_enter/leave. */
  void *(*entry)(hetccl_vcomm *vc, const char *name, void **lib_comm, char *desc, size_t desc_size);
};
#define HETCCL_VENDOR_OPS_VERSION 1

extern const struct hetccl_vendor_ops hetccl_vendor_builtin;

/* Around a call of an entry point got from a vendor op `entry`: the
 * library's own calls back into names HetCCL's faces export then reach
 * the library again (ccl/nccl/nccl_real.h). */
void hetccl_vendor_entry_enter(const void *entry);
void hetccl_vendor_entry_leave(void);

struct hetccl_device_desc;
struct hetccl_settings_table;

/*
 * What a collective library says of itself. The registry (ccl/registry.c)
 * holds the built-in ones and those registered at run time; a library's id
 * is its index there.
 */
struct hetccl_ccl_desc {
  const char *name;
  int priority;          /* per domain, the highest one that serves its kind wins */
  /* Whether it can serve a domain of ranks of device kind `kind`. */
  int (*serves)(const struct hetccl_device_desc *kind);
  /* 1 when usable here; else 0 with the reason (probed only for kinds it serves). */
  int (*probe)(char *why, size_t why_size);
  int uses_links;        /* runs over HetCCL links inside its domain (the built-in engine) */
  struct hetccl_settings_table *settings;  /* its own settings; NULL: none */
  const struct hetccl_vendor_ops *ops;     /* NULL: a known library not built here */
};

extern const struct hetccl_ccl_desc hetccl_ccl_desc_builtin;
extern const struct hetccl_ccl_desc hetccl_ccl_desc_nccl;
extern const struct hetccl_ccl_desc hetccl_ccl_desc_rccl;

/* Adds a library (tests, plugins): before the first communicator, on every rank alike. */
hetcclResult_t hetccl_ccl_register(const struct hetccl_ccl_desc *desc);
int hetccl_ccl_count(void);
const struct hetccl_ccl_desc *hetccl_ccl_desc_get(int id);
/* The library of a domain of device kind `kind`: the highest-priority one
 * with ops that serves it and probes usable; when none probes usable, the
 * highest that serves it (its init then says why it cannot run). -1 when
 * none serves the kind. */
int hetccl_ccl_choose(int kind);

#endif
