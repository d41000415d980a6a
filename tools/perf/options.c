#include "options.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "say.h"
#include "values.h"
#include "../common/size.h"

void perf_usage(FILE *out) {
  fprintf(out,
          "usage: hetccl-perf <collective> [flags]\n"
          "  collectives: %s\n"
          "  -b, --minbytes <size>   smallest size (default 8; K, M, G suffixes are powers of 1024)\n"
          "  -e, --maxbytes <size>   largest size (default 8M)\n"
          "  -f, --stepfactor <n>    multiply the size by n each step (default 2)\n"
          "  -i, --stepbytes <size>  add this to the size each step instead\n"
          "  -o, --op <op>           sum, prod, max, min, avg or all (default sum)\n"
          "  -d, --datatype <type>   int8 uint8 int32 uint32 int64 uint64 half float double\n"
          "                          bfloat16 fp8e4m3 fp8e5m2, or all (default float)\n"
          "  -r, --root <rank>       root of broadcast, reduce, gather, scatter (default 0)\n"
          "  -n, --iters <n>         timed iterations per size (default 20)\n"
          "  -w, --warmup_iters <n>  untimed iterations before them (default 5)\n"
          "  -c, --check <0|1>       check every element of one extra call (default 1)\n"
          "  -N, --nranks <n>        fork n local ranks (default: the launcher's ranks,\n"
          "                          or 1 when started without a launcher); refused when\n"
          "                          their shm segments and buffers do not fit this machine\n"
          "      --domains <a,b,..>  consecutive blocks of ranks of these sizes get\n"
          "                          HETCCL_DOMAIN=d0, d1, ...\n"
          "  -T, --timeout <s>       with -N: kill the ranks after s seconds (default 0: never)\n"
          "  -G, --device <kind>     host: buffers in host memory, host ranks (default);\n"
          "                          cuda (or hip): buffers in the rank's GPU memory (local rank\n"
          "                          i uses GPU i %% GPUs), calls on a stream per rank, timed up\n"
          "                          to a stream synchronize as nccl-tests; a list (cuda,host)\n"
          "                          gives each --domains block its kind\n"
          "      --lib <name>        hetccl (default), or nccl: the same benchmark calling\n"
          "                          NCCL directly (implies -G cuda); also --reference nccl\n"
          "      --host-time         also measure how long one call takes to return\n"
          "                          (extra columns: host time per call, us)\n"
          "      --host-ref          with --host-time: also time one enqueue of a 1-byte\n"
          "                          device memset, right after the same drain as the call\n"
          "                          (extra columns: what the driver alone costs then, us)\n"
          "      --check-max <size>  with -c 1: check only sizes up to this (default: all)\n"
          "  -h, --help\n",
          perf_coll_names());
}

static int parse_int(const char *s, int min, int *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > INT32_MAX) return -1;
  *out = (int)v;
  return 0;
}

static int parse_domains(const char *s, struct perf_options *o) {
  o->ndomains = 0;
  const char *p = s;
  while (*p) {
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 1 || v > PERF_MAX_FORKED_RANKS * 64 || o->ndomains == PERF_MAX_DOMAINS) return -1;
    o->domain_sizes[o->ndomains++] = (int)v;
    if (*end == ',') end++;
    else if (*end) return -1;
    p = end;
  }
  return o->ndomains > 0 ? 0 : -1;
}

static int parse_device(const char *s, size_t len) {
  static const char *const names[] = {"host", "cuda", "hip"}; /* PERF_DEVICE_* order */
  for (int k = 0; k < 3; k++)
    if (strlen(names[k]) == len && !strncmp(s, names[k], len)) return k;
  return -1;
}

/* -G KIND, or -G KIND,KIND,... (one per --domains block). */
static int parse_devices(const char *s, struct perf_options *o) {
  o->device_given = 1;
  o->ndomain_devices = 0;
  o->device = -1;
  for (const char *p = s;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    int k = parse_device(p, len);
    if (k < 0 || o->ndomain_devices == PERF_MAX_DOMAINS) return -1;
    o->domain_device[o->ndomain_devices++] = k;
    if (o->device <= PERF_DEVICE_HOST) o->device = k;
    if (!comma) break;
    p = comma + 1;
  }
  if (o->ndomain_devices == 1) o->ndomain_devices = 0;
  return 0;
}

int perf_rank_device(const struct perf_options *o, int rank) {
  if (!o->ndomain_devices) return o->device;
  int d = perf_domain_of(o, rank);
  return d >= 0 && d < o->ndomain_devices ? o->domain_device[d] : o->device;
}

int perf_all_gpu(const struct perf_options *o) {
  if (!o->ndomain_devices) return o->device != PERF_DEVICE_HOST;
  for (int i = 0; i < o->ndomain_devices; i++)
    if (o->domain_device[i] == PERF_DEVICE_HOST) return 0;
  return 1;
}

int perf_any_host(const struct perf_options *o) {
  if (!o->ndomain_devices) return o->device == PERF_DEVICE_HOST;
  return !perf_all_gpu(o);
}

int perf_domain_total(const struct perf_options *o) {
  int total = 0;
  for (int i = 0; i < o->ndomains; i++) total += o->domain_sizes[i];
  return total;
}

int perf_domain_of(const struct perf_options *o, int rank) {
  int end = 0;
  for (int i = 0; i < o->ndomains; i++) {
    end += o->domain_sizes[i];
    if (rank < end) return i;
  }
  return -1;
}

/* Long names map to the short letters; a flag's value is the next word or
 * follows '=' (--op=max). */
static const struct {
  const char *longname;
  char letter;
} g_long[] = {
    {"minbytes", 'b'}, {"maxbytes", 'e'}, {"stepfactor", 'f'}, {"stepbytes", 'i'}, {"op", 'o'},
    {"datatype", 'd'}, {"root", 'r'}, {"iters", 'n'}, {"warmup_iters", 'w'}, {"check", 'c'},
    {"nranks", 'N'}, {"domains", 'D'}, {"timeout", 'T'}, {"help", 'h'}, {"device", 'G'}, {"lib", 'L'},
    {"reference", 'L'}, {"host-time", 'H'}, {"host-ref", 'R'}, {"check-max", 'C'},
};

/* Flags that take no value (a value after '=' is still accepted: --host-time=0). */
static int takes_no_value(char letter) { return letter == 'H' || letter == 'R'; }

static int set_flag(struct perf_options *o, char letter, const char *val) {
  switch (letter) {
    case 'b': return tool_parse_size(val, &o->minbytes);
    case 'e': return tool_parse_size(val, &o->maxbytes);
    case 'i': return tool_parse_size(val, &o->stepbytes);
    case 'f': return parse_int(val, 2, &o->stepfactor);
    case 'r': return parse_int(val, 0, &o->root);
    case 'n': return parse_int(val, 1, &o->iters);
    case 'w': return parse_int(val, 0, &o->warmup);
    case 'c': return parse_int(val, 0, &o->check);
    case 'N': return parse_int(val, 1, &o->nranks) || o->nranks > PERF_MAX_FORKED_RANKS ? -1 : 0;
    case 'T': return parse_int(val, 0, &o->timeout_s);
    case 'D': return parse_domains(val, o);
    case 'C': return tool_parse_size(val, &o->check_max);
    case 'H': return parse_int(val, 0, &o->host_time) || o->host_time > 1 ? -1 : 0;
    case 'R': return parse_int(val, 0, &o->host_ref) || o->host_ref > 1 ? -1 : 0;
    case 'G': return parse_devices(val, o);
    case 'L':
      if (!strcmp(val, "hetccl")) o->lib = PERF_LIB_HETCCL;
      else if (!strcmp(val, "nccl")) o->lib = PERF_LIB_NCCL;
      else return -1;
      return 0;
    case 'o':
      if (!strcmp(val, "all")) {
        o->op_first = 0;
        o->op_last = PERF_NOPS - 1;
        return 0;
      }
      o->op_first = o->op_last = perf_op_parse(val);
      return o->op_first < 0 ? -1 : 0;
    case 'd': {
      if (!strcmp(val, "all")) {
        o->type_first = 0;
        o->type_last = PERF_NTYPES - 1;
        return 0;
      }
      const struct perf_dtype *t = perf_dtype_find(val);
      if (!t) return -1;
      o->type_first = o->type_last = (int)t->dt;
      return 0;
    }
    default: return -1;
  }
}

int perf_options_parse(int argc, char **argv, struct perf_options *o) {
  memset(o, 0, sizeof(*o));
  o->minbytes = 8;
  o->maxbytes = 8u << 20;
  o->stepfactor = 2;
  o->op_first = o->op_last = PERF_OP_SUM;
  o->type_first = o->type_last = (int)hetcclFloat32;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->check_max = SIZE_MAX;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *val = NULL;
    char letter = 0;
    if (arg[0] != '-') {
      if (o->coll) {
        perf_say("unexpected argument '%s'\n", arg);
        return PERF_PARSE_ERROR;
      }
      o->coll = perf_coll_find(arg);
      if (!o->coll) {
        perf_say("unknown collective '%s' (one of: %s)\n", arg, perf_coll_names());
        return PERF_PARSE_ERROR;
      }
      continue;
    }
    if (arg[1] == '-') {
      const char *name = arg + 2, *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      for (size_t k = 0; k < sizeof(g_long) / sizeof(g_long[0]); k++)
        if (strlen(g_long[k].longname) == len && !strncmp(name, g_long[k].longname, len)) letter = g_long[k].letter;
      if (eq) val = eq + 1;
    } else if (arg[1] && !arg[2]) {
      letter = arg[1];
    }
    if (letter == 'h') return PERF_PARSE_HELP;
    if (!letter || !strchr("befiordnwcNDTGLHRC", letter)) {
      perf_say("unknown flag '%s'\n", arg);
      return PERF_PARSE_ERROR;
    }
    if (!val && takes_no_value(letter)) val = "1";
    if (!val) {
      if (i + 1 >= argc) {
        perf_say("flag '%s' needs a value\n", arg);
        return PERF_PARSE_ERROR;
      }
      val = argv[++i];
    }
    if (set_flag(o, letter, val)) {
      perf_say("bad value '%s' for '%s'\n", val, arg);
      return PERF_PARSE_ERROR;
    }
  }
  if (o->host_ref) o->host_time = 1;
  if (!o->coll) {
    perf_say("name a collective (one of: %s)\n", perf_coll_names());
    return PERF_PARSE_ERROR;
  }
  if (o->minbytes > o->maxbytes) {
    perf_say("-b %zu is larger than -e %zu\n", o->minbytes, o->maxbytes);
    return PERF_PARSE_ERROR;
  }
  if (o->nranks && o->ndomains && perf_domain_total(o) != o->nranks) {
    perf_say("--domains sizes add up to %d, not -N %d\n", perf_domain_total(o), o->nranks);
    return PERF_PARSE_ERROR;
  }
  if (o->ndomain_devices && o->ndomain_devices != o->ndomains) {
    perf_say("-G names %d kinds, one per --domains block; --domains has %d\n",
             o->ndomain_devices, o->ndomains);
    return PERF_PARSE_ERROR;
  }
  if (o->nranks && o->coll->rooted && o->root >= o->nranks) {
    perf_say("root %d is not a rank (-N %d)\n", o->root, o->nranks);
    return PERF_PARSE_ERROR;
  }
  if (o->lib == PERF_LIB_NCCL) {
    /* NCCL's buffers are device memory; it has no domains. */
    if (o->device_given && (o->device != PERF_DEVICE_CUDA || o->ndomain_devices)) {
      perf_say("--lib nccl needs device buffers (-G cuda)\n");
      return PERF_PARSE_ERROR;
    }
    if (o->ndomains) {
      perf_say("--lib nccl has no --domains\n");
      return PERF_PARSE_ERROR;
    }
    o->device = PERF_DEVICE_CUDA;
  }
  if (!o->coll->reduces) o->op_first = o->op_last = PERF_OP_NONE;
  return PERF_PARSE_OK;
}
