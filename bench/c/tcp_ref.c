/* Bare TCP stream reference for bench/socket_iperf.sh: ioprobe's write-read protocol on
 * loopback (blocking write(2) of CHUNK bytes, blocking read(2) of up to CHUNK bytes,
 * default buffers, Nagle on) without ioprobe: one connection, the writer on CPU W and
 * the reader on CPU R, streaming for SECONDS; the rate is taken after the first 0.5 s
 * (the connection's start), as the reader sees it.
 *   tcp_ref CHUNK SECONDS W R   -> bytes/s on stdout */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) { perror("sched_setaffinity"); exit(1); }
}

static void die(const char *what) { perror(what); exit(1); }

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: tcp_ref CHUNK SECONDS W R\n"); return 2; }
    size_t chunk = strtoull(argv[1], 0, 10);
    double seconds = atof(argv[2]);
    int wcpu = atoi(argv[3]), rcpu = atoi(argv[4]);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t al = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (void *)&a, sizeof a) || getsockname(l, (void *)&a, &al) || listen(l, 1))
        die("listen");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (void *)&a, sizeof a)) die("connect");
    int s = accept(l, 0, 0);
    if (s < 0) die("accept");
    char *buf = malloc(chunk);
    if (!buf) die("malloc");
    memset(buf, 1, chunk);
    pid_t w = fork();
    if (w < 0) die("fork");
    if (w == 0) {
        close(s);
        pin(wcpu);
        for (;;) {
            size_t done = 0;
            while (done < chunk) {
                ssize_t n = write(c, buf + done, chunk - done);
                if (n <= 0) _exit(0); /* the reader is done */
                done += (size_t)n;
            }
        }
    }
    close(c);
    pin(rcpu);
    double t0 = now(), start = 0, t = t0;
    uint64_t got = 0, from = 0;
    while (t - t0 < seconds) {
        ssize_t n = read(s, buf, chunk);
        if (n <= 0) die("read");
        got += (uint64_t)n;
        t = now();
        if (start == 0 && t - t0 >= 0.5) { start = t; from = got; }
    }
    close(s);
    kill(w, SIGKILL);
    waitpid(w, 0, 0);
    printf("%.0f\n", (double)(got - from) / (t - start));
    return 0;
}
