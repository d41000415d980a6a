/*
 * Which NCCL a face entry point must reach: see nccl_real.h. The caller
 * cache holds one entry per library that ever called the face (usually a
 * handful: the program, PyTorch, the real NCCL), appended under a lock and
 * read without one.
 */
#include "ccl/nccl/nccl_real.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CALLERS 64

/* A library's address range and whether it is a real NCCL (its handle),
 * or libhetccl itself (`self`). */
struct caller {
  uintptr_t lo, hi;
  void *nccl;
  int self;
};

static struct caller g_callers[MAX_CALLERS];
static atomic_int g_ncallers;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(void *) g_vendor_nccl; /* the NCCL the vendor calls (first enter) */
static _Thread_local int t_depth;
/* The library this thread entered (an address of its code): with NCCL and
 * RCCL both loaded in one process, a call made while inside one goes back
 * to that one, not to whichever was entered first. */
static _Thread_local const void *t_entered;

static void remember_vendor(const void *real_symbol) {
  Dl_info info;
  if (!real_symbol || !dladdr(real_symbol, &info) || !info.dli_fname || !info.dli_fname[0]) return;
  void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return;
  void *none = NULL;
  if (!atomic_compare_exchange_strong(&g_vendor_nccl, &none, h)) dlclose(h);
}

void hetccl_nccl_real_enter(const void *real_symbol) {
  if (t_depth++ == 0) t_entered = real_symbol;
  if (!atomic_load_explicit(&g_vendor_nccl, memory_order_acquire)) remember_vendor(real_symbol);
}

void hetccl_nccl_real_leave(void) {
  if (t_depth > 0) t_depth--;
}

int hetccl_nccl_real_inside(void) { return t_depth > 0; }

void hetcclInternalNcclRealEnter(const void *real_symbol) { hetccl_nccl_real_enter(real_symbol); }
void hetcclInternalNcclRealLeave(void) { hetccl_nccl_real_leave(); }

/* The loaded library whose segments contain `addr`. */
struct containing {
  uintptr_t addr;
  int found;
  uintptr_t lo, hi;
  char name[4096];
};

static int find_containing(struct dl_phdr_info *info, size_t size, void *arg) {
  struct containing *f = arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  int inside = 0;
  (void)size;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
    if (start < lo) lo = start;
    if (end > hi) hi = end;
    if (f->addr >= start && f->addr < end) inside = 1;
  }
  if (!inside) return 0;
  f->found = 1;
  f->lo = lo;
  f->hi = hi;
  snprintf(f->name, sizeof f->name, "%s", info->dlpi_name ? info->dlpi_name : "");
  return 1;
}

/* A real NCCL defines ncclGetVersion within its own range and does not
 * reach hetcclGetVersion (the face does, through its libhetccl.so). The
 * program itself (empty name) is never one. */
static void *nccl_handle_of(const struct containing *f) {
  if (!f->name[0]) return NULL;
  void *h = dlopen(f->name, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return NULL;
  uintptr_t own = (uintptr_t)dlsym(h, "ncclGetVersion");
  if (own && own >= f->lo && own < f->hi && !dlsym(h, "hetcclGetVersion")) return h;
  dlclose(h);
  return NULL;
}

/* Every loaded library's name and range (for the search below). */
struct all_objects {
  struct containing *obj;
  int n, cap;
};

static int list_object(struct dl_phdr_info *info, size_t size, void *arg) {
  struct all_objects *all = arg;
  if (all->n == all->cap) return 1;
  struct containing *f = &all->obj[all->n];
  memset(f, 0, sizeof *f);
  f->addr = info->dlpi_addr;
  if (find_containing(info, size, f) == 0) { /* no segment holds dlpi_addr: take the first load segment */
    for (int i = 0; i < info->dlpi_phnum && !f->found; i++)
      if (info->dlpi_phdr[i].p_type == PT_LOAD) {
        f->addr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        find_containing(info, size, f);
      }
  }
  if (f->found) all->n++;
  return 0;
}

/* The NCCL HetCCL's vendor calls: the one it marked, else the first real
 * NCCL among the loaded libraries (found once). */
static void *vendor_nccl(void) {
  void *v = atomic_load_explicit(&g_vendor_nccl, memory_order_acquire);
  if (v) return v;
  struct all_objects all = {NULL, 0, 1024};
  all.obj = calloc((size_t)all.cap, sizeof *all.obj);
  if (!all.obj) return NULL;
  dl_iterate_phdr(list_object, &all);
  for (int i = 0; i < all.n && !v; i++) v = nccl_handle_of(&all.obj[i]);
  free(all.obj);
  if (!v) return NULL;
  void *none = NULL;
  if (!atomic_compare_exchange_strong(&g_vendor_nccl, &none, v)) {
    dlclose(v);
    v = none;
  }
  return v;
}

static void *verdict(const struct caller *c) {
  /* libhetccl never calls nccl* names itself: a face call "from" it is a
   * tail call out of the NCCL it called, so it goes to that NCCL. */
  return c->self ? vendor_nccl() : c->nccl;
}

static void *classify(uintptr_t addr) {
  struct containing f, own;
  memset(&f, 0, sizeof f);
  memset(&own, 0, sizeof own);
  f.addr = addr;
  own.addr = (uintptr_t)&classify;
  dl_iterate_phdr(find_containing, &f);
  dl_iterate_phdr(find_containing, &own);
  if (!f.found) return NULL; /* not in any library (generated code): HetCCL's */
  /* Only libhetccl.so counts as itself (a program linking HetCCL statically is a caller like any other). */
  struct caller c = {f.lo, f.hi, NULL, own.found && own.lo == f.lo && f.name[0]};
  if (!c.self) c.nccl = nccl_handle_of(&f);
  pthread_mutex_lock(&g_lock);
  int n = atomic_load_explicit(&g_ncallers, memory_order_relaxed), known = 0;
  for (int i = 0; i < n && !known; i++) known = g_callers[i].lo == f.lo;
  if (!known && n < MAX_CALLERS) {
    g_callers[n] = c;
    atomic_store_explicit(&g_ncallers, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_lock);
  return verdict(&c);
}

/* The verdict for code at `a` (cached per library). */
static void *lookup(uintptr_t a) {
  int n = atomic_load_explicit(&g_ncallers, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (a >= g_callers[i].lo && a < g_callers[i].hi) return verdict(&g_callers[i]);
  return classify(a);
}

void *hetcclInternalNcclReal(const void *caller) {
  if (t_depth > 0) {
    /* The library this thread entered, when it is a real NCCL-like one
     * (NCCL or RCCL); else the one the vendor entered first. */
    void *v = t_entered ? lookup((uintptr_t)t_entered) : NULL;
    if (!v) v = atomic_load_explicit(&g_vendor_nccl, memory_order_acquire);
    if (v) return v;
  }
  return lookup((uintptr_t)caller);
}
