/* A TCP port for a test's rendezvous. */
#ifndef HT_PORT_H
#define HT_PORT_H

/* A port that is free now, below the kernel's ephemeral range (32768 and
 * up by default): a port the kernel picked for port 0 is one it may hand to
 * another process's outgoing connection before the test listens on it (seen
 * with many socket tests at once). */
int ht_free_port(void);

#endif
