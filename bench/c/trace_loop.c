/* The per-call cost of tracing, for bench/trace.sh: N calls of one kind and nothing
 * else, each result checked. `zero N`: read(fd, buf, 0) on /dev/zero (the cheapest
 * traced call there is); `pread N`: 4 KiB preads at offset 0 of FILE (in the page
 * cache). Build: gcc -O2 -o trace_loop trace_loop.c */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: trace_loop zero|pread N [FILE]\n");
        return 2;
    }
    long n = atol(argv[2]);
    static char buf[4096];
    if (strcmp(argv[1], "zero") == 0) {
        int fd = open("/dev/zero", O_RDONLY);
        if (fd < 0)
            return 1;
        for (long i = 0; i < n; i++)
            if (read(fd, buf, 0) != 0)
                return 1;
        return 0;
    }
    if (strcmp(argv[1], "pread") == 0 && argc > 3) {
        int fd = open(argv[3], O_RDONLY);
        if (fd < 0)
            return 1;
        for (long i = 0; i < n; i++)
            if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
                return 1;
        return 0;
    }
    fprintf(stderr, "usage: trace_loop zero|pread N [FILE]\n");
    return 2;
}
