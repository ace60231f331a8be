/* Bare file-copy reference for bench/copy.sh: the protocol of ioprobe's copy probe
 * (warm source, destination removed before each copy and created O_EXCL 0600, no
 * fsync) without ioprobe.
 *   copy_ref rw|cfr SRC DST SAMPLES   -> best (maximum) bytes/s on stdout
 * rw = read(2)/write(2) with a 1 MiB page-aligned buffer; cfr = copy_file_range(2). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static void die(const char *m) { perror(m); exit(1); }

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: copy_ref rw|cfr SRC DST SAMPLES\n"); return 2; }
    int cfr = strcmp(argv[1], "cfr") == 0;
    const char *src = argv[2], *dst = argv[3];
    int n = atoi(argv[4]);
    struct stat sb;
    if (stat(src, &sb)) die("stat");
    uint64_t size = (uint64_t)sb.st_size;
    size_t bs = 1 << 20;
    char *buf = aligned_alloc(4096, bs);
    memset(buf, 1, bs);
    /* warm the source */
    int s0 = open(src, O_RDONLY);
    while (read(s0, buf, bs) > 0) {}
    close(s0);
    double best = 0;
    for (int i = 0; i <= n; i++) { /* i == 0 is a discarded warm-up */
        unlink(dst); /* absent is fine */
        uint64_t t0 = now();
        int s = open(src, O_RDONLY | O_CLOEXEC);
        int d = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (s < 0 || d < 0) die("open");
        uint64_t done = 0;
        if (cfr) {
            loff_t a = 0, b = 0;
            while (done < size) {
                ssize_t k = copy_file_range(s, &a, d, &b, size - done, 0);
                if (k <= 0) die("copy_file_range");
                done += (uint64_t)k;
            }
        } else {
            ssize_t k;
            while ((k = read(s, buf, bs)) > 0) {
                ssize_t w = 0;
                while (w < k) { ssize_t m = write(d, buf + w, (size_t)(k - w)); if (m <= 0) die("write"); w += m; }
                done += (uint64_t)k;
            }
            if (k < 0) die("read");
        }
        if (done != size) die("short copy");
        if (close(d)) die("close");
        close(s);
        uint64_t t1 = now();
        double v = (double)size * 1e9 / (double)(t1 - t0);
        if (i > 0 && v > best) best = v;
        unlink(dst);
    }
    printf("%.0f\n", best);
    return 0;
}
