/*
 * The AMD code objects embedded in the library (cmake/kernels_hip.cmake),
 * checked statically, with no GPU, through the interface the hip device
 * kind uses (hetccl_kernels_hip_archs, hetccl_kernels_hip_image):
 *  - selection: every built architecture by name and with a ":features"
 *    suffix gives its image; unknown, prefix, empty and NULL names give NULL
 *    and 0 bytes;
 *  - each image, read by the small ELF64 reader here: EM_AMDGPU, the
 *    e_flags processor (EF_AMDGPU_MACH) of its architecture, the 36 kernels
 *    (hetccl_reduce_<type>, hetccl_finish_<type> and hetccl_window_<type>,
 *    each a function and a
 *    64-byte kernel descriptor "<name>.kd"), no undefined symbol, and no
 *    private segment: private_segment_fixed_size (descriptor offset 4) is 0,
 *    the scratch-enable bit of compute_pgm_rsrc2 (offset 52, bit 0) is
 *    clear, and the metadata note (NT_AMDGPU_METADATA, msgpack) says
 *    ".private_segment_fixed_size" 0 and ".uses_dynamic_stack" false for
 *    every kernel.
 * HETCCL_TEST_HIP_ARCHS (set by tests/CMakeLists.txt from the configured
 * list) names the architectures the build must have embedded; a build
 * without AMD kernels checks only the NULL answers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "unit_tally.h"

#ifndef HETCCL_TEST_HIP_ARCHS
#define HETCCL_TEST_HIP_ARCHS ""
#endif

/* EF_AMDGPU_MACH values (LLVM's ELF.h, AMDGPUUsage "AMDGPU ELF Header"). */
static const struct {
  const char *arch;
  unsigned mach;
} g_machs[] = {
    {"gfx908", 0x030},  {"gfx90a", 0x03f},  {"gfx942", 0x04c},  {"gfx950", 0x04f},  {"gfx1030", 0x036},
    {"gfx1100", 0x041}, {"gfx1101", 0x046}, {"gfx1102", 0x047}, {"gfx1200", 0x048}, {"gfx1201", 0x04e},
};

static const char *const g_kinds[3] = {"reduce", "finish", "window"};
static const char *const g_types[12] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                                        "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};

#define EM_AMDGPU 224
#define SHT_SYMTAB 2
#define SHT_NOTE 7
#define NT_AMDGPU_METADATA 32

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

struct elf {
  const unsigned char *b;
  size_t n;
  uint64_t shoff;
  unsigned shentsize, shnum;
};

/* Section i's header field at `off` (64-bit fields: size 8). */
static uint64_t sh(const struct elf *e, unsigned i, unsigned off, int size) {
  const unsigned char *p = e->b + e->shoff + (uint64_t)i * e->shentsize + off;
  return size == 8 ? rd64(p) : rd32(p);
}
#define SH_TYPE(e, i) sh(e, i, 4, 4)
#define SH_ADDR(e, i) sh(e, i, 16, 8)
#define SH_OFFSET(e, i) sh(e, i, 24, 8)
#define SH_SIZE(e, i) sh(e, i, 32, 8)
#define SH_LINK(e, i) sh(e, i, 40, 4)

static int in_bounds(const struct elf *e, uint64_t off, uint64_t len) { return off <= e->n && len <= e->n - off; }

/* Counts `key` (a msgpack fixstr) in the metadata note and how many times
 * it is followed by the one-byte value `val`. */
static void note_count(const unsigned char *d, size_t n, const char *key, unsigned char val, int *seen, int *match) {
  size_t k = strlen(key);
  for (size_t i = 0; i + k + 2 <= n; i++) {
    if (d[i] != (unsigned char)(0xa0 | k) || memcmp(d + i + 1, key, k) != 0) continue;
    (*seen)++;
    if (d[i + 1 + k] == val) (*match)++;
  }
}

static void check_image(const char *arch, const unsigned char *b, size_t n) {
  char what[256];
  struct elf e = {b, n, 0, 0, 0};
#define CHK(cond, ...)                           \
  do {                                           \
    snprintf(what, sizeof what, __VA_ARGS__);    \
    check((cond), what);                         \
  } while (0)
  int fails = g_fail;
  CHK(n > 64 && memcmp(b, "\177ELF", 4) == 0 && b[4] == 2 && b[5] == 1, "%s: an ELF64 little-endian image", arch);
  if (g_fail > fails) return;
  CHK(rd16(b + 18) == EM_AMDGPU, "%s: e_machine EM_AMDGPU (got %u)", arch, rd16(b + 18));
  unsigned mach = 0;
  for (size_t i = 0; i < sizeof g_machs / sizeof g_machs[0]; i++)
    if (strcmp(g_machs[i].arch, arch) == 0) mach = g_machs[i].mach;
  CHK(mach != 0, "%s: a known architecture (EF_AMDGPU_MACH)", arch);
  uint32_t flags = rd32(b + 48);
  CHK((flags & 0xffu) == mach, "%s: e_flags mach 0x%03x (got 0x%03x, e_flags 0x%x)", arch, mach, flags & 0xffu, flags);
  e.shoff = rd64(b + 40);
  e.shentsize = rd16(b + 58);
  e.shnum = rd16(b + 60);
  CHK(e.shentsize == 64 && e.shnum > 0 && in_bounds(&e, e.shoff, (uint64_t)e.shnum * 64), "%s: section headers", arch);
  if (g_fail > fails) return;

  int found_func[3][12] = {{0}}, kd_ok[3][12] = {{0}}, nkd = 0, nundef = 0, nsym = 0;
  int meta_priv = 0, meta_priv0 = 0, meta_dyn = 0, meta_dyn_false = 0, notes = 0;
  for (unsigned s = 0; s < e.shnum; s++) {
    if (SH_TYPE(&e, s) == SHT_NOTE && in_bounds(&e, SH_OFFSET(&e, s), SH_SIZE(&e, s))) {
      const unsigned char *p = b + SH_OFFSET(&e, s), *end = p + SH_SIZE(&e, s);
      while (end - p >= 12) {
        uint32_t namesz = rd32(p), descsz = rd32(p + 4), type = rd32(p + 8);
        const unsigned char *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
        if (desc + descsz > end) break;
        if (type == NT_AMDGPU_METADATA && namesz == 7 && memcmp(name, "AMDGPU", 7) == 0) {
          notes++;
          note_count(desc, descsz, ".private_segment_fixed_size", 0x00, &meta_priv, &meta_priv0);
          note_count(desc, descsz, ".uses_dynamic_stack", 0xc2, &meta_dyn, &meta_dyn_false);
        }
        p = desc + ((descsz + 3) & ~3u);
      }
    }
    if (SH_TYPE(&e, s) != SHT_SYMTAB) continue;
    unsigned strs = (unsigned)SH_LINK(&e, s);
    if (strs >= e.shnum || !in_bounds(&e, SH_OFFSET(&e, s), SH_SIZE(&e, s))) continue;
    const char *str = (const char *)b + SH_OFFSET(&e, strs);
    uint64_t strsize = SH_SIZE(&e, strs);
    for (uint64_t off = 24; off + 24 <= SH_SIZE(&e, s); off += 24) { /* entry 0 is the null symbol */
      const unsigned char *y = b + SH_OFFSET(&e, s) + off;
      uint32_t nm = rd32(y);
      unsigned type = y[4] & 0xf, shndx = rd16(y + 6);
      uint64_t value = rd64(y + 8), size = rd64(y + 16);
      if (nm >= strsize) continue;
      const char *name = str + nm;
      nsym++;
      if (shndx == 0 && name[0]) {
        nundef++;
        CHK(0, "%s: undefined symbol %s", arch, name);
      }
      if (strncmp(name, "hetccl_", 7) != 0) continue;
      for (int k = 0; k < 3; k++)
        for (int t = 0; t < 12; t++) {
          char want[64];
          snprintf(want, sizeof want, "hetccl_%s_%s", g_kinds[k], g_types[t]);
          size_t wl = strlen(want);
          if (strcmp(name, want) == 0 && type == 2 /* STT_FUNC */ && shndx != 0) found_func[k][t] = 1;
          if (strncmp(name, want, wl) == 0 && strcmp(name + wl, ".kd") == 0 && size == 64 && shndx < e.shnum) {
            nkd++;
            uint64_t at = SH_OFFSET(&e, shndx) + (value - SH_ADDR(&e, shndx));
            if (!in_bounds(&e, at, 64)) continue;
            uint32_t priv = rd32(b + at + 4), rsrc2 = rd32(b + at + 52);
            CHK(priv == 0, "%s: %s private_segment_fixed_size 0 (got %u)", arch, name, priv);
            CHK((rsrc2 & 1u) == 0, "%s: %s compute_pgm_rsrc2 scratch disabled (0x%x)", arch, name, rsrc2);
            kd_ok[k][t] = 1;
          }
        }
    }
  }
  CHK(nsym > 0, "%s: a symbol table", arch);
  CHK(nundef == 0, "%s: no undefined symbols (%d)", arch, nundef);
  for (int k = 0; k < 3; k++)
    for (int t = 0; t < 12; t++) {
      CHK(found_func[k][t], "%s: kernel hetccl_%s_%s defined", arch, g_kinds[k], g_types[t]);
      CHK(kd_ok[k][t], "%s: kernel descriptor hetccl_%s_%s.kd", arch, g_kinds[k], g_types[t]);
    }
  CHK(nkd == 36, "%s: 36 kernel descriptors (got %d)", arch, nkd);
  CHK(notes == 1, "%s: one AMDGPU metadata note (got %d)", arch, notes);
  CHK(meta_priv == 36 && meta_priv0 == 36, "%s: metadata .private_segment_fixed_size 0 for 36 kernels (%d of %d)", arch,
      meta_priv0, meta_priv);
  CHK(meta_dyn == 36 && meta_dyn_false == 36, "%s: metadata .uses_dynamic_stack false for 36 kernels (%d of %d)", arch,
      meta_dyn_false, meta_dyn);
#undef CHK
}

int main(void) {
  const char *archs = hetccl_kernels_hip_archs();
  const char *want = HETCCL_TEST_HIP_ARCHS;
  size_t bytes = 1;
  char what[256];

  /* Names that never match, built in or not. */
  check(hetccl_kernels_hip_image(NULL, &bytes) == NULL && bytes == 0, "NULL arch: NULL, 0 bytes");
  bytes = 1;
  check(hetccl_kernels_hip_image("", &bytes) == NULL && bytes == 0, "empty arch: NULL");
  bytes = 1;
  check(hetccl_kernels_hip_image("gfx000", &bytes) == NULL && bytes == 0, "unknown arch gfx000: NULL");
  check(hetccl_kernels_hip_image("gfx9", NULL) == NULL, "prefix gfx9: NULL");
  check(hetccl_kernels_hip_image("gfx90", NULL) == NULL, "prefix gfx90: NULL");
  check(hetccl_kernels_hip_image("sm_90", NULL) == NULL, "a CUDA arch: NULL");
  check(hetccl_kernels_hip_image(":gfx90a", NULL) == NULL, "features only: NULL");

  if (!archs) {
    printf("no AMD kernels in this build (%s expected)\n", want[0] ? want : "none");
    check(want[0] == 0, "the build has the AMD kernels the configuration lists");
    return tally_report();
  }
  printf("AMD kernels built in: %s\n", archs);
  snprintf(what, sizeof what, "the embedded list \"%s\" is the configured \"%s\"", archs, want);
  check(strcmp(archs, want) == 0, what);

  char list[512];
  snprintf(list, sizeof list, "%s", archs);
  int count = 0;
  const void *prev = NULL;
  for (char *save = NULL, *a = strtok_r(list, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
    count++;
    size_t n = 0, n2 = 0;
    const unsigned char *im = hetccl_kernels_hip_image(a, &n);
    snprintf(what, sizeof what, "%s: an image", a);
    check(im != NULL && n > 0, what);
    if (!im) continue;
    snprintf(what, sizeof what, "%s: a different image from the previous architecture's", a);
    check(im != prev, what);
    prev = im;
    char feat[64];
    snprintf(feat, sizeof feat, "%s:sramecc+:xnack-", a);
    snprintf(what, sizeof what, "%s: the same image and size", feat);
    check(hetccl_kernels_hip_image(feat, &n2) == im && n2 == n, what);
    snprintf(feat, sizeof feat, "%sx", a);
    snprintf(what, sizeof what, "%s (a longer name): NULL", feat);
    check(hetccl_kernels_hip_image(feat, NULL) == NULL, what);
    check_image(a, im, n);
  }
  check(count > 0, "at least one architecture");
  return tally_report();
}
