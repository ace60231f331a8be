/* Bare pipe throughput reference for bench/pipe.sh: the same protocol as ioprobe's
 * pipe probe, without ioprobe. A writer and a reader are forked, allocate and touch
 * their buffers, say they are ready, and are released together by closing a "go"
 * pipe; the writer write(2)s `total` bytes in `chunk`-byte chunks (stamping each
 * chunk's first 8 bytes), the reader read(2)s them and checks each stamp; time =
 * release -> reader's last byte (CLOCK_MONOTONIC).
 *   pipe_ref CHUNK TOTAL CAPACITY(0=default) SAMPLES [same]  -> median bytes/s on stdout
 * With `same`, both processes are pinned to CPU 0 (ioprobe's --placement same). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static void die(const char *m) { perror(m); exit(1); }
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int same_cpu;
static void place(void) {
    if (!same_cpu) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (sched_setaffinity(0, sizeof set, &set)) die("sched_setaffinity");
}

static double once(size_t chunk, uint64_t total, long cap) {
    int data[2], go[2], ready[2], res[2];
    if (pipe(data) || pipe(go) || pipe(ready) || pipe(res)) die("pipe");
    if (cap > 0 && fcntl(data[1], F_SETPIPE_SZ, cap) < 0) die("F_SETPIPE_SZ");
    pid_t w = fork();
    if (w < 0) die("fork");
    if (w == 0) {
        close(data[0]); close(go[1]); close(ready[0]); close(res[0]); close(res[1]);
        place();
        unsigned char *buf = aligned_alloc(4096, (chunk + 4095) / 4096 * 4096);
        for (size_t i = 0; i < chunk; i++) buf[i] = (unsigned char)(i % 251) ^ 0x5a;
        char b; if (write(ready[1], "r", 1) != 1) die("ready");
        if (read(go[0], &b, 1) != 0) die("go");
        uint64_t sent = 0, seq = 0;
        while (sent < total) {
            size_t n = total - sent < chunk ? (size_t)(total - sent) : chunk;
            uint64_t st = seq ^ 0x696f70726f626521ull;
            memcpy(buf, &st, n < 8 ? n : 8);
            size_t done = 0;
            while (done < n) {
                ssize_t k = write(data[1], buf + done, n - done);
                if (k <= 0) die("write");
                done += (size_t)k;
            }
            sent += n; seq++;
        }
        _exit(0);
    }
    pid_t r = fork();
    if (r < 0) die("fork");
    if (r == 0) {
        close(data[1]); close(go[1]); close(ready[0]); close(res[0]);
        place();
        unsigned char *buf = aligned_alloc(4096, (chunk + 4095) / 4096 * 4096);
        memset(buf, 1, chunk);
        char b; if (write(ready[1], "r", 1) != 1) die("ready");
        if (read(go[0], &b, 1) != 0) die("go");
        uint64_t got = 0;
        while (got < total) {
            size_t want = total - got < chunk ? (size_t)(total - got) : chunk;
            ssize_t k = read(data[0], buf, want);
            if (k <= 0) die("short stream");
            /* check the stamp bytes of every chunk boundary in this piece */
            for (uint64_t s = (got + chunk - 1) / chunk * chunk; s < got + (uint64_t)k; s += chunk) {
                uint64_t st = (s / chunk) ^ 0x696f70726f626521ull;
                for (uint64_t j = 0; j < 8 && j < chunk && s + j < got + (uint64_t)k; j++)
                    if (buf[s + j - got] != ((unsigned char *)&st)[j]) die("bad stamp");
            }
            got += (uint64_t)k;
        }
        uint64_t t = now();
        if (write(res[1], &t, sizeof t) != sizeof t) die("result");
        _exit(0);
    }
    close(data[0]); close(data[1]); close(go[0]); close(ready[1]); close(res[1]);
    char two[2]; size_t have = 0;
    while (have < 2) { ssize_t k = read(ready[0], two, 2 - have); if (k <= 0) die("ready"); have += (size_t)k; }
    uint64_t t0 = now();
    close(go[1]);
    uint64_t t1;
    if (read(res[0], &t1, sizeof t1) != sizeof t1) die("result");
    int st;
    waitpid(w, &st, 0); waitpid(r, &st, 0);
    close(ready[0]); close(res[0]);
    return (double)total * 1e9 / (double)(t1 - t0);
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) { fprintf(stderr, "usage: pipe_ref CHUNK TOTAL CAP SAMPLES [same]\n"); return 2; }
    same_cpu = argc == 6 && strcmp(argv[5], "same") == 0;
    size_t chunk = strtoull(argv[1], 0, 10);
    uint64_t total = strtoull(argv[2], 0, 10);
    long cap = strtol(argv[3], 0, 10);
    int n = atoi(argv[4]);
    double v[1000];
    once(chunk, total, cap); /* warm-up, discarded, as ioprobe does */
    for (int i = 0; i < n && i < 1000; i++) v[i] = once(chunk, total, cap);
    qsort(v, (size_t)n, sizeof v[0], cmp);
    printf("%.0f\n", n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
    return 0;
}
