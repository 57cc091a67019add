/* The floor of P10: a bare byte relay in front of an MCP server. It starts the server with
 * pipes, then copies whatever arrives on its stdin to the server's stdin and whatever the server
 * writes to its stdout, with one poll() loop — no parsing, no sandbox. What it costs over the
 * server called directly is what any extra process in the path costs on this machine (the pipe
 * hops and the wake-ups), so `jp mcp` is measured against it too, in the same run.
 *
 * Usage: byte_relay PROGRAM [ARGS...] */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    n -= w;
  }
  return 0;
}

int main(int argc, char **argv) {
  int to_server[2], from_server[2];
  if (argc < 2 || pipe(to_server) || pipe(from_server)) {
    fprintf(stderr, "usage: byte_relay PROGRAM [ARGS...]\n");
    return 2;
  }
  pid_t child = fork();
  if (child == 0) {
    dup2(to_server[0], 0);
    dup2(from_server[1], 1);
    close(to_server[0]); close(to_server[1]); close(from_server[0]); close(from_server[1]);
    execvp(argv[1], argv + 1);
    perror("byte_relay: exec");
    _exit(127);
  }
  close(to_server[0]);
  close(from_server[1]);
  static char buf[1 << 16];
  struct pollfd fds[2] = {{0, POLLIN, 0}, {from_server[0], POLLIN, 0}};
  int in_open = 1;
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (in_open && fds[0].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n <= 0) { /* the client is done: so is the server's input */
        close(to_server[1]);
        fds[0].fd = -1;
        in_open = 0;
      } else if (write_all(to_server[1], buf, n)) {
        break;
      }
    }
    if (fds[1].revents) {
      ssize_t n = read(from_server[0], buf, sizeof buf);
      if (n <= 0 || write_all(1, buf, n)) break;
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  return 0;
}
