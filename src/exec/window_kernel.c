/* The window kernel's descriptor (exec/window.h, "the kernel path"): the
 * steps of a phase's window transfers, computed on the host exactly as the
 * memop path's waits and writes, for one launch. */
#include <stdint.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/window_lane.h"
#include "util/error.h"

hetcclResult_t hetccl_dwin_kernel_steps(struct hetccl_dwin *win, int tx, size_t bytes, int *steps) {
  struct hetccl_dlane *l;
  *steps = 0;
  if (bytes == 0) return hetcclSuccess;
  HETCCL_TRY(hetccl_dwin_lane_for(win, tx, bytes, &l));
  size_t chunk = hetccl_dwin_chunk(l->W, l != (tx ? &win->tx[0] : &win->rx[0]), bytes);
  if (chunk > UINT32_MAX) {
    *steps = INT32_MAX;
    return hetcclSuccess;
  }
  uint64_t end = l->end;
  int k = 0;
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    if (end > 0 && hetccl_dwin_place(l, end, n) + round_up(n, WIN_UNIT) > win->epoch) { /* past_epoch */
      k += tx ? 2 : 1;
      end = 0;
    }
    end = hetccl_dwin_place(l, end, n) + round_up(n, WIN_UNIT);
    k++;
  }
  *steps = k;
  return hetcclSuccess;
}

/* A step's wait for the track's wait counter, as add_wait (left out when
 * the host sees the counter there already; `need` for the watch), or for
 * its restart word, as add_wait_reset (always). */
static void kstep_wait_in(struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t k, uint32_t value,
                          struct hetccl_wx_step *s) {
  if (passed(l, counter, k, value)) return;
  s->flags |= HETCCL_WX_WAIT_GEQ;
  s->wait = value;
  need_counter(l, k, value);
}
static void kstep_wait(struct hetccl_dlane *l, _Atomic uint32_t *counter, uint32_t value, struct hetccl_wx_step *s) {
  kstep_wait_in(l, counter, l->resets, value, s);
}
static void kstep_wait_reset(struct hetccl_dlane *l, uint32_t value, struct hetccl_wx_step *s) {
  atomic_store_explicit(&l->need_reset, value, memory_order_release);
  s->flags |= HETCCL_WX_WAIT_RST;
  s->wait = value;
}

/* The track's next step, cleared; NULL when the descriptor is full (the
 * caller was to check with kernel_steps). */
static struct hetccl_wx_step *kstep_new(struct hetccl_wx_desc *desc, struct hetccl_wx_track *t) {
  if (t->first + t->nsteps >= HETCCL_WX_STEPS) return NULL;
  struct hetccl_wx_step *s = &desc->s[t->first + t->nsteps++];
  memset(s, 0, sizeof *s);
  return s;
}
#define KSTEP(var, desc, t)                                                                                   \
  struct hetccl_wx_step *var = kstep_new(desc, t);                                                            \
  if (!var) return hetccl_error(hetcclInternalError, "window kernel: more than %d steps", HETCCL_WX_STEPS)

hetcclResult_t hetccl_dwin_kernel_add(struct hetccl_dwin *win, int tx, void *buf, const void *a, size_t bytes,
                                      int combine, unsigned blocks, int extend, struct hetccl_wx_desc *desc) {
  struct hetccl_dlane *l;
  if (bytes == 0) return hetcclSuccess;
  if (extend ? desc->ntracks == 0 : desc->ntracks >= HETCCL_WX_TRACKS)
    return hetccl_error(hetcclInternalError, "window kernel: %s", extend ? "no track to extend" : "too many lanes");
  HETCCL_TRY(hetccl_dwin_map(win));
  HETCCL_TRY(hetccl_dwin_lane_for(win, tx, bytes, &l));
  size_t chunk = hetccl_dwin_chunk(l->W, l != (tx ? &win->tx[0] : &win->rx[0]), bytes);
  uint64_t ring = (uint64_t)(uintptr_t)dev_addr(l, l->data);
  struct hetccl_wx_track *t;
  if (extend) {
    t = &desc->t[desc->ntracks - 1];
    if (t->ring != ring || t->send != (uint32_t)tx)
      return hetccl_error(hetcclInternalError, "window kernel: a transfer extends another lane's track");
    if (blocks > t->blocks) t->blocks = blocks;
  } else {
    t = &desc->t[desc->ntracks++];
    uint32_t first = 0;
    for (uint32_t i = 0; i + 1 < desc->ntracks; i++) first += desc->t[i].nsteps;
    *t = (struct hetccl_wx_track){
        .ring = ring,
        .wait_ctr = (uint64_t)(uintptr_t)dev_addr(l, tx ? l->consumed : l->produced),
        .write_ctr = (uint64_t)(uintptr_t)dev_addr(l, tx ? l->produced : l->consumed),
        .wait_rst = (uint64_t)(uintptr_t)dev_addr(l, tx ? l->consumed_resets : l->produced_resets),
        .write_rst = (uint64_t)(uintptr_t)dev_addr(l, tx ? l->produced_resets : l->consumed_resets),
        .first = first,
        .block0 = desc->nblocks,
        .blocks = blocks,
        .send = (uint32_t)tx,
    };
  }
  desc->nblocks = t->block0 + t->blocks; /* the last track's blocks are the launch's last */
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t n = hetccl_chunk_len(bytes, off, chunk);
    if (past_epoch(win, l, n)) {
      /* restart_tx / restart_rx, as steps: the counter to 0, then the
       * restart word to k, behind a fence each */
      uint32_t k = ++l->resets;
      KSTEP(s, desc, t);
      if (tx) {
        kstep_wait_in(l, l->consumed, k - 1, units(l->end), s); /* the old epoch's last room */
        KSTEP(answer, desc, t);
        kstep_wait_reset(l, k, answer);
      } else {
        kstep_wait_reset(l, k, s);
      }
      s->flags |= HETCCL_WX_WRITE | HETCCL_WX_WRITE_RST;
      s->write = 0;
      s->n = k;
      l->end = 0;
    }
    uint64_t v = hetccl_dwin_place(l, l->end, n), end = v + round_up(n, WIN_UNIT);
    KSTEP(s, desc, t);
    if (tx) {
      if (end > l->W) kstep_wait(l, l->consumed, units(end - l->W), s);
    } else {
      kstep_wait(l, l->produced, units(end), s);
    }
    s->flags |= HETCCL_WX_MOVE | HETCCL_WX_WRITE | (uint32_t)combine << HETCCL_WX_COMBINE_SHIFT;
    s->buf = (uint64_t)(uintptr_t)((char *)buf + off);
    s->a = a ? (uint64_t)(uintptr_t)((const char *)a + off) : 0;
    s->at = v % l->W;
    s->n = (uint32_t)n;
    s->write = units(end);
    l->end = end;
  }
  return hetcclSuccess;
}
