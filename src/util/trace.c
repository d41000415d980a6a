#include "util/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

_Thread_local struct hetccl_trace_tls hetccl_trace_tls;

struct hetccl_trace {
  struct hetccl_trace_event *ev;
  size_t cap;
  atomic_size_t next;       /* slots taken; beyond cap: dropped events */
  atomic_uint calls;        /* call numbers handed out */
  FILE *f;
  char path[4200];
  int rank, nranks;
  char label[160];
  char host[256];
  uint64_t mono0_ns, real0_ns; /* both clocks read together at open: aligns ranks */
};

static const char *const g_kind_names[HETCCL_TK_COUNT] = {
    "call", "enqueue", "stream", "vendor", "link", "chunk", "copy", "reduce", "stage", "wait", "flag", "job"};

const char *hetccl_trace_path(void) {
  const char *p = hetccl_params()->trace_path;
  return p && p[0] ? p : NULL;
}

static int32_t my_tid(void) {
  if (!hetccl_trace_tls.tid) hetccl_trace_tls.tid = (int32_t)syscall(SYS_gettid);
  return hetccl_trace_tls.tid;
}

static void put(struct hetccl_trace *t, int kind, char ph, const char *name, uint32_t call, int peer, uint64_t bytes,
                uint64_t id, unsigned flags) {
  size_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
  if (i >= t->cap) return; /* full: dropped, counted by next - cap */
  t->ev[i] = (struct hetccl_trace_event){.t_ns = hetccl_now_ns(), .bytes = bytes, .id = id, .name = name,
                                         .call = call, .peer = peer, .tid = my_tid(), .kind = (uint8_t)kind,
                                         .ph = ph, .flags = (uint16_t)flags};
}

void hetccl_trace_rec(int kind, char ph, const char *name, int peer, uint64_t bytes, uint64_t id, unsigned flags) {
  put(hetccl_trace_tls.t, kind, ph, name, hetccl_trace_tls.call, peer, bytes, id, flags);
}

void hetccl_trace_call(struct hetccl_trace *t, char ph, int kind, const char *name, uint32_t call, int peer,
                       uint64_t bytes, uint32_t first, unsigned batch) {
  put(t, kind, ph, name, call, peer, bytes, first, batch > 0xffff ? 0xffff : batch);
}

uint32_t hetccl_trace_calls_take(struct hetccl_trace *t, int n_calls) {
  return atomic_fetch_add_explicit(&t->calls, (unsigned)n_calls, memory_order_relaxed) + 1;
}

/* HETCCL_TRACE with %r, %p, %h replaced; the rank added when %r is absent. */
static void expand_path(char *out, size_t size, const char *pat, int rank) {
  size_t n = 0;
  int had_rank = 0;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  for (const char *s = pat; *s && n + 1 < size; s++) {
    if (s[0] == '%' && (s[1] == 'r' || s[1] == 'p' || s[1] == 'h')) {
      if (s[1] == 'r') had_rank = 1;
      if (s[1] == 'h') n += (size_t)snprintf(out + n, size - n, "%s", host);
      else n += (size_t)snprintf(out + n, size - n, "%d", s[1] == 'r' ? rank : (int)getpid());
      s++;
    } else {
      out[n++] = *s;
    }
    if (n >= size) n = size - 1;
  }
  out[n] = 0;
  if (had_rank) return;
  size_t len = strlen(out);
  if (len > 5 && !strcmp(out + len - 5, ".json")) {
    out[len - 5] = 0;
    char tail[32];
    snprintf(tail, sizeof tail, ".%d.json", rank);
    strncat(out, tail, size - strlen(out) - 1);
  } else {
    char tail[32];
    snprintf(tail, sizeof tail, ".%d", rank);
    strncat(out, tail, size - strlen(out) - 1);
  }
}

/* A path this process has already written a timeline to (a second
 * communicator of the same rank: split, shrink, a second init) gets "-2",
 * "-3", ... before its .json ending, so no timeline overwrites another. */
static void unique_path(char *path, size_t size) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char *used[256];
  static int nused;
  pthread_mutex_lock(&lock);
  char base[4200];
  snprintf(base, sizeof base, "%s", path);
  size_t len = strlen(base);
  int json = len > 5 && !strcmp(base + len - 5, ".json");
  if (json) base[len - 5] = 0;
  for (int k = 2;; k++) {
    int taken = 0;
    for (int i = 0; i < nused && !taken; i++) taken = !strcmp(used[i], path);
    if (!taken || k > 100000) break;
    snprintf(path, size, "%s-%d%s", base, k, json ? ".json" : "");
  }
  if (nused < (int)(sizeof used / sizeof used[0])) used[nused] = strdup(path), nused += used[nused] != NULL;
  pthread_mutex_unlock(&lock);
}

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

hetcclResult_t hetccl_trace_open(struct hetccl_trace **out, int rank, int nranks, const char *label) {
  *out = NULL;
  const char *pat = hetccl_trace_path();
  if (!pat) return hetcclSuccess;
  struct hetccl_trace *t = calloc(1, sizeof *t);
  if (!t) return hetccl_error(hetcclSystemError, "out of memory for the timeline (HETCCL_TRACE)");
  t->cap = (size_t)hetccl_params()->trace_events;
  t->ev = malloc(t->cap * sizeof *t->ev);
  if (t->ev) memset(t->ev, 0, t->cap * sizeof *t->ev); /* committed now: no page faults inside calls */
  if (!t->ev) {
    free(t);
    return hetccl_error(hetcclSystemError, "out of memory for %zu timeline events (HETCCL_TRACE_EVENTS)",
                        (size_t)hetccl_params()->trace_events);
  }
  expand_path(t->path, sizeof t->path, pat, rank);
  unique_path(t->path, sizeof t->path);
  t->f = fopen(t->path, "w");
  if (!t->f) {
    hetcclResult_t rc = hetccl_error(hetcclInvalidArgument, "HETCCL_TRACE=%s: cannot create %s: %s", pat, t->path,
                                     strerror(errno));
    free(t->ev);
    free(t);
    return rc;
  }
  t->rank = rank;
  t->nranks = nranks;
  snprintf(t->label, sizeof t->label, "%s", label ? label : "");
  gethostname(t->host, sizeof t->host - 1);
  /* Read back to back: a merger maps each rank's monotonic stamps onto the
   * realtime axis with (real0 - mono0); on one host monotonic is already common. */
  t->mono0_ns = clock_ns(CLOCK_MONOTONIC);
  t->real0_ns = clock_ns(CLOCK_REALTIME);
  *out = t;
  return hetcclSuccess;
}

/* JSON strings here are our own literals and labels; escape anyway. */
static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void put_ts(FILE *f, uint64_t ns) { fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000)); }

/* Names each thread by what it recorded. */
static const char *thread_role(const struct hetccl_trace *t, size_t n, int32_t tid) {
  int calls = 0, jobs = 0;
  for (size_t i = 0; i < n; i++) {
    if (t->ev[i].tid != tid) continue;
    calls |= t->ev[i].kind == HETCCL_TK_CALL;
    jobs |= t->ev[i].kind == HETCCL_TK_JOB;
  }
  return jobs ? "progress engine" : calls ? "calling thread" : "thread";
}

static void write_json(struct hetccl_trace *t) {
  FILE *f = t->f;
  size_t taken = atomic_load(&t->next), n = taken < t->cap ? taken : t->cap;
  size_t dropped = taken - n;
  fprintf(f, "{\"traceEvents\":[\n");
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", t->rank);
  char pname[256];
  snprintf(pname, sizeof pname, "rank %d (%s)", t->rank, t->label);
  put_str(f, pname);
  fprintf(f, "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}", t->rank,
          t->rank);
  /* One thread_name record per thread seen (first occurrence). */
  for (size_t i = 0; i < n; i++) {
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = t->ev[j].tid == t->ev[i].tid;
    if (seen) continue;
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", t->rank,
            t->ev[i].tid, thread_role(t, n, t->ev[i].tid));
  }
  for (size_t i = 0; i < n; i++) {
    const struct hetccl_trace_event *e = &t->ev[i];
    fprintf(f, ",\n{\"name\":");
    put_str(f, e->name);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"%c\",\"ts\":", e->kind < HETCCL_TK_COUNT ? g_kind_names[e->kind] : "?", e->ph);
    put_ts(f, e->t_ns);
    fprintf(f, ",\"pid\":%d,\"tid\":%d", t->rank, e->tid);
    if (e->ph == 'b' || e->ph == 'e') fprintf(f, ",\"id\":\"0x%llx\"", (unsigned long long)e->id);
    if (e->ph == 'i') fprintf(f, ",\"s\":\"t\"");
    fprintf(f, ",\"args\":{\"call\":%u,\"bytes\":%llu", e->call, (unsigned long long)e->bytes);
    if (e->peer >= 0) fprintf(f, ",\"peer\":%d", e->peer);
    if (e->kind == HETCCL_TK_FLAG || e->kind == HETCCL_TK_WAIT) fprintf(f, ",\"value\":%llu", (unsigned long long)e->id);
    if (e->kind == HETCCL_TK_CALL) fprintf(f, ",\"first\":%llu,\"batch\":%u", (unsigned long long)e->id, e->flags);
    if (e->kind == HETCCL_TK_CHUNK) fprintf(f, ",\"send\":%u", e->flags & 1u);
    fprintf(f, "}}");
  }
  fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"hetccl\":{\"rank\":%d,\"nranks\":%d,\"label\":", t->rank,
          t->nranks);
  put_str(f, t->label);
  fprintf(f, ",\"host\":");
  put_str(f, t->host);
  fprintf(f, ",\"pid\":%d,\"clock\":\"CLOCK_MONOTONIC\",\"ts_unit\":\"us\",\"mono0_ns\":%llu,\"real0_ns\":%llu,"
             "\"events\":%zu,\"dropped\":%zu,\"capacity\":%zu,\"calls\":%u}}}\n",
          (int)getpid(), (unsigned long long)t->mono0_ns, (unsigned long long)t->real0_ns, n, dropped, t->cap,
          atomic_load(&t->calls));
  if (dropped)
    HETCCL_WARN("timeline %s: the buffer of %zu events filled; %zu later events were dropped (raise HETCCL_TRACE_EVENTS)",
                t->path, t->cap, dropped);
}

void hetccl_trace_close(struct hetccl_trace *t) {
  if (!t) return;
  if (hetccl_trace_tls.t == t) hetccl_trace_tls.t = NULL;
  write_json(t);
  if (fclose(t->f) != 0) HETCCL_WARN("timeline %s: write failed: %s", t->path, strerror(errno));
  else HETCCL_INFO("timeline of rank %d written to %s", t->rank, t->path);
  free(t->ev);
  free(t);
}
