#include "ht_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int ht_free_port(void) {
  /* A random start, then the next ports: parallel tests rarely collide. */
  int start = (int)(((unsigned)getpid() * 7919u + (unsigned)time(NULL)) % 12000u);
  for (int i = 0; i < 12000; i++) {
    int port = 20000 + (start + i) % 12000;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((uint16_t)port);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    if (ok) return port;
  }
  return 20000 + start;
}
