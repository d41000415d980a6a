#include "util/pci.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex_field(const char **s, int max_digits, unsigned *out) {
  unsigned v = 0;
  int n = 0;
  while (isxdigit((unsigned char)**s)) {
    if (++n > max_digits) return 0;
    char c = (char)tolower((unsigned char)**s);
    v = v * 16u + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
    (*s)++;
  }
  *out = v;
  return n > 0;
}

int hetccl_pci_parse(const char *text, struct hetccl_pci_addr *out) {
  if (!text) return 0;
  struct hetccl_pci_addr a = {0, 0, 0, 0};
  const char *s = text;
  unsigned f1, f2;
  if (!hex_field(&s, 8, &f1) || *s++ != ':' || !hex_field(&s, 2, &f2)) return 0;
  if (*s == ':') { /* domain:bus:dev.func */
    s++;
    a.domain = f1;
    a.bus = f2;
    if (f2 > 0xff || !hex_field(&s, 2, &a.dev)) return 0;
  } else { /* bus:dev.func */
    if (f1 > 0xff) return 0;
    a.bus = f1;
    a.dev = f2;
  }
  if (*s++ != '.' || !hex_field(&s, 1, &a.func) || *s) return 0;
  if (a.domain > 0xffff || a.dev > 0x1f || a.func > 7) return 0;
  *out = a;
  return 1;
}

void hetccl_pci_format(const struct hetccl_pci_addr *a, char *buf, size_t size) {
  snprintf(buf, size, "%04x:%02x:%02x.%x", a->domain & 0xffffu, a->bus & 0xffu, a->dev & 0x1fu, a->func & 7u);
}

int hetccl_pci_normalize(const char *text, char *buf, size_t size) {
  struct hetccl_pci_addr a;
  if (!hetccl_pci_parse(text, &a)) return 0;
  hetccl_pci_format(&a, buf, size);
  return 1;
}
