/*
 * The acceptor of authenticated hellos (src/util/hello.h), over loopback
 * with a made-up 40-byte hello ("TESTHELO" then an HMAC of it):
 *   - a hello sent in two pieces waits, then is good; the bytes after it
 *     stay in the socket for the caller;
 *   - a wrong prefix is dropped as soon as the prefix is in; a wrong MAC,
 *     a close before the hello, and a partial hello past its deadline are
 *     dropped; the peer sees its connection closed;
 *   - beyond max_pending the oldest connection goes;
 *   - a flood of refusals logs the first 16, then only powers of two;
 *   - hetccl_hello_mac_ok takes the right MAC only.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/hello.h"
#include "util/sock.h"
#include "util/time.h"

#include "unit_tally.h"

#define HELLO_BYTES 40
static const uint8_t k_key[16] = "test hello key!";

static const char *prefix_problem(const uint8_t *h, void *arg) {
  (void)arg;
  return memcmp(h, "TESTHELO", 8) ? "not a test hello" : NULL;
}

static const char *problem(const uint8_t *h, void *arg) {
  int *checked = arg;
  (*checked)++;
  return hetccl_hello_mac_ok(k_key, sizeof k_key, h, 8, h + 8) ? NULL : "bad proof";
}

static void make_hello(uint8_t h[HELLO_BYTES], int good_mac) {
  memcpy(h, "TESTHELO", 8);
  hetccl_hmac_sha256(k_key, sizeof k_key, h, 8, h + 8);
  if (!good_mac) h[20] ^= 1;
}

static union hetccl_sockaddr g_addr;
static int g_listen = -1;

static int listen_loopback(void) {
  memset(&g_addr, 0, sizeof g_addr);
  g_addr.sin.sin_family = AF_INET;
  g_addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (hetccl_sock_listen(&g_addr, &g_listen) != hetcclSuccess) return 0;
  int fl = fcntl(g_listen, F_GETFL);
  return fl >= 0 && fcntl(g_listen, F_SETFL, fl | O_NONBLOCK) == 0;
}

static int connect_one(void) {
  int fd = -1;
  if (hetccl_sock_connect(&g_addr, hetccl_deadline_ms(5000), &fd) != hetcclSuccess) return -1;
  return fd;
}

/* Accepts until `want` connections are in their hello (2 s at most). */
static int accept_until(struct hetccl_acceptor *a, const struct hetccl_hello_rules *r, int want) {
  uint64_t end = hetccl_deadline_ms(2000);
  while (a->n < want && hetccl_now_ns() < end) {
    if (hetccl_acceptor_accept(a, g_listen, r) != 0) return 0;
    if (a->n < want) usleep(1000);
  }
  return a->n == want;
}

/* Reads connection i until it is no longer waiting (2 s at most). */
static int read_settled(struct hetccl_acceptor *a, int i, const struct hetccl_hello_rules *r) {
  uint64_t end = hetccl_deadline_ms(2000);
  int got;
  while ((got = hetccl_acceptor_read(a, i, r, hetccl_now_ns())) == HETCCL_HELLO_WAIT && hetccl_now_ns() < end)
    usleep(1000);
  return got;
}

static int closed_by_peer(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char c;
  return poll(&p, 1, 2000) == 1 && recv(fd, &c, 1, 0) <= 0;
}

static struct hetccl_hello_rules rules_for(int *checked) {
  struct hetccl_hello_rules r;
  memset(&r, 0, sizeof r);
  snprintf(r.who, sizeof r.who, "test_hello");
  r.bytes = HELLO_BYTES;
  r.window_ns = 5000000000ull;
  r.prefix_bytes = 8;
  r.prefix_problem = prefix_problem;
  r.problem = problem;
  r.arg = checked;
  return r;
}

static void test_good_in_pieces(void) {
  int checked = 0;
  struct hetccl_hello_rules r = rules_for(&checked);
  struct hetccl_acceptor a = {0};
  uint8_t h[HELLO_BYTES + 4];
  make_hello(h, 1);
  memcpy(h + HELLO_BYTES, "MORE", 4);
  int c = connect_one();
  check(c >= 0 && accept_until(&a, &r, 1), "a connection is accepted");
  check(send(c, h, 12, 0) == 12, "first piece sent");
  int got = HETCCL_HELLO_WAIT;
  for (uint64_t end = hetccl_deadline_ms(2000); got == HETCCL_HELLO_WAIT && a.conns[0].got < 12 && hetccl_now_ns() < end;)
    if ((got = hetccl_acceptor_read(&a, 0, &r, hetccl_now_ns())) == HETCCL_HELLO_WAIT) usleep(1000);
  check(got == HETCCL_HELLO_WAIT && a.n == 1 && a.conns[0].got == 12, "part of a hello waits");
  check(send(c, h + 12, sizeof h - 12, 0) == (ssize_t)(sizeof h - 12), "rest and 4 more bytes sent");
  check(read_settled(&a, 0, &r) == HETCCL_HELLO_GOOD && checked == 1, "the whole hello is good, checked once");
  check(a.conns[0].got == HELLO_BYTES, "never more than the hello is read");
  int fd = hetccl_acceptor_take(&a, 0);
  char more[4] = {0};
  check(a.n == 0 && fd >= 0, "take removes it and gives its fd");
  check(hetccl_sock_recv_all(fd, more, 4, hetccl_deadline_ms(2000)) == hetcclSuccess && !memcmp(more, "MORE", 4),
        "the bytes after the hello stay for the caller");
  close(fd);
  close(c);
  hetccl_acceptor_free(&a);
}

static void test_refusals(void) {
  int checked = 0;
  struct hetccl_hello_rules r = rules_for(&checked);
  struct hetccl_acceptor a = {0};
  uint8_t good[HELLO_BYTES], bad_mac[HELLO_BYTES];
  make_hello(good, 1);
  make_hello(bad_mac, 0);

  int c = connect_one();
  check(accept_until(&a, &r, 1), "accepted (wrong prefix)");
  check(send(c, "NOTHELLO", 8, 0) == 8, "wrong prefix sent");
  check(read_settled(&a, 0, &r) == HETCCL_HELLO_DROPPED && a.n == 0 && checked == 0,
        "a wrong prefix is dropped before the whole hello, unchecked");
  check(closed_by_peer(c), "its peer sees the close (wrong prefix)");
  close(c);

  c = connect_one();
  check(accept_until(&a, &r, 1), "accepted (bad MAC)");
  check(send(c, bad_mac, sizeof bad_mac, 0) == (ssize_t)sizeof bad_mac, "bad MAC sent");
  check(read_settled(&a, 0, &r) == HETCCL_HELLO_DROPPED && a.n == 0, "a bad proof is dropped");
  check(closed_by_peer(c), "its peer sees the close (bad MAC)");
  close(c);

  c = connect_one();
  check(accept_until(&a, &r, 1), "accepted (closes early)");
  check(send(c, good, 20, 0) == 20, "half a hello sent");
  close(c);
  check(read_settled(&a, 0, &r) == HETCCL_HELLO_DROPPED && a.n == 0, "a close before the hello is dropped");

  r.window_ns = 300000000ull; /* 300 ms: room for a loaded machine between accept and the first look */
  c = connect_one();
  check(accept_until(&a, &r, 1), "accepted (slow)");
  check(send(c, good, 20, 0) == 20, "half a hello sent, left open");
  uint64_t first = hetccl_acceptor_expire(&a, &r, hetccl_now_ns());
  check(a.n == 1 && first != UINT64_MAX, "expire keeps it before its deadline and gives the deadline");
  usleep(400000);
  check(hetccl_acceptor_read(&a, 0, &r, hetccl_now_ns()) == HETCCL_HELLO_DROPPED && a.n == 0,
        "a partial hello past its deadline is dropped on read");
  check(closed_by_peer(c), "its peer sees the close (slow)");
  close(c);
  c = connect_one();
  check(accept_until(&a, &r, 1), "accepted (silent)");
  usleep(400000);
  check(hetccl_acceptor_expire(&a, &r, hetccl_now_ns()) == UINT64_MAX && a.n == 0, "expire drops a silent one");
  close(c);

  r.window_ns = 5000000000ull;
  r.max_pending = 2;
  int cs[3];
  for (int i = 0; i < 3; i++) cs[i] = connect_one();
  unsigned long refused = a.refused;
  for (uint64_t end = hetccl_deadline_ms(2000); a.refused == refused && hetccl_now_ns() < end; usleep(1000))
    hetccl_acceptor_accept(&a, g_listen, &r);
  check(a.n == 2, "two in their hello at most");
  check(closed_by_peer(cs[0]), "beyond max_pending the oldest goes");
  for (int i = 0; i < 3; i++) close(cs[i]);
  check(a.refused == 6, "every refusal is counted");
  hetccl_acceptor_free(&a);
  check(a.n == 0 && a.conns == NULL, "free empties the acceptor");
}

/* 40 refusals: the first 16 logged, then the 32nd. */
static void test_logging_rate(void) {
  int checked = 0;
  struct hetccl_hello_rules r = rules_for(&checked);
  struct hetccl_acceptor a = {0};
  char path[] = "/tmp/test_hello_log_XXXXXX";
  int log = mkstemp(path);
  int saved = dup(2);
  if (log < 0 || saved < 0) {
    check(0, "temporary log file");
    return;
  }
  fflush(stderr);
  dup2(log, 2);
  for (int i = 0; i < 40; i++) {
    int c = connect_one();
    if (c < 0 || !accept_until(&a, &r, 1) || send(c, "NOTHELLO", 8, 0) != 8) break;
    read_settled(&a, 0, &r);
    close(c);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  FILE *f = fdopen(log, "r");
  char line[512];
  int lines = 0, counted = 0;
  rewind(f);
  while (f && fgets(line, sizeof line, f)) {
    if (strstr(line, "test_hello dropped a connection from 127.0.0.1")) lines++;
    if (strstr(line, "32 dropped so far")) counted++;
  }
  if (f) fclose(f);
  unlink(path);
  check(a.refused == 40, "40 refusals counted");
  check(lines == 17, "16 refusals logged, then the 32nd only");
  check(counted == 1, "the later line says how many were dropped");
  hetccl_acceptor_free(&a);
}

static void test_mac(void) {
  uint8_t h[HELLO_BYTES];
  make_hello(h, 1);
  check(hetccl_hello_mac_ok(k_key, sizeof k_key, h, 8, h + 8), "the right MAC is taken");
  h[8 + 31] ^= 0x80;
  check(!hetccl_hello_mac_ok(k_key, sizeof k_key, h, 8, h + 8), "a MAC with one bit changed is refused");
  make_hello(h, 1);
  h[3] ^= 1;
  check(!hetccl_hello_mac_ok(k_key, sizeof k_key, h, 8, h + 8), "a changed text is refused");
  make_hello(h, 1);
  uint8_t other[sizeof k_key];
  memcpy(other, k_key, sizeof other);
  other[0] ^= 1;
  check(!hetccl_hello_mac_ok(other, sizeof other, h, 8, h + 8), "another key is refused");
}

int main(void) {
  if (!listen_loopback()) {
    printf("FAIL: cannot listen on loopback\n0 passed, 1 failed\n");
    return 1;
  }
  test_mac();
  test_good_in_pieces();
  test_refusals();
  test_logging_rate();
  close(g_listen);
  return tally_report();
}
